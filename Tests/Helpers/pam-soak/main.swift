// A PAM host for the soak (SoakTests): runs the transactions of a plan one after another in one
// process, each a pam_start_confdir / authenticate / pam_end, and plays the person's part of
// each: the scan the plan names (sent to libfprint's virtual_device when the prompt to scan
// arrives, so it reaches this request's turn of the reader and no other's; a sensor that
// cannot be reached ends the helper, BenchSupport's `command`), Ctrl-C while the
// module waits for the broker, the PIN or an empty answer, the password. It judges each
// transaction against what its kind must come to (the PAM code and the questions asked) and
// prints one line per kind and account: `tally USER KIND expected N unexpected M`, then up to
// ten `unexpected …` lines. Not part of the product.
//
//   pam-soak SERVICE_DIR SENSOR_SOCKET PLAN_FILE
//
// A plan line: `SERVICE USER KIND PRINT PIN PASSWORD`, KIND one of match, nomatch-password,
// pin, cancel, timeout. It runs on a terminal it leads (Tests/TestSupport/on_terminal.py), as
// sudo does, so the broker offers Ctrl-C.
import BenchSupport
import Glibc
import PAMKit

/// PAM_SUCCESS (PAMKit keeps libpam's constants to itself).
let pamSuccess: Int32 = 0

enum Kind: String {
    /// The enrolled finger: success, nothing asked.
    case match
    /// Another finger, no PIN (an empty answer), the password.
    case nomatchPassword = "nomatch-password"
    /// Another finger, then the PIN.
    case pin
    /// Ctrl-C at the scan, then the password.
    case cancel
    /// No finger within the stack's timeout=, no PIN, the password.
    case timeout

    /// The questions the person must be asked, in order, and the code the stack ends with.
    var expected: (questions: [String], code: Int32) {
        switch self {
        case .match: return ([], pamSuccess)
        case .nomatchPassword, .timeout: return (["PIN", "Password"], pamSuccess)
        case .pin: return (["PIN"], pamSuccess)
        case .cancel: return (["Password"], pamSuccess)
        }
    }
}

struct Step {
    let service: String
    let user: String
    let kind: Kind
    let print: String
    let pin: String
    let password: String
}

func readPlan(_ path: String) -> [Step] {
    guard let file = fopen(path, "r") else { fail("cannot open \(path)") }
    defer { fclose(file) }
    var steps: [Step] = []
    var line: UnsafeMutablePointer<CChar>? = nil
    var capacity = 0
    defer { free(line) }
    while getline(&line, &capacity, file) > 0, let line {
        let fields = String(cString: line).split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        guard fields.count == 6, let kind = Kind(rawValue: fields[2]) else { fail("bad plan line: \(String(cString: line))") }
        steps.append(Step(service: fields[0], user: fields[1], kind: kind, print: fields[3], pin: fields[4], password: fields[5]))
    }
    return steps
}

/// Ctrl-C as a terminal sends it, but only once the module waits for the broker (SIGINT
/// blocked, read through its signalfd): before that, it would reach this process's handler
/// and nobody would hear it. A thread of its own watches the main thread's blocked set.
final class CtrlC: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    private var wake = pthread_cond_t()
    private var armed = false
    private let mainThread = pthread_self()
    private let statusPath = "/proc/self/task/\(getpid())/status"
    /// Interrupts that reached the handler instead of the module.
    nonisolated(unsafe) static var stray = 0

    init() {
        pthread_mutex_init(&mutex, nil)
        pthread_cond_init(&wake, nil)
        signal(SIGINT) { _ in CtrlC.stray += 1 }
        let box = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        guard pthread_create(&thread, nil, { raw in
            guard let raw else { return nil }
            Unmanaged<CtrlC>.fromOpaque(raw).takeRetainedValue().watch()
            return nil
        }, box) == 0 else { fail("pthread_create failed") }
        pthread_detach(thread)
    }

    /// The next wait for the broker gets a Ctrl-C.
    func arm() {
        pthread_mutex_lock(&mutex)
        armed = true
        pthread_cond_signal(&wake)
        pthread_mutex_unlock(&mutex)
    }

    private func watch() {
        var all = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_BLOCK, &all, nil)
        while true {
            pthread_mutex_lock(&mutex)
            while !armed { pthread_cond_wait(&wake, &mutex) }
            armed = false
            pthread_mutex_unlock(&mutex)
            // Bounded: 10 s; a module that never waits leaves the transaction unexpected.
            for _ in 0..<20_000 where interruptBlocked() {
                pthread_kill(mainThread, SIGINT)
                break
            }
        }
    }

    /// Polls (0.5 ms) until the main thread blocks SIGINT; true once it does.
    private func interruptBlocked() -> Bool {
        if let bytes = readSmallFile(statusPath), let line = bytes.split(separator: "\n").first(where: { $0.hasPrefix("SigBlk:") }),
           let mask = UInt64(line.dropFirst(7).filter { !$0.isWhitespace }, radix: 16), mask & (1 << (UInt64(SIGINT) - 1)) != 0 {
            return true
        }
        var pause = timespec(tv_sec: 0, tv_nsec: 500_000)
        nanosleep(&pause, nil)
        return false
    }
}

func readSmallFile(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 4096)
    let count = read(fd, &buffer, buffer.count)
    return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
}

let arguments = CommandLine.arguments
guard arguments.count == 4 else { fail("usage: pam-soak SERVICE_DIR SENSOR_SOCKET PLAN_FILE") }
let (services, sensor) = (arguments[1], arguments[2])
let plan = readPlan(arguments[3])
let ctrlC = CtrlC()
var expectedCount: [String: Int] = [:]
var unexpectedCount: [String: Int] = [:]
var unexpected: [String] = []

for (index, step) in plan.enumerated() {
    var questions: [String] = []
    var said: [String] = []
    let client: PAMClient
    do {
        client = try PAMClient(service: step.service, user: step.user, configDirectory: services) { message in
            switch message {
            case let .textInfo(text), let .errorMessage(text):
                said.append(text)
                guard text.hasPrefix("Swipe your finger") || text.hasPrefix("Place your finger") else { return nil }
                switch step.kind {
                case .match: command("SCAN \(step.print)", sensor)
                case .nomatchPassword, .pin: command("SCAN soak-stranger", sensor)
                case .cancel: ctrlC.arm()
                case .timeout: break
                }
                return nil
            case let .promptEchoOff(text), let .promptEchoOn(text):
                if text.hasPrefix("PIN") {
                    questions.append("PIN")
                    return step.kind == .pin ? step.pin : ""
                }
                if text.hasPrefix("Password") {
                    questions.append("Password")
                    return step.password
                }
                questions.append(text)
                return nil
            }
        }
    } catch {
        fail("pam_start failed: \(error)")
    }
    _ = client.setItem(.tty, "/dev/pts/0")
    let code = client.authenticate()
    let key = "\(step.user) \(step.kind.rawValue)"
    let want = step.kind.expected
    if code == want.code && questions == want.questions {
        expectedCount[key, default: 0] += 1
    } else {
        unexpectedCount[key, default: 0] += 1
        if unexpected.count < 10 {
            unexpected.append("unexpected #\(index) \(key): code \(code) (\(PAMClient.describe(code))) questions \(questions) said \(said)")
        }
    }
}
for key in Set(expectedCount.keys).union(unexpectedCount.keys).sorted() {
    print("tally \(key) expected \(expectedCount[key] ?? 0) unexpected \(unexpectedCount[key] ?? 0)")
}
unexpected.forEach { print($0) }
print("stray-interrupts \(CtrlC.stray)")
