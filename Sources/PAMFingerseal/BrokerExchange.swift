import CLinux
import FingersealWire
#if !hasFeature(Embedded)
import Glibc
#endif
import PAMKit
import SystemKit

/// One request to the broker and everything until its result. The broker's sentences and
/// questions go through the PAM conversation; Ctrl-C while waiting for the broker goes back as
/// a cancel; every wait is bounded. Only a `result` from the broker ends the exchange with the
/// broker's outcome; anything else (silence, a closed connection, a packet the protocol refuses)
/// ends it with one of the module's own, never success.
struct BrokerExchange {
    enum Ending {
        /// What the broker decided.
        case reply(Reply)
        /// No broker to ask (not installed, not running, socket missing): the caller says what
        /// that means for its PAM function.
        case unreachable
        /// The exchange broke before a result.
        case failed(Outcome)
    }

    let pam: PAMHandle
    let options: ModuleOptions
    let answering: Answering

    /// Who answers the broker's questions.
    enum Answering {
        /// The person, through the PAM conversation.
        case person
        /// Nobody: the broker's one question, the account password, is answered with the
        /// host's PAM_AUTHTOK (the `password_used` line, chauthtok); anything else is cancelled, and nothing is
        /// shown.
        case fromAuthtok
    }

    /// How long connecting may wait (a broker with a full backlog); a missing broker fails at once.
    static let connectWait = 2.0
    /// How long the broker has to answer a cancel before the module stops waiting.
    static let cancelWait = 3.0

    func run(_ request: Request) -> Ending {
        let packet = ClientMessage.request(request).encoded()
        guard packet.count <= Wire.maxPacket else {
            pam.log(.warning, "request not sent: the PAM items and module arguments exceed \(Wire.maxPacket) bytes")
            return .failed(.unavailable)
        }
        let connection: WireConnection
        do {
            connection = try WireConnection.connect(path: options.socket, timeout: BrokerExchange.connectWait)
        } catch {
            pam.log(.notice, "no fingerseal broker: \(describe(error))")
            return .unreachable
        }
        var conversation = ClientConversation(connection, messageWait: options.messageWait, cancelWait: BrokerExchange.cancelWait)
        let end: ClientConversation.End
        do {
            try connection.send(packet, until: monotonicSeconds() + options.messageWait)
            var client = HostConversation(exchange: self)
            end = conversation.run(&client)
        } catch {
            // A broker that refuses at once (busy) may have answered before reading.
            end = conversation.leftResult().map { .result($0) } ?? .broken(error, cancelled: false)
        }
        switch end {
        case let .result(reply):
            show(reply)
            return .reply(reply)
        case let .broken(error, cancelled):
            return failed(error, cancelled: cancelled)
        case .abandoned:
            return .failed(.cancelled)
        }
    }

    /// The module's side of the conversation: the broker's sentences and questions through the
    /// PAM conversation, Ctrl-C (SIGINT only: a SIGTERM to the host is not a person's cancel
    /// and stays the host's) watched while waiting for the broker, and only then: in the
    /// conversation the host's own handling of the terminal applies.
    private struct HostConversation: ConversationClient {
        let exchange: BrokerExchange
        var watch: InterruptWatch? = nil

        mutating func watchForCancel() -> Int32? {
            do { watch = try InterruptWatch(signals: [SIGINT]) } catch { watch = nil }
            return watch?.fd
        }

        mutating func cancelRequested() -> Bool {
            let fired = watch?.fired() ?? false
            watch = nil
            if fired { exchange.debug("Ctrl-C: cancel sent") }
            return fired
        }

        /// A conversation the host ended (gdm when the person turned to the password): a
        /// cancel, never a failure; the broker counts nothing and the stack goes on.
        mutating func show(_ message: BrokerMessage) -> Bool {
            if exchange.answering == .fromAuthtok { return true }
            switch message {
            case let .info(text):
                exchange.debug("info")
                return exchange.pam.info(text) || exchange.hostEnded()
            case let .error(text):
                exchange.debug("error")
                return exchange.pam.error(text) || exchange.hostEnded()
            default:
                // For the CLI and rigs; a PAM host has nowhere to put them.
                exchange.debug("ignored a message for other clients")
                return true
            }
        }

        mutating func answer(_ ask: Ask, _ conversation: inout ClientConversation) -> ClientConversation.Response {
            exchange.debug("ask (\(ask.kind.rawValue), \(ask.purpose.rawValue))")
            guard let packet = exchange.answer(ask) else {
                _ = exchange.hostEnded()
                return .cancel
            }
            return .packet(packet)
        }
    }

    /// Logs that the host ended its conversation; false, for `show` (the loop then cancels).
    private func hostEnded() -> Bool {
        debug("the host ended the conversation: cancel sent")
        return false
    }

    /// The answer packet for `ask`. The person's answer goes from PAM's response buffer into the
    /// packet and is wiped on the way (never a String); an empty answer is a skip. nil: the
    /// conversation failed or gave nothing back (a graphical host that ended it: the person
    /// chose the password), which the caller turns into a cancel.
    private func answer(_ ask: Ask) -> [UInt8]? {
        if answering == .fromAuthtok {
            guard ask.kind == .secret, ask.purpose == .accountPassword else { return nil }
            return pam.withAuthtok { BrokerExchange.packet(.secret, $0) }
        }
        let kind: Answer.Content = ask.kind == .secret ? .secret : .text
        let packet = pam.withAnswer(ask.prompt, echo: ask.kind == .visible) { raw -> [UInt8]? in
            BrokerExchange.packet(kind, raw)
        }
        return packet ?? nil
    }

    /// The answer packet of `raw` (an empty answer is a skip); the copy made on the way is wiped.
    private static func packet(_ kind: Answer.Content, _ raw: UnsafeRawBufferPointer) -> [UInt8] {
        guard raw.count > 0 else { return ClientMessage.answer(Answer(.skip)).encoded() }
        var answer = Answer(kind, Array(raw))
        let packet = ClientMessage.answer(answer).encoded()
        // The message above was a temporary: `answer.value` is ours alone again, so this
        // wipes the copy in place rather than a copy of it.
        Wire.wipe(&answer.value)
        return packet
    }

    /// The result's own sentence, if the broker gave one.
    private func show(_ reply: Reply) {
        guard !reply.message.isEmpty else { return }
        if reply.outcome == .success { pam.info(reply.message) } else { pam.error(reply.message) }
    }

    /// The module's outcome when the exchange broke, with one log line saying how.
    private func failed(_ error: ConnectionError, cancelled: Bool) -> Ending {
        let outcome: Outcome = cancelled ? .cancelled : (error == .timedOut ? .timedOut : .unavailable)
        pam.log(cancelled ? .info : .warning, "fingerseal broker: \(describe(error)); \(outcome.rawValue)")
        return .failed(outcome)
    }

    private func debug(_ line: @autoclosure () -> String) {
        if options.debug { pam.log(.debug, "broker: " + line()) }
    }

    private func describe(_ error: ConnectionError) -> String {
        switch error {
        case let .unreachable(code): return SystemError("connect", options.socket, code: code).description
        case .timedOut: return "no answer from \(options.socket) in time"
        case .closed: return "\(options.socket) closed the connection without a result"
        case let .protocolError(wire): return "\(options.socket) sent a packet the protocol refuses (\(wire))"
        case let .system(call, code): return SystemError(call, options.socket, code: code).description
        }
    }
}
