import Glibc
import FingersealCore
import SystemKit

/// A broker of its own for one test, its reader chosen by the broker's environment alone
/// (libfprint's virtual drivers, or none), the CLI as its client, and a directory for what
/// the test keeps beside it (the sensor socket, PAM service files, files to seal).
final class ReaderBroker {
    let broker: TestBroker
    /// The test's own files: the sensor socket, PAM service files, inputs and outputs.
    let files: TempDirectory
    let driver: String
    let variable: String

    /// The virtual reader's socket (libfprint creates it when the broker opens the reader).
    var sensor: String { files.file("sensor.sock") }

    /// The broker's environment with the reader connected.
    var withReader: [String: String] { ["FP_DRIVERS_WHITELIST": driver, variable: sensor] }
    /// The broker's environment with no reader at all.
    var withoutReader: [String: String] { ["FP_DRIVERS_WHITELIST": driver] }

    /// `reader: false`: the broker finds no reader. `config`: the broker's fingerseal.conf.
    /// `pin`: a vault for root (the tests' user) with this PIN, made with the CLI.
    init(driver: String = "virtual_device", variable: String = "FP_VIRTUAL_DEVICE", reader: Bool = true,
         config: String = "", pin: String? = nil, extraEnvironment: [String: String] = [:],
         wrap: (([String]) -> (String, [String]))? = nil) throws {
        files = try TempDirectory()
        chmod(files.path, 0o755)
        self.driver = driver
        self.variable = variable
        let environment = reader ? ["FP_DRIVERS_WHITELIST": driver, variable: files.file("sensor.sock")] : ["FP_DRIVERS_WHITELIST": driver]
        broker = try TestBroker(environment: environment.merging(extraEnvironment) { $1 }, config: config, wrap: wrap)
        if let pin {
            let set = try cli(["pin", "set", "--pin-fd", "3"], fd3: pin + "\n")
            guard set.status == 0 else { throw TestFailure("pin set failed: \(set.all)") }
        }
    }

    /// The reader is unplugged for good: the broker starts again without it (same store).
    func unplugReader() throws { try broker.restart(environment: withoutReader) }

    // MARK: the CLI

    /// The CLI's environment: the broker's socket, and `extra` (which cannot reach the broker).
    func environment(_ extra: [String: String] = [:]) -> [String: String] {
        broker.clientEnvironment.merging(extra) { $1 }
    }

    /// Starts the CLI. `user`: as that account (setpriv, its groups). `inTestSession`: in the
    /// test runner's session (the broker keys step-up grants and session tokens by it), else
    /// in a session of its own.
    func startCLI(_ arguments: [String], fd3: String? = nil, as user: String? = nil, inTestSession: Bool = false,
                  environment extra: [String: String] = [:]) throws -> Child {
        var command = [Paths.cli] + arguments
        if let user {
            guard let entry = getpwnam(user) else { throw TestFailure("no user \(user)") }
            command = ["/usr/bin/setpriv", "--reuid=\(entry.pointee.pw_uid)", "--regid=\(entry.pointee.pw_gid)", "--init-groups", "--"]
                + command
        }
        return try Child(command[0], Array(command.dropFirst()), environment: environment(extra),
                         fd3: fd3.map { Array($0.utf8) }, newSession: !inTestSession)
    }

    func cli(_ arguments: [String], fd3: String? = nil, as user: String? = nil, inTestSession: Bool = false,
             environment extra: [String: String] = [:]) throws -> Child.Result {
        try startCLI(arguments, fd3: fd3, as: user, inTestSession: inTestSession, environment: extra).finish()
    }

    /// Runs the CLI while feeding `commands` to the virtual sensor, one at a time.
    func scan(_ arguments: [String], _ commands: [String], fd3: String? = nil) throws -> Child.Result {
        let child = try startCLI(arguments, fd3: fd3)
        for command in commands { try VirtualSensor.send(command, to: sensor) }
        return child.finish()
    }

    /// Enrolls `finger` for root with the CLI, the virtual sensor scanning `id` five times.
    func enroll(_ id: String, finger: String = "right-index-finger", pin: String) throws -> Child.Result {
        try scan(["enroll", "--finger", finger, "--pin-fd", "3"], Array(repeating: "SCAN \(id)", count: 5), fd3: pin + "\n")
    }

    /// `fingerseal status` through the broker.
    func status(as user: String? = nil) throws -> String { try cli(["status"], as: user).stdout }

    // MARK: the store (root may look; the tests run as root)

    func store(for name: String? = nil) throws -> VaultStore {
        let account = try name.map { try UserAccount.named($0) } ?? UserAccount.current()
        guard let account else { throw TestFailure("no account \(name ?? "")") }
        return VaultStore(location: .broker(stateDirectory: broker.state, account: account))
    }

    /// The lockout counters of root's vault, as the broker keeps them.
    func lockout() throws -> LockoutState { try LockoutLedger(store: try store(), policy: LockoutPolicy()).current() }

    /// Waits (bounded) until `condition` holds; false when it never did.
    static func waitUntil(_ limit: Double = 20, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = VirtualSensor.now() + limit
        while VirtualSensor.now() < deadline {
            if try condition() { return true }
            var pause = timespec(tv_sec: 0, tv_nsec: 5_000_000)
            nanosleep(&pause, nil)
        }
        return try condition()
    }
}

/// pamtester (under pam_wrapper, a private service directory) against a broker.
enum Pamtester {
    static let multiarch = "x86_64-linux-gnu"
    static let wrapper = "/usr/lib/\(multiarch)/libpam_wrapper.so"
    static let matrix = "/usr/lib/\(multiarch)/pam_wrapper/pam_matrix.so"
    static var available: Bool { access(wrapper, R_OK) == 0 && access("/usr/bin/pamtester", X_OK) == 0 }

    /// Loaded ahead of pam_wrapper (FINGERSEAL_HOST_PRELOAD, set by scripts/sanitize): the ASan
    /// runtime, which must come first, for a module built with -sanitize=address.
    static let hostPreload: String = getenv("FINGERSEAL_HOST_PRELOAD").map { String(cString: $0) + ":" } ?? ""

    /// The environment that makes pamtester read its services from `services`.
    static func environment(_ services: String) -> [String: String] {
        var environment = ["LD_PRELOAD": hostPreload + wrapper, "PAM_WRAPPER": "1", "PAM_WRAPPER_SERVICE_DIR": services,
                           "PATH": "/usr/bin:/bin"]
        // ASan refuses pam_wrapper's dlopen of libpam with RTLD_DEEPBIND; pam_wrapper 1.1.4
        // leaves the flag out when this (uid_wrapper's name, shared in its code) is set.
        if !hostPreload.isEmpty { environment["UID_WRAPPER_DISABLE_DEEPBIND"] = "1" }
        return environment
    }

    /// pamtester SERVICE USER OPERATIONS…, with a terminal named as PAM_TTY (a person can
    /// answer) unless `tty` is nil, answers on stdin one per line. With a terminal, pamtester
    /// leads the foreground of a real one, as sudo at a terminal does (Ctrl-C reaches it).
    static func start(services: String, service: String, user: String, operations: [String] = ["authenticate"],
                      answers: [String] = [], tty: String? = "/dev/pts/0", items: [String] = [],
                      environment extra: [String: String] = [:], newSession: Bool = true,
                      extraArguments: [String] = []) throws -> Child {
        var arguments = extraArguments
        if let tty { arguments += ["-I", "tty=\(tty)"] }
        for item in items { arguments += ["-I", item] }
        arguments += [service, user] + operations
        return try Child("/usr/bin/pamtester", arguments, environment: environment(services).merging(extra) { $1 },
                         stdin: Array(answers.map { $0 + "\n" }.joined().utf8), newSession: newSession,
                         terminal: tty.map { _ in .leader })
    }

    static func run(services: String, service: String, user: String, operations: [String] = ["authenticate"],
                    answers: [String] = [], tty: String? = "/dev/pts/0", items: [String] = [],
                    environment extra: [String: String] = [:], newSession: Bool = true,
                    extraArguments: [String] = []) throws -> Child.Result {
        try start(services: services, service: service, user: user, operations: operations, answers: answers, tty: tty,
                  items: items, environment: extra, newSession: newSession, extraArguments: extraArguments).finish()
    }
}

/// Whether `pid`'s main thread has SIGINT blocked (a PAM module waiting for its broker
/// watches Ctrl-C through a signalfd exactly then).
func interruptIsBlocked(_ pid: pid_t) -> Bool {
    guard let bytes = readFile("/proc/\(pid)/status") else { return false }
    for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where line.hasPrefix("SigBlk:") {
        guard let mask = UInt64(line.dropFirst("SigBlk:".count).withoutSpaces(), radix: 16) else { return false }
        return mask & (1 << (UInt64(SIGINT) - 1)) != 0
    }
    return false
}

private extension Substring {
    func withoutSpaces() -> String { String(filter { !$0.isWhitespace }) }
}
