import FingersealWire
import Glibc
import SodiumKit
import SystemKit

/// File names in a vault directory, and their size caps.
public enum VaultFiles {
    public static let vault = "vault"
    public static let lockout = "lockout"
    public static let lock = "lock"
    static let deviceKeyPrefix = "device-"
    static let deviceKeySuffix = ".key"

    static let vaultLimit = 4 << 20
    static let lockoutLimit = 64 << 10
    static let deviceKeyLimit = 4 << 10

    static func deviceKey(_ keyID: String) -> String { deviceKeyPrefix + keyID + deviceKeySuffix }

    /// The vault record holding a finger's template.
    static func printRecord(_ finger: String) -> String { "print." + finger }

    static func isKeyID(_ text: String) -> Bool {
        text.utf8.count == 16 && text.allSatisfy { $0.isHexDigit && ($0.isNumber || $0.isLowercase) }
    }
}

/// Where a user's vault lives, whose it is, and who owns its files.
public struct VaultLocation: Equatable, Sendable {
    public let directory: String
    public let account: UserAccount
    /// The files' owner: the broker (root) for the store under its state directory; the user
    /// for a vault in the user's own directories.
    public let owner: UInt32

    public init(directory: String, account: UserAccount, owner: UInt32? = nil) {
        self.directory = directory
        self.account = account
        self.owner = owner ?? account.uid
    }

    /// The broker's store: `STATE/<uid>`, owned by the broker, never by the user, so nothing
    /// running as the user can read, replace or reset it (design §4).
    public static func broker(stateDirectory: String, account: UserAccount) -> VaultLocation {
        VaultLocation(directory: stateDirectory + "/" + String(account.uid), account: account, owner: geteuid())
    }

}

/// File access for one vault: every operation runs as the vault's owner (when called by
/// root), through a safely opened directory, under the vault lock.
public struct VaultStore: Sendable {
    public let location: VaultLocation
    /// Longest wait for another process's lock.
    public var lockTimeout: Double
    /// The TPM the keyslots are sealed to, and when new ones are (the broker's `tpm=`
    /// settings; without them, slots already sealed still open, and new ones are not sealed).
    public var tpm: TPMPolicy
    /// The broker's count of attempts per account (`AttemptLimiter`): beyond its allowance an
    /// attempt is counted, not written. Nil (tools, tests): every attempt is written.
    public var attemptLimiter: AttemptLimiter?
    /// Whether reads refuse a vault of another account (`requireOwned`): always, except for
    /// a vault already set aside, whose own trail records why (`AccountStore.setAside`).
    var judgesOwner = true
    /// What one request read of the vault, shared by every store made for that request: the
    /// broker's check of whose the vault is reads it first, and the flow after it uses that
    /// read while the file is still it (nil: each read is its own).
    public var requestRead: RequestRead?
    /// Where the audit trail's events are logged besides its file: the broker's log (the
    /// journal); none for tools and tests unless they say.
    public var auditSink: AuditSink

    public init(location: VaultLocation, lockTimeout: Double = 5, tpm: TPMPolicy = .off, attemptLimiter: AttemptLimiter? = nil,
                auditSink: AuditSink = .none) {
        self.location = location
        self.lockTimeout = lockTimeout
        self.tpm = tpm
        self.attemptLimiter = attemptLimiter
        self.auditSink = auditSink
    }

    /// Runs `body` as the owner with the directory open and locked. Returns nil when the
    /// directory does not exist and `create` is false.
    func withDirectory<T>(create: Bool = false, exclusive: Bool, _ body: (SafeDirectory) throws -> T) throws -> T? {
        try VaultStore.guarded(.openVault) {
            try asOwner {
                if create { try createDirectories(location.directory, mode: 0o700) }
                let directory: SafeDirectory
                do {
                    directory = try SafeDirectory(path: location.directory, owner: location.owner)
                } catch let error as SystemError where error.code == ENOENT {
                    return nil
                }
                let lock: FileLock
                do {
                    lock = try directory.lock(VaultFiles.lock, exclusive: exclusive, timeout: lockTimeout)
                } catch let error as SystemError where error.code == ETIMEDOUT {
                    throw FingersealError(.unavailable, Messages.vaultBusy, detail: error.description)
                }
                defer { withExtendedLifetime(lock) {} }
                if exclusive { try directory.removeStaleTempFiles() }
                return try body(directory)
            }
        }
    }

    /// Runs `body` with the file owner's filesystem identity: the user's for a vault the user
    /// owns (called by root in a PAM host), the broker's own for the broker's store.
    func asOwner<T>(_ body: () throws -> T) throws -> T {
        location.owner == location.account.uid ? try asUser(location.account, body) : try body()
    }

    /// Turns system and file-safety errors into user-facing errors; passes ours through.
    static func guarded<T>(_ step: SystemStep, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as FingersealError {
            throw error
        } catch let error as UnsafeFileError {
            throw FingersealError(.vaultUnusable, Messages.unsafeFile(Messages.unsafeReason(error)), detail: error.description)
        } catch let error as SystemError where error.code == EACCES || error.code == EPERM {
            // The owner cannot touch its own vault: ownership or modes are wrong, not the system.
            throw FingersealError(.vaultUnusable, Messages.unsafeFile(Messages.notPermitted(error)), detail: error.description)
        } catch let error as SystemError {
            throw FingersealError(.systemError, Messages.systemFailure(step), detail: error.description)
        } catch is SodiumError {
            throw FingersealError(.systemError, Messages.secureMemory)
        } catch {
            throw FingersealError(.systemError, Messages.systemFailure(step))
        }
    }

    func readDocument(_ directory: SafeDirectory) throws -> VaultDocument? {
        try readSnapshot(directory)?.document
    }

    /// Reads the vault file, keeping it open so that later steps of the request can tell it
    /// is still the file they read (`VaultSnapshot.isCurrent`) instead of reading it again.
    /// Every read of the document comes here, so a vault of another account is refused here
    /// too (`requireOwned`), whatever the request checked before.
    func readSnapshot(_ directory: SafeDirectory) throws -> VaultSnapshot? {
        if let held = requestRead?.snapshot, try held.isCurrent(directory) { return held }
        guard let snapshot = try readUnjudged(directory) else { return nil }
        if judgesOwner { try requireOwned(snapshot.document, directory) }
        requestRead?.snapshot = snapshot
        return snapshot
    }

    /// The vault file as it is, whoever's it is (`Vault.ownership` judges it itself).
    func readUnjudged(_ directory: SafeDirectory) throws -> VaultSnapshot? {
        let read = try VaultStore.guarded(.readVault) {
            try directory.readKeepingOpen(VaultFiles.vault, sizeLimit: VaultFiles.vaultLimit)
        }
        guard let (file, bytes, identity) = read else { return nil }
        let document = try VaultDocument.decode(try Container.decode(.vault, bytes, file: VaultFiles.vault), file: VaultFiles.vault)
        return VaultSnapshot(document: document, file: file, identity: identity)
    }

    @discardableResult
    func writeDocument(_ document: VaultDocument, _ directory: SafeDirectory) throws -> VaultSnapshot {
        let bytes = try Container.encode(.vault, body: try VaultDocument.encode(document))
        let written = try VaultStore.guarded(.saveVault) { () -> VaultSnapshot in
            let file = try directory.replace(VaultFiles.vault, with: bytes)
            return VaultSnapshot(document: document, file: file, identity: FileIdentity(try file.status()))
        }
        requestRead?.snapshot = written
        // Device key files the new document no longer names are garbage now.
        let live = Set(document.keyslots.compactMap { $0.keyID.map(VaultFiles.deviceKey) })
        for name in try VaultStore.guarded(.listVault, { try directory.entries() })
        where name.hasPrefix(VaultFiles.deviceKeyPrefix) && name.hasSuffix(VaultFiles.deviceKeySuffix) && !live.contains(name) {
            try VaultStore.guarded(.removeOldDeviceKey) { try directory.remove(name) }
        }
        return written
    }
}

/// The vault as one request last read or wrote it, shared by the stores made for that
/// request (`VaultStore.requestRead`).
public final class RequestRead: @unchecked Sendable {
    var snapshot: VaultSnapshot?

    public init() {}
}

/// The vault file as a request read it: the document, and the file itself held open (its
/// inode cannot be reused meanwhile), so the same identity under the lock means the same
/// bytes and nothing is read or MAC-checked twice.
final class VaultSnapshot {
    let document: VaultDocument
    private let file: FileDescriptor
    private let identity: FileIdentity
    /// The MAC was checked with the master key of this vault ID.
    var verifiedVaultID: String? = nil

    init(document: VaultDocument, file: FileDescriptor, identity: FileIdentity) {
        self.document = document
        self.file = file
        self.identity = identity
    }

    /// Whether the vault file in `directory` is still the one read (call under the lock).
    func isCurrent(_ directory: SafeDirectory) throws -> Bool {
        try VaultStore.guarded(.readVault) { try directory.identity(of: VaultFiles.vault) == identity }
    }
}
