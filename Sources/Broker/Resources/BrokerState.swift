import FingersealCore
import IdentityClient
import SodiumKit
import Glibc
import SystemKit

/// What every request shares: the settings, the store, the session registry, and the live
/// resources the broker owns (the reader, the TPM connection), which the core never holds.
final class BrokerState: @unchecked Sendable {
    let settings: BrokerSettings
    let sessions = SessionRegistry()
    let reader = ReaderTurns()
    /// The TPM connection kept between vault operations, lent to every store made here.
    let tpm = HeldTPM()
    let bookkeeping = Bookkeeping()
    /// The secure memory `seal` and `reveal` payloads may hold, per user and in all.
    let payloads = PayloadBudget()
    /// Proofs signed per account (`ProofCommand`): each is a TPM command.
    let proofBudget = ProofBudget()
    /// Argon2id computations at once (64 MiB each): as many as there are cores to run them on
    /// here, and no more whatever the number of PIN checks asked for.
    let pinChecks = WorkSlots(count: 2)
    /// The identity providers' signing keys, shared by every request (fetched again for an
    /// unknown key id, at most once a minute).
    let jwks = JWKSCache()
    /// Attempts per account written one by one, the rest counted (the audit trail's flood
    /// guard; reached through every store made here).
    let attemptLimiter = AttemptLimiter()
    /// The configuration file as last parsed, while it stays the same file.
    let configuration = SystemConfigCache()
    /// Touch to sign in: the budget of fingers nobody matched (kept in the store), the
    /// gallery's order (`IdentifyHistory`).
    let identifyHistory: IdentifyHistory
    /// This boot, as the kernel names it (the password rule's "after a restart"): read once.
    let bootID: String

    init(settings: BrokerSettings) throws {
        self.settings = settings
        // The store's root: root's, 0700 (systemd's StateDirectory makes it so too).
        try createDirectories(settings.stateDirectory, mode: 0o700)
        // Refused when it is a link, not the broker's, or writable by others.
        _ = try SafeDirectory(path: settings.stateDirectory, owner: geteuid())
        guard chmod(settings.stateDirectory, 0o700) == 0 else {
            throw BrokerStartError("cannot set the mode of \(settings.stateDirectory)")
        }
        identifyHistory = IdentifyHistory(directory: settings.stateDirectory)
        BrokerState.warnIfLockedMemoryIsShort()
        bootID = BrokerState.readBootID(settings.bootIDPath)
    }

    /// The kernel's boot id; where it cannot be read, one of this start's own, so a restart
    /// of the broker counts as one of the machine (the password is asked for again, never
    /// spared).
    static func readBootID(_ path: String) -> String {
        if let text = Caller.readSmall(path, keepLines: false, limit: 128) {
            let id = text.filter { $0.isHexDigit }
            if id.count == 32 { return id.lowercased() }
        }
        Syslog.log(.warning, "fingersealed: cannot read the boot id from \(path): a restart of the broker counts as a restart")
        return "start-" + Encoding.hex((try? Sodium.randomBytes(8)) ?? [0])
    }

    /// libsodium locks its memory where it can and says nothing where it cannot: past
    /// RLIMIT_MEMLOCK, payloads and keys could go to swap. Said once, at start (the unit sets
    /// LimitMEMLOCK=256M; root outside it is not limited).
    static func warnIfLockedMemoryIsShort() {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(__RLIMIT_MEMLOCK.rawValue), &limit) == 0 else { return }
        let needed = rlim_t(PayloadBudget.total + (8 << 20))
        if limit.rlim_cur != rlim_t.max && limit.rlim_cur < needed && !hasIPCLock() {
            Syslog.log(.warning, "fingersealed: locked memory is limited to \(limit.rlim_cur >> 20) MiB (needed: \(needed >> 20) MiB): "
                       + "secrets beyond it may be swapped out. Raise LimitMEMLOCK= in fingerseal.service.")
        }
    }

    /// CAP_IPC_LOCK in the effective set (root outside the unit's bounding set): mlock is not limited then.
    private static func hasIPCLock() -> Bool {
        guard let status = Caller.readSmall("/proc/self/status", keepLines: true, limit: 16384) else { return false }
        for line in status.split(separator: "\n") where line.hasPrefix("CapEff:") {
            let mask = UInt64(line.dropFirst("CapEff:".count).filter { !$0.isWhitespace }, radix: 16) ?? 0
            return mask & (1 << 14) != 0 // CAP_IPC_LOCK
        }
        return false
    }

    /// The configuration's TPM policy on the TPM connection the broker keeps (for a key made
    /// before its account's store exists: a first sign-in that makes the account).
    func tpmPolicy(_ options: Options) -> TPMPolicy {
        var policy = options.tpmPolicy
        policy.keys = tpm
        return policy
    }

    /// `account`'s store under `policy`, on the TPM connection the broker keeps; `read`: what
    /// the request has read of the vault already (one per request: `Call.vaultRead`).
    func store(for account: UserAccount, tpm policy: TPMPolicy, read: RequestRead? = nil) -> VaultStore {
        var policy = policy
        policy.keys = tpm
        var store = VaultStore(location: .broker(stateDirectory: settings.stateDirectory, account: account), tpm: policy,
                               attemptLimiter: attemptLimiter, auditSink: .brokerLog)
        store.requestRead = read
        return store
    }

    /// Writes counts of attempts the limiter held back (windows that ended, or all of them
    /// when the broker stops), each to its account's trail.
    func recordAttemptCounts(_ ended: [AttemptLimiter.Ended]) {
        guard !ended.isEmpty else { return }
        let tpm = ((try? systemOptions())?.0 ?? Options()).tpmPolicy
        for count in ended { AuditTrail(store: store(for: count.account, tpm: tpm)).record(count.tally) }
    }

    /// The system configuration, opened and checked for each request so an edit applies at
    /// once; parsed again only when the file is another one or changed (`SystemConfigCache`).
    func systemOptions() throws -> (Options, [String]) {
        try Options.loadSystem(path: settings.configPath, cache: configuration)
    }
}
