import CLinux
import FingersealWire
import Glibc
import PromptDialog
import SessionBusKit
import SodiumKit
import SystemKit

/// What a request shows the person, as the Status signal names it.
enum RequestState: String {
    case waitingForFinger = "waiting-for-finger"
    case retry
    case noMatch = "no-match"
    case locked
    case needsPIN = "needs-pin"
    case needsPassword = "needs-password"
    case checking
}

/// Where a request's person sees what happens and answers: the agent's dialog, or (prompt=app)
/// nothing of the agent's (the application draws its own from the Status signals and answers
/// with Answer). Main thread only.
protocol PromptSurface: AnyObject {
    /// `field`: the secret the person may type now (a PIN or the password), nil for none;
    /// `otherWay`: where "Use password instead" or "Use PIN instead" leads, nil for neither;
    /// `settled`: the broker asks for something now (the reader is armed, a question is open,
    /// or the request turned), not only what it is about to ask ("Confirm it is you.").
    func show(_ state: RequestState, sentence: String, field: Ask.Purpose?, otherWay: OtherWay?, settled: Bool)
    func close()
}

/// One application request (Unlock, StepUp, Reveal): its object on the bus, its exchange
/// with the broker on a thread of its own, its prompt. Main thread only, except what the
/// exchange touches through `answers`.
final class AgentRequest {
    enum Kind {
        case unlock
        case stepUp(context: String)
        case reveal(context: String)
        /// The person's own switch for fingerprint unlock (the broker's `on` and `off`),
        /// confirmed with a finger or the PIN.
        case setEnabled(Bool)
    }

    let path: String
    /// The application's unique bus name: the only caller it answers, the only receiver of
    /// its signals.
    let owner: String
    let kind: Kind
    let answers: AnswerBox
    private let bus: SessionBus
    private let prompt: PromptSurface?
    private let passwordAllowed: Bool
    private var registration: UInt32 = 0
    private var state = RequestState.waitingForFinger
    private var sentence = ""
    /// The broker said the reader waits for a finger (at least once).
    private var readerArmed = false
    /// The question the broker asked last and the person has not answered.
    private var openQuestion: Ask? = nil
    /// What Take hands out once: the token or the plaintext.
    private var secret: SecureBytes? = nil
    private var finished = false
    /// Called once the request is over (its Response sent and nothing left to take): it no
    /// longer counts as open. Its object stays until `unexport`, answering every method as
    /// documented (Take: nothing to take) rather than vanishing under the caller.
    var onClosed: (() -> Void)?
    /// When it ended (monotonic seconds): the agent lets the oldest ended request go first.
    private(set) var endedAt = 0.0
    /// An *AndWait call, answered with the Response's values when the request ends.
    var waiter: MethodCall?

    /// How long a succeeded request keeps its secret for Take.
    static let takeLimit = 60.0

    init(path: String, owner: String, kind: Kind, bus: SessionBus, prompt: PromptSurface?, passwordAllowed: Bool) throws {
        self.path = path
        self.owner = owner
        self.kind = kind
        self.bus = bus
        self.prompt = prompt
        self.passwordAllowed = passwordAllowed
        answers = try AnswerBox()
    }

    /// Exports the request object; its calls come to `handle`.
    func export() throws {
        registration = try bus.export(path: path, introspectionXML: AgentInterface.xml, interface: AgentInterface.request) {
            [weak self] call in
            guard let self else { return call.fail(AgentErrors.failed, AgentStrings.nothingToTake) }
            self.handle(call)
        }
    }

    /// Runs the exchange on a thread of its own; `finish` comes back on the main thread.
    func start(socketPath: String, request: Request, payload: SecureBytes?,
               finish: @escaping (AgentRequest, AgentExchange.Ending) -> Void) -> Bool {
        // Held weakly, and touched on the main thread only.
        weak let weakSelf = self
        let owner = MainOnly({ weakSelf })
        let finished = MainOnly(finish)
        let exchange = AgentExchange(socketPath: socketPath, request: request, payload: payload, answers: answers) { note in
            let sendable = UncheckedNote(note)
            MainLoop.post { owner.value()?.noted(sendable.note) }
        }
        let job = UncheckedExchange(exchange)
        return startDetachedThread {
            let ending = UncheckedEnding(job.exchange.run())
            MainLoop.post {
                guard let request = owner.value() else { return }
                finished.value(request, ending.ending)
            }
        }
    }

    // MARK: what the broker says

    /// A state the broker announced whose sentence comes next (a no-match, a hint, the finger
    /// or the PIN while the reader waits): published with that sentence, never before it with
    /// the previous one.
    private var sentencePending = false
    /// The sentence was said after the broker turned to the PIN or the password, before its
    /// question: why (no reader, a password due). The question keeps it, rather than the
    /// agent's plain "Enter your PIN.".
    private var sentenceSaysWhy = false

    private func noted(_ note: ExchangeNote) {
        guard !finished else { return }
        switch note {
        case let .sentence(text, _):
            sentence = text
            sentencePending = false
            sentenceSaysWhy = [.needsPIN, .needsPassword].contains(state)
        case let .event(signal):
            switch signal {
            // After a no-match or a hint the reader waits again at once, and that state's
            // sentence ("Try again.") already asks for the finger: it stays until the next change.
            case .fingerNeeded:
                readerArmed = true
                if state != .noMatch && state != .retry { state = .waitingForFinger }
            case .noMatch: state = .noMatch; sentencePending = true
            case .fingerLocked: state = .locked
            case .hint: state = .retry; sentencePending = true
            // The broker turns to a secret; its sentence (why), if any, and the question follow.
            // Published with the question: an application answers once it sees the state.
            case .needsPIN, .needsPassword:
                let next: RequestState = signal == .needsPIN ? .needsPIN : .needsPassword
                openQuestion = nil
                if next != state {
                    state = next
                    sentenceSaysWhy = false
                }
            case .enrollProgress, .waitingForSignIn: break
            }
        case let .ask(ask):
            openQuestion = ask
            sentencePending = false
            switch (ask.purpose, ask.whileScanning) {
            case (.pin, true):
                state = .waitingForFinger
                // The question and the reader's sentence ("Swipe your finger …, or type your
                // PIN.") come in either order; with nothing said yet, the Status waits for the
                // sentence rather than saying something else first.
                if sentence.isEmpty { sentencePending = true }
            case (.pin, false):
                // The broker's prompt ("PIN: ") is a label, not a sentence: the field has its own.
                if state != .needsPIN || !sentenceSaysWhy { sentence = AgentStrings.enterPIN }
                state = .needsPIN
            case (.accountPassword, _):
                if state != .needsPassword || !sentenceSaysWhy { sentence = AgentStrings.enterPassword }
                state = .needsPassword
            default:
                break
            }
        }
        let awaitingQuestion = [.needsPIN, .needsPassword].contains(state) && openQuestion == nil
        if !sentencePending && !awaitingQuestion { publish() }
    }

    /// What was last sent as Status, and last shown, so that a repeat says nothing new.
    private var published: (RequestState, String)? = nil
    private var shown: (RequestState, String, Ask.Purpose?, Bool)? = nil

    /// The state to the owner (Status: once per change of state or sentence) and to the
    /// prompt (also when the field changes).
    private func publish() {
        let field: Ask.Purpose? = openQuestion.flatMap { [.pin, .accountPassword].contains($0.purpose) ? $0.purpose : nil }
        if published.map({ $0.0 != state || $0.1 != sentence }) ?? true {
            published = (state, sentence)
            bus.emit(to: owner, path: path, interface: AgentInterface.request, signal: "Status", [.string(state.rawValue), .string(sentence)])
        }
        let settled = readerArmed || field != nil || state != .waitingForFinger
        if let shown, shown.0 == state, shown.1 == sentence, shown.2 == field, shown.3 == settled { return }
        shown = (state, sentence, field, settled)
        prompt?.show(state, sentence: sentence, field: field, otherWay: otherWay, settled: settled)
    }

    /// Where a skip leads now: from the password, to the PIN where the broker offers it;
    /// otherwise to the password, where the application allows it. None while an answer is checked.
    private var otherWay: OtherWay? {
        if state == .checking { return nil }
        if let question = openQuestion, question.purpose == .accountPassword { return question.skipsTo == .pin ? .pin : nil }
        return passwordAllowed ? .password : nil
    }

    // MARK: what the person does (the dialog, or the application's calls)

    /// A typed PIN or password; wiped once sent.
    func answer(_ secret: SecureBytes) {
        guard openQuestion != nil, !finished else { return }
        openQuestion = nil
        sentenceSaysWhy = false
        state = .checking
        sentence = AgentStrings.checking
        publish()
        answers.give(.secret(secret))
    }

    /// The other way in (`otherWay`): the answer is a skip, which the broker turns into it.
    /// False when there is none now.
    @discardableResult
    func turn(to way: OtherWay) -> Bool {
        guard !finished, otherWay == way else { return false }
        answers.give(.skip)
        return true
    }

    func cancel() {
        guard !finished else { return }
        answers.give(.cancel)
    }

    private func handle(_ call: MethodCall) {
        guard call.sender == owner else { return call.fail(AgentErrors.accessDenied, AgentStrings.notYourRequest) }
        switch call.method {
        case "Answer":
            guard openQuestion != nil else { return call.fail(AgentErrors.failed, AgentStrings.noQuestion) }
            guard case let .handle(index)? = call.arguments.first, let fd = call.descriptor(index),
                  let secret = SecretFile.read(fd, limit: AgentLimits.secret, dropNewline: true) else {
                return call.fail(AgentErrors.invalidArgs, AgentStrings.badSecret)
            }
            answer(secret)
            call.reply()
        case "UsePassword", "UsePIN":
            guard turn(to: call.method == "UsePIN" ? .pin : .password) else {
                return call.fail(AgentErrors.failed, AgentStrings.noOtherWay)
            }
            call.reply()
        case "Cancel":
            cancel()
            call.reply()
        case "Take":
            guard let taken = secret, let fd = SecretFile.memfd(taken, name: "fingerseal-secret") else {
                return call.fail(AgentErrors.failed, AgentStrings.nothingToTake)
            }
            secret = nil
            call.reply([.handle(0)], descriptors: [fd])
            close(fd)
            end()
        default:
            call.fail(AgentErrors.unknownMethod, call.method)
        }
    }

    // MARK: the end

    /// Sends the one Response; keeps a secret for Take a while, else ends now.
    func respond(code: UInt32, outcome: String, sentence: String, method: String?, expiresAt: Int64?, tokenType: String? = nil,
                 secret: SecureBytes?) {
        guard !finished else { return }
        finished = true
        prompt?.close()
        self.secret = code == 0 ? secret : nil
        var results: [String: BusValue] = ["outcome": .string(outcome), "sentence": .string(sentence),
                                           "take": .bool(self.secret != nil)]
        if let method { results["method"] = .string(method) }
        if let expiresAt { results["expires_at"] = .int64(expiresAt) }
        if let tokenType, self.secret != nil { results["token_type"] = .string(tokenType) }
        bus.emit(to: owner, path: path, interface: AgentInterface.request, signal: "Response", [.uint32(code), .dictionary(results)])
        if let waiter {
            self.waiter = nil
            answer(waiter, code: code, results: results)
            return end()
        }
        if self.secret == nil {
            end()
        } else {
            MainLoop.after(AgentRequest.takeLimit) { [weak self] in self?.end() }
        }
    }

    /// An *AndWait call's reply: the code and results, and for Unlock and Reveal the secret
    /// (an empty descriptor when there is none: the signature has one in any case).
    private func answer(_ call: MethodCall, code: UInt32, results: [String: BusValue]) {
        guard call.method != "StepUpAndWait" else { return call.reply([.uint32(code), .dictionary(results)]) }
        let held = secret ?? (try? SecureBytes(count: 0))
        guard let held, let fd = SecretFile.memfd(held, name: "fingerseal-secret") else {
            return call.fail(AgentErrors.failed, AgentStrings.nothingToTake)
        }
        secret = nil
        call.reply([.uint32(code), .dictionary(results), .handle(0)], descriptors: [fd])
        close(fd)
    }

    /// The request is over: what it held is wiped (SecureBytes frees into zeros) and the
    /// agent is told (`onClosed`). The object stays exported until the agent unexports it.
    func end() {
        secret = nil
        if endedAt == 0 { endedAt = monotonicSeconds() }
        let closed = onClosed
        onClosed = nil
        closed?()
    }

    /// Removes the object from the bus; calls to its path then find nothing.
    func unexport() {
        secret = nil
        if registration != 0 {
            bus.unexport(registration)
            registration = 0
        }
    }
}

/// The D-Bus error names the agent answers with.
enum AgentErrors {
    static let failed = "org.fingerseal.Agent1.Error.Failed"
    static let accessDenied = "org.fingerseal.Agent1.Error.AccessDenied"
    static let invalidArgs = "org.fingerseal.Agent1.Error.InvalidArgs"
    static let noDisplay = "org.fingerseal.Agent1.Error.NoDisplay"
    static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
}

/// Secrets through descriptors, never strings: read from the one an application gave, handed
/// out in a sealed memfd.
enum SecretFile {
    /// At most `limit` bytes from `fd` (closed here), into secure memory; nil when longer,
    /// unreadable, or not there within a few seconds.
    static func read(_ fd: Int32, limit: Int, dropNewline: Bool) -> SecureBytes? {
        defer { close(fd) }
        guard let buffer = try? SecureBytes(capacity: limit + 1) else { return nil }
        let deadline = monotonicSeconds() + 5
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var chunk = [UInt8](repeating: 0, count: 4096)
        defer { Wire.wipe(&chunk) }
        while true {
            let count = Glibc.read(fd, &chunk, chunk.count)
            if count == 0 { break }
            if count < 0 {
                guard errno == EAGAIN || errno == EINTR else { return nil }
                var fds = [pollEntry(fd)]
                guard waitReady(&fds, until: deadline) == .ready else { return nil }
                continue
            }
            guard buffer.count + count <= limit,
                  chunk.withUnsafeBytes({ buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: $0[0..<count])) }) else { return nil }
        }
        if dropNewline {
            while let last = buffer.withUnsafeBytes({ $0.last }), last == 0x0a || last == 0x0d { buffer.removeLast() }
        }
        return buffer
    }

    /// A sealed memfd holding `secret`, at its start; nil when it cannot be made.
    static func memfd(_ secret: SecureBytes, name: String) -> Int32? {
        try? secret.withUnsafeBytes { try sealedMemoryFile(name: name, $0, closeOnExec: true) }
    }
}

/// Values handed from the exchange's thread to the main loop (each used by one side at a time).
struct UncheckedNote: @unchecked Sendable {
    let note: ExchangeNote
    init(_ note: ExchangeNote) { self.note = note }
}

struct UncheckedEnding: @unchecked Sendable {
    let ending: AgentExchange.Ending
    init(_ ending: AgentExchange.Ending) { self.ending = ending }
}

struct UncheckedExchange: @unchecked Sendable {
    let exchange: AgentExchange
    init(_ exchange: AgentExchange) { self.exchange = exchange }
}

