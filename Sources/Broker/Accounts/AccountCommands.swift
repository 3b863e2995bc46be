import FingersealCore
import FingersealWire
import Glibc
import Localization
import SystemKit

/// `fingerseal account list|remove|expire|purge` (root only, `Authorization.Rule.root`): the
/// accounts provisioning made, and the broker's chores for them (`recover` at start,
/// `expire` at start and every hour); the vaults set aside (`AccountVaults`).
enum AccountCommands {
    struct Listed: Encodable {
        let name: String
        let uid: UInt32?
        let state: String
        let issuer: String
        let subject: String?
        let created: String
        let lastUsed: String
        /// When it expires (`provision_expire_days`); nil: never.
        let expires: String?
    }

    /// A vault set aside, as `account list --json` gives it.
    struct ListedSetAside: Encodable {
        let id: String
        let uid: UInt32
        /// The account the vault was bound to; nil for a vault from before vaults recorded it.
        let boundTo: String?
        let reason: String
        /// The account that held the uid when the vault was set aside.
        let account: String?
        let vaultCreated: String
        let setAside: String
    }

    struct Listing: Encodable {
        let accounts: [Listed]
        let setAside: [ListedSetAside]
    }

    static func list(_ call: Call) throws -> Reply {
        // No registry: nothing was ever provisioned here.
        let records = try ProvisionRegistry.existing(stateDirectory: call.state.settings.stateDirectory)
            .map { registry in try registry.locked { try registry.records() } } ?? []
        let aside = try AccountStore(root: call.state.settings.stateDirectory).setAsideVaults()
        let days = call.settings.provisionExpireDays
        if call.json {
            try call.printJSON(Listing(accounts: records.map { record in
                Listed(name: record.name, uid: record.uid, state: record.state.rawValue, issuer: record.issuer, subject: record.subject,
                       created: isoTimestamp(record.createdAt), lastUsed: isoTimestamp(record.lastUsed),
                       expires: days > 0 ? isoTimestamp(record.lastUsed + Int64(days) * 86_400) : nil)
            }, setAside: aside.map { vault in
                ListedSetAside(id: vault.id, uid: vault.uid, boundTo: vault.boundName, reason: vault.reason, account: vault.accountName,
                               vaultCreated: isoTimestamp(vault.vaultCreatedAt), setAside: isoTimestamp(vault.setAsideAt))
            }))
            return Reply(.success)
        }
        var lines = records.isEmpty ? [Messages.accountNoneProvisioned] : records.map {
            Messages.accountListed($0.name, Localization.localTime($0.createdAt), Localization.localTime($0.lastUsed))
        }
        if !aside.isEmpty {
            lines += [Messages.accountSetAsideHeading] + aside.map { Messages.accountSetAsideListed($0, Localization.localTime($0.setAsideAt)) }
        }
        call.conversation.output(lines.joined(separator: "\n"))
        return Reply(.success)
    }

    static func remove(_ call: Call) throws -> Reply {
        // Exactly one argument (`AccountRemoveOptions.validate`).
        let name = call.arguments.first ?? ""
        guard AccountName.isValid(name), let registry = try ProvisionRegistry.existing(stateDirectory: call.state.settings.stateDirectory),
              let record = try registry.locked({ try registry.record(name) }) else {
            throw FingersealError(.usage, Messages.accountNotProvisioned(String(name.prefix(64))))
        }
        guard !Provisioning.inFlight.contains(name) else { throw FingersealError(.unavailable, Messages.accountBeingMade(name)) }
        guard try removeAccount(record, registry: registry, state: call.state, options: call.settings) else {
            throw FingersealError(.unavailable, Messages.accountRemoveFailed(name))
        }
        Provisioning.audit(name, .provisioning(.removed, reason: "administrator"))
        call.conversation.output(Messages.accountRemoved(name))
        return Reply(.success)
    }

    static func expire(_ call: Call) throws -> Reply {
        let ahead = Int64(call.options(for: AccountExpireOptions.self).daysAhead ?? 0) * 86_400
        let removed = try expire(state: call.state, options: call.settings, now: SystemClock().now() + ahead)
        if call.json {
            try call.printJSON(["removed": removed])
            return Reply(.success)
        }
        call.conversation.output(removed.isEmpty ? Messages.accountNothingExpired
                                 : removed.map { Messages.accountExpired($0, call.settings.provisionExpireDays) }.joined(separator: "\n"))
        return Reply(.success)
    }

    /// Removes the accounts unused for `provision_expire_days` by `now`; returns their names.
    /// An account that cannot be removed now (signed in) stays, and is tried again later.
    static func expire(state: BrokerState, options: Options, now: Int64) throws -> [String] {
        let days = options.provisionExpireDays
        guard days > 0, let registry = try ProvisionRegistry.existing(stateDirectory: state.settings.stateDirectory) else { return [] }
        let due = try registry.locked { try registry.records() }
            .filter { $0.state == .active && $0.lastUsed + Int64(days) * 86_400 <= now }
        var removed: [String] = []
        for record in due where try removeAccount(record, registry: registry, state: state, options: options) {
            Provisioning.audit(record.name, .provisioning(.expired, reason: String(days)))
            Syslog.log(.notice, "fingersealed: provisioned account \(record.name) removed: unused for \(days) days")
            removed.append(record.name)
        }
        return removed
    }

    /// At the broker's start: a pending record is an account whose making never finished (the
    /// broker stopped mid-way). It is removed with its vault, so no half account stays usable.
    static func recover(state: BrokerState, options: Options) {
        guard let registry = try? ProvisionRegistry.existing(stateDirectory: state.settings.stateDirectory),
              let records = try? registry.locked({ try registry.records() }) else { return }
        for record in records where record.state == .pending {
            if (try? removeAccount(record, registry: registry, state: state, options: options)) == true {
                Provisioning.audit(record.name, .provisioning(.cancelled, reason: AuditReason.refusal(.brokerStopped).word))
                Syslog.log(.notice, "fingersealed: the half-made account \(record.name) was removed (the broker stopped while making it)")
            }
        }
    }

    /// The account of `record`, its vault and the record. The account is removed only when
    /// it is still the one made (`isTheOneMade`); false when userdel refused.
    static func removeAccount(_ record: ProvisionRecord, registry: ProvisionRegistry, state: BrokerState,
                              options: Options) throws -> Bool {
        let account = try UserAccount.named(record.name)
        if let account, isTheOneMade(record, account) {
            // The account first: while userdel refuses (signed in), everything stays.
            guard try SystemAccounts.remove(record.name, removeHome: true) else { return false }
            Provisioning.removeVault(of: account, state: state, options: options)
        } else if let uid = record.uid, (try? UserAccount.withID(uid)) ?? nil == nil {
            // The account is gone already (or is another one now): only the vault of its uid.
            Provisioning.removeVault(of: UserAccount(name: record.name, uid: uid, gid: uid, home: "/nonexistent"),
                                     state: state, options: options)
        } else if account != nil {
            Syslog.log(.notice, "fingersealed: the account \(record.name) is not the one provisioning made, so it was left alone")
        }
        try registry.locked { try registry.remove(record.name) }
        return true
    }

    /// Whether `account` is the one `record` speaks of. An active record names it by the uid
    /// kept when its making finished. A pending one may have been written before useradd ran
    /// (the broker stopped in between, and someone else may have made an account of that name
    /// since): its account must carry the record's marker in its comment, and its uid when
    /// the record has one.
    static func isTheOneMade(_ record: ProvisionRecord, _ account: UserAccount) -> Bool {
        if let uid = record.uid, uid != account.uid { return false }
        guard record.state == .pending else { return record.uid != nil }
        return SystemAccounts.isMade(record.name, marker: record.marker, uid: record.uid)
    }
}
