import FoundationEssentials
import Glibc
import SodiumKit
import SystemKit

/// The login session and the boot a step-up grant belongs to.
public struct SessionIdentity: Equatable, Sendable {
    public let session: String
    public let boot: String

    public init(session: String, boot: String) {
        self.session = session
        self.boot = boot
    }

    /// The kernel's audit session id when there is one (pam_loginuid sets it at login; the
    /// user cannot change it), else logind's `XDG_SESSION_ID`, else the process session.
    public static func current(sessionVariable: String?) -> SessionIdentity {
        let boot = (readSmall("/proc/sys/kernel/random/boot_id") ?? "unknown").filter { !$0.isWhitespace }
        if let audit = readSmall("/proc/self/sessionid"), let id = UInt32(audit), id != UInt32.max {
            return SessionIdentity(session: "audit-\(id)", boot: boot)
        }
        if let variable = sessionVariable, (1...64).contains(variable.utf8.count), variable.utf8.allSatisfy(isNameByte) {
            return SessionIdentity(session: "logind-\(variable)", boot: boot)
        }
        return SessionIdentity(session: "sid-\(getsid(0))", boot: boot)
    }

    private static func readSmall(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        let file = FileDescriptor(owning: fd)
        guard let bytes = try? file.readAll(limit: 256, subject: path) else { return nil }
        return String(decoding: bytes, as: UTF8.self).filter { !$0.isWhitespace }
    }
}

func isNameByte(_ byte: UInt8) -> Bool {
    (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x30 && byte <= 0x39)
        || byte == 0x2e || byte == 0x2d || byte == 0x5f
}

/// A step-up grant: CONTEXT was re-authenticated in this login session, until `expiresAt`
/// (or, for a grant held by a command, for as long as `holder` lives). MAC'd with a key
/// derived from the vault's master key, so another program cannot mint or stretch one
/// without the vault.
public struct StepUpGrant: Codable, Equatable, Sendable {
    public var format = 1
    public var context: String
    public var session: String
    public var boot: String
    public var vaultID: String
    /// "finger" or "pin".
    public var method: String
    public var issuedAt: Int64
    public var expiresAt: Int64
    /// The process the grant lives for, and its start time (against pid reuse).
    public var holder: Int32?
    public var holderStart: UInt64?
    var mac: String = ""

    func authenticatedBytes() throws -> [UInt8] {
        var copy = self
        copy.mac = ""
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array(try encoder.encode(copy))
    }
}

/// The step-up grants of one login session, in `$XDG_RUNTIME_DIR/fingerseal/grants/`
/// (tmpfs: directory 0700, files 0600). Never on disk: without a memory-backed runtime
/// directory no grant is kept and every step-up asks.
public struct StepUpGrants {
    public static let defaultTTL = 300
    public static let maxTTL = 24 * 3600
    static let maxFile = 4096

    public let account: UserAccount
    public let runtimeDirectory: String
    public let identity: SessionIdentity
    public let clock: any Clock

    public init(account: UserAccount, runtimeDirectory: String, identity: SessionIdentity, clock: any Clock = SystemClock()) {
        self.account = account
        self.runtimeDirectory = runtimeDirectory
        self.identity = identity
        self.clock = clock
    }

    /// Context names: 1 to 64 of a-z A-Z 0-9 . - _ (they name files).
    public static func isValidContext(_ context: String) -> Bool {
        (1...64).contains(context.utf8.count) && context.utf8.allSatisfy(isNameByte) && !context.hasPrefix(".")
    }

    /// One file per session and context: sessions of one user share the runtime directory.
    func fileName(_ context: String) -> String { identity.session + "." + context }

    /// The valid grant for `context` in this session, or nil. One that is expired, from
    /// another boot or vault, tampered with, or whose holder is gone is removed on the way.
    public func valid(_ context: String, vault: UnlockedVault) -> StepUpGrant? {
        guard StepUpGrants.isValidContext(context) else { return nil }
        let name = fileName(context)
        return try? asUser(account) { () -> StepUpGrant? in
            guard let directory = try grantsDirectory(create: false), try directory.exists(name) else { return nil }
            guard let bytes = try? directory.read(name, sizeLimit: StepUpGrants.maxFile),
                  let grant = try? JSONDecoder().decode(StepUpGrant.self, from: Data(bytes)),
                  isValid(grant, context: context, vault: vault) else {
                try? directory.remove(name) // unreadable, unsafe, forged or over: not a grant
                return nil
            }
            return grant
        } ?? nil
    }

    func isValid(_ grant: StepUpGrant, context: String, vault: UnlockedVault) -> Bool {
        guard grant.format == 1, grant.context == context, grant.session == identity.session, grant.boot == identity.boot,
              grant.vaultID == vault.vaultID, let expected = try? mac(grant, vault),
              Sodium.equal(Array(expected.utf8), Array(grant.mac.utf8)) else { return false }
        if clock.now() >= grant.expiresAt { return false }
        if let holder = grant.holder {
            guard let start = processStartTime(holder), start == grant.holderStart else { return false }
        }
        return true
    }

    /// Records a grant for `context`, valid `ttl` seconds, or while `holder` lives.
    @discardableResult
    public func grant(_ context: String, ttl: Int, method: String, holder: pid_t? = nil,
                      vault: UnlockedVault) throws -> StepUpGrant {
        guard StepUpGrants.isValidContext(context) else { throw FingersealError(.usage, Messages.badContext) }
        let now = clock.now()
        var grant = StepUpGrant(context: context, session: identity.session, boot: identity.boot, vaultID: vault.vaultID,
                                method: method, issuedAt: now,
                                expiresAt: now + Int64(min(max(ttl, 1), StepUpGrants.maxTTL)),
                                holder: holder.map { Int32($0) }, holderStart: holder.flatMap(processStartTime))
        if holder != nil && grant.holderStart == nil { throw FingersealError(.systemError, Messages.systemFailure("bind the grant to the command")) }
        grant.mac = try mac(grant, vault)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let bytes = Array(try encoder.encode(grant))
        try VaultStore.guarded("keep the step-up grant") {
            try asUser(account) {
                guard let directory = try grantsDirectory(create: true) else {
                    throw FingersealError(.unavailable, Messages.noRuntimeDirectory)
                }
                try directory.replace(fileName(context), with: bytes, mode: 0o600)
            }
        }
        return grant
    }

    /// Drops the grant for `context`; returns whether there was one.
    @discardableResult
    public func end(_ context: String) throws -> Bool {
        guard StepUpGrants.isValidContext(context) else { throw FingersealError(.usage, Messages.badContext) }
        return try VaultStore.guarded("drop the step-up grant") {
            try asUser(account) {
                guard let directory = try grantsDirectory(create: false), try directory.exists(fileName(context)) else { return false }
                try directory.remove(fileName(context))
                return true
            }
        }
    }

    /// The grants directory; nil when it (or, with `create`, the runtime directory) is missing.
    /// Refuses a runtime directory that is not memory-backed: grants never touch a disk.
    private func grantsDirectory(create: Bool) throws -> SafeDirectory? {
        guard let runtime = try? SafeDirectory(path: runtimeDirectory, owner: account.uid) else { return nil }
        guard runtime.isMemoryBacked else {
            // Nothing can have been kept there; only keeping one is an error to report.
            if create { throw FingersealError(.unavailable, Messages.runtimeNotTmpfs(runtimeDirectory)) }
            return nil
        }
        if create {
            return try runtime.makeSubdirectory(SessionFiles.directory, mode: 0o700)
                .makeSubdirectory(SessionFiles.grants, mode: 0o700)
        }
        return try runtime.subdirectory(SessionFiles.directory)?.subdirectory(SessionFiles.grants)
    }

    private func mac(_ grant: StepUpGrant, _ vault: UnlockedVault) throws -> String {
        let key = try vault.subkey(id: 3, context: "fsgrant1")
        return Encoding.hex(try GenericHash.hash(try grant.authenticatedBytes(), key: key))
    }
}
