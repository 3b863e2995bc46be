import FingersealWire
import Glibc
import SystemKit

/// The broker the module talks to: a listening socket whose connections are served, in the
/// order they come, with the broker packets of the current input (one script per connection,
/// an empty one when they run out). Every packet the module sends must decode; a module that
/// sends anything else traps here.
final class PlayedBroker: @unchecked Sendable {
    /// One connection's packets, and what the harness decided about them when it built them.
    struct Script {
        var packets: [[UInt8]] = []
        /// The first packet that decodes as a result says success: the only script after
        /// which the module may answer PAM_SUCCESS.
        var succeeds: Bool {
            for packet in packets {
                if case let .result(reply)? = packet.withUnsafeBytes({ try? BrokerMessage.decode($0) }) { return reply.outcome == .success }
            }
            return false
        }
    }

    /// What one served connection was: the request's command, and whether its script succeeds.
    struct Served {
        let command: Command
        let succeeds: Bool
    }

    /// How long the played broker waits for the module's request and for each answer.
    static let wait = 1.5

    let path: String
    private let listener: Int32
    private let condition = ThreadCondition()
    private var scripts: [Script] = []
    private var served: [Served] = []
    private var busy = false

    init(path: String) {
        self.path = path
        listener = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard listener >= 0, bound == 0, listen(listener, 16) == 0 else { fatalError("fuzz-pam: cannot listen at \(path)") }
        guard startDetachedThread({ [self] in run() }) else { fatalError("fuzz-pam: cannot start the played broker") }
    }

    /// The scripts of the next input.
    func load(_ next: [Script]) {
        condition.locked {
            scripts = next.reversed()
            served = []
        }
    }

    /// After an input: waits until the connection being served is done, closes any the
    /// module left behind, and returns what was served.
    func finish() -> [Served] {
        condition.locked {
            while busy { condition.wait(until: monotonicSeconds() + 10) }
            while true {
                let fd = accept(listener, nil, nil)
                if fd < 0 { break }
                close(fd)
            }
            scripts = []
            return served
        }
    }

    /// Served since the last `load` (the entry point just called may have made several).
    func servedSoFar() -> [Served] {
        condition.locked {
            while busy { condition.wait(until: monotonicSeconds() + 10) }
            return served
        }
    }

    private func run() {
        while true {
            var fds = [pollEntry(listener, Int16(POLLIN))]
            _ = waitReady(&fds, until: monotonicSeconds() + 60)
            let taken = condition.locked { () -> (Int32, Script)? in
                // Non-blocking, as the listener's own flag is not inherited on Linux.
                let fd = accept(listener, nil, nil)
                guard fd >= 0 else { return nil }
                _ = fcntl(fd, F_SETFL, O_NONBLOCK)
                busy = true
                return (fd, scripts.popLast() ?? Script())
            }
            guard let (fd, script) = taken else { continue }
            let command = play(script, fd)
            close(fd)
            condition.locked {
                if let command { served.append(Served(command: command, succeeds: script.succeeds)) }
                busy = false
                condition.broadcast()
            }
        }
    }

    /// The module's request, then the script; after each question the module's answer.
    private func play(_ script: Script, _ fd: Int32) -> Command? {
        guard case let .request(request)? = receive(fd) else { return nil }
        for packet in script.packets {
            guard packet.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }) == packet.count else { break }
            if case let .ask(ask)? = packet.withUnsafeBytes({ try? BrokerMessage.decode($0) }), !ask.whileScanning {
                guard receive(fd) != nil else { break }
            }
        }
        return request.command
    }

    /// The module's next packet within `wait`; nil when it hung up or said nothing. A packet
    /// that does not decode is the module's bug.
    private func receive(_ fd: Int32) -> ClientMessage? {
        var fds = [pollEntry(fd, Int16(POLLIN))]
        guard case .ready = waitReady(&fds, until: monotonicSeconds() + PlayedBroker.wait) else { return nil }
        var buffer = [UInt8](repeating: 0, count: Wire.maxPacket + 1)
        let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        guard count > 0 else { return nil }
        do {
            return try buffer[..<count].withUnsafeBytes { try ClientMessage.decode($0) }
        } catch {
            fatalError("fuzz-pam: the module sent a packet the protocol refuses: \(error)")
        }
    }
}
