import CLinux
import FingersealWire
import Glibc
import SodiumKit
import SystemKit

/// What a request's exchange with the broker reports as it goes (on its own thread; the
/// request hands each to the main loop).
enum ExchangeNote {
    /// A sentence for the person (info or error from the broker).
    case sentence(String, isError: Bool)
    /// A reader event, a scan's outcome, or the secret asked next.
    case event(ReaderSignal)
    /// The broker asks: a PIN, the account password, or (purpose other, while the reader
    /// waits) only whether to use the password instead.
    case ask(Ask)
}

/// How the person answered a question, given by the main thread to the exchange.
enum PersonAnswer {
    case secret(SecureBytes)
    /// "Use the password instead" (an empty answer).
    case skip
    case cancel
}

/// The answers and the cancel the main thread hands to one exchange: each with an eventfd the
/// exchange waits on beside the broker's socket (a cancel's while it waits for the broker, an
/// answer's while a question is open), so that an answer given early waits for its question
/// without waking the wait for the broker.
final class AnswerBox: @unchecked Sendable {
    private let lock = ThreadLock()
    private var answers: [PersonAnswer] = []
    private var cancelled = false
    private let answerWaits: EventFD
    private let cancelGiven: EventFD
    /// Readable once an answer waits.
    var answerFD: Int32 { answerWaits.rawValue }
    /// Readable once cancelled.
    var cancelFD: Int32 { cancelGiven.rawValue }

    init() throws {
        (answerWaits, cancelGiven) = (try EventFD(nonBlocking: true), try EventFD(nonBlocking: true))
    }

    func give(_ answer: PersonAnswer) {
        let cancel: Bool = lock.locked {
            if case .cancel = answer {
                cancelled = true
                return true
            }
            answers.append(answer)
            return false
        }
        (cancel ? cancelGiven : answerWaits).signal()
    }

    /// The next answer given, a cancel first; nil when none is waiting.
    func take() -> PersonAnswer? {
        answerWaits.drain()
        return lock.locked {
            if cancelled { return .cancel }
            guard !answers.isEmpty else { return nil }
            let next = answers.removeFirst()
            // More wait: the descriptor stays readable for them.
            if !answers.isEmpty { answerWaits.signal() }
            return next
        }
    }

    var isCancelled: Bool { lock.locked { cancelled } }
}

/// One request to the broker on behalf of an application, run on a thread of its own: the
/// request, its payload, then the conversation until the result. Every wait is bounded; a
/// cancel from the person or the application goes to the broker, whose result ends it.
struct AgentExchange {
    let socketPath: String
    let request: Request
    let payload: SecureBytes?
    /// Where the person's answers come from; nil for a request that asks nothing (status,
    /// an end): a question is then answered with a cancel.
    let answers: AnswerBox?
    let note: (ExchangeNote) -> Void

    /// How it ended: the broker's reply (with the data it streamed, for reveal, and the
    /// output it wrote, for status), or why there was none.
    enum Ending {
        case reply(Reply, data: SecureBytes?, output: String)
        case unreachable
        case broken(cancelled: Bool)
    }

    func run() -> Ending {
        let packet = ClientMessage.request(request).encoded()
        defer { Wire.wipeStorage(packet) }
        let connection: WireConnection
        do {
            connection = try WireConnection.connect(path: socketPath, timeout: PersonClientLimits.connect)
        } catch {
            return .unreachable
        }
        if (try? connection.send(packet, until: monotonicSeconds() + PersonClientLimits.send)) != nil {
            stream(payload, to: connection)
        }
        var conversation = ClientConversation(withPerson: connection)
        var side = Side(exchange: self)
        let end = conversation.run(&side)
        switch end {
        case let .result(reply): return .reply(reply, data: side.data, output: side.output)
        case let .broken(_, cancelled): return .broken(cancelled: cancelled)
        case .abandoned: return .broken(cancelled: true)
        }
    }

    /// The sealed file, in chunks, the last marked `end`.
    private func stream(_ payload: SecureBytes?, to connection: WireConnection) {
        guard let payload else { return }
        _ = payload.withUnsafeBytes { connection.stream($0, chunkSize: PersonClientLimits.chunk, sendLimit: PersonClientLimits.send) }
    }

    /// The agent's side: sentences and events go to the request (`note`); questions wait for
    /// the person (or the application) through the answer box, while the broker is watched.
    private struct Side: ConversationClient {
        let exchange: AgentExchange
        /// What the broker streamed (reveal's plaintext), in secure memory.
        var data: SecureBytes? = nil
        /// What the broker wrote as output (status's JSON), bounded.
        var output = ""

        func watchForCancel() -> Int32? { exchange.answers?.cancelFD }

        func cancelRequested() -> Bool {
            // Answers given while no question is open are for a question to come.
            exchange.answers?.isCancelled ?? false
        }

        mutating func show(_ message: BrokerMessage) -> Bool {
            switch message {
            case .info, .error, .event:
                note(message)
            case let .data(bytes, _):
                defer { Wire.wipeStorage(bytes) }
                return append(bytes)
            case let .output(text):
                if output.utf8.count + text.utf8.count <= 1 << 20 { output += text + "\n" }
            case .ask, .result, .browse, .finding:
                break
            }
            return true
        }

        /// A sentence or an event, for the request.
        func note(_ message: BrokerMessage) {
            switch message {
            case let .info(text): exchange.note(.sentence(text, isError: false))
            case let .error(text): exchange.note(.sentence(text, isError: true))
            case let .event(signal): exchange.note(.event(signal))
            default: break
            }
        }

        /// Appends a chunk of streamed data to the secure buffer, grown as it comes (the
        /// broker bounds it; so does the agent).
        private mutating func append(_ bytes: [UInt8]) -> Bool {
            let held = data?.count ?? 0
            guard held + bytes.count <= AgentLimits.plaintext else { return false }
            do {
                if data == nil { data = try SecureBytes(capacity: max(bytes.count, 4096)) }
                if let current = data, current.capacity - current.count < bytes.count {
                    data = try current.grown(toCapacity: max(current.capacity * 2, held + bytes.count))
                }
            } catch {
                return false
            }
            return bytes.withUnsafeBytes { data?.append(contentsOf: $0) ?? false }
        }

        func answer(_ ask: Ask, _ conversation: inout ClientConversation) -> ClientConversation.Response {
            guard let answers = exchange.answers else { return .cancel }
            exchange.note(.ask(ask))
            var side = self
            let deadline = monotonicSeconds() + PersonClientLimits.message
            while true {
                var fds = [pollEntry(answers.answerFD), pollEntry(answers.cancelFD), pollEntry(conversation.connection.fd)]
                switch waitReady(&fds, until: deadline) {
                case .timedOut, .failed: return .cancel
                case .ready: break
                }
                if fds[0].revents != 0 || fds[1].revents != 0, let given = answers.take() {
                    switch given {
                    case .cancel: return .cancel
                    case .skip: return .packet(ClientMessage.answer(Answer(.skip)).encoded())
                    case let .secret(secret):
                        guard secret.count > 0 else { return .packet(ClientMessage.answer(Answer(.skip)).encoded()) }
                        var value = secret.copyBytes()
                        defer { Wire.wipeStorage(value) }
                        let packet = ClientMessage.answer(Answer(ask.kind == .secret ? .secret : .text, value)).encoded()
                        value = []
                        return .packet(packet)
                    }
                }
                if fds[2].revents != 0, let said = conversation.whileAnswering(&side, showing: note) {
                    return said
                }
            }
        }
    }
}

/// Sizes the agent accepts from applications and from the broker.
enum AgentLimits {
    /// A sealed file, and the plaintext revealed from it (the broker's own bound is smaller).
    static let plaintext = 16 << 20
    static let sealedFile = 16 << 20
    /// A PIN or password given with Answer.
    static let secret = 1024
}

