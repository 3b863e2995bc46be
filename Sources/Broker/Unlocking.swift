import CLinux
import CurlKit
import FingerprintFlows
import FingersealCore
import FprintKit
import Glibc
import IdentityClient
import JOSEKit
import SodiumKit
import SystemKit
import Localization

/// The unlock steps every flow shares (PAM, unlock, token, step-up): one scan against the
/// user's prints through the broker's reader, and one refresh of the sealed sign-in.
enum Unlocking {
    /// One verification through the broker's reader (its turn, its device), nothing audited.
    /// A cancel the reader reports counts as `.cancelled` only when it was the client's (a
    /// `cancel` message or a hang-up); otherwise it is `.unavailable`.
    static func verify(_ call: Call, store: VaultStore, ledger: LockoutLedger, settings: ScanSettings) throws -> Fingerprint.Match {
        do {
            return try call.state.reader.withReader(call, deviceID: call.value("--device")) { reader, turn in
                try Fingerprint.verify(store: store, ledger: ledger, reader: reader, settings: settings,
                                       prompter: call.conversation, cancelFDs: [call.conversation.cancelFD, turn.stopFD],
                                       afterMatch: { call.after.add($0) })
            }
        } catch let error as FingersealError where error.outcome == .cancelled {
            if call.conversation.takeCancel() { throw error }
            throw FingersealError(.unavailable, error.message, detail: "the reader cancelled the scan")
        }
    }

    /// Refreshes the sealed sign-in: the rotated refresh token is sealed before the access
    /// token is returned. Never throws: a token problem is a step the policy judges.
    static func refresh(_ call: Call, _ vault: UnlockedVault) -> (TokenStep, AccessToken?) {
        do {
            let result = try chainRefresh(call, vault)
            if case let .refreshed(tokens) = result { return (.refreshed, AccessToken(tokens, issuedAt: SystemClock().now())) }
            return (result.step, nil)
        } catch {
            return (.failed, nil)
        }
    }

    /// The refresh itself, with the identity provider the vault names; throws vault errors.
    /// Each answer's identity is checked against who signed in (and, with `user_claim`,
    /// against the Linux account): another account ends the chain.
    static func chainRefresh(_ call: Call, _ vault: UnlockedVault) throws -> TokenChain.Result {
        let options = call.options
        return try TokenChain.refresh(vault, offlineGrace: options.offlineGrace, makeClient: OAuthClient.factory(options),
                                      identity: identityAfterRefresh(call))
    }

    /// What a refresh's answer says of who is signed in. With `user_claim`, every refresh is
    /// checked (the ID token, else userinfo: one more request); without it, only an ID token
    /// that came with the answer is (no request beyond a JWKS fetch now and then).
    static func identityAfterRefresh(_ call: Call) -> TokenChain.IdentityCheck {
        let options = call.options
        let user = call.account.name
        let cache = call.state.jwks
        return { tokens, provider, earlier throws(TokenFailure) in
            guard options.userClaim != nil || tokens.idToken != nil else { return .unchanged }
            guard let claims = try IdentityVerification.verifiedIdentity(tokens: tokens, provider: provider, nonce: nil,
                                                                  http: HTTPClient(options: options),
                                                                  cache: cache, now: SystemClock().now()) else {
                return .unchanged
            }
            let later = SignedInIdentity(claims)
            if let earlier, !IdentityBinding.isSameAccount(later, as: earlier) { return .otherAccount }
            // With user_claim, the answer must still name this user (a sign-in from before
            // the binding, or a provider that renamed the account, included).
            let verdict: IdentityBinding.Verdict
            do { verdict = try IdentityBinding.check(later, user: user, options: options) } catch {
                throw .badConfiguration(tr("the user map cannot be read"))
            }
            guard verdict == .matches else { return .otherAccount }
            if earlier == later { return .unchanged }
            return .learnt(later)
        }
    }
}

extension SignedInIdentity {
    init(_ claims: IDTokenClaims) {
        self.init(subject: claims.subject, preferredUsername: claims.preferredUsername, email: claims.email)
    }
}

// MARK: - The command line's unlock (unlock, token, step-up, reveal): a finger or the PIN

/// How an unlock went: the vault, and which way it was opened.
struct Unlocked {
    let vault: UnlockedVault
    let method: UnlockMethod
    let finger: String?
}

extension Unlocking {
    /// The PIN, asked through the client (its terminal, or its --pin-fd). Nothing typed is a
    /// mistake, not a wrong PIN.
    static func askPIN(_ call: Call, prompt: String = Messages.enterPIN) throws -> SecureBytes {
        guard let pin = try call.conversation.askSecret(.pin, prompt) else {
            // In a PAM conversation an empty answer means "the password instead".
            if call.request.pam != nil { throw FingersealError(.cancelled, Messages.cancelled, detail: "PIN skipped") }
            throw FingersealError(.usage, Messages.pinEmptyInput)
        }
        return pin
    }

    /// A new PIN, checked against the rules; asked twice unless the client answers from a
    /// descriptor (--pin-fd), where a typing mistake cannot happen.
    static func askNewPIN(_ call: Call) throws -> SecureBytes {
        guard let pin = try call.conversation.askSecret(.newPIN, Messages.enterNewPIN) else {
            throw FingersealError(.usage, Messages.pinEmptyInput)
        }
        try PINRules.check(pin)
        if !call.has("--pin-fd") {
            guard let again = try call.conversation.askSecret(.newPIN, Messages.repeatNewPIN) else {
                throw FingersealError(.usage, Messages.pinEmptyInput)
            }
            guard pin.isEqual(to: again) else { throw FingersealError(.usage, Messages.pinMismatch) }
        }
        return pin
    }

    /// The vault opened with the PIN; lockout rules apply (the try is counted first).
    static func withPIN(_ call: Call, store: VaultStore, prompt: String = Messages.enterPIN) throws -> UnlockedVault {
        guard try Vault.status(store) != nil else { throw FingersealError(.noVault, Messages.noVault) }
        let pin = try askPIN(call, prompt: prompt)
        do {
            return try Vault.unlock(store, pin: call.pinKeyslot(pin), ledger: call.ledger(store))
        } catch let error as FingersealError {
            // The CLI shows a command's error itself; a PAM host shows only what is sent.
            if call.request.pam != nil { call.conversation.error(error.message) }
            throw error
        }
    }

    /// What the finger's turn came to: an unlock, or why the next way in is needed.
    enum FingerTurn {
        case unlocked(Unlocked)
        case fallback(FingersealError)
    }

    /// When the PIN may open the vault: never (a PAM stack without `pin`), when the finger
    /// cannot (the CLI, and PAM with `pin`), or only the PIN (`--pin`, `--pin-fd`).
    enum PINUse { case never, fallback, only }

    /// The unlock, for every flow (PAM, unlock, token, step-up, reveal): a finger, or the PIN.
    /// With `answersWhileScanning` the PIN may be typed while the reader waits (the first to
    /// succeed wins and stops the other; Enter alone goes straight to the PIN); otherwise the
    /// scan comes first and the PIN after it fails. Without a reader, an enrolled finger, or
    /// with the finger locked, the PIN is asked at once. A cancel ends it. Failed scans and
    /// the fallbacks are audited here; the caller records the unlock or its failure. Without
    /// the PIN, what stopped the finger is thrown.
    /// A PIN unlock also confirms fprintd's enrolled set where it changed.
    static func open(_ call: Call, store: VaultStore, status: VaultStatus, pin use: PINUse) throws -> Unlocked {
        let unlocked = try fingerThenPIN(call, store: store, status: status, pin: use)
        if unlocked.method == .pin { confirmFprintdSet(call, unlocked.vault) }
        return unlocked
    }

    private static func fingerThenPIN(_ call: Call, store: VaultStore, status: VaultStatus, pin use: PINUse) throws -> Unlocked {
        let ledger = call.ledger(store)
        let trail = AuditTrail(store: store)
        func pinInstead(after failure: FingersealError?) throws -> Unlocked {
            guard use != .never, status.pinSet else {
                throw failure ?? FingersealError(.notEnrolled, Messages.notEnrolled)
            }
            if let failure { trail.record(.fallback(reason: failure.auditReason), vault: nil) }
            return Unlocked(vault: try withPIN(call, store: store), method: .pin, finger: nil)
        }
        if use == .only { return try pinInstead(after: nil) }
        if status.fingers.isEmpty && status.fprintd?.fingers.isEmpty ?? true {
            // Nothing to scan: the PIN, or (PAM without it) on to the password, silently.
            if use == .fallback { return try pinInstead(after: nil) }
            throw FingersealError(.notEnrolled, Messages.notEnrolled)
        }
        if status.lockout.counters(for: call.applicant).fingerLocked {
            call.conversation.error(Messages.fingerLocked)
            return try pinInstead(after: FingersealError(.lockedOut, Messages.fingerLocked))
        }
        var settings = try call.scanSettings()
        let turn: FingerTurn
        if (call.request.answersWhileScanning || call.asksCombined) && use == .fallback {
            settings.cancelHint = call.asksCombined ? .fingerOrPINForPAM : .fingerOrPIN
            turn = try fingerWhilePIN(call, store: store, ledger: ledger, settings: settings)
        } else {
            turn = try fingerFirst(call, store: store, ledger: ledger, settings: settings)
        }
        switch turn {
        case let .unlocked(unlocked): return unlocked
        // In a PAM conversation Enter alone means the password, not the PIN asked again.
        case let .fallback(failure) where failure.outcome == .cancelled && call.request.pam != nil: throw failure
        case let .fallback(failure): return try pinInstead(after: failure)
        }
    }

    /// A vault just opened with the PIN: where fprintd holds the fingers and their set
    /// changed, the PIN confirms the new set (said once). Never fails the unlock.
    static func confirmFprintdSet(_ call: Call, _ vault: UnlockedVault, announce: Bool = true) {
        do {
            guard let current = try call.state.reader.fprintdSet(call) else { return }
            let bound = try vault.fprintdSet()
            guard Fingerprint.fprintdSetChanged(current, bound: bound) else { return }
            try vault.update {
                try $0.bindFprintd(FprintdSet(fingers: current.fingers, digest: current.digest,
                                              enrolledHere: bound?.enrolledHere ?? []))
            }
            AuditTrail(store: vault.store).record(.fprintdSetConfirmed(fingers: current.fingers.count), vault: vault)
            if announce && !current.fingers.isEmpty {
                call.conversation.info(bound == nil ? Messages.fingersBound : Messages.fingersConfirmed)
            }
        } catch {
            Syslog.log(.notice, "fingersealed: fprintd's enrolled set for user=\(call.account.name) not confirmed: \(error)")
        }
    }

    /// The command line's unlock: the PIN alone with `--pin` or `--pin-fd`.
    static func fingerOrPIN(_ call: Call, store: VaultStore) throws -> Unlocked {
        guard let status = try Vault.status(store) else { throw FingersealError(.noVault, Messages.noVault) }
        return try open(call, store: store, status: status, pin: call.has("--pin-fd") || call.has("--pin") ? .only : .fallback)
    }

    /// The scan alone; what comes next is the caller's, unless the client cancelled.
    static func fingerFirst(_ call: Call, store: VaultStore, ledger: LockoutLedger, settings: ScanSettings) throws -> FingerTurn {
        do {
            let match = try verify(call, store: store, ledger: ledger, settings: settings)
            return .unlocked(Unlocked(vault: match.vault, method: .finger, finger: match.finger))
        } catch let error as FingersealError {
            if error.outcome == .cancelled { throw error }
            if [.noMatch, .triesExhausted].contains(error.outcome) {
                AuditTrail(store: store).record(.failure(action: "fingerprint scan", reason: error.outcome.rawValue), vault: nil)
            }
            // What the person must hear; a PAM host goes on quietly when there is no reader.
            // The TPM's states are said everywhere: nothing else explains them.
            if [.noMatch, .triesExhausted, .lockedOut, .timedOut, .fingersChanged].contains(error.outcome) || error.cause != nil {
                call.conversation.error(error.message)
            } else if call.request.pam == nil {
                call.conversation.info(error.message)
            }
            return .fallback(error)
        }
    }

    /// The scan on a thread of its own while the client takes a PIN: both in the reader's
    /// turn, and the scan always stopped and waited for before the turn ends.
    static func fingerWhilePIN(_ call: Call, store: VaultStore, ledger: LockoutLedger,
                               settings: ScanSettings) throws -> FingerTurn {
        let raced: Result<FingerTurn, any Error>
        do {
            raced = try call.state.reader.withReader(call, deviceID: call.value("--device")) { reader, turn in
                Result { try race(call, reader: reader, turn: turn, store: store, ledger: ledger, settings: settings) }
            }
        } catch let error as FingersealError where [.noReader, .unavailable, .remoteSession].contains(error.outcome) {
            // No reader, or another request kept it: the PIN at once.
            call.conversation.info(error.message)
            return .fallback(error)
        }
        return try raced.get()
    }

    private static func race(_ call: Call, reader: FingerReader, turn: ReaderGate.Turn, store: VaultStore, ledger: LockoutLedger,
                             settings: ScanSettings) throws -> FingerTurn {
        let conversation = call.conversation
        let job = try BackgroundScan()
        let scanReader = UncheckedReader(reader)
        let stopFD = turn.stopFD
        let started = job.start { cancelFD in
            try Fingerprint.verify(store: store, ledger: ledger, reader: scanReader.reader, settings: settings,
                                   prompter: conversation, cancelFDs: [cancelFD, stopFD])
        }
        guard started else { throw FingersealError(.systemError, Messages.systemFailure(.startScan)) }
        func matched(_ result: Result<Fingerprint.Match, any Error>?) -> FingerTurn? {
            guard case let .success(match)? = result else { return nil }
            return .unlocked(Unlocked(vault: match.vault, method: .finger, finger: match.finger))
        }
        while true {
            let answer: Conversation.AnswerOrWake
            do {
                answer = try conversation.ask(Ask(.secret, .pin, call.asksCombined ? Messages.fingerOrPINPrompt : "",
                                                  whileScanning: true), wakingOn: [job.done.rawValue])
            } catch {
                // A cancel (or a client gone, or no answer in time): stop the scan first.
                _ = job.stop()
                throw error
            }
            switch answer {
            case .woken:
                // The scan ended: a match wins; otherwise the PIN is the fallback.
                let result = job.wait()
                if let won = matched(result) { return won }
                guard case let .failure(error as FingersealError)? = result else {
                    return .fallback(FingersealError(.systemError, Messages.systemFailure(.scan)))
                }
                if turn.preempted {
                    // The reader went to a sign-in at this computer: the PIN is still asked.
                    conversation.info(Messages.readerNeededElsewhere)
                    return .fallback(FingersealError(.unavailable, Messages.readerNeededElsewhere))
                }
                if error.outcome == .cancelled { throw error }
                conversation.info(error.message)
                return .fallback(error)
            case .skipped:
                if let won = matched(job.stop()) { return won }
                return .fallback(FingersealError(.cancelled, Messages.cancelled))
            case let .secret(pin):
                if pin.count == 0 {
                    if let won = matched(job.stop()) { return won }
                    return .fallback(FingersealError(.cancelled, Messages.cancelled))
                }
                do {
                    let vault = try Vault.unlock(store, pin: call.pinKeyslot(pin), ledger: ledger)
                    if let won = matched(job.stop()) { return won }
                    return .unlocked(Unlocked(vault: vault, method: .pin, finger: nil))
                } catch let error as FingersealError where error.outcome == .wrongPIN {
                    // The reader keeps waiting; the PIN may be typed again.
                    conversation.error(error.message)
                } catch {
                    _ = job.stop()
                    // A PAM host shows only what is sent: the TPM's states need saying.
                    if call.request.pam != nil, let error = error as? FingersealError, error.cause != nil {
                        conversation.error(error.message)
                    }
                    throw error
                }
            case .text:
                _ = job.stop()
                throw FingersealError(.usage, Messages.badAnswer)
            }
        }
    }

    /// Unlocks (finger or PIN) and refreshes the sealed sign-in, for `unlock` and `token`.
    /// The fresh access token is kept for the caller's login session; offline within the
    /// grace, the session's token is used while it is valid (`cached`).
    static func unlockAndRefresh(_ call: Call) throws -> (unlocked: Unlocked, step: TokenStep, token: AccessToken?, cached: Bool) {
        let store = call.store
        // Say "sign in first" before asking for a finger that could not help.
        guard let status = try Vault.status(store) else { throw FingersealError(.noVault, Messages.noVault) }
        switch status.signIn {
        case .none: throw FingersealError(.signInRequired, Messages.notSignedIn)
        case .required: throw FingersealError(.signInRequired, Messages.signInRequired)
        case .active: break
        }
        let trail = AuditTrail(store: store)
        let unlocked = try recordingFailure("unlock", trail) { try fingerOrPIN(call, store: store) }
        trail.record(.unlock(method: unlocked.method, via: .cli), vault: unlocked.vault)
        let result = try chainRefresh(call, unlocked.vault)
        let now = SystemClock().now()
        if let fresh = try recordingFailure("token refresh", trail, vault: unlocked.vault, { try result.checked() }) {
            let token = AccessToken(fresh, issuedAt: now)
            call.state.sessions.setToken(call.session, token)
            return (unlocked, result.step, token, false)
        }
        if let held = call.state.sessions.token(call.session), held.isValid(at: now) {
            return (unlocked, result.step, held, true)
        }
        return (unlocked, result.step, nil, false)
    }
}

/// A fingerprint scan on a thread of its own, so the client can send a PIN meanwhile. The
/// result is written before `done` is signalled and read only after it is seen (the eventfd
/// write and read order the two threads).
final class BackgroundScan: @unchecked Sendable {
    let done: FileDescriptor
    private let cancel: FileDescriptor
    private var result: Result<Fingerprint.Match, any Error>? = nil
    private var finished = false

    init() throws {
        do {
            done = FileDescriptor(owning: try syscall("eventfd") { eventfd(0, Int32(EFD_CLOEXEC)) })
            cancel = FileDescriptor(owning: try syscall("eventfd") { eventfd(0, Int32(EFD_CLOEXEC)) })
        } catch {
            throw FingersealError(.systemError, Messages.systemFailure(.startScan), detail: "\(error)")
        }
    }

    /// Starts `scan` on a new thread; false when no thread could be started.
    func start(_ scan: @escaping @Sendable (_ cancelFD: Int32) throws -> Fingerprint.Match) -> Bool {
        startThread {
            do { self.result = .success(try scan(self.cancel.rawValue)) } catch { self.result = .failure(error) }
            var one: UInt64 = 1
            _ = write(self.done.rawValue, &one, 8)
        }
    }

    /// Asks the scan to stop and waits for it (the reader confirms a cancel within moments;
    /// FprintKit bounds it). Returns the scan's result, which may still be a match.
    func stop() -> Result<Fingerprint.Match, any Error>? {
        var one: UInt64 = 1
        _ = write(cancel.rawValue, &one, 8)
        return wait()
    }

    /// Waits for the scan to end and returns its result.
    func wait() -> Result<Fingerprint.Match, any Error>? {
        if !finished {
            var value: UInt64 = 0
            while read(done.rawValue, &value, 8) < 0 && errno == EINTR {}
            finished = true
        }
        return result
    }
}

/// The reader, handed to the scan thread, which is its only user until the scan ends.
struct UncheckedReader: @unchecked Sendable {
    let reader: FingerReader
    init(_ reader: FingerReader) { self.reader = reader }
}
