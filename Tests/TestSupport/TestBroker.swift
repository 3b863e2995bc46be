import Glibc

/// A real `fingersealed` in the foreground on a private socket and state directory, ready
/// when it says READY=1 on its NOTIFY_SOCKET (sd_notify), stopped and cleaned up when dropped.
final class TestBroker {
    let temp: TempDirectory
    let socketPath: String
    let state: String
    let config: String
    private(set) var process: Child?
    private let environment: [String: String]
    /// Turns the broker's command line into the one to start (e.g. SyslogCapture.wrap).
    private let wrap: (([String]) -> (String, [String]))?

    /// `environment` is the broker's own (root's, as systemd would give it): FP_* for the
    /// virtual readers, never a client's. `wrap`: runs the broker inside another command
    /// that ends by exec'ing it (same pid), such as a syslog capture.
    init(environment: [String: String] = [:], config: String = "",
         wrap: (([String]) -> (String, [String]))? = nil) throws {
        self.wrap = wrap
        temp = try TempDirectory()
        // Test users' clients must reach the socket (the store inside stays root's, 0700).
        chmod(temp.path, 0o755)
        socketPath = temp.file("socket")
        state = temp.file("state")
        self.config = temp.file("fingerseal.conf")
        writeFile(self.config, Array(config.utf8), mode: 0o644)
        // The broker's own PAM service (the account password check) from the tree, in a
        // directory of this broker's: nothing is installed in /etc/pam.d.
        self.environment = environment
        _ = mkdir(pamDirectory, 0o755)
        TestBroker.writeBootID(temp.file("boot_id"))
        writeFile(pamDirectory + "/fingerseal-verify", readFile(Paths.packageRoot + "/pam/fingerseal-verify") ?? [], mode: 0o644)
        try start()
    }

    deinit { stop() }

    /// Where the broker reads its own PAM service, fingerseal-verify (`--pam-dir`).
    var pamDirectory: String { temp.file("pam.d") }

    /// What the broker wrote on stdout and stderr.
    var log: String { temp.file("broker.log") }

    /// The vault directory of `uid` in this broker's store.
    func vaultDirectory(uid: UInt32 = getuid()) -> String { state + "/" + String(uid) }

    /// Environment for a client (the CLI) that should talk to this broker.
    var clientEnvironment: [String: String] { ["FINGERSEAL_SOCKET": socketPath, "PATH": "/usr/bin:/bin", "NO_COLOR": "1"] }

    func start() throws {
        let notify = temp.file("notify")
        unlink(notify)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket failed") }
        defer { close(fd) }
        guard withUnixAddress(notify, { bind(fd, $0, $1) }) == 0 else { throw TestFailure("bind \(notify) failed") }
        var environment = environmentOverride ?? self.environment
        environment["NOTIFY_SOCKET"] = notify
        let command = [Paths.buildDirectory + "/fingersealed", "--socket", socketPath, "--state", state, "--config", config,
                       "--pam-dir", pamDirectory, "--boot-id-file", temp.file("boot_id")]
        let (path, arguments) = wrap?(command) ?? (command[0], Array(command.dropFirst()))
        // Its output goes to a file: a pipe nobody reads would fill and stop it (libusb logs a
        // line per retry against an emulated device).
        let child = try Child(path, arguments, environment: environment, logFile: log)
        process = child
        // Readiness: READY=1 within 20 s, or the broker's own words on why not.
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let deadline = VirtualSensor.now() + 20
        while VirtualSensor.now() < deadline {
            guard poll(&pfd, 1, 200) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = recv(fd, &buffer, buffer.count, 0)
            if count > 0, String(decoding: buffer[..<count], as: UTF8.self).contains("READY=1") { return }
        }
        _ = child.finish(limit: 2)
        throw TestFailure("fingersealed did not become ready: " + String(decoding: readFile(log) ?? [], as: UTF8.self))
    }

    /// Stops the broker (SIGTERM, then SIGKILL) and waits for it.
    func stop() {
        guard let process else { return }
        // A wrapper that forks the broker (umockdev-run) would leave it behind: its whole
        // process group goes too (Child starts each in a session, and so a group, of its own).
        if wrap != nil { kill(-process.pid, SIGKILL) }
        process.signal(SIGKILL)
        _ = process.finish(limit: 5)
        self.process = nil
    }

    /// Stops the broker as systemd does (SIGTERM), so it does what it must on the way out, and
    /// waits for it. Returns its exit status.
    @discardableResult
    func terminate() -> Int32? {
        guard let process else { return nil }
        process.signal(SIGTERM)
        let status = process.finish(limit: 10).status
        self.process = nil
        return status
    }

    /// The broker's exit status (or 128 + signal) if it ended on its own; nil while it runs.
    func ended() -> Int32? { process?.exited() }

    func restart() throws {
        stop()
        try start()
    }

    /// The broker's environment from `restart(environment:)` on, instead of the first one.
    private var environmentOverride: [String: String]? = nil

    /// Restarts the broker with another environment of its own (a reader unplugged for good:
    /// the same store, no FP_VIRTUAL_DEVICE).
    func restart(environment: [String: String]) throws {
        stop()
        environmentOverride = environment
        try start()
    }

    /// The broker starts again as after a restart of the machine: the same store, another boot
    /// id (the kernel's is read once, at start).
    func restartAfterABoot() throws {
        stop()
        TestBroker.writeBootID(temp.file("boot_id"))
        try start()
    }

    /// A boot id of the kernel's form: 32 hex digits in dashed groups.
    private static func writeBootID(_ path: String) {
        let hex = (0..<32).map { _ in String(Int.random(in: 0..<16), radix: 16) }.joined()
        let dashed = [hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4), hex.dropFirst(20)]
            .joined(separator: "-")
        writeFile(path, Array((dashed + "\n").utf8), mode: 0o644)
    }

    /// The boot id this broker reads.
    var bootID: String { String(decoding: readFile(temp.file("boot_id")) ?? [], as: UTF8.self).filter(\.isHexDigit) }

    /// Runs the wire-client helper against this broker.
    /// `terminal`: the client placed on a terminal of its own, as a PAM host can be.
    func wire(_ arguments: [String], as user: String? = nil, answers: [String] = [],
              terminal: TerminalPlacement? = nil) throws -> Child.Result {
        var full = [socketPath]
        if let user { full += ["--as", user] }
        for answer in answers { full += ["--answer", answer] }
        return try Child.run(Paths.buildDirectory + "/wire-client", full + arguments, terminal: terminal)
    }
}

/// Test accounts, created with useradd when the tests run as root (once per machine).
enum TestUsers {
    static let alice = "fs-alice"
    static let bob = "fs-bob"

    /// Creates the account if missing; returns false when it cannot (not root).
    @discardableResult
    static func ensure(_ name: String, password: String = "correct horse") -> Bool {
        guard getuid() == 0 else { return getpwnam(name) != nil }
        if getpwnam(name) == nil {
            guard Child.runQuietly("/usr/sbin/useradd", ["--create-home", "--shell", "/bin/sh", name]) == 0 else { return false }
        }
        // The password the tests expect, whatever an earlier run left.
        let result = try? Child.run("/usr/sbin/chpasswd", [], stdin: Array("\(name):\(password)\n".utf8))
        return result?.status == 0
    }

    static func uid(_ name: String) -> UInt32? { getpwnam(name).map { $0.pointee.pw_uid } }
}
