import FingersealCore
import FingersealWire
import Glibc
import SystemKit

/// A vault belongs to the account that made it (issue 31 §1). Before any request touches
/// the vault under an account's uid, a vault that is another account's (`Vault.ownership`)
/// is set aside; useradd's and userdel's hooks tell the broker when accounts come and go.
enum AccountVaults {
    /// Sets aside the vault of `store` when it is another account's, before the request reads
    /// it (a vault that may be used stays the request's read: nothing reads it twice). A vault
    /// that cannot be judged is left to the request, whose every read judges it again
    /// (`VaultStore.requireOwned`) and refuses it.
    static func enforce(_ store: VaultStore, state: BrokerState) {
        guard case .otherAccount = (try? Vault.ownership(store)) else { return }
        setAside(store, state: state)
    }

    /// Moves the vault aside (`AccountStore.setAside`) and records it (`setAside(_:_:state:)`).
    static func setAside(_ store: VaultStore, state: BrokerState) {
        let shelf = AccountStore(root: state.settings.stateDirectory)
        do {
            guard let note = try shelf.setAside(store, now: SystemClock().now()) else { return }
            setAside(note, store, state: state)
        } catch {
            Syslog.log(.warning, "fingersealed: the vault under uid \(store.location.account.uid) is another account's "
                       + "and could not be set aside: \(error)")
        }
    }

    /// A vault was set aside from `store`: what the broker holds for the uid (tokens,
    /// confirmations) ends, and why is recorded in the vault's own trail and the journal.
    static func setAside(_ note: SetAsideVault, _ store: VaultStore, state: BrokerState) {
        let shelf = AccountStore(root: state.settings.stateDirectory)
        state.sessions.dropUser(note.uid)
        // Its own trail, opened through its device slot (the event is logged either way).
        AuditTrail(store: shelf.setAsideStore(note, like: store)).record(.accountVault(.setAside, reason: note.reason), vault: nil)
        Syslog.log(.warning, "fingersealed: the vault under uid \(note.uid) (\(note.boundName.map { "bound to \($0)" } ?? "unbound")) "
                   + "is not user=\(store.location.account.name)'s (\(note.reason)): set aside as \(note.id)")
    }
}

extension AccountCommands {
    /// `account useradd NAME`, from useradd's post hook: the account was just made. A vault
    /// under its uid is an earlier account's and is set aside; the account's birth record is
    /// written, the marker no later account can have.
    static func useradd(_ call: Call) throws -> Reply {
        let account = try hookAccount(call)
        let store = call.state.store(for: account, tpm: call.settings.tpmPolicy)
        if let aside = try AccountStore(root: call.state.settings.stateDirectory).accountMade(store, now: SystemClock().now()) {
            AccountVaults.setAside(aside, store, state: call.state)
            call.conversation.output(Messages.accountEarlierVaultSetAside(aside.uid))
        }
        return Reply(.success)
    }

    /// `account userdel NAME`, from userdel's pre hook (the account still exists): its vault,
    /// its directory of the store and what the broker holds for it go, and so does its
    /// provisioning record, if fingerseal made it.
    static func userdel(_ call: Call) throws -> Reply {
        let account = try hookAccount(call)
        let store = call.state.store(for: account, tpm: call.settings.tpmPolicy)
        // Whose the vault is does not matter here: the uid goes away with its account.
        let removed = try AccountStore(root: call.state.settings.stateDirectory).removeAccount(store)
        call.state.sessions.dropUser(account.uid)
        if let registry = try ProvisionRegistry.existing(stateDirectory: call.state.settings.stateDirectory),
           let record = try registry.locked({ try registry.record(account.name) }), record.uid == nil || record.uid == account.uid {
            try registry.locked { try registry.remove(account.name) }
        }
        if removed {
            // The journal only: the vault's trail went with it.
            AuditTrail(store: store).log(.accountVault(.removed, reason: "userdel"))
            call.conversation.output(Messages.accountVaultRemoved(account.name))
        }
        return Reply(.success)
    }

    /// The account a hook names: it exists (useradd made it; userdel has not removed it yet).
    private static func hookAccount(_ call: Call) throws -> UserAccount {
        let name = call.arguments.first ?? ""
        guard AccountName.isValid(name), let account = try UserAccount.named(name) else {
            throw FingersealError(.unknownUser, Messages.unknownUser, detail: "account hook for \(String(name.prefix(64)))")
        }
        return account
    }

    /// `account purge ID`: deletes a vault set aside.
    static func purge(_ call: Call) throws -> Reply {
        let id = call.arguments.first ?? ""
        let shelf = AccountStore(root: call.state.settings.stateDirectory)
        guard AccountStore.isValidID(id), let note = try shelf.setAsideVaults().first(where: { $0.id == id }) else {
            throw FingersealError(.usage, Messages.accountNotSetAside(String(id.prefix(64))))
        }
        let store = call.state.store(for: call.account, tpm: call.settings.tpmPolicy)
        // Said to the journal only: the trail goes with the vault.
        AuditTrail(store: shelf.setAsideStore(note, like: store)).log(.accountVault(.purged, reason: note.reason))
        guard try shelf.purge(id) else { throw FingersealError(.usage, Messages.accountNotSetAside(id)) }
        call.conversation.output(Messages.accountPurged(id))
        return Reply(.success)
    }
}
