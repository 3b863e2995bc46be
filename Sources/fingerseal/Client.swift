import FingersealWire
import Glibc
import SodiumKit
import SystemKit

/// The CLI's side of one connection to the broker: the request, the payload, then every
/// message until the result. The one place the CLI talks to the broker; every wait bounded.
final class Client {
    private let invocation: Invocation
    private let connection: WireConnection
    private let output: Output
    /// SIGINT and SIGTERM as a descriptor; nil only when no signalfd could be made (the
    /// signals then end the process, and the broker sees the hang-up as a cancel).
    private var interrupt: InterruptWatch?
    private var browsers: [pid_t] = []
    /// Why no question could be answered (no terminal, an answer too long), once said and the
    /// request cancelled: how the run ends, whatever the broker's result.
    private var failure: CLIError? = nil
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
            connection = try WireConnection.connect(path: invocation.socketPath, timeout: PersonClientLimits.connect)
        } catch {
            if case let .unreachable(code) = error, code == EACCES || code == EPERM {
                throw CLIError(.unavailable, Strings.serviceRefused(invocation.socketPath))
            }
            throw CLIError(.unavailable, Strings.serviceNotRunning)
        }
        let client = Client(invocation, connection, output, interrupt)
        // A broker that refuses at once (busy) may close before reading: its result is still
        // waiting to be read, so a failed send falls through to the loop.
        if (try? connection.send(request, until: monotonicSeconds() + PersonClientLimits.send)) != nil {
            client.streamPayload()
        }
        return try client.loop()
    }

    /// `seal`'s plaintext or `reveal`'s sealed file, in chunks, the last marked `end`.
    private func streamPayload() {
        guard let payload = invocation.payload else { return }
        _ = payload.withUnsafeBytes { connection.stream($0, chunkSize: PersonClientLimits.chunk, sendLimit: PersonClientLimits.send) }
    }

    // MARK: the conversation

    /// The shared loop (FingersealWire's `ClientConversation`) with this client's side of it; the
    /// ways it can end that are not a result, as the CLI says them.
    private func loop() throws(CLIError) -> Int32 {
        var conversation = ClientConversation(withPerson: connection)
        var side = Side(client: self)
        let end = conversation.run(&side)
        if let failure { throw failure }
        switch end {
        case let .result(reply):
            return try finish(reply)
        case let .broken(error, cancelled):
            switch error {
            case .timedOut where !cancelled: throw CLIError(.timedOut, Strings.serviceSilent(Int(PersonClientLimits.message)))
            case .protocolError: throw CLIError(.systemError, Strings.serviceGarbled)
            default: throw cancelled ? CLIError(.cancelled, Strings.cancelled) : CLIError(.unavailable, Strings.serviceEnded)
            }
        case .abandoned:
            throw CLIError(.cancelled, Strings.cancelled)
        }
    }

    /// The CLI's side of the conversation: stderr and stdout, `--events-fd`, the payload's
    /// target, browsers, and answers from the descriptors the person named or the terminal.
    /// Ctrl-C and SIGTERM are watched for the whole run (the watch is made before connecting).
    private struct Side: ConversationClient {
        let client: Client

        func watchForCancel() -> Int32? {
            client.browsers.removeAll { Programs.reap($0) }
            return client.interrupt?.fd
        }

        func cancelRequested() -> Bool { client.interrupt?.next() != nil }

        func show(_ message: BrokerMessage) -> Bool {
            switch message {
            case let .info(text), let .error(text):
                client.output.note(text)
            case let .output(text):
                client.output.out(text)
            case let .event(signal):
                client.event(signal)
            case let .finding(finding):
                if let sink = client.invocation.findings { sink.findings.append(finding) } else { client.output.out(finding.message) }
            case let .browse(url):
                // The broker sends the address as a sentence too: nothing is lost without one.
                if client.invocation.openBrowser, let pid = Programs.openInBrowser(url) { client.browsers.append(pid) }
            case let .data(bytes, _):
                client.receivedData = true
                defer { Wire.wipeStorage(bytes) }
                if client.writeFailure == nil, let failure = bytes.withUnsafeBytes({ client.invocation.target.write($0) }) {
                    client.writeFailure = failure
                    return false
                }
            case .ask, .result:
                break
            }
            return true
        }

        func answer(_ ask: Ask, _ conversation: inout ClientConversation) -> ClientConversation.Response {
            client.answer(ask, &conversation)
        }
    }

    /// A rig's `--events-fd`: one JSON object per line.
    private func event(_ signal: ReaderSignal) {
        guard let fd = invocation.eventsFD else { return }
        Output.write(fd, signal.jsonLine + "\n")
    }

    // MARK: answers

    /// Answers `ask` from where the person pointed us, or the terminal. A message that arrived
    /// while the person was typing and withdrew the question (a match, a new question) goes
    /// back to the loop; what was typed is wiped.
    private func answer(_ ask: Ask, _ conversation: inout ClientConversation) -> ClientConversation.Response {
        let descriptor: Int32?
        switch ask.purpose {
        case .clientSecret:
            return invocation.clientSecret.map { packet($0, .secret) } ?? packet(Answer(.skip))
        case .pin, .newPIN:
            descriptor = invocation.pinFD
        case .accountPassword, .idpPassword:
            descriptor = invocation.passwordFD
        case .confirm, .other:
            descriptor = nil
        }
        let reader: LineReader
        do throws(CLIError) {
            if let descriptor {
                reader = try LineReader(descriptor: descriptor)
            } else if let terminal = try LineReader(terminal: ask.prompt, echo: ask.kind == .visible || ask.purpose == .confirm) {
                reader = terminal
            } else {
                return abandon(Strings.noTerminal)
            }
        } catch {
            failure = error
            return .cancel
        }
        let kind: Answer.Content = ask.kind == .secret ? .secret : .text
        let deadline = monotonicSeconds() + PersonClientLimits.message
        var side = Side(client: self)
        while true {
            switch reader.read(until: deadline, wakingOn: [connection.fd] + (interrupt.map { [$0.fd] } ?? [])) {
            case let .line(line):
                return packet(line, kind)
            case .cancel, .timedOut:
                // Ctrl-C at the prompt, or nobody typed for the whole limit.
                return .cancel
            case .tooLong:
                return abandon(Strings.answerTooLong(LineReader.maxLength))
            case .woken:
                // The broker or a signal: the loop's wait sees which, without waiting.
                let said = conversation.whileAnswering(&side) { message in
                    switch message {
                    case let .info(text), let .error(text): reader.interject { output.note(text) }
                    case let .event(signal): event(signal)
                    default: break
                    }
                }
                if let said { return said }
            }
        }
    }

    /// Nobody can answer here (no terminal, an answer too long): say so and cancel; the loop
    /// lets the broker end the request (bounded), and the run ends with a usage error.
    private func abandon(_ message: String) -> ClientConversation.Response {
        output.error(message)
        failure = CLIError(.usage, "")
        return .cancel
    }

    /// A typed or read line: the bytes go from secure memory into the packet, and both
    /// copies on the way are wiped. An empty line is a skip (Enter alone).
    private func packet(_ line: SecureBytes, _ kind: Answer.Content) -> ClientConversation.Response {
        guard line.count > 0 else { return packet(Answer(.skip)) }
        let value = line.copyBytes()
        defer { Wire.wipeStorage(value) }
        return packet(Answer(kind, value))
    }

    /// The loop sends the packet and wipes it.
    private func packet(_ answer: Answer) -> ClientConversation.Response {
        .packet(ClientMessage.answer(answer).encoded())
    }

    // MARK: the result

    /// Renders the result and does what follows a success (a token printed or handed to a
    /// command, a command run); the exit status, or the failure for CLI.run to report.
    private func finish(_ reply: Reply) throws(CLIError) -> Int32 {
        let token = reply.token ?? []
        defer { Wire.wipeStorage(token) }
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
            try Programs.execWithToken(command, token, type: reply.tokenType)
        case let .run(command):
            // The connection stays open while COMMAND runs: the broker holds the
            // confirmation exactly that long, and drops it when we close.
            let status = try Programs.runForeground(command)
            connection.shutdownWrite()
            // The broker ends the confirmation when it sees us hang up, then closes its end:
            // wait (bounded) for that, so that when we exit the confirmation is already gone
            // (a script's next command must not find it held).
            let deadline = monotonicSeconds() + PersonClientLimits.cancel
            while case .packet = connection.wait(until: deadline) {
                if (try? connection.withPacket { _ in () }) == nil { break }
            }
            return status
        }
    }
}
