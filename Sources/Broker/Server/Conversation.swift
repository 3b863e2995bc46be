import FingerprintFlows
import FingersealCore
import FingersealWire
import Glibc
import ReaderValues
import SodiumKit
import SystemKit

/// One client connection, seen from a flow: sentences out, questions answered, a cancel or
/// a vanished client noticed. Every send and every wait is bounded; a client that stops
/// reading or leaves ends the conversation (`isGone`), and the flow then cancels.
///
/// Sending is safe from two threads at once (a scan on its own thread reports progress while
/// the connection's thread waits for a PIN typed meanwhile); receiving stays on the
/// connection's thread.
public final class Conversation: ScanPrompter, @unchecked Sendable {
    let connection: WireConnection
    let wantsEvents: Bool
    /// An application's request (through the session agent), told which secret comes next.
    let announcesTurns: Bool
    private let lock = ThreadLock()
    private var gone = false
    private var cancelled = false
    /// The last error sentence sent, so a flow's end does not say again what it said.
    private var lastError: String?
    /// The client left or stopped reading.
    public private(set) var isGone: Bool {
        get { lock.locked { gone } }
        set { lock.locked { gone = newValue } }
    }
    /// How long a client may take to read a message before it counts as gone.
    public static let sendLimit = 10.0
    /// How long a person may take to answer a question.
    public static let answerLimit = 300.0
    /// How long a whole payload (`seal`'s input, `reveal`'s file) may take to arrive: a
    /// local client sends 64 MiB in well under a second.
    public static let payloadLimit = 60.0

    init(connection: WireConnection, wantsEvents: Bool, announcesTurns: Bool = false) {
        self.connection = connection
        self.wantsEvents = wantsEvents
        self.announcesTurns = announcesTurns
    }

    /// Readable when the client sends something (a cancel) or leaves: what a reader wait polls.
    public var cancelFD: Int32 { connection.fd }

    func send(_ message: BrokerMessage) {
        var packet = message.encoded()
        defer { Wire.wipe(&packet) }
        // One packet at a time, whole: a scan thread and the connection's thread may both send.
        lock.locked {
            guard !gone else { return }
            do { try connection.send(packet, until: monotonicSeconds() + Conversation.sendLimit) } catch { gone = true }
        }
    }

    public func info(_ text: String) { send(.info(text)) }
    public func error(_ text: String) {
        lock.locked { lastError = text }
        send(.error(text))
    }

    /// Whether `text` was the last error sentence this conversation sent.
    public func lastErrorWas(_ text: String) -> Bool { lock.locked { lastError == text } }
    public func output(_ text: String) { send(.output(text)) }
    public func browse(_ url: String) { send(.browse(url)) }
    public func finding(_ finding: Finding) { send(.finding(finding)) }

    /// Sends `bytes` as data chunks, the last one marked `end` unless more follows (`last`
    /// false: a header before the body).
    public func data(_ bytes: UnsafeRawBufferPointer, last: Bool = true) {
        let chunk = Wire.maxPacket - 64
        var offset = 0
        repeat {
            let end = min(offset + chunk, bytes.count)
            // Plaintext passes through here (reveal): the copy is wiped once sent.
            var piece = Array(bytes[offset..<end])
            send(.data(piece, end: last && end == bytes.count))
            Wire.wipe(&piece)
            offset = end
        } while offset < bytes.count
    }

    public func readerEvent(_ event: ReaderEvent) {
        switch event {
        case .fingerNeeded: signal(.fingerNeeded)
        case let .enrollProgress(done, total): signal(.enrollProgress(completed: done, total: total))
        case let .hint(hint): signal(.hint(Conversation.wireHint(hint)))
                }
    }

    public func scanOutcome(_ outcome: ScanOutcome) {
        switch outcome {
        case .noMatch: signal(.noMatch)
        case .fingerLocked: signal(.fingerLocked)
        }
    }

    /// The secret asked next, said before the sentences that explain it (no reader, a
    /// password due): an application draws that state with them, not with the last one's.
    /// Only to the agent: its Status follows it; a command line has its prompt.
    public enum Turn { case pin, password }

    public func turning(to next: Turn) {
        guard announcesTurns else { return }
        signal(next == .pin ? .needsPIN : .needsPassword)
    }

    /// An event for a client that asked for them (a rig, the agent).
    func signal(_ signal: ReaderSignal) {
        guard wantsEvents else { return }
        send(.event(signal))
    }

    static func wireHint(_ hint: RetryHint) -> ReaderSignal.Hint {
        switch hint {
        case .general: return .general
        case .tooShort: return .tooShort
        case .centerFinger: return .centerFinger
        case .removeFinger: return .removeFinger
        }
    }

    /// Asks and waits for the answer. A cancel, a client that leaves, or no answer in time
    /// throws `.cancelled` / `.timedOut`. A secret answer goes straight to secure memory.
    public func ask(_ question: Ask, wakingOn others: [Int32] = []) throws -> AnswerOrWake {
        send(.ask(question))
        return try awaitAnswer(wakingOn: others)
    }

    public enum AnswerOrWake {
        case secret(SecureBytes)
        case text(String)
        case skipped
        case woken(Int32)
    }

    public func awaitAnswer(wakingOn others: [Int32] = [], limit: Double = Conversation.answerLimit) throws -> AnswerOrWake {
        if isGone || cancelled { throw FingersealError(.cancelled, Messages.cancelled) }
        let deadline = monotonicSeconds() + limit
        let incoming: WireConnection.Incoming<ClientMessage>
        do {
            incoming = try connection.receive(until: deadline, alsoWatching: others, ClientMessage.decode)
        } catch .timedOut {
            throw FingersealError(.timedOut, Messages.answerTimedOut)
        } catch {
            isGone = true
            throw FingersealError(.cancelled, Messages.cancelled)
        }
        switch incoming {
        case let .other(fd): return .woken(fd)
        case let .message(.answer(answer)):
            var value = answer.value
            defer { Wire.wipe(&value) }
            switch answer.kind {
            case .skip: return .skipped
            case .text:
                guard value.count <= 4096, let text = String(validating: value, as: UTF8.self) else {
                    throw FingersealError(.usage, Messages.badAnswer)
                }
                return .text(text)
            case .secret:
                guard value.count <= 1024 else { throw FingersealError(.usage, Messages.pinTooLong(PINRules.maximumLength)) }
                do { return .secret(try SecureBytes(copying: value)) } catch {
                    throw FingersealError(.systemError, Messages.secureMemory)
                }
            }
        case .message(.cancel):
            cancelled = true
            throw FingersealError(.cancelled, Messages.cancelled)
        case .message:
            isGone = true
            throw FingersealError(.usage, Messages.badAnswer)
        }
    }

    /// After the reader reported a cancel: was it the client (a cancel message or a hang-up)?
    /// Consumes the cancel.
    public func takeCancel() -> Bool {
        if cancelled || isGone { return true }
        // A deadline already past would return before looking: look once (1 ms at most; the
        // packet or the hang-up that woke the reader is already there).
        switch connection.wait(until: monotonicSeconds() + 0.001) {
        case .packet:
            _ = try? awaitAnswer(limit: 0.5)
            return cancelled || isGone
        case .closed:
            isGone = true
            return true
        default:
            return false
        }
    }

    /// The secret answer to `question`, nil when skipped.
    /// `skipsTo`: what a skip turns to, for a client that names it (nil answers a skip too).
    public func askSecret(_ purpose: Ask.Purpose, _ prompt: String, skipsTo: Ask.Purpose? = nil) throws -> SecureBytes? {
        switch try ask(Ask(.secret, purpose, prompt, skipsTo: skipsTo)) {
        case let .secret(bytes): return bytes.count > 0 ? bytes : nil
        case .skipped: return nil
        case .text: throw FingersealError(.usage, Messages.badAnswer)
        case .woken: return nil
        }
    }

    public func askText(_ purpose: Ask.Purpose, _ prompt: String) throws -> String? {
        switch try ask(Ask(.visible, purpose, prompt)) {
        case let .text(text): return text
        case .skipped, .woken: return nil
        case .secret: throw FingersealError(.usage, Messages.badAnswer)
        }
    }

    /// Payload the client streams after its request (`seal`, `reveal`), at most `limit`
    /// bytes (plus `spare` room), into secure memory that grows as the data arrives, counted
    /// against `budget` while the returned buffer lives.
    /// The whole payload must arrive within `payloadLimit`, with no pause longer than
    /// `sendLimit`: a client that trickles is dropped rather than holding memory.
    func receiveData(limit: Int, spare: Int = 0, budget: PayloadBudget, uid: UInt32,
                     tooLarge: @autoclosure () -> String) throws -> PayloadBuffer {
        let buffer = try PayloadBuffer(budget: budget, uid: uid, limit: limit, spare: spare)
        let whole = monotonicSeconds() + Conversation.payloadLimit
        while true {
            let incoming: WireConnection.Incoming<ClientMessage>
            do {
                incoming = try connection.receive(until: min(monotonicSeconds() + Conversation.sendLimit, whole), ClientMessage.decode)
            } catch .timedOut {
                isGone = true
                throw FingersealError(.timedOut, Messages.payloadTooSlow)
            } catch {
                isGone = true
                throw FingersealError(.cancelled, Messages.cancelled)
            }
            guard case let .message(.data(bytes, end)) = incoming else {
                throw FingersealError(.usage, Messages.badAnswer)
            }
            var chunk = bytes
            defer { Wire.wipe(&chunk) }
            try chunk.withUnsafeBytes { try buffer.append($0, tooLarge: tooLarge()) }
            // The memory stays counted for as long as the caller keeps the buffer.
            if end { return buffer }
        }
    }

    /// The last message: how the request ended.
    func finish(_ reply: Reply) {
        var reply = reply
        send(.result(reply))
        if var token = reply.token { Wire.wipe(&token) }
        reply.token = nil
        if let authtok = reply.authtok { Wire.wipeStorage(authtok) }
        reply.authtok = nil
    }

    /// Waits until the client hangs up (a grant held for a command), at most `limit` seconds.
    func waitForHangUp(limit: Double) {
        let deadline = monotonicSeconds() + limit
        while !isGone {
            switch connection.wait(until: deadline) {
            case .packet:
                if (try? connection.withPacket { _ in () }) == nil { isGone = true }
            case .closed, .timedOut, .other: return
            }
        }
    }
}
