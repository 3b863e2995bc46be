import FingersealWire
import Glibc
import SodiumKit
import SystemKit

/// The CLI's side of one connection to the broker: the request, the payload, then every
/// message until the result. The one place the CLI talks to the broker; every wait bounded.
final class Client {
    static let connectLimit = 2.0
    /// Between two messages from the broker (which bounds scans and IdP requests itself).
    static let messageLimit = 600.0
    /// After a cancel, how long the broker has to send its result.
    static let cancelLimit = 5.0
    static let sendLimit = 10.0
    /// Payload chunk size: a chunk and its fields fit a packet (Wire.maxPacket, 64 KiB).
    static let chunkSize = 60 * 1024

    private let invocation: Invocation
    private let connection: WireConnection
    private let output: Output
    /// SIGINT and SIGTERM as a descriptor; nil only when no signalfd could be made (the
    /// signals then end the process, and the broker sees the hang-up as a cancel).
    private var interrupt: InterruptWatch?
    private var cancelledAt: Double? = nil
    private var browsers: [pid_t] = []
    private var receivedData = false
    private var writeFailure: String? = nil

    private init(_ invocation: Invocation, _ connection: WireConnection, _ output: Output, _ interrupt: InterruptWatch?) {
        self.invocation = invocation
        self.connection = connection
        self.output = output
        self.interrupt = interrupt
    }

    /// Runs `invocation` against the broker; the exit status on success (the command's, for
    /// `step-up -- COMMAND`), or why not.
    static func run(_ invocation: Invocation, _ output: Output) throws(CLIError) -> Int32 {
        let request = ClientMessage.request(invocation.request).encoded()
        guard request.count <= Wire.maxPacket else { throw CLIError(.usage, Strings.commandTooLong) }
        let interrupt = try? InterruptWatch()
        let connection: WireConnection
        do {
            connection = try WireConnection.connect(path: invocation.socketPath, timeout: connectLimit)
        } catch {
            if case let .unreachable(code) = error, code == EACCES || code == EPERM {
                throw CLIError(.unavailable, Strings.serviceRefused(invocation.socketPath))
            }
            throw CLIError(.unavailable, Strings.serviceNotRunning)
        }
        let client = Client(invocation, connection, output, interrupt)
        // A broker that refuses at once (busy) may close before reading: its result is still
        // waiting to be read, so a failed send falls through to the loop.
        if (try? connection.send(request, until: monotonicSeconds() + sendLimit)) != nil {
            client.streamPayload()
        }
        return try client.loop()
    }

    /// `seal`'s plaintext or `reveal`'s sealed file, in chunks, the last marked `end`.
    private func streamPayload() {
        guard let payload = invocation.payload else { return }
        payload.withUnsafeBytes { bytes in
            var offset = 0
            repeat {
                let end = min(offset + Client.chunkSize, bytes.count)
                let chunk = Array(bytes[offset..<end])
                let packet = ClientMessage.data(chunk, end: end == bytes.count).encoded()
                let sent = (try? connection.send(packet, until: monotonicSeconds() + Client.sendLimit)) != nil
                wipeStorage(chunk)
                wipeStorage(packet)
                guard sent else { return }
                offset = end
            } while offset < bytes.count
        }
    }

    private var watched: [Int32] { interrupt.map { [$0.fd] } ?? [] }

    // MARK: the conversation

    private func loop() throws(CLIError) -> Int32 {
        var pending: BrokerMessage? = nil
        while true {
            browsers.removeAll { Programs.reap($0) }
            let message: BrokerMessage
            if let next = pending {
                message = next
                pending = nil
            } else {
                guard let next = try receive() else { continue }
                message = next
            }
            switch message {
            case let .info(text), let .error(text):
                output.note(text)
            case let .output(text):
                output.out(text)
            case let .event(json):
                event(json)
            case let .finding(finding):
                if let sink = invocation.findings { sink.findings.append(finding) } else { output.out(finding.message) }
            case let .browse(url):
                // The broker sends the address as a sentence too: nothing is lost without one.
                if invocation.openBrowser, let pid = Programs.openInBrowser(url) { browsers.append(pid) }
            case let .data(bytes, _):
                receivedData = true
                if writeFailure == nil, let failure = bytes.withUnsafeBytes({ invocation.target.write($0) }) {
                    writeFailure = failure
                    sendCancel()
                }
                wipeStorage(bytes)
            case let .ask(ask):
                if cancelledAt == nil { pending = try answer(ask) }
            case let .result(reply):
                return try finish(reply)
            }
        }
    }

    /// The next message from the broker, within the message limit (the cancel limit once
    /// cancelled); nil when a signal came first (and was handled).
    private func receive() throws(CLIError) -> BrokerMessage? {
        let deadline = cancelledAt.map { $0 + Client.cancelLimit } ?? monotonicSeconds() + Client.messageLimit
        let incoming: WireConnection.Incoming<BrokerMessage>
        do {
            incoming = try connection.receive(until: deadline, alsoWatching: watched, BrokerMessage.decode)
        } catch .timedOut {
            throw cancelledAt != nil ? CLIError(.cancelled, Strings.cancelled)
                                     : CLIError(.timedOut, Strings.serviceSilent(Int(Client.messageLimit)))
        } catch .protocolError {
            throw CLIError(.systemError, Strings.serviceGarbled)
        } catch {
            throw cancelledAt != nil ? CLIError(.cancelled, Strings.cancelled) : CLIError(.unavailable, Strings.serviceEnded)
        }
        switch incoming {
        case let .message(message):
            return message
        case .other:
            try interrupted()
            return nil
        }
    }

    /// Ctrl-C or SIGTERM: ask the broker to stop and wait (bounded) for how it ended (a match
    /// that came first still wins). A second one leaves at once.
    private func interrupted() throws(CLIError) {
        guard interrupt?.next() != nil else { return }
        if cancelledAt != nil { throw CLIError(.cancelled, Strings.cancelled) }
        sendCancel()
    }

    private func sendCancel() {
        guard cancelledAt == nil else { return }
        cancelledAt = monotonicSeconds()
        _ = try? connection.send(ClientMessage.cancel.encoded(), until: monotonicSeconds() + 2)
    }

    private func event(_ json: String) {
        guard let fd = invocation.eventsFD else { return }
        Output.write(fd, json + "\n")
    }

    // MARK: answers

    /// Answers `ask` from where the person pointed us, or the terminal. Returns a message
    /// that arrived while the person was typing and withdrew the question (a match, a new
    /// question), for the loop to handle; what was typed is wiped.
    private func answer(_ ask: Ask) throws(CLIError) -> BrokerMessage? {
        let descriptor: Int32?
        switch ask.purpose {
        case .clientSecret:
            if let secret = invocation.clientSecret { send(secret, .secret) } else { send(Answer(.skip)) }
            return nil
        case .pin, .newPIN:
            descriptor = invocation.pinFD
        case .accountPassword, .idpPassword:
            descriptor = invocation.passwordFD
        case .confirm, .other:
            descriptor = nil
        }
        let reader: LineReader
        if let descriptor {
            reader = try LineReader(descriptor: descriptor)
        } else if let terminal = try LineReader(terminal: ask.prompt, echo: ask.kind == .visible || ask.purpose == .confirm) {
            reader = terminal
        } else {
            try abandon(Strings.noTerminal)
        }
        let kind: Answer.Kind = ask.kind == .secret ? .secret : .text
        let deadline = monotonicSeconds() + Client.messageLimit
        while true {
            switch reader.read(until: deadline, wakingOn: [connection.fd] + watched) {
            case let .line(line):
                send(line, kind)
                return nil
            case .cancel, .timedOut:
                // Ctrl-C at the prompt, or nobody typed for the whole limit.
                sendCancel()
                return nil
            case .tooLong:
                try abandon(Strings.answerTooLong(LineReader.maxLength))
            case let .woken(fd) where fd != connection.fd:
                try interrupted()
                if cancelledAt != nil { return nil }
            case .woken:
                guard let message = try receive() else { continue }
                switch message {
                case let .info(text), let .error(text): reader.interject { output.note(text) }
                case let .event(json): event(json)
                default: return message
                }
            }
        }
    }

    /// Nobody can answer here (no terminal, an answer too long): say so, cancel, let the
    /// broker end the request (bounded), and end with a usage error.
    private func abandon(_ message: String) throws(CLIError) -> Never {
        output.error(message)
        sendCancel()
        while true {
            let next: BrokerMessage?
            do { next = try receive() } catch { break }
            if case .result? = next { break }
        }
        throw CLIError(.usage, "")
    }

    /// A typed or read line: the bytes go from secure memory into the packet, and both
    /// copies on the way are wiped. An empty line is a skip (Enter alone).
    private func send(_ line: SecureBytes, _ kind: Answer.Kind) {
        guard line.count > 0 else { return send(Answer(.skip)) }
        let value = line.copyBytes()
        send(Answer(kind, value))
        wipeStorage(value)
    }

    private func send(_ answer: Answer) {
        let packet = ClientMessage.answer(answer).encoded()
        _ = try? connection.send(packet, until: monotonicSeconds() + Client.sendLimit)
        wipeStorage(packet)
    }

    // MARK: the result

    /// Renders the result and does what follows a success (a token printed or handed to a
    /// command, a command run); the exit status, or the failure for CLI.run to report.
    private func finish(_ reply: Reply) throws(CLIError) -> Int32 {
        let token = reply.token ?? []
        defer { wipeStorage(token) }
        if let writeFailure { throw CLIError(.systemError, writeFailure) }
        guard reply.outcome == .success else { throw CLIError(reply.outcome, reply.message) }
        if let failure = invocation.target.keep() { throw CLIError(.systemError, failure) }
        // Standard output carries the payload (a token, data, a command's output): the
        // sentence goes to standard error so that nothing is mixed into it.
        if !reply.message.isEmpty {
            if case .nothing = invocation.afterSuccess, !(receivedData && invocation.target.isStandardOutput) {
                output.out(reply.message)
            } else {
                output.note(reply.message)
            }
        }
        switch invocation.afterSuccess {
        case .nothing:
            return Outcome.success.exitCode
        case .printToken:
            guard !token.isEmpty else { throw CLIError(.unavailable, Strings.noToken) }
            let written = token.withUnsafeBytes { Output.write(STDOUT_FILENO, $0) }
            guard written, [UInt8(0x0a)].withUnsafeBytes({ Output.write(STDOUT_FILENO, $0) }) else {
                throw CLIError(.systemError, Strings.cannotWrite(Strings.standardOutput, String(cString: strerror(errno))))
            }
            return Outcome.success.exitCode
        case let .exec(command):
            guard !token.isEmpty else { throw CLIError(.unavailable, Strings.noToken) }
            // The command starts with the signals as we found them.
            interrupt = nil
            try Programs.execWithToken(command, token)
        case let .run(command):
            // The connection stays open while COMMAND runs: the broker holds the
            // confirmation exactly that long, and drops it when we close.
            let status = try Programs.runForeground(command)
            connection.shutdownWrite()
            // The broker ends the confirmation when it sees us hang up, then closes its end:
            // wait (bounded) for that, so that when we exit the confirmation is already gone
            // (a script's next command must not find it held).
            let deadline = monotonicSeconds() + Client.cancelLimit
            while case .packet = connection.wait(until: deadline) {
                if (try? connection.withPacket { _ in () }) == nil { break }
            }
            return status
        }
    }
}
