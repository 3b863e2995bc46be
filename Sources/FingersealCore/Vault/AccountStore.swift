import FingersealWire
import FoundationEssentials
import Glibc
import SystemKit

/// A vault set aside: found under a uid that another account holds now (`VaultOwnership`).
/// It is kept, not deleted (the earlier account may be restored, or its trail be wanted),
/// under `STATE/set-aside/ID/` with this note beside it, until an administrator removes it
/// (`fingerseal account purge ID`).
public struct SetAsideVault: Codable, Equatable, Sendable {
    /// The directory's name under `set-aside/`: the uid and when (`1001-20261205T101500Z`).
    public var id: String
    public var uid: UInt32
    /// The name the vault was bound to; nil for a vault made before vaults recorded it.
    public var boundName: String?
    /// `OwnerMismatch.Reason`'s name.
    public var reason: String
    /// The account that held the uid when the vault was set aside.
    public var accountName: String?
    public var vaultCreatedAt: Int64
    public var setAsideAt: Int64
}

/// The broker's store as a whole: one directory per uid (`VaultLocation.broker`), what
/// happens to those directories when accounts come and go, and the vaults set aside.
public struct AccountStore: Sendable {
    public let root: String

    public static let setAsideDirectory = "set-aside"
    static let noteName = "set-aside.json"
    static let noteLimit = 16 << 10

    public init(root: String) { self.root = root }

    /// Moves the vault of `store` aside when it is another account's: as `Vault.ownership`
    /// judges it under the exclusive lock, or whatever it is with `because` (useradd made a
    /// new account with this uid, so any vault there is an earlier one's). The account's own
    /// birth record stays where it was; everything else of the directory (the vault, its
    /// trail, its counters, an earlier account's birth record) goes with the vault. Nil when
    /// nothing was moved.
    public func setAside(_ store: VaultStore, now: Int64, because forced: OwnerMismatch.Reason? = nil) throws -> SetAsideVault? {
        let account = store.location.account
        guard store.location.directory == root + "/" + String(account.uid) else { return nil }
        var kept: AccountBirth? = nil
        let moved = try store.withDirectory(exclusive: true) { directory -> SetAsideVault? in
            let bytes = try VaultStore.guarded(.readVault) { try directory.read(VaultFiles.vault, sizeLimit: VaultFiles.vaultLimit) }
            guard let bytes else { return nil }
            // A vault too damaged to say whose it is counts as unbound, made at the epoch:
            // any account made after that is newer.
            let fields = (try? Vault.ownerFields(bytes)) ?? Vault.OwnerFields(createdAt: 0, owner: nil)
            let birth = try? store.readBirth(directory)
            let mismatch: OwnerMismatch
            if let forced {
                mismatch = OwnerMismatch(reason: forced, boundTo: fields.owner, vaultCreatedAt: fields.createdAt)
            } else if case let .otherAccount(found) = Vault.judge(owner: fields.owner, vaultCreatedAt: fields.createdAt,
                                                                   birth: birth, account: account) {
                mismatch = found
            } else {
                return nil
            }
            kept = birth.flatMap { $0.isOf(account) ? $0 : nil }
            var note = SetAsideVault(id: "", uid: account.uid, boundName: mismatch.boundTo?.name, reason: mismatch.reason.rawValue,
                                     accountName: account.name, vaultCreatedAt: mismatch.vaultCreatedAt, setAsideAt: now)
            try VaultStore.guarded(.saveVault) {
                let top = try SafeDirectory(path: root, owner: geteuid())
                let aside = try top.makeSubdirectory(AccountStore.setAsideDirectory, mode: 0o700)
                note.id = try freeID(in: aside, uid: account.uid, now: now)
                if kept != nil { try directory.remove(VaultFiles.birth) }
                _ = try directory.replace(AccountStore.noteName, with: Array(try JSONEncoder().encode(note)))
                // The lock held here moves with the directory: nobody opens the vault meanwhile.
                try top.move(String(account.uid), into: aside, as: note.id)
            }
            return note
        }
        guard let note = moved ?? nil else { return nil }
        if let kept {
            _ = try store.withDirectory(create: true, exclusive: true) { try store.writeBirth(kept, $0) }
        }
        return note
    }

    /// The store of a vault set aside, for its own audit trail to record why: opened as the
    /// account it was bound to (or the uid alone), and never judged or bound again.
    public func setAsideStore(_ note: SetAsideVault, like store: VaultStore) -> VaultStore {
        let owner = UserAccount(name: note.boundName ?? String(note.uid), uid: note.uid, gid: note.uid, home: "/nonexistent")
        var aside = VaultStore(location: VaultLocation(directory: root + "/" + AccountStore.setAsideDirectory + "/" + note.id,
                                                   account: owner, owner: geteuid()),
                           lockTimeout: store.lockTimeout, tpm: store.tpm, attemptLimiter: nil, auditSink: store.auditSink)
        aside.judgesOwner = false
        return aside
    }

    /// `uid` and the time, and a number after it when a vault of that uid was set aside in
    /// the same second.
    private func freeID(in aside: SafeDirectory, uid: UInt32, now: Int64) throws -> String {
        let stamp = String(uid) + "-" + isoTimestamp(now).filter { $0 != "-" && $0 != ":" }
        let taken = Set(try VaultStore.guarded(.listVault) { try aside.entries() })
        var id = stamp
        var number = 1
        while taken.contains(id) {
            number += 1
            id = stamp + "-" + String(number)
        }
        return id
    }

    /// useradd made `store`'s account: a vault already under its uid is an earlier account's
    /// and is set aside, whatever else the directory held of that account goes (its counters,
    /// an earlier birth record), and the new account's birth record is written. Returns what
    /// was set aside.
    public func accountMade(_ store: VaultStore, now: Int64) throws -> SetAsideVault? {
        let aside = try setAside(store, now: now, because: .newAccount)
        let birth = try AccountBirth.new(store.location.account, now: now)
        _ = try store.withDirectory(create: true, exclusive: true) { directory in
            // A vault made since it was set aside (the new account's own, in that instant) stays.
            if try !directory.exists(VaultFiles.vault) { try AccountStore.removeFiles(directory, except: [VaultFiles.lock]) }
            try store.writeBirth(birth, directory)
        }
        return aside
    }

    /// The account of `store` is being removed (userdel's pre hook, a provisioned account's
    /// end): its directory goes, the vault first. True when there was a vault.
    @discardableResult
    public func removeAccount(_ store: VaultStore) throws -> Bool {
        let uid = String(store.location.account.uid)
        guard store.location.directory == root + "/" + uid else { return false }
        let hadVault = try Vault.reset(store)
        try VaultStore.guarded(.deleteVault) {
            guard let top = try? SafeDirectory(path: root, owner: geteuid()), let directory = try top.subdirectory(uid) else { return }
            try AccountStore.removeFiles(directory, except: [])
            try top.removeDirectory(uid)
        }
        return hadVault
    }

    /// The vaults set aside, oldest first.
    public func setAsideVaults() throws -> [SetAsideVault] {
        guard let aside = try setAsideRoot() else { return [] }
        return try VaultStore.guarded(.listVault) { try aside.entries() }.sorted().compactMap { id -> SetAsideVault? in
            guard let directory = try? aside.subdirectory(id),
                  let bytes = try? directory.read(AccountStore.noteName, sizeLimit: AccountStore.noteLimit),
                  var note = try? JSONDecoder().decode(SetAsideVault.self, from: Data(bytes)) else { return nil }
            note.id = id
            return note
        }
    }

    /// Deletes the vault set aside as `id`. False when there is none of that id.
    public func purge(_ id: String) throws -> Bool {
        guard AccountStore.isValidID(id), let aside = try setAsideRoot(),
              let directory = try VaultStore.guarded(.openVault, { try aside.subdirectory(id) }) else { return false }
        try VaultStore.guarded(.deleteVault) {
            // The vault file first: once it is gone, nothing else can be opened.
            try directory.remove(VaultFiles.vault)
            try AccountStore.removeFiles(directory, except: [])
            try aside.removeDirectory(id)
        }
        return true
    }

    /// An id as `setAside` makes them: digits, then the time's digits, `T`, `Z` and dashes.
    public static func isValidID(_ id: String) -> Bool {
        (1...40).contains(id.utf8.count) && id.utf8.first.map { $0 >= 0x30 && $0 <= 0x39 } == true
            && id.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2d || $0 == 0x54 || $0 == 0x5a }
    }

    private func setAsideRoot() throws -> SafeDirectory? {
        try VaultStore.guarded(.openVault) {
            try SafeDirectory(path: root, owner: geteuid()).subdirectory(AccountStore.setAsideDirectory)
        }
    }

    /// Removes the files of an account's directory (no subdirectory is ever made there).
    static func removeFiles(_ directory: SafeDirectory, except kept: Set<String>) throws {
        for name in try directory.entries() where !kept.contains(name) { try directory.remove(name) }
    }
}
