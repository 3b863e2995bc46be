import FingersealWire
import Glibc
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
        do {
            try connection.send(packet, until: monotonicSeconds() + options.messageWait)
        } catch {
            // A broker that refuses at once (busy) may have answered before reading.
            if let reply = leftResult(connection) {
                show(reply)
                return .reply(reply)
            }
            return failed(error, cancelled: false)
        }
        return converse(connection)
    }

    /// Relays the broker's messages until its result.
    private func converse(_ connection: WireConnection) -> Ending {
        var cancelled = false
        var deadline = monotonicSeconds() + options.messageWait
        while true {
            let message: BrokerMessage?
            let interrupted: Bool
            do {
                (message, interrupted) = try next(connection, until: deadline)
            } catch {
                return failed(error, cancelled: cancelled)
            }
            if interrupted {
                // A second Ctrl-C: the person does not want to wait for the broker's answer.
                if cancelled { return .failed(.cancelled) }
                debug("Ctrl-C: cancel sent")
                guard cancel(connection, &cancelled, &deadline) else { return .failed(.cancelled) }
            }
            guard let message else { continue }
            // A conversation the host ended (gdm when the person turned to the password): a
            // cancel, never a failure; the broker counts nothing and the stack goes on.
            var ended = false
            switch message {
            case let .result(reply):
                show(reply)
                return .reply(reply)
            case let .info(text):
                debug("info")
                ended = !cancelled && !pam.info(text)
            case let .error(text):
                debug("error")
                ended = !cancelled && !pam.error(text)
            case let .ask(ask):
                debug("ask (\(ask.kind.rawValue), \(ask.purpose.rawValue))")
                // After a cancel nobody is asked anything more: the answer is empty.
                guard var packet = cancelled ? ClientMessage.answer(Answer(.skip)).encoded() : answer(ask) else {
                    ended = true
                    break
                }
                defer { Wire.wipe(&packet) }
                do {
                    try connection.send(packet, until: monotonicSeconds() + options.messageWait)
                } catch {
                    // The broker may have ended meanwhile (prompt=combined: the finger matched
                    // while the host waited for Enter); its result is still there to read.
                    if let reply = leftResult(connection) {
                        show(reply)
                        return .reply(reply)
                    }
                    return failed(error, cancelled: cancelled)
                }
            case .event, .output, .browse, .data, .finding:
                // For the CLI and rigs; a PAM host has nowhere to put them.
                debug("ignored a message for other clients")
            }
            if ended {
                debug("the host ended the conversation: cancel sent")
                guard cancel(connection, &cancelled, &deadline) else { return .failed(.cancelled) }
            }
            // The person may take their time in the conversation; the broker's next message is
            // due within the bound from now (after a cancel, the cancel's bound stands).
            if !cancelled { deadline = monotonicSeconds() + options.messageWait }
        }
    }

    /// Tells the broker to stop (Ctrl-C, or a conversation the host ended); its result is then
    /// due within `cancelWait`. False when the broker could not be told.
    private func cancel(_ connection: WireConnection, _ cancelled: inout Bool, _ deadline: inout Double) -> Bool {
        cancelled = true
        do {
            try connection.send(ClientMessage.cancel.encoded(), until: deadline)
        } catch {
            return false
        }
        deadline = min(deadline, monotonicSeconds() + BrokerExchange.cancelWait)
        return true
    }

    /// A result the broker sent before it hung up, if one is waiting to be read.
    private func leftResult(_ connection: WireConnection) -> Reply? {
        while case let .message(message)? = try? connection.receive(until: monotonicSeconds() + 0.2, BrokerMessage.decode) {
            if case let .result(reply) = message { return reply }
        }
        return nil
    }

    /// The broker's next message, with Ctrl-C watched while waiting for it, and only then: in
    /// the conversation the host's own handling of the terminal applies. `interrupted`: a Ctrl-C
    /// came (with or without a message).
    private func next(_ connection: WireConnection, until deadline: Double)
        throws(ConnectionError) -> (BrokerMessage?, interrupted: Bool) {
        // SIGINT only: a SIGTERM to the host is not a person's cancel and stays the host's.
        let watch = try? InterruptWatch(signals: [SIGINT])
        let incoming = try connection.receive(until: deadline, alsoWatching: watch.map { [$0.fd] } ?? [], BrokerMessage.decode)
        let interrupted = watch?.fired() ?? false
        if case let .message(message) = incoming { return (message, interrupted) }
        return (nil, interrupted)
    }

    /// The answer packet for `ask`. The person's answer goes from PAM's response buffer into the
    /// packet and is wiped on the way (never a String); an empty answer is a skip. nil: the
    /// conversation failed or gave nothing back (a graphical host that ended it: the person
    /// chose the password), which the caller turns into a cancel.
    private func answer(_ ask: Ask) -> [UInt8]? {
        let kind: Answer.Kind = ask.kind == .secret ? .secret : .text
        let packet = pam.withAnswer(ask.prompt, echo: ask.kind == .visible) { raw -> [UInt8]? in
            guard raw.count > 0 else { return ClientMessage.answer(Answer(.skip)).encoded() }
            var answer = Answer(kind, Array(raw))
            let packet = ClientMessage.answer(answer).encoded()
            // The message above was a temporary: `answer.value` is ours alone again, so this
            // wipes the copy in place rather than a copy of it.
            Wire.wipe(&answer.value)
            return packet
        }
        return packet ?? nil
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
