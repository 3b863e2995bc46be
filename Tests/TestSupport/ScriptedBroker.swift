import FingersealWire
import Glibc
import SystemKit

/// A stand-in for fingersealed in the PAM module's tests: a SOCK_SEQPACKET listener in a temp
/// directory, served on a thread of its own. For each script it takes one connection (in
/// order), records the request and what the client sends, and plays the script's steps. Every
/// wait is bounded by `patience`, so a test whose module never comes cannot hang the run.
final class ScriptedBroker: @unchecked Sendable {
    enum Step: Sendable {
        /// A well-formed message.
        case send(BrokerMessage)
        /// Bytes as they are (garbage, another version, an oversized packet).
        case raw([UInt8])
        /// Waits for the client's answer and records it.
        case awaitAnswer
        /// Waits for the client's cancel and records it.
        case awaitCancel
        /// Sends SIGINT to a thread of this process (the one running the PAM call).
        case interrupt(pthread_t)
        /// Ends the connection here, without a result.
        case close
        /// Says nothing more; waits for the client to hang up.
        case silent
    }

    /// What one connection brought.
    struct Connection {
        var request: Request?
        var answers: [Answer] = []
        var cancels = 0
        /// What went wrong on the broker's side: a step that timed out, a packet it refused.
        var problems: [String] = []
    }

    let path: String
    private let directory: TempDirectory
    private let listener: Int32
    private let scripts: [[Step]]
    private let patience: Double
    private var thread: pthread_t?
    private var connections: [Connection] = []

    init(_ scripts: [[Step]], patience: Double = 15) throws {
        directory = try TempDirectory()
        path = directory.file("socket")
        self.scripts = scripts
        self.patience = patience
        listener = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw TestFailure("socket failed: \(errno)") }
        let bound = withUnixAddress(path) { bind(listener, $0, $1) }
        guard bound == 0, listen(listener, 8) == 0 else {
            close(listener)
            throw TestFailure("cannot listen on \(path): \(errno)")
        }
        let box = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        guard pthread_create(&thread, nil, { raw in
            guard let raw else { return nil }
            let broker = Unmanaged<ScriptedBroker>.fromOpaque(raw).takeRetainedValue()
            broker.serve()
            return nil
        }, box) == 0 else {
            Unmanaged<ScriptedBroker>.fromOpaque(box).release()
            close(listener)
            throw TestFailure("pthread_create failed")
        }
        self.thread = thread
    }

    /// One script: one connection.
    convenience init(_ script: [Step], patience: Double = 15) throws {
        try self.init([script], patience: patience)
    }

    deinit {
        // The thread holds a reference while it serves, so it has ended by now; the last
        // release may even happen on it, which then cannot join itself.
        if let thread {
            if pthread_equal(thread, pthread_self()) != 0 { pthread_detach(thread) } else { pthread_join(thread, nil) }
        }
        close(listener)
    }

    /// Waits for the broker's thread to end and returns what each connection brought.
    func finish() -> [Connection] {
        if let thread {
            pthread_join(thread, nil)
            self.thread = nil
        }
        return connections
    }

    /// The only connection's record (fails the test when there was none).
    func finishOne() throws -> Connection {
        let all = finish()
        guard let first = all.first else { throw TestFailure("the module never connected") }
        return first
    }

    private func serve() {
        for script in scripts {
            var record = Connection()
            guard let connection = accept(&record) else {
                connections.append(record)
                return
            }
            play(script, on: connection, into: &record)
            connections.append(record)
        }
    }

    private func accept(_ record: inout Connection) -> WireConnection? {
        var pfd = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, Int32(patience * 1000)) == 1 else {
            record.problems.append("no connection")
            return nil
        }
        let fd = Glibc.accept(listener, nil, nil)
        guard fd >= 0 else {
            record.problems.append("accept failed: \(errno)")
            return nil
        }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return WireConnection(owning: fd)
    }

    private func play(_ script: [Step], on connection: WireConnection, into record: inout Connection) {
        guard case let .message(.request(request))? = receive(connection, &record) else {
            record.problems.append("no request")
            return
        }
        record.request = request
        for step in script {
            switch step {
            case let .send(message):
                do { try connection.send(message.encoded(), until: monotonicSeconds() + patience) } catch {
                    record.problems.append("send: \(error)")
                }
            case let .raw(bytes):
                let sent = bytes.withUnsafeBytes { send(connection.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if sent != bytes.count { record.problems.append("raw send: \(errno)") }
            case .awaitAnswer:
                switch receive(connection, &record) {
                case let .message(.answer(answer))?: record.answers.append(answer)
                case let other: record.problems.append("expected an answer, got \(String(describing: other))")
                }
            case .awaitCancel:
                switch receive(connection, &record) {
                case .message(.cancel)?: record.cancels += 1
                case let other: record.problems.append("expected a cancel, got \(String(describing: other))")
                }
            case let .interrupt(thread):
                pthread_kill(thread, SIGINT)
            case .close:
                return
            case .silent:
                drain(connection, &record)
                return
            }
        }
        // The script is played: whatever else the client says, until it hangs up.
        drain(connection, &record)
    }

    /// Records what the client sends until it closes the connection (or patience runs out).
    private func drain(_ connection: WireConnection, _ record: inout Connection) {
        while let incoming = receive(connection, &record, quietAtEnd: true) {
            switch incoming {
            case let .message(.answer(answer)): record.answers.append(answer)
            case .message(.cancel): record.cancels += 1
            default: record.problems.append("unexpected \(incoming)")
            }
        }
    }

    private func receive(_ connection: WireConnection, _ record: inout Connection,
                         quietAtEnd: Bool = false) -> WireConnection.Incoming<ClientMessage>? {
        do {
            return try connection.receive(until: monotonicSeconds() + patience, ClientMessage.decode)
        } catch .closed where quietAtEnd {
            return nil
        } catch {
            record.problems.append("receive: \(error)")
            return nil
        }
    }
}

extension BrokerMessage {
    /// A packet of this message with the protocol version replaced.
    func encoded(version: UInt8) -> [UInt8] {
        var packet = encoded()
        packet[2] = version
        return packet
    }
}
