import FingersealWire
import FuzzInput
import Glibc

/// One input: up to four connections in turn to the same broker and store, each from root or
/// one of two accounts, each a sequence of client packets (a request, answers, cancels, data)
/// mostly well formed, some with a field appended or a byte changed.
enum BrokerInput {
    struct Connection {
        let uid: UInt32
        var packets: [[UInt8]] = []
        /// The first packet's request, as sent (nil when it does not decode as one).
        var request: Request? {
            guard let first = packets.first, case let .request(request)? = first.withUnsafeBytes({ try? ClientMessage.decode($0) }) else { return nil }
            return request
        }
        /// An answer with something in it came after the request (a PIN, a password).
        var answered: Bool {
            packets.dropFirst().contains { packet in
                guard case let .answer(answer)? = packet.withUnsafeBytes({ try? ClientMessage.decode($0) }) else { return false }
                return answer.kind != .skip && !answer.value.isEmpty
            }
        }
    }

    /// The test accounts the connections come from, beside root, by name: their uids are
    /// whatever useradd gave them on this machine (scripts/fuzz makes them when missing).
    static let accountNames = ["fs-alice", "fs-bob"]
    static let accountUIDs: [UInt32] = accountNames.map { name in getpwnam(name).map { $0.pointee.pw_uid } ?? UInt32.max }
    static let uids: [UInt32] = [0] + accountUIDs
    static let users: [String?] = [nil, "fs-alice", "fs-bob", "root", "nobody", "no-such-user", ""]
    static let moduleOptions = ["pin", "timeout=1", "identify", "stepup=payroll", "ttl=5", "allow_remote", "max_fails=1", "max_tries=1",
                                "require_token", "offline_grace=0", "password_after_boot", "keyring_services=login",
                                "provision=idp", "identify_group=fs", "skip_services=sudo", "debug"]
    static let options: [(String, String)] = [
        ("user", "fs-alice"), ("user", "fs-bob"), ("user", "root"), ("json", "1"), ("pin-fd", "1"), ("ttl", "5"), ("fresh", "1"),
        ("yes", "1"), ("timeout", "1"), ("flow", "password"), ("print-token", "1"), ("end", "1"), ("verify", "1"), ("finger", "right-index-finger"),
        ("context", "payroll"), ("limit", "3"), ("issuer", "http://127.0.0.1:9/o"), ("client-id", "fuzz"), ("idp-user", "alice"),
    ]
    static let arguments = ["payroll", "fs-alice", "right-index-finger", "", "bank", "--"]
    static let answers = ["2580", "0000", "25802580", "correct horse", "", "1", "yes"]

    static func decode(_ input: inout FuzzInput) -> [Connection] {
        var connections: [Connection] = []
        for _ in 0..<4 where !input.isEmpty {
            var connection = Connection(uid: input.pick(uids))
            connection.packets.append(request(&input))
            for _ in 0..<Int(input.byte() % 6) {
                var packet: [UInt8]
                switch input.byte() % 8 {
                case 0, 1, 2:
                    let kind = input.pick([Answer.Content.secret, .text, .skip])
                    packet = ClientMessage.answer(Answer(kind, Array(input.textOrPick(answers).utf8))).encoded()
                case 3: packet = ClientMessage.cancel.encoded()
                case 4: packet = ClientMessage.data(input.bytes(below: 64), end: input.flag()).encoded()
                case 5: packet = request(&input)
                default: packet = input.bytes(below: 128)
                }
                mutate(&packet, &input)
                connection.packets.append(packet)
            }
            connections.append(connection)
        }
        return connections
    }

    /// A request as a client builds it, then perhaps a field appended or a byte changed.
    static func request(_ input: inout FuzzInput) -> [UInt8] {
        var request = Request(input.pick(Command.allCases))
        let shape = input.byte()
        // Any origin with any command: the broker refuses those its client never sends.
        if shape & 1 != 0 {
            let items = PAMItems(user: input.pick(users), service: input.pick([nil, "login", "sudo", "gdm-password", "fuzz"]),
                                 tty: input.pick([nil, "/dev/tty1", ":0", ""]), rhost: input.pick([nil, "", "host.example"]),
                                 ruser: input.pick([nil, "fs-alice", "fs-bob", "root"]), xdisplay: input.pick([nil, ":0"]))
            let arguments = shape & 2 != 0 ? (0..<Int(input.byte() % 4)).map { _ in input.textOrPick(moduleOptions) } : []
            request.origin = .pamHost(items, moduleArguments: arguments)
        } else if shape & 128 != 0 {
            request.origin = .application(Application(busName: ":1.42", name: "Meander",
                                                      grantKey: input.flag() ? Array(repeating: 7, count: 32) : nil,
                                                      methods: input.flag() ? [.pin] : []))
        }
        if shape & 4 != 0 {
            for _ in 0..<Int(input.byte() % 4) {
                let (field, value) = input.pick(options)
                request.options.set(field: field, input.flag() ? value : input.text(below: 16))
            }
        }
        if shape & 8 != 0 { request.arguments = (0..<Int(input.byte() % 3)).map { _ in input.textOrPick(arguments) } }
        request.answersWhileScanning = shape & 16 != 0
        request.wantsEvents = shape & 32 != 0
        if shape & 64 != 0 {
            request.ticket = input.pick([nil, "t-1", ""])
            request.language = input.pick([nil, "nb", "nb_NO.UTF-8", "C"])
            request.timeZone = input.pick([nil, "Europe/Oslo", "UTC", "CET-1CEST,M3.5.0,M10.5.0/3", "../../etc/passwd"])
        }
        var packet = ClientMessage.request(request).encoded()
        mutate(&packet, &input)
        return packet
    }

    static func mutate(_ packet: inout [UInt8], _ input: inout FuzzInput) {
        switch input.byte() % 8 {
        case 0: appendField(&packet, key: Array(input.textOrPick(["command", "pam", "pam.user", "opt.user", "arg", "kind", "value", "x"]).utf8),
                            value: input.bytes(below: 32))
        case 1 where !packet.isEmpty:
            let at = Int(input.byte()) % packet.count
            packet[at] = input.byte()
        default: break
        }
    }

    /// What the broker said on one connection: a result ends it (nothing after it), and a
    /// success must be possible for that request: never from an unreachable identity provider,
    /// never an administrator's command for another account, never a PIN change or a new
    /// account's PIN without an answer.
    static func checked(_ connection: Connection, _ replies: [BrokerMessage]) {
        if let index = replies.firstIndex(where: { if case .result = $0 { return true } else { return false } }), index != replies.count - 1 {
            fatalError("fuzz-broker: \(replies.count - 1 - index) message(s) after the result")
        }
        guard case let .result(reply)? = replies.last, reply.outcome == .success, let request = connection.request else { return }
        let root = connection.uid == 0
        let pamCommands: [Command] = [.pamAuthenticate, .pamIdentify, .pamOpenSession, .pamCloseSession, .pamAccount]
        let own = accountNames[accountUIDs.firstIndex(of: connection.uid) ?? 1]
        let refused: String?
        if [.login, .token].contains(request.command) {
            refused = "needs the identity provider, which is unreachable"
        } else if [.accountList, .accountRemove, .accountExpire].contains(request.command) && !root {
            refused = "is root's"
        } else if request.command == .pinChange && !connection.answered {
            refused = "needs the PIN"
        } else if request.command == .pinSet && !root && !connection.answered {
            refused = "needs the account password and a PIN"
        } else if pamCommands.contains(request.command) && !root, let user = request.origin.pamItems?.user, !user.isEmpty, user != own {
            refused = "is for another account, from a user"
        } else {
            refused = nil
        }
        if let refused {
            fatalError("fuzz-broker: \(request.command.rawValue) from uid \(connection.uid) succeeded, but it \(refused)")
        }
    }
}
