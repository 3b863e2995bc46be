@testable import Broker
import CLibFuzzer
import FingersealCore
import FingersealWire
import FoundationEssentials
import FuzzInput
import Glibc
import SystemKit

/// A broker per input on a fresh store: its state directory emptied, the same configuration,
/// the account-password service that accepts any password (so the paths behind it are
/// reached; a success through it still needs an answer, which `BrokerInput.checked` asserts).
final class BrokerHarness {
    let directory: String
    let listener: Listener
    var settings: BrokerSettings

    init() {
        // In memory where there is a tmpfs: the store fsyncs every write.
        let base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
        var template = Array("\(base)/fingerseal-fuzz-broker.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { fatalError("fuzz-broker: mkdtemp") }
        directory = String(cString: made)
        // Server wants a listener; every connection here is a socketpair handed to it directly.
        guard let listener = try? Listener.bind(path: directory + "/socket") else { fatalError("fuzz-broker: listener") }
        self.listener = listener
        settings = BrokerSettings(stateDirectory: directory + "/state")
        settings.configPath = directory + "/fingerseal.conf"
        settings.pamServiceDirectory = directory + "/pam"
        settings.bootIDPath = directory + "/boot_id"
        // Existing slots carry their own cost; new ones are made cheap (a tuned slot costs
        // ~150 ms and 64 MiB, which a million executions cannot pay).
        settings.pinCost = .fastForTests
        let files = [
            "fingerseal.conf": "pin\nissuer=http://127.0.0.1:9/o\nclient_id=fuzz\nconnect_timeout=1\nidp_timeout=1\ntimeout=1\nreader=libfprint\n",
            "boot_id": "0123456789abcdef0123456789abcdef\n",
        ]
        do {
            try FileManager.default.createDirectory(atPath: directory + "/pam", withIntermediateDirectories: true)
            for (name, text) in files { try Data(text.utf8).write(to: URL(fileURLWithPath: directory + "/" + name)) }
            try Data("auth required pam_permit.so\naccount required pam_permit.so\n".utf8)
                .write(to: URL(fileURLWithPath: directory + "/pam/fingerseal-verify"))
        } catch {
            fatalError("fuzz-broker: cannot write the harness's files: \(error)")
        }
    }

    /// Removes the harness's directory (at exit: libFuzzer ends with exit()).
    func remove() { try? FileManager.default.removeItem(atPath: directory) }

    func run(_ input: FuzzInput) {
        var input = input
        let connections = BrokerInput.decode(&input)
        try? FileManager.default.removeItem(atPath: settings.stateDirectory)
        guard let server = try? Server(listener: listener, settings: settings) else { fatalError("fuzz-broker: cannot start the broker") }
        for connection in connections {
            let replies = serve(connection, server)
            BrokerInput.checked(connection, replies)
        }
    }

    /// One connection: the client's packets queued and its end shut for writing (a client
    /// that said everything and waits: the broker sees it hang up once it has read them),
    /// served to the end, then the broker's packets read back.
    private func serve(_ connection: BrokerInput.Connection, _ server: Server) -> [BrokerMessage] {
        var pair: [Int32] = [-1, -1]
        // SO_PEERCRED records the thread's effective uid when the pair is made.
        guard fuzz_thread_seteuid(connection.uid) == 0 else { fatalError("fuzz-broker: seteuid \(connection.uid)") }
        let made = socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair)
        guard fuzz_thread_seteuid(0) == 0, made == 0 else { fatalError("fuzz-broker: socketpair") }
        let client = pair[0], brokerEnd = pair[1]
        defer { close(client) }
        // Room for everything the broker says before the client reads it (root may force it).
        var room: Int32 = 8 << 20
        setsockopt(brokerEnd, SOL_SOCKET, SO_SNDBUFFORCE, &room, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(client, SOL_SOCKET, SO_SNDBUFFORCE, &room, socklen_t(MemoryLayout<Int32>.size))
        _ = fcntl(brokerEnd, F_SETFL, fcntl(brokerEnd, F_GETFL) | O_NONBLOCK)
        for packet in connection.packets {
            guard packet.withUnsafeBytes({ send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }) == packet.count else { break }
        }
        shutdown(client, Int32(SHUT_WR))
        guard let caller = try? Caller.of(socket: brokerEnd) else { fatalError("fuzz-broker: the caller of a socketpair") }
        server.serve(WireConnection(owning: brokerEnd), caller, AdmissionSlot {})
        var replies: [BrokerMessage] = []
        var buffer = [UInt8](repeating: 0, count: Wire.maxPacket + 1)
        while true {
            let count = recv(client, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard count > 0 else { break }
            do {
                replies.append(try buffer[..<count].withUnsafeBytes { try BrokerMessage.decode($0) })
            } catch {
                fatalError("fuzz-broker: the broker sent a packet the protocol refuses: \(error)")
            }
        }
        return replies
    }
}
