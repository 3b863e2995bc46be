import Glibc
import SystemKit

/// A spawned process with piped stdout/stderr and, optionally, data waiting on stdin and fd 3.
final class Child {
    let pid: pid_t
    /// When it was started (`VirtualSensor.now()`), after any wait for PamWrapperGate.
    private(set) var startedAt = 0.0
    private let stdoutFD: Int32
    private let stderrFD: Int32
    /// What `readLine` read ahead of the lines it returned, per pipe; `finish` returns it too.
    private var buffered: [UInt8] = []
    private var bufferedErrors: [UInt8] = []
    private var reaped = false
    /// Our end of the child's stdin, with `openInput`; -1 once closed (or never kept).
    private var inputFD: Int32 = -1

    struct Result {
        let stdout: String
        let stderr: String
        let status: Int32
        /// From its start to its output's end: how long the program took, without the wait
        /// for its turn to start.
        var seconds = 0.0
        var all: String { stdout + stderr }
    }

    /// `newSession`: start in a session of its own (no controlling terminal). The broker keys
    /// session tokens and grants by the caller's session, so commands that must share them
    /// run with `newSession: false` (all in the test runner's session).
    /// `logFile`: stdout and stderr go there (appended) instead of pipes, for a long-running
    /// program whose output nobody reads: a pipe would fill and stop it. `errorLog`: only
    /// stderr goes there, stdout stays a pipe (a daemon that reports its readiness on stdout).
    /// `openInput`: stdin stays open after `stdin` for `send`, until `closeInput` or the end.
    /// `terminal`: a pseudo-terminal of its own as its controlling terminal, the program placed
    /// on it as a PAM host can be (`TerminalPlacement`); its pipes stay as they are.
    init(_ path: String, _ arguments: [String], environment: [String: String] = [:],
         stdin: [UInt8] = [], fd3: [UInt8]? = nil, newSession: Bool = true, logFile: String? = nil,
         errorLog: String? = nil, openInput: Bool = false, terminal: TerminalPlacement? = nil) throws {
        Child.brokenPipesAreErrors
        var arguments = arguments
        var path = path
        if let terminal {
            arguments = [Paths.packageRoot + "/Tests/TestSupport/on_terminal.py", terminal.rawValue, "--", path] + arguments
            path = "/usr/bin/python3"
        }
        func pipePair() throws -> (Int32, Int32) {
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else { throw TestFailure("pipe failed") }
            for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            return (fds[0], fds[1])
        }
        let (outRead, outWrite) = try pipePair()
        let (errRead, errWrite) = try pipePair()
        let (inRead, inWrite) = try pipePair()
        var extra: (Int32, Int32)? = nil
        if let fd3 {
            let pair = try pipePair()
            Child.fill(pair.1, fd3)
            extra = pair
        }
        if openInput {
            _ = stdin.withUnsafeBytes { write(inWrite, $0.baseAddress, $0.count) }
        } else {
            Child.fill(inWrite, stdin)
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, inRead, 0)
        if let logFile {
            // Not O_CLOEXEC: the file is opened in the child before exec, and stdout must survive it.
            posix_spawn_file_actions_addopen(&actions, 1, logFile, O_WRONLY | O_CREAT | O_APPEND, 0o600)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        } else if let errorLog {
            posix_spawn_file_actions_adddup2(&actions, outWrite, 1)
            posix_spawn_file_actions_addopen(&actions, 2, errorLog, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        } else {
            posix_spawn_file_actions_adddup2(&actions, outWrite, 1)
            posix_spawn_file_actions_adddup2(&actions, errWrite, 2)
        }
        if let extra { posix_spawn_file_actions_adddup2(&actions, extra.0, 3) }
        // Start in a new session: no controlling terminal, so prompts cannot reach a real tty.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // glibc's POSIX_SPAWN_SETSID; Glibc's Swift module is built without _GNU_SOURCE.
        // Also: an empty signal mask and default dispositions, whatever the test runner set.
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16((newSession ? 0x80 : 0) | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.merging(Child.sanitizerOptions) { own, _ in own }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var child: pid_t = 0
        var started = 0.0
        // One PAM host with pam_wrapper starting at a time (PamWrapperGate).
        let rc = PamWrapperGate.spawning(wraps: environment["PAM_WRAPPER"] == "1") {
            started = VirtualSensor.now()
            return posix_spawn(&child, path, &actions, &attributes, argv, envp)
        } started: { child }
        startedAt = started
        for fd in [outWrite, errWrite, inRead] { close(fd) }
        if let extra { close(extra.0) }
        guard rc == 0 else {
            if openInput { close(inWrite) }
            throw TestFailure("spawn \(path) failed: \(rc)")
        }
        if openInput { inputFD = inWrite }
        pid = child
        stdoutFD = outRead
        stderrFD = errRead
    }

    deinit {
        closeInput()
        if !reaped { kill(pid, SIGKILL); _ = wait() }
        close(stdoutFD)
        close(stderrFD)
    }

    /// The sanitizer runtimes' options of this run (scripts/sanitize), passed to every child
    /// whose environment the test builds: a sanitized broker or CLI must report into the same
    /// log directory, or its findings would go to a log file nobody reads.
    static let sanitizerOptions: [String: String] = {
        var options: [String: String] = [:]
        for name in ["ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"] {
            if let value = getenv(name) { options[name] = String(cString: value) }
        }
        return options
    }()

    /// A write to a child that has gone fails with EPIPE (`send` says false) instead of
    /// ending the whole test process with SIGPIPE, as it did in a CI run. Children start with
    /// every disposition at its default (POSIX_SPAWN_SETSIGDEF below), so none inherits this.
    private static let brokenPipesAreErrors: Void = { _ = Glibc.signal(SIGPIPE, SIG_IGN) }()

    private static func fill(_ fd: Int32, _ bytes: [UInt8]) {
        // Test inputs are small; they fit the pipe buffer, so this never blocks.
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }

    /// The next line of stdout (of stderr with `errors`), or nil at end of file, or after
    /// `timeout` seconds without one.
    func readLine(errors: Bool = false, timeout: Double? = nil) -> String? {
        let deadline = timeout.map { VirtualSensor.now() + $0 }
        return errors ? Child.readLine(stderrFD, &bufferedErrors, until: deadline) : Child.readLine(stdoutFD, &buffered, until: deadline)
    }

    /// Writes `text` to the child's stdin (`openInput`); false if it is closed or gone.
    @discardableResult
    func send(_ text: String) -> Bool {
        guard inputFD >= 0 else { return false }
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { write(inputFD, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            written += count
        }
        return true
    }

    /// Ends the child's stdin (`openInput`): it reads end of file.
    func closeInput() {
        if inputFD >= 0 { close(inputFD) }
        inputFD = -1
    }

    /// Reads stdout (stderr with `errors`) until a line contains `text`; false at end of file.
    @discardableResult
    func waitForLine(containing text: String, errors: Bool = false) -> Bool {
        var lines: [String] = []
        while let line = readLine(errors: errors) {
            lines.append(line)
            if line.contains(text) {
                // Kept for `finish`, which returns the whole output.
                let read = Array((lines.joined(separator: "\n") + "\n").utf8)
                if errors { readErrorLines += read } else { readLines += read }
                return true
            }
        }
        let read = Array(lines.map { $0 + "\n" }.joined().utf8)
        if errors { readErrorLines += read } else { readLines += read }
        return false
    }

    /// Lines `waitForLine` consumed, given back by `finish`.
    private var readLines: [UInt8] = []
    private var readErrorLines: [UInt8] = []

    private static func readLine(_ fd: Int32, _ buffer: inout [UInt8], until deadline: Double? = nil) -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0a) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            if let deadline {
                var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = poll(&entry, 1, Int32(max((deadline - VirtualSensor.now()) * 1000, 0)))
                if ready < 0 && errno == EINTR { continue }
                if ready <= 0 { return nil }
            }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = read(fd, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return nil }
            buffer += chunk[..<count]
        }
    }

    func signal(_ number: Int32) { kill(pid, number) }

    /// The exit status (or 128 + signal) if the child has ended, nil while it runs; never waits.
    func exited() -> Int32? {
        guard !reaped else { return nil }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        reaped = true
        let signal = status & 0x7f
        exitStatus = signal == 0 ? (status >> 8) & 0xff : 128 + signal
        return exitStatus
    }

    /// The status `exited` reaped, for a later `wait`.
    private var exitStatus: Int32 = 0

    /// Waits for exit; returns the exit status, or 128 + signal.
    @discardableResult
    func wait() -> Int32 {
        if reaped { return exitStatus }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        reaped = true
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// Reads all output (both pipes at once, so a chatty stderr cannot block the child) and
    /// waits for exit. A child still running after `limit` seconds is killed, so a stuck
    /// program fails its test instead of hanging the run.
    func finish(limit: Double = 120) -> Result {
        var out = readLines + buffered, err = readErrorLines + bufferedErrors
        var open: [Int32] = [stdoutFD, stderrFD]
        var chunk = [UInt8](repeating: 0, count: 65536)
        let deadline = VirtualSensor.now() + limit
        var killed = false
        while !open.isEmpty {
            var fds = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let remaining = Int32(max((deadline - VirtualSensor.now()) * 1000, 0))
            let ready = poll(&fds, nfds_t(fds.count), killed ? 5000 : remaining)
            if ready < 0 {
                if errno == EINTR { continue }
                break
            }
            if ready == 0 {
                if killed { break }
                kill(pid, SIGKILL)
                killed = true
                err += Array("\n[test harness: killed after \(limit) s]\n".utf8)
                continue
            }
            for entry in fds where entry.revents != 0 {
                let count = read(entry.fd, &chunk, chunk.count)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 {
                    open.removeAll { $0 == entry.fd }
                } else if entry.fd == stdoutFD {
                    out += chunk[..<count]
                } else {
                    err += chunk[..<count]
                }
            }
        }
        buffered = []
        bufferedErrors = []
        readLines = []
        readErrorLines = []
        return Result(stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self),
                      status: wait(), seconds: VirtualSensor.now() - startedAt)
    }

    static func run(_ path: String, _ arguments: [String], environment: [String: String] = [:],
                    stdin: [UInt8] = [], fd3: [UInt8]? = nil, newSession: Bool = true,
                    terminal: TerminalPlacement? = nil) throws -> Result {
        try Child(path, arguments, environment: environment, stdin: stdin, fd3: fd3, newSession: newSession,
                  terminal: terminal).finish()
    }
}

/// Where a program sits on a terminal of its own, as the kernel sees it (on_terminal.py). The
/// broker tells a PAM host to press Ctrl-C only where the kernel says it is in the terminal's
/// foreground process group, which Ctrl-C reaches (and not polkit's agent helper there).
enum TerminalPlacement: String {
    /// Leads the foreground process group (sudo, su or login at a terminal); the same pid.
    case leader
    /// In the foreground group its parent leads (a script's sudo, pkexec's agent helper).
    case follower
    /// In a process group of its own in the background (a shell's `&` job).
    case background
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// pam_wrapper 1.1.4 picks its directory (/tmp/pam.X) at pam_start by looking for a free
/// letter, then making it, writing its pid there and copying the host's services in: two
/// hosts that start PAM at once can take the same directory and read each other's services
/// (a pamtester then asked another test's broker). Hosts with pam_wrapper start one at a
/// time: the next once this one's directory names it (or a process of its session), or after
/// a bound for a host that never starts PAM. Another host then sees the letter taken.
enum PamWrapperGate {
    private static let lock = ThreadLock()
    /// pam_wrapper makes its directory as it is loaded: pamtester within milliseconds, a host
    /// behind on_terminal.py within a few hundred, a pamtester under valgrind after seconds
    /// (CI: one given 1 s was joined by the next in /tmp/pam.A). Every other host with
    /// pam_wrapper waits meanwhile, so a test that bounds a host's time measures it from its
    /// start (`Result.seconds`), not from before its turn.
    static let bound = 20.0

    /// Runs `spawn`; for a host with pam_wrapper (`wraps`), alone, and waits until the host
    /// `started` names settled.
    static func spawning(wraps: Bool, _ spawn: () -> Int32, started: () -> pid_t) -> Int32 {
        guard wraps else { return spawn() }
        return lock.locked {
            let rc = spawn()
            if rc == 0 { waitUntilSettled(started()) }
            return rc
        }
    }

    private static func waitUntilSettled(_ child: pid_t) {
        let deadline = VirtualSensor.now() + bound
        while VirtualSensor.now() < deadline {
            if settled(child) { return }
            var pause = timespec(tv_sec: 0, tv_nsec: 2_000_000)
            nanosleep(&pause, nil)
        }
    }

    /// A /tmp/pam.? directory whose pid file names `child` or a process of its session; or
    /// `child` ended already (a quick host made, used and removed its directory in between).
    private static func settled(_ child: pid_t) -> Bool {
        if state(of: child) ?? "Z" == "Z" { return true }
        guard let directory = opendir("/tmp") else { return true }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard name.hasPrefix("pam."), name.utf8.count == 5,
                  let bytes = readFile("/tmp/\(name)/pid"), let pid = pid_t(String(decoding: bytes, as: UTF8.self)) else { continue }
            if pid == child || session(of: pid) == child { return true }
        }
        return false
    }

    private static func session(of pid: pid_t) -> pid_t? { statFields(pid).flatMap { $0.count > 3 ? pid_t($0[3]) : nil } }

    private static func state(of pid: pid_t) -> Substring? { statFields(pid)?.first }

    /// /proc/PID/stat after the command's closing parenthesis: state, ppid, pgrp, session, …
    private static func statFields(_ pid: pid_t) -> [Substring]? {
        guard let bytes = readFile("/proc/\(pid)/stat") else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        guard let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }
}
