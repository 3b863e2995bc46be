// A test client for the broker that speaks the wire protocol directly, optionally as
// another user, so the tests can try each row of the authorization table and each kind of
// hostile client with a real process. Not part of the product.
//
//   wire-client SOCKET [--as USER] [--answer TEXT]... [--raw HEX] [--hang-up-after-ask] [--cancel-at-ask]
//               [--hold-at-ask] [--repeat N] [--data BYTES [--end]] [--trickle SECONDS] [--wait SECONDS]
//               [--exec-after-connect PATH]
//               COMMAND [pam.user=NAME] [option=NAME=VALUE] [flag=NAME] [value=NAME=VALUE] [arg=TEXT]
//
// Prints each broker message as one line ("info: …", "ask: secret pin …", "result: OUTCOME
// MESSAGE"); exits 0 when a result came, 1 when none did.
//   --cancel-at-ask     answer a question with a cancel, as Ctrl-C at a prompt does
//   --hold-at-ask       never answer a question: wait for the broker (or a kill)
//   --repeat N          send the request N times, one connection after the other (a flood from
//                       one process), and print only how many of each outcome came:
//                       "results: cancelled=N ..."; exits 0 when every one got a result
//   --data BYTES        after the request, stream BYTES of payload (the last chunk marked end
//                       only with --end), then print "sent: BYTES" (what was sent)
//   --trickle SECONDS   stream the payload one byte at a time, every SECONDS
//   --wait SECONDS      how long to wait for the broker's messages (60)
//   --exec-after-connect PATH  connect, then run PATH (another copy of this program, e.g. a
//                       setgid one) with the connection as descriptor 3 (--fd 3) and the rest
//                       of the arguments
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
let passedOn = arguments
var answers: [String] = []
var raw: [UInt8]? = nil
var hangUpAfterAsk = false
var cancelAtAsk = false
var holdAtAsk = false
var repeats: Int? = nil
var payload: Int? = nil
var endPayload = false
var trickle: Double? = nil
var waitSeconds = 60.0
var execAfterConnect: String? = nil
var inheritedFD: Int32? = nil
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
    case "--hold-at-ask": holdAtAsk = true
    case "--repeat": repeats = Int(arguments.removeFirst()) ?? 1
    case "--data": payload = Int(arguments.removeFirst())
    case "--end": endPayload = true
    case "--trickle": trickle = Double(arguments.removeFirst())
    case "--wait": waitSeconds = Double(arguments.removeFirst()) ?? 60
    case "--exec-after-connect": execAfterConnect = arguments.removeFirst()
    case "--fd": inheritedFD = Int32(arguments.removeFirst())
    default: die("unknown option \(first)")
    }
}
guard let commandName = arguments.first else { die("no command") }

/// The connection: a new one, or (once) the one a parent process made (`--fd`).
@MainActor func connect() -> WireConnection {
    if let fd = inheritedFD {
        inheritedFD = nil
        return WireConnection(owning: fd)
    }
    do { return try WireConnection.connect(path: socketPath, timeout: 5) } catch { die("connect: \(error)") }
}

/// Streams `count` payload bytes after the request; a refused request ends the broker's
/// reading, and then the result waits in the exchange's loop.
@MainActor func streamPayload(_ connection: WireConnection, _ count: Int) {
    let chunk = trickle == nil ? 60 * 1024 : 1
    var sent = 0
    do {
        while sent < count {
            let size = min(chunk, count - sent)
            let last = sent + size == count
            try connection.send(ClientMessage.data([UInt8](repeating: 0x41, count: size), end: last && endPayload).encoded(),
                                until: monotonicSeconds() + 10)
            sent += size
            if let trickle, !last {
                var pause = timespec(tv_sec: Int(trickle), tv_nsec: Int((trickle - Double(Int(trickle))) * 1e9))
                nanosleep(&pause, nil)
            }
        }
    } catch {}
    say("sent: \(sent)")
}

/// One exchange on a connection of its own: the outcome of its result, or nil when none came.
/// `quiet`: nothing printed.
@MainActor func exchange(quiet: Bool) -> Outcome? {
    func show(_ line: String) { if !quiet { say(line) } }
    var answers = answers
    let connection = connect()
    if let execAfterConnect {
        // The connection goes on in another program (which may have other groups than this one had).
        // dup2 onto itself (the connection may be descriptor 3 already) keeps FD_CLOEXEC: cleared here.
        guard dup2(connection.fd, 3) == 3, fcntl(3, F_SETFD, 0) == 0 else { die("dup2") }
        let rest = passedOn.filter { $0 != "--exec-after-connect" && $0 != execAfterConnect }
        let argv = ([execAfterConnect, socketPath, "--fd", "3"] + rest).map { strdup($0) } + [nil]
        execv(execAfterConnect, argv)
        die("exec \(execAfterConnect)")
    }
    let deadline = monotonicSeconds() + waitSeconds
    do {
        if let raw {
            try connection.send(raw, until: deadline)
        } else {
            guard let command = Command(rawValue: commandName) else { die("unknown command \(commandName)") }
            var request = Request(command)
            var items: PAMItems?
            var moduleArguments: [String] = []
            for item in arguments.dropFirst() {
                let raw = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                guard raw.count == 2 else { die("bad item \(item)") }
                let parts = raw
                switch parts[0] {
                case "pam.user": items = PAMItems(user: parts[1], service: "wire-client", tty: "/dev/pts/99")
                // After pam.user: change one item ("" leaves it unset).
                case "pam.tty": items?.tty = parts[1].isEmpty ? nil : parts[1]
                case "pam.xdisplay": items?.xdisplay = parts[1]
                case "pam.service": items?.service = parts[1]
                case "option": moduleArguments.append(parts[1])
                // An option by its command-line name (`flag=--json`, `value=--timeout=600`), sent
                // unchecked as the wire field the name gives: the broker checks it.
                case "flag": request.options.set(field: String(parts[1].drop { $0 == "-" }), "1")
                case "value":
                    let pair = parts[1].split(separator: "=", maxSplits: 1).map(String.init)
                    request.options.set(field: String(pair[0].drop { $0 == "-" }), pair.count > 1 ? pair[1] : "")
                case "arg": request.arguments.append(parts[1])
                default: die("bad item \(item)")
                }
            }
            // A PAM host's request, for the module's commands (the broker refuses it for others).
            if items != nil || !moduleArguments.isEmpty || command.isPAM {
                request.origin = .pamHost(items ?? PAMItems(), moduleArguments: moduleArguments)
            }
            // As the CLI: a broker that turns the caller away at once (busy) may close before
            // reading, and its result is still there to read, so a failed send goes on to it.
            _ = try? connection.send(ClientMessage.request(request).encoded(), until: deadline)
        }
        if let payload { streamPayload(connection, payload) }
        while true {
            guard case let .message(message) = try connection.receive(until: deadline, BrokerMessage.decode) else { continue }
            switch message {
            case let .info(text): show("info: \(text)")
            case let .error(text): show("error: \(text)")
            case let .output(text): show("output: \(text)")
            case let .event(signal): show("event: \(signal.jsonLine)")
            case let .browse(url): show("browse: \(url)")
            case let .finding(finding): show("finding: \(finding.check) \(finding.status.rawValue) \(finding.message) \(finding.fix)")
            case let .data(bytes, end): show("data: \(bytes.count)\(end ? " end" : "")")
            case let .ask(ask):
                show("ask: \(ask.kind.rawValue) \(ask.purpose.rawValue) \(ask.prompt)")
                if hangUpAfterAsk { exit(1) }
                if holdAtAsk { continue }
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
