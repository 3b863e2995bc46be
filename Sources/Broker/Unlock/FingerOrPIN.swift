import FingerprintFlows
import FingersealCore
import FingersealWire
import Glibc
import ReaderValues
import SodiumKit
import SystemKit

/// How an unlock went: the vault, and which way it was opened.
struct Unlocked {
    let vault: UnlockedVault
    let method: UnlockMethod
    let finger: String?
}

/// The unlock itself, for every flow: a finger through the broker's reader, or the PIN, as
/// the request allows, within the request's vault session.
enum FingerOrPIN {
    /// What the finger's turn came to: an unlock, or why the next way in is needed.
    enum FingerTurn {
        case unlocked(Unlocked)
        case fallback(FingersealError)
    }

    /// A finger, or the PIN, or (an application's) the account password. With
    /// `pinWhileScanning` (or a PAM host's question while the reader waits) the PIN may be
    /// typed while the reader waits (the first to succeed wins and stops the other; Enter alone
    /// goes straight to the PIN, in a PAM conversation on to the password, in an application's
    /// dialog to the account password); otherwise the scan comes first and the PIN after it
    /// fails. Without a reader, an enrolled finger, or with the finger locked, the next way is
    /// asked at once. A cancel ends it. A fallback is audited here; the flow records the
    /// unlock or its failure. With no way left, what stopped the finger is thrown. A PIN
    /// unlock also confirms fprintd's enrolled set where it changed.
    static func open(_ call: Call, _ request: UnlockRequest, session: VaultSession, status: VaultStatus) throws -> Unlocked {
        let unlocked = try fingerThenFallback(call, request, session: session, status: status)
        if unlocked.method == .pin { confirmFprintdSet(call, unlocked.vault) }
        return unlocked
    }

    private static func fingerThenFallback(_ call: Call, _ request: UnlockRequest, session: VaultSession,
                                           status: VaultStatus) throws -> Unlocked {
        let use = request.pin
        let pinUsable = use != .never && status.pinSet
        /// The next way in after `failure` (nil: the finger was never tried): the PIN, and
        /// where the PIN is skipped or not set, the account password. An application's dialog
        /// without a reader asks the password first (what the person types on any computer),
        /// the PIN one action away.
        func fallback(after failure: FingersealError?) throws -> Unlocked {
            guard pinUsable || request.password else {
                throw failure ?? FingersealError(.notEnrolled, Messages.notEnrolled)
            }
            if let failure { session.record(.fallback(reason: failure.auditReason)) }
            let noReader = failure.map { passwordFirst(call, request, after: $0) } ?? false
            return try pinOrPassword(passwordFirst: !pinUsable || noReader,
                                     why: noReader ? Messages.noReaderEnterPassword : Messages.passwordInstead)
        }
        /// The PIN and (an application's) the password, each a skip away from the other where
        /// both are there; a skip is never a try.
        func pinOrPassword(passwordFirst: Bool, why: String) throws -> Unlocked {
            var password = passwordFirst
            var why = why
            for _ in 0..<FingerOrPIN.turnLimit {
                if password {
                    if let unlocked = try PasswordEntry.unlock(call, session: session, why: why, skipsTo: pinUsable ? .pin : nil) {
                        return unlocked
                    }
                } else if let vault = try PINEntry.unlock(call, session: session, skippable: request.password) {
                    return Unlocked(vault: vault, method: .pin, finger: nil)
                }
                password.toggle()
                why = Messages.passwordInstead
            }
            throw FingersealError(.cancelled, Messages.cancelled, detail: "turned between the PIN and the password \(FingerOrPIN.turnLimit) times")
        }
        if use == .only || !request.finger { return try fallback(after: nil) }
        if let finger = request.identified { return try identified(call, finger, session: session, status: status) }
        if status.fingers.isEmpty && status.fprintd?.fingers.isEmpty ?? true {
            // Nothing to scan: the PIN, or (PAM without it) on to the password, silently.
            if use == .fallback || request.password { return try fallback(after: nil) }
            throw FingersealError(.notEnrolled, Messages.notEnrolled)
        }
        if status.fingerOff {
            call.conversation.error(Messages.fingerUnlockOff)
            return try fallback(after: FingersealError(.unavailable, Messages.fingerUnlockOff, cause: .fingerUnlockOff))
        }
        if status.lockout.counters(for: call.applicant).fingerLocked {
            call.conversation.error(Messages.fingerLocked)
            call.conversation.scanOutcome(.fingerLocked)
            return try fallback(after: FingersealError(.lockedOut, Messages.fingerLocked))
        }
        let ledger = call.ledger(session.store)
        var settings = request.scan
        let takesPIN = use == .fallback && pinUsable
        var asks = false
        if let style = request.pamPrompt {
            // Decided now that a scan is offered: the host's terminal is read from /proc only here.
            settings.cancelHint = call.channel.cancelHint
            asks = call.channel.asksWhileScanning(style, pin: takesPIN)
        }
        // An application's dialog may turn to the account password while the reader waits.
        let passwordBeside = request.password && call.channel.skippedPIN == .accountPassword
        let turn: FingerTurn
        if asks || (request.pinWhileScanning && takesPIN) || passwordBeside {
            // A PAM host's question says it all, and is the one sentence of its prompt (a host
            // may show only prompts; a terminal would show a sentence before it as a second
            // line saying the same). The command line's prompt is the scan's sentence; a
            // dialog draws its own.
            if call.channel.application == nil {
                settings.cancelHint = asks ? .none : .fingerOrPIN
            } else if takesPIN {
                settings.cancelHint = .orTypePIN
            }
            turn = try fingerWhilePIN(call, request, asks: asks, takesPIN: takesPIN, session: session, ledger: ledger,
                                      settings: settings)
        } else {
            turn = try fingerFirst(call, request, session: session, ledger: ledger, settings: settings)
        }
        switch turn {
        case let .unlocked(unlocked): return unlocked
        case let .fallback(failure) where failure.outcome == .cancelled && failure.detail == FingerOrPIN.skipped:
            // Enter alone while the reader waited.
            switch call.channel.skippedPIN {
            case .stackPassword: throw failure
            case .accountPassword where request.password: return try pinOrPassword(passwordFirst: true, why: Messages.passwordInstead)
            case .accountPassword, .mistake: return try fallback(after: failure)
            }
        case let .fallback(failure): return try fallback(after: failure)
        }
    }

    /// The finger touch to sign in matched (`IdentifyFlow`): the vault through its device
    /// slot, as after a verify, and the failures counted before it reset after the answer.
    /// A finger locked since the gallery was read is still locked.
    private static func identified(_ call: Call, _ finger: String, session: VaultSession, status: VaultStatus) throws -> Unlocked {
        if status.fingerOff { throw FingersealError(.unavailable, Messages.fingerUnlockOff, cause: .fingerUnlockOff) }
        let counters = status.lockout.counters(for: call.applicant)
        if counters.fingerLocked { throw FingersealError(.lockedOut, Messages.fingerLocked) }
        let vault = try session.unlockWithDevice()
        if counters.fingerFailures > 0 {
            let ledger = call.ledger(session.store)
            call.after.add { try? ledger.fingerSucceeded() }
        }
        return Unlocked(vault: vault, method: .finger, finger: finger)
    }

    /// What a skipped PIN while the reader waited leaves as its detail.
    static let skipped = "skipped while scanning"

    /// How often one request may turn between the PIN and the password: each turn is a
    /// question with its own time limit, so a client that keeps skipping ends, too.
    static let turnLimit = 20

    /// Whether `failure` of the finger turns an application's dialog to the account password
    /// first: there is no reader (nothing to scan on this computer), and the application
    /// allows the password.
    static func passwordFirst(_ call: Call, _ request: UnlockRequest, after failure: FingersealError) -> Bool {
        failure.outcome == .noReader && request.password && call.channel.skippedPIN == .accountPassword
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

    /// One verification through the broker's reader (its turn, the device the request names),
    /// nothing audited. A cancel the reader reports counts as `.cancelled` only when it was
    /// the client's (a `cancel` message or a hang-up); otherwise it is `.unavailable`.
    static func verify(_ call: Call, _ request: UnlockRequest, session: VaultSession, ledger: LockoutLedger,
                       settings: ScanSettings) throws -> Fingerprint.Match {
        do {
            return try call.state.reader.withReader(call, deviceID: request.deviceID) { reader, turn in
                try Fingerprint.verify(session: session, ledger: ledger, reader: reader, settings: settings,
                                       prompter: call.conversation, cancelFDs: [call.conversation.cancelFD, turn.stopFD],
                                       afterMatch: { call.after.add($0) })
            }
        } catch let error as FingersealError where error.outcome == .cancelled {
            if call.conversation.takeCancel() { throw error }
            throw FingersealError(.unavailable, error.message, detail: "the reader cancelled the scan")
        }
    }

    /// The scan alone; what comes next is the caller's, unless the client cancelled.
    static func fingerFirst(_ call: Call, _ request: UnlockRequest, session: VaultSession, ledger: LockoutLedger,
                            settings: ScanSettings) throws -> FingerTurn {
        do {
            let match = try verify(call, request, session: session, ledger: ledger, settings: settings)
            return .unlocked(Unlocked(vault: match.vault, method: .finger, finger: match.finger))
        } catch let error as FingersealError {
            if error.outcome == .cancelled { throw error }
            if [.noMatch, .triesExhausted].contains(error.outcome) {
                session.note(.failure(action: .fingerprintScan, reason: .outcome(error.outcome)))
            }
            // What the person must hear; a PAM host goes on quietly when there is no reader.
            // The TPM's states are said everywhere: nothing else explains them; so is a scan
            // ended by sleep or a login at the seat, in the middle of a prompt.
            if [.noMatch, .triesExhausted, .lockedOut, .timedOut, .fingersChanged].contains(error.outcome) || error.cause != nil {
                call.conversation.error(error.message)
            } else if call.channel.explainsQuietFallbacks || ReaderTurns.Interruption.ended(error) {
                call.conversation.info(error.message)
            }
            return .fallback(error)
        }
    }

    /// The scan on a thread of its own while the client answers a question: the PIN
    /// (`takesPIN`), or (`asks`: a PAM host's question, which names the reader's way of taking
    /// the finger) Enter once the finger is on the reader. Both in the reader's turn, and the
    /// scan always stopped and waited for before the turn ends.
    static func fingerWhilePIN(_ call: Call, _ request: UnlockRequest, asks: Bool, takesPIN: Bool,
                               session: VaultSession, ledger: LockoutLedger, settings: ScanSettings) throws -> FingerTurn {
        let raced: Result<FingerTurn, any Error>
        do {
            raced = try call.state.reader.withReader(call, deviceID: request.deviceID) { reader, turn in
                Result {
                    try race(call, request, asks: asks, takesPIN: takesPIN, reader: reader, turn: turn,
                             session: session, ledger: ledger, settings: settings)
                }
            }
        } catch let error as FingersealError where [.noReader, .unavailable, .remoteSession].contains(error.outcome) {
            // No reader, or another request kept it: the PIN at once, or quietly on to the
            // password where there is no PIN. The password's own sentence says there is no reader.
            if (takesPIN || call.channel.explainsQuietFallbacks) && !passwordFirst(call, request, after: error) {
                if takesPIN { call.conversation.turning(to: .pin) }
                call.conversation.info(error.message)
            }
            return .fallback(error)
        }
        return try raced.get()
    }

    private static func race(_ call: Call, _ request: UnlockRequest, asks: Bool, takesPIN: Bool,
                             reader: ReaderBackend, turn: ReaderTurns.Turn, session: VaultSession, ledger: LockoutLedger,
                             settings: ScanSettings) throws -> FingerTurn {
        let conversation = call.conversation
        let question = !asks ? "" : takesPIN ? Messages.fingerOrPINPrompt(swipe: reader.swipe)
            : Messages.fingerThenEnterPrompt(swipe: reader.swipe)
        let job = try BackgroundScan()
        let scanReader = UncheckedReader(reader)
        let scanSession = UncheckedSession(session)
        let stopFD = turn.stopFD
        // Where the question says it all, the reader's sentence is not sent, only waited for.
        let prompter = ArmedPrompter(conversation, armed: job.armed, announces: !asks)
        let started = job.start { cancelFD in
            try Fingerprint.verify(session: scanSession.session, ledger: ledger, reader: scanReader.reader, settings: settings,
                                   prompter: prompter, cancelFDs: [cancelFD, stopFD])
        }
        guard started else { throw FingersealError(.systemError, Messages.systemFailure(.startScan)) }
        // For a PAM host the question goes out once the reader is armed, and not at all when the
        // scan ends before that (no reader, a TPM state): a host cannot take a question back. A
        // client that cancels or leaves ends the wait too. The command line and a dialog get
        // the question first: the terminal stops echoing before the sentence that invites the
        // PIN is shown.
        var endedFirst = false
        if call.channel.showsOnlyTheConversation {
            var waited = [pollEntry(job.armed.rawValue), pollEntry(job.done.rawValue), pollEntry(conversation.cancelFD)]
            _ = waitReady(&waited, until: monotonicSeconds() + settings.timeout + Conversation.sendLimit)
            // A scan that ended before the reader was armed (a TPM state, no reader) is not asked about.
            endedFirst = waited[1].revents != 0 && waited[0].revents == 0
        }
        func matched(_ result: Result<Fingerprint.Match, any Error>?) -> FingerTurn? {
            guard case let .success(match)? = result else { return nil }
            return .unlocked(Unlocked(vault: match.vault, method: .finger, finger: match.finger))
        }
        // A PAM conversation cannot be withdrawn: after a match the host still shows the
        // question, so its text says to touch the reader, then press Enter. The match ends the
        // request at once; the module finds the result once the person has pressed Enter.
        while true {
            let answer: Conversation.AnswerOrWake
            if endedFirst {
                endedFirst = false
                answer = .woken(job.done.rawValue)
            } else {
                do {
                    // Nothing but a skip to give where the PIN is not taken (`.other`).
                    answer = try conversation.ask(Ask(.secret, takesPIN ? .pin : .other, question, whileScanning: true),
                                                  wakingOn: [job.done.rawValue])
                } catch {
                    // A cancel (or a client gone, or no answer in time): stop the scan first.
                    _ = job.stop()
                    throw error
                }
            }
            switch answer {
            case .woken:
                // The scan ended: a match wins; otherwise the PIN is the fallback.
                let result = job.wait()
                if let won = matched(result) { return won }
                guard case let .failure(error as FingersealError)? = result else {
                    return .fallback(FingersealError(.systemError, Messages.systemFailure(.scan)))
                }
                if let why = turn.interruption {
                    // The reader went to a sign-in at this computer, or the computer is going
                    // to sleep: the PIN is still asked.
                    conversation.info(why.error.message)
                    return .fallback(why.error)
                }
                if error.outcome == .cancelled { throw error }
                conversation.info(error.message)
                return .fallback(error)
            case .skipped:
                if let won = matched(job.stop()) { return won }
                return .fallback(FingersealError(.cancelled, Messages.cancelled, detail: FingerOrPIN.skipped))
            case let .secret(pin):
                // Without the PIN, whatever was typed (a password, by habit) is Enter alone:
                // never checked, never counted.
                if pin.count == 0 || !takesPIN {
                    if let won = matched(job.stop()) { return won }
                    return .fallback(FingersealError(.cancelled, Messages.cancelled, detail: FingerOrPIN.skipped))
                }
                // The scan thread may still read the session: the PIN opens the vault on its own.
                do {
                    let vault = try Vault.unlock(session.store, pin: call.pinKeyslot(pin), ledger: ledger)
                    if let won = matched(job.stop()) { return won }
                    return .unlocked(Unlocked(vault: vault, method: .pin, finger: nil))
                } catch let error as FingersealError where error.outcome == .wrongPIN {
                    // The reader keeps waiting; the PIN may be typed again.
                    conversation.error(error.message)
                } catch {
                    _ = job.stop()
                    // A PAM host shows only what is sent: the TPM's states need saying.
                    if call.channel.showsOnlyTheConversation, let error = error as? FingersealError, error.cause != nil {
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
}

/// A fingerprint scan on a thread of its own, so the client can send a PIN meanwhile. The
/// result is written before `done` is signalled and read only after it is seen (the eventfd
/// write and read order the two threads).
final class BackgroundScan: @unchecked Sendable {
    let done: EventFD
    /// Signalled once the reader is armed and the scan's sentence has gone out (`ArmedPrompter`).
    let armed: EventFD
    private let cancel: EventFD
    private var result: Result<Fingerprint.Match, any Error>? = nil
    private var finished = false

    init() throws {
        do {
            (done, armed, cancel) = (try EventFD(), try EventFD(), try EventFD())
        } catch {
            throw FingersealError(.systemError, Messages.systemFailure(.startScan), detail: "\(error)")
        }
    }

    /// Starts `scan` on a new thread; false when no thread could be started.
    func start(_ scan: @escaping @Sendable (_ cancelFD: Int32) throws -> Fingerprint.Match) -> Bool {
        startThread {
            do { self.result = .success(try scan(self.cancel.rawValue)) } catch { self.result = .failure(error) }
            self.done.signal()
        }
    }

    /// Asks the scan to stop and waits for it (the reader confirms a cancel within moments;
    /// FprintKit bounds it). Returns the scan's result, which may still be a match.
    func stop() -> Result<Fingerprint.Match, any Error>? {
        cancel.signal()
        return wait()
    }

    /// Waits for the scan to end and returns its result.
    func wait() -> Result<Fingerprint.Match, any Error>? {
        if !finished {
            done.wait()
            finished = true
        }
        return result
    }
}

/// The scan's sentences to the client; the first one (the reader armed: "Place your finger …")
/// also signals `armed`, so the question goes out after it. With `announces` false (a PAM
/// host's question says it all) that first sentence is only signalled, never sent.
final class ArmedPrompter: ScanPrompter, @unchecked Sendable {
    private let conversation: Conversation
    private let armed: EventFD
    private let announces: Bool
    /// The reader's first sentence came; touched by the scan's thread alone.
    private var armedSaid = false

    init(_ conversation: Conversation, armed: EventFD, announces: Bool = true) {
        self.conversation = conversation
        self.armed = armed
        self.announces = announces
    }

    func info(_ text: String) {
        if armedSaid || announces { conversation.info(text) }
        armedSaid = true
        armed.signal()
    }

    func error(_ text: String) { conversation.error(text) }
    func readerEvent(_ event: ReaderEvent) { conversation.readerEvent(event) }
    func scanOutcome(_ outcome: ScanOutcome) { conversation.scanOutcome(outcome) }
}

/// The reader, handed to the scan thread, which is its only user until the scan ends.
struct UncheckedReader: @unchecked Sendable {
    let reader: ReaderBackend
    init(_ reader: ReaderBackend) { self.reader = reader }
}

/// The request's vault session, handed to the scan thread: the connection's thread touches
/// it again only after the scan has stopped (`BackgroundScan.stop` waits for it).
struct UncheckedSession: @unchecked Sendable {
    let session: VaultSession
    init(_ session: VaultSession) { self.session = session }
}
