import FoundationEssentials
import SystemKit
import Localization

/// Failure counters and locks, persisted in the vault directory (`lockout`). Not secret;
/// crash-safe like every vault file.
public struct LockoutState: Codable, Equatable, Sendable {
    /// Consecutive failed fingerprint matches.
    public var fingerFailures = 0
    /// Fingerprint unlock refused until a PIN or password success.
    public var fingerLocked = false
    /// Consecutive wrong PINs (counted before each check, so a killed check still counts).
    public var pinFailures = 0
    public var pinLastFailureAt: Int64? = nil
    /// PIN refused until a full sign-in.
    public var pinLocked = false

    public init() {}

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
        guard counts.contains(state.fingerFailures), counts.contains(state.pinFailures),
              (0...(Int64(1) << 40)).contains(state.pinLastFailureAt ?? 0) else {
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
    public static func pinWait(_ state: LockoutState, now: Int64) -> Int64? {
        guard let last = state.pinLastFailureAt else { return nil }
        let (ready, overflow) = last.addingReportingOverflow(pinDelay(afterFailures: state.pinFailures))
        if overflow { return pinDelay(afterFailures: state.pinFailures) }
        return now < ready ? ready - now : nil
    }
}

/// Reads and updates `LockoutState` under the vault lock.
public struct LockoutLedger: Sendable {
    public let store: VaultStore
    public let policy: LockoutPolicy
    public let clock: any Clock
    /// Where an engaged lock is logged (the audit trail records it too).
    public var auditSink: AuditSink

    public init(store: VaultStore, policy: LockoutPolicy, clock: any Clock = SystemClock(), auditSink: AuditSink = .syslog) {
        self.store = store
        self.policy = policy
        self.clock = clock
        self.auditSink = auditSink
    }

    /// The ledger with the limits `options` set (`max_fails`).
    public init(store: VaultStore, options: Options, clock: any Clock = SystemClock(), auditSink: AuditSink = .syslog) {
        self.init(store: store, policy: LockoutPolicy(maxFingerFailures: options.maxFails), clock: clock, auditSink: auditSink)
    }

    /// Records that a lock engaged. After the ledger's own update, never under its lock (the
    /// trail takes the vault lock itself); failures are logged, never thrown.
    private func recordLockout(_ method: UnlockMethod) {
        AuditTrail(store: store, clock: clock, sink: auditSink).record(.lockout(method), vault: nil)
    }

    /// The current state; throws `.vaultUnusable` if the record is damaged.
    public func current() throws -> LockoutState {
        try store.withDirectory(exclusive: false) { try read($0) } ?? LockoutState()
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
        if (try? current())?.pinLocked == true { recordLockout(.pin) }
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

    /// A correct PIN: clears the PIN counters and the fingerprint lock.
    public func pinSucceeded() throws {
        try modify { state in state = LockoutState() }
    }

    /// A failed match; returns the state after counting it.
    @discardableResult
    public func fingerFailed() throws -> LockoutState {
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

    /// A full sign-in clears every lock.
    public func clearAll() throws {
        try modify { state in state = LockoutState() }
    }

    @discardableResult
    private func modify(_ change: (inout LockoutState) throws -> Void) throws -> LockoutState {
        guard let result = try store.withDirectory(exclusive: true, { directory -> LockoutState in
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
