import FingersealWire
import FoundationEssentials
import Localization
import SystemKit

/// One applicant's failure counters and locks.
public struct LockoutCounters: Codable, Equatable, Sendable {
    /// Consecutive failed fingerprint matches.
    public var fingerFailures = 0
    /// Fingerprint unlock refused until a PIN or password success.
    public var fingerLocked = false
    /// Consecutive wrong PINs (counted before each check, so a killed check still counts).
    public var pinFailures = 0
    public var pinLastFailureAt: Int64? = nil
    /// PIN refused until a full sign-in.
    public var pinLocked = false
    /// When this applicant last failed (which of several to forget first).
    public var lastFailureAt: Int64? = nil

    public init() {}

    var isClear: Bool { fingerFailures == 0 && !fingerLocked && pinFailures == 0 && !pinLocked }
}

/// Failure counters and locks, persisted in the vault directory (`lockout`). Not secret;
/// crash-safe like every vault file.
///
/// The owner's own tries (their sessions, and the hosts of the system at the seat: a login
/// screen, login on a console) are counted in the top-level fields, as they always were.
/// Another account's tries against this vault (user M running su or another setuid host
/// for this user) are counted for that account alone in `others`, so M's wrong scans or
/// PINs lock M out of this vault, never the owner.
public struct LockoutState: Codable, Equatable, Sendable {
    public var fingerFailures = 0
    public var fingerLocked = false
    public var pinFailures = 0
    public var pinLastFailureAt: Int64? = nil
    public var pinLocked = false
    /// Other accounts' counters, by uid (absent in records written before there were any).
    public var others: [String: LockoutCounters]? = nil
    /// Wrong account passwords given to the broker's own check (`fingerseal-verify`), counted
    /// before each check like the PIN's, and when the last was.
    public var passwordFailures: Int? = nil
    public var passwordLastFailureAt: Int64? = nil
    /// When the broker last checked the account password itself, and in which boot
    /// (`PasswordRule`); absent: not since this record began.
    public var passwordSeen: PasswordSeen? = nil

    /// At most this many other accounts are remembered; the one that failed longest ago goes.
    static let maxOthers = 64

    public init() {}

    /// The counters of `applicant` (nil: the owner).
    public func counters(for applicant: UInt32?) -> LockoutCounters {
        guard let applicant else {
            var owner = LockoutCounters()
            owner.fingerFailures = fingerFailures
            owner.fingerLocked = fingerLocked
            owner.pinFailures = pinFailures
            owner.pinLastFailureAt = pinLastFailureAt
            owner.pinLocked = pinLocked
            return owner
        }
        return others?[String(applicant)] ?? LockoutCounters()
    }

    mutating func setCounters(_ counters: LockoutCounters, for applicant: UInt32?) {
        guard let applicant else {
            fingerFailures = counters.fingerFailures
            fingerLocked = counters.fingerLocked
            pinFailures = counters.pinFailures
            pinLastFailureAt = counters.pinLastFailureAt
            pinLocked = counters.pinLocked
            return
        }
        var all = others ?? [:]
        all[String(applicant)] = counters.isClear ? nil : counters
        if all.count > LockoutState.maxOthers,
           let oldest = all.min(by: { ($0.value.lastFailureAt ?? 0) < ($1.value.lastFailureAt ?? 0) })?.key {
            all[oldest] = nil
        }
        others = all.isEmpty ? nil : all
    }

    static func decode(_ body: [UInt8]) throws -> LockoutState {
        let state: LockoutState
        do {
            state = try JSONDecoder().decode(LockoutState.self, from: Data(body))
        } catch {
            throw FingersealError(.vaultUnusable, Messages.vaultDamaged(VaultFiles.lockout, tr("its contents cannot be read")))
        }
        // Counters and times outside these ranges are never written by fingerseal; refusing
        // them keeps every later sum far from overflow.
        let counts = 0...1_000_000
        let times = Int64(0)...(Int64(1) << 40)
        let all = [state.counters(for: nil)] + Array((state.others ?? [:]).values)
        guard (state.others?.count ?? 0) <= maxOthers, counts.contains(state.passwordFailures ?? 0),
              state.passwordSeen?.isPlausible ?? true,
              times.contains(state.passwordLastFailureAt ?? 0), (state.others ?? [:]).keys.allSatisfy({ UInt32($0) != nil }),
              all.allSatisfy({ counts.contains($0.fingerFailures) && counts.contains($0.pinFailures)
                  && times.contains($0.pinLastFailureAt ?? 0) && times.contains($0.lastFailureAt ?? 0) }) else {
            throw FingersealError(.vaultUnusable, Messages.vaultDamaged(VaultFiles.lockout, tr("its counters are out of range")))
        }
        return state
    }

    /// What a damaged record is read as: fingerprint locked, PIN delays in force. Safe, and
    /// a PIN success writes a clean record.
    static let damaged: LockoutState = {
        var state = LockoutState()
        state.fingerLocked = true
        state.pinFailures = LockoutPolicy.pinFreeTries
        return state
    }()
}

/// The rules over `LockoutState`.
public struct LockoutPolicy: Sendable {
    /// Failed matches before fingerprint unlock locks (`max_fails`).
    public var maxFingerFailures: Int
    /// Wrong PINs that cost no wait.
    public static let pinFreeTries = 3
    /// Wrong PINs before the PIN locks until a full sign-in.
    public static let pinMaxFailures = 10

    public init(maxFingerFailures: Int = 5) {
        self.maxFingerFailures = maxFingerFailures
    }

    /// Seconds a caller must wait after the last wrong PIN: none for the first three, then
    /// 5 s doubling up to 5 minutes.
    public static func pinDelay(afterFailures failures: Int) -> Int64 {
        guard failures >= pinFreeTries else { return 0 }
        let doublings = min(failures - pinFreeTries, 6)
        return min(5 << Int64(doublings), 300)
    }

    /// Seconds until a PIN may be tried, or nil when it may be tried now.
    public static func pinWait(_ state: LockoutCounters, now: Int64) -> Int64? {
        guard let last = state.pinLastFailureAt else { return nil }
        let (ready, overflow) = last.addingReportingOverflow(pinDelay(afterFailures: state.pinFailures))
        if overflow { return pinDelay(afterFailures: state.pinFailures) }
        return now < ready ? ready - now : nil
    }
}

/// Reads and updates `LockoutState` under the vault lock, for one applicant: the owner
/// (`applicant` nil), or another account trying this vault.
public struct LockoutLedger: Sendable {
    public let store: VaultStore
    public let policy: LockoutPolicy
    public let clock: any Clock
    /// Where an engaged lock is logged (the audit trail records it too).
    public var auditSink: AuditSink
    /// Whose tries are counted: nil, the owner's; a uid, that other account's alone.
    public let applicant: UInt32?

    public init(store: VaultStore, policy: LockoutPolicy, clock: any Clock = SystemClock(), auditSink: AuditSink? = nil,
                applicant: UInt32? = nil) {
        self.store = store
        self.policy = policy
        self.clock = clock
        self.auditSink = auditSink ?? store.auditSink
        self.applicant = applicant == store.location.account.uid ? nil : applicant
    }

    /// The ledger with the limits `options` set (`max_fails`).
    public init(store: VaultStore, options: Options, clock: any Clock = SystemClock(), auditSink: AuditSink? = nil,
                applicant: UInt32? = nil) {
        self.init(store: store, policy: LockoutPolicy(maxFingerFailures: options.maxFails), clock: clock, auditSink: auditSink,
                  applicant: applicant)
    }

    /// Records that a lock engaged. After the ledger's own update, never under its lock (the
    /// trail takes the vault lock itself); failures are logged, never thrown. Another
    /// account's lock is only logged: the owner's trail would read as their own lock.
    private func recordLockout(_ method: UnlockMethod) {
        if let applicant {
            auditSink.log(.notice, "audit: user \(store.location.account.name): \(method.rawValue) tries by uid \(applicant) "
                          + "are locked for this vault (the owner's own are not)")
            return
        }
        AuditTrail(store: store, clock: clock, sink: auditSink).record(.lockout(method), vault: nil)
    }

    /// The whole record; throws `.vaultUnusable` if it is damaged.
    public func current() throws -> LockoutState {
        try store.withDirectory(exclusive: false) { try read($0) } ?? LockoutState()
    }

    /// This applicant's counters.
    public func counters() throws -> LockoutCounters {
        try current().counters(for: applicant)
    }

    /// Checks that a PIN may be tried now and counts the try before it is made.
    public func beginPINAttempt() throws {
        try modify { state in
            if state.pinLocked { throw FingersealError(.lockedOut, Messages.pinLocked) }
            if let wait = LockoutPolicy.pinWait(state, now: clock.now()) {
                throw FingersealError(.lockedOut, Messages.pinWait(wait))
            }
            state.pinFailures = min(state.pinFailures + 1, 1_000_000)
            state.pinLastFailureAt = clock.now()
            if state.pinFailures >= LockoutPolicy.pinMaxFailures { state.pinLocked = true }
        }
    }

    /// A PIN was checked and was wrong (the try was counted in `beginPINAttempt`): when that
    /// try locked the PIN, the lockout is recorded. (Recorded here, not when the try was
    /// counted: a correct last PIN clears the lock at once, and is no lockout.)
    public func pinRejected() {
        if (try? counters())?.pinLocked == true { recordLockout(.pin) }
    }

    /// The try counted by `beginPINAttempt` was never checked (the TPM's lockout refused it
    /// unseen, which only happens to a PIN slot sealed inside that lockout, before issue 19):
    /// it is given back, so a person waiting out the TPM's lockout with the right PIN does not
    /// walk into fingerseal's own lock.
    public func pinNotChecked() {
        _ = try? modify { state in
            state.pinFailures = max(state.pinFailures - 1, 0)
            if state.pinFailures < LockoutPolicy.pinMaxFailures { state.pinLocked = false }
        }
    }

    /// A correct PIN: clears this applicant's PIN counters and fingerprint lock.
    public func pinSucceeded() throws {
        try modify { state in state = LockoutCounters() }
    }

    /// A failed match; returns this applicant's counters after counting it.
    @discardableResult
    public func fingerFailed() throws -> LockoutCounters {
        var engaged = false
        let state = try modify { state in
            state.fingerFailures = min(state.fingerFailures + 1, 1_000_000)
            if state.fingerFailures >= policy.maxFingerFailures && !state.fingerLocked {
                state.fingerLocked = true
                engaged = true
            }
        }
        if engaged { recordLockout(.finger) }
        return state
    }

    public func fingerSucceeded() throws {
        try modify { state in state.fingerFailures = 0 }
    }

    /// A full sign-in clears every lock, the other accounts' too.
    public func clearAll() throws {
        try modifyRecord { state in state = LockoutState() }
    }

    /// Checks that the account password may be tried now, and counts the try before it is
    /// made: the broker's check is no faster an oracle than a login prompt (3 free tries,
    /// then the PIN's growing delays; never a lock, since the password is how a forgotten PIN
    /// is replaced). Works before there is a vault (`pin set`).
    public func beginPasswordAttempt() throws {
        try modifyRecord(create: true) { state in
            let failures = state.passwordFailures ?? 0
            if let last = state.passwordLastFailureAt {
                let ready = last + LockoutPolicy.pinDelay(afterFailures: failures)
                if clock.now() < ready { throw FingersealError(.lockedOut, Messages.accountPasswordWait(ready - clock.now())) }
            }
            state.passwordFailures = min(failures + 1, 1_000_000)
            state.passwordLastFailureAt = clock.now()
        }
    }

    /// The try counted by `beginPasswordAttempt` was never checked (the person cancelled before
    /// answering): it is given back, so a cancel never costs a try.
    public func passwordNotChecked() {
        _ = try? modifyRecord { state in
            state.passwordFailures = max((state.passwordFailures ?? 0) - 1, 0)
        }
    }

    /// The account password was right: its count starts again, and (`boot`, the kernel's
    /// boot id) the password rule counts from now.
    public func passwordSucceeded(boot: String? = nil) {
        _ = try? modifyRecord(create: boot != nil) { state in
            state.passwordFailures = nil
            state.passwordLastFailureAt = nil
            if let boot { state.passwordSeen = PasswordSeen(boot: boot, at: clock.now()) }
        }
    }

    /// Changes this applicant's counters (a failure stamps when).
    @discardableResult
    private func modify(_ change: (inout LockoutCounters) throws -> Void) throws -> LockoutCounters {
        var changed = LockoutCounters()
        try modifyRecord { state in
            var counters = state.counters(for: applicant)
            let before = counters
            try change(&counters)
            if counters.fingerFailures > before.fingerFailures || counters.pinFailures > before.pinFailures {
                counters.lastFailureAt = clock.now()
            }
            state.setCounters(counters, for: applicant)
            changed = counters
        }
        return changed
    }

    @discardableResult
    private func modifyRecord(create: Bool = false, _ change: (inout LockoutState) throws -> Void) throws -> LockoutState {
        guard let result = try store.withDirectory(create: create, exclusive: true, { directory -> LockoutState in
            var state: LockoutState
            do {
                state = try read(directory)
            } catch let error as FingersealError where error.outcome == .vaultUnusable {
                state = .damaged
            }
            let before = state
            try change(&state)
            if state != before { try write(state, directory) }
            return state
        }) else { throw FingersealError(.noVault, Messages.noVault) }
        return result
    }

    func read(_ directory: SafeDirectory) throws -> LockoutState {
        guard let bytes = try VaultStore.guarded(.readLockout, {
            try directory.read(VaultFiles.lockout, sizeLimit: VaultFiles.lockoutLimit)
        }) else { return LockoutState() }
        return try LockoutState.decode(try Container.decode(.lockout, bytes, file: VaultFiles.lockout))
    }

    private func write(_ state: LockoutState, _ directory: SafeDirectory) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let bytes = try Container.encode(.lockout, body: Array(try encoder.encode(state)))
        try VaultStore.guarded(.saveLockout) { try directory.replace(VaultFiles.lockout, with: bytes) }
    }
}
