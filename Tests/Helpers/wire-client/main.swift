// A test client for the broker that speaks the wire protocol directly, optionally as
// another user, so the tests can try each row of the authorization table and each kind of
// hostile client with a real process. Not part of the product.
//
//   wire-client SOCKET [--as USER] [--answer TEXT]... [--raw HEX] [--hang-up-after-ask] [--cancel-at-ask] [--repeat N]
//               COMMAND [pam.user=NAME] [option=NAME=VALUE] [flag=NAME] [value=NAME=VALUE] [arg=TEXT]
//
// Prints each broker message as one line ("info: …", "ask: secret pin …", "result: OUTCOME
// MESSAGE"); exits 0 when a result came, 1 when none did. `--cancel-at-ask` answers a question
// with a cancel, as Ctrl-C at a prompt does. `--repeat N` sends the request N
// times, one connection after the other (a flood from one process), and prints only how
// many of each outcome came: "results: cancelled=N ..."; exits 0 when every one got a result.
import FingersealWire
import Glibc
import SystemKit

func die(_ text: String) -> Never {
    say("wire-client: \(text)")
    exit(2)
}

/// One line straight to standard output, so a test can act on each message as it comes.
func say(_ line: String) {
    var text = line + "\n"
    _ = text.withUTF8 { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 2 else { die("usage") }
let socketPath = arguments.removeFirst()
var answers: [String] = []
var raw: [UInt8]? = nil
var hangUpAfterAsk = false
var cancelAtAsk = false
var repeats: Int? = nil
while let first = arguments.first, first.hasPrefix("--") {
    arguments.removeFirst()
    switch first {
    case "--as":
        let name = arguments.removeFirst()
        guard let entry = getpwnam(name) else { die("no user \(name)") }
        let uid = entry.pointee.pw_uid, gid = entry.pointee.pw_gid
        guard initgroups(name, gid) == 0, setgid(gid) == 0, setuid(uid) == 0 else { die("cannot become \(name)") }
    case "--answer": answers.append(arguments.removeFirst())
    case "--raw":
        let hex = Array(arguments.removeFirst().utf8)
        var bytes: [UInt8] = []
        var index = 0
        while index + 1 < hex.count {
            bytes.append(UInt8(String(decoding: hex[index...index + 1], as: UTF8.self), radix: 16) ?? 0)
            index += 2
        }
        raw = bytes
    case "--hang-up-after-ask": hangUpAfterAsk = true
    case "--cancel-at-ask": cancelAtAsk = true
    case "--repeat": repeats = Int(arguments.removeFirst()) ?? 1
    default: die("unknown option \(first)")
    }
}
guard let commandName = arguments.first else { die("no command") }

/// One exchange on a connection of its own: the outcome of its result, or nil when none came.
/// `quiet`: nothing printed.
@MainActor func exchange(quiet: Bool) -> Outcome? {
    func show(_ line: String) { if !quiet { say(line) } }
    var answers = answers
    let connection: WireConnection
    do { connection = try WireConnection.connect(path: socketPath, timeout: 5) } catch { die("connect: \(error)") }
    let deadline = monotonicSeconds() + 60
    do {
        if let raw {
            try connection.send(raw, until: deadline)
        } else {
            guard let command = Command(rawValue: commandName) else { die("unknown command \(commandName)") }
            var request = Request(command)
            for item in arguments.dropFirst() {
                let raw = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                guard raw.count == 2 else { die("bad item \(item)") }
                let parts = raw
                switch parts[0] {
                case "pam.user": request.pam = PAMItems(user: parts[1], service: "wire-client", tty: "/dev/pts/99")
                // After pam.user: change one item ("" leaves it unset).
                case "pam.tty": request.pam?.tty = parts[1].isEmpty ? nil : parts[1]
                case "pam.xdisplay": request.pam?.xdisplay = parts[1]
                case "pam.service": request.pam?.service = parts[1]
                case "option": request.moduleOptions.append(parts[1])
                case "flag": request.flags.append(parts[1])
                case "value":
                    let pair = parts[1].split(separator: "=", maxSplits: 1).map(String.init)
                    request.values[pair[0]] = pair.count > 1 ? pair[1] : ""
                case "arg": request.arguments.append(parts[1])
                default: die("bad item \(item)")
                }
            }
            try connection.send(ClientMessage.request(request).encoded(), until: deadline)
        }
        while true {
            guard case let .message(message) = try connection.receive(until: deadline, BrokerMessage.decode) else { continue }
            switch message {
            case let .info(text): show("info: \(text)")
            case let .error(text): show("error: \(text)")
            case let .output(text): show("output: \(text)")
            case let .event(json): show("event: \(json)")
            case let .browse(url): show("browse: \(url)")
            case let .finding(finding): show("finding: \(finding.check) \(finding.status.rawValue) \(finding.message) \(finding.fix)")
            case let .data(bytes, end): show("data: \(bytes.count)\(end ? " end" : "")")
            case let .ask(ask):
                show("ask: \(ask.kind.rawValue) \(ask.purpose.rawValue) \(ask.prompt)")
                if hangUpAfterAsk { exit(1) }
                if cancelAtAsk {
                    try connection.send(ClientMessage.cancel.encoded(), until: deadline)
                    continue
                }
                let answer = answers.isEmpty ? Answer(.skip) : Answer(ask.kind == .secret ? .secret : .text, Array(answers.removeFirst().utf8))
                try connection.send(ClientMessage.answer(answer).encoded(), until: deadline)
            case let .result(reply):
                show("result: \(reply.outcome.rawValue) \(reply.message)" + (reply.token != nil ? " (token)" : ""))
                return reply.outcome
            }
        }
    } catch {
        show("closed: \(error)")
        return nil
    }
}

if let repeats {
    var counts: [String: Int] = [:]
    for _ in 0..<max(repeats, 0) { counts[exchange(quiet: true)?.rawValue ?? "none", default: 0] += 1 }
    say("results: " + counts.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
    exit(counts["none"] == nil ? 0 : 1)
}
exit(exchange(quiet: false) == nil ? 1 : 0)
