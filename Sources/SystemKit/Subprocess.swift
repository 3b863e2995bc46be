import CLinux
import Glibc

/// A helper process started from inside a host (a PAM module's sshd or sudo): its stdout
/// (and, when asked, its descriptor 3) comes back through a pipe; stdin is /dev/null; no
/// other descriptor of the host is inherited; signals are at their defaults and unblocked in
/// the child. Every wait on it is bounded, and it is always reaped.
public final class Subprocess {
    public let pid: pid_t
    /// The read end of the child's stdout.
    public let output: FileDescriptor
    /// The read end of the child's descriptor 3, when `secondOutput` was asked for.
    public let secondOutput: FileDescriptor?
    private var reaped = false

    /// `path` is exec'd directly (no shell, no PATH search).
    public init(path: String, arguments: [String], environment: [String], secondOutput wantsSecond: Bool = false) throws {
        let (readEnd, writeEnd) = try Subprocess.pipe()
        var second: (read: Int32, write: Int32)? = nil
        if wantsSecond {
            do { second = try Subprocess.pipe() } catch {
                close(readEnd)
                close(writeEnd)
                throw error
            }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        if let second { posix_spawn_file_actions_adddup2(&actions, second.write, 3) }
        posix_spawn_file_actions_addclosefrom_np(&actions, second == nil ? 3 : 4)
        // Its own session: a terminal's Ctrl-C reaches the host, which decides what to do.
        let child: pid_t
        do {
            child = try spawnProgram(path, arguments: [path] + arguments, environment: environment, actions: &actions,
                                     newSession: true)
        } catch {
            for fd in [readEnd, writeEnd] + (second.map { [$0.read, $0.write] } ?? []) { close(fd) }
            throw error
        }
        close(writeEnd)
        if let second { close(second.write) }
        pid = child
        output = FileDescriptor(owning: readEnd)
        secondOutput = second.map { FileDescriptor(owning: $0.read) }
    }

    /// A pipe whose ends are both close-on-exec (the child gets its end through dup2).
    private static func pipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        _ = try syscall("pipe") { pipe2(&fds, O_CLOEXEC) }
        return (fds[0], fds[1])
    }

    deinit {
        terminate(grace: 0)
    }

    /// Signals the child unless it is already gone. Checking first matters: a host's own
    /// SIGCHLD handler may have reaped it, and its pid may belong to someone else by now.
    public func signal(_ number: Int32) {
        if !reap(timeout: 0) { kill(pid, number) }
    }

    /// Reaps the child, waiting at most `timeout` seconds; true once it is gone. A host's
    /// own SIGCHLD handler may reap it first, which also counts as gone.
    @discardableResult
    public func reap(timeout: Double) -> Bool {
        guard !reaped else { return true }
        let deadline = monotonicSeconds() + timeout
        while true {
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid || (result < 0 && errno == ECHILD) {
                reaped = true
                return true
            }
            if monotonicSeconds() >= deadline { return false }
            var pause = timespec(tv_sec: 0, tv_nsec: 2_000_000)
            nanosleep(&pause, nil)
        }
    }

    /// Asks it to stop (SIGTERM), waits `grace` seconds, then SIGKILLs and reaps it.
    public func terminate(grace: Double) {
        signal(SIGTERM)
        if reap(timeout: grace) { return }
        signal(SIGKILL)
        reap(timeout: 5)
    }
}

/// When process `pid` started, in clock ticks since boot (field 22 of /proc/PID/stat); nil
/// when there is no such process. With the pid it names one process, whatever reuses the pid.
public func processStartTime(_ pid: pid_t) -> UInt64? {
    let path = "/proc/\(pid)/stat"
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    let file = FileDescriptor(owning: fd)
    guard let bytes = try? file.readAll(limit: 4096, subject: path),
          let close = bytes.lastIndex(of: 0x29) else { return nil } // after the ")" of the command name
    let fields = bytes[(close + 1)...].split(separator: 0x20)
    // fields[0] is the state (field 3), so field 22 is fields[19].
    guard fields.count > 19 else { return nil }
    return UInt64(String(decoding: fields[19], as: UTF8.self))
}

/// Starts a program the way a new program should start, whoever calls: no signal blocked and
/// every signal at its default (the caller may have blocked some for a signalfd). With
/// `searchPath`, `path` is looked up in PATH; `environment` nil passes this process's own.
public func spawnProgram(_ path: String, arguments: [String], environment: [String]?, searchPath: Bool = false,
                         actions: UnsafeMutablePointer<posix_spawn_file_actions_t>? = nil,
                         newSession: Bool = false) throws -> pid_t {
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t(), all = sigset_t()
    sigemptyset(&none)
    sigfillset(&all)
    posix_spawnattr_setsigmask(&attributes, &none)
    posix_spawnattr_setsigdefault(&attributes, &all)
    let session = newSession ? FS_POSIX_SPAWN_SETSID : 0
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | session))
    let argv = arguments.map { strdup($0) } + [nil]
    var envp = (environment ?? []).map { strdup($0) } + [nil]
    defer { (argv + envp).forEach { free($0) } }
    var child: pid_t = 0
    let rc = envp.withUnsafeMutableBufferPointer { own -> Int32 in
        let env = environment == nil ? environ : own.baseAddress
        return searchPath ? posix_spawnp(&child, path, actions, &attributes, argv, env)
                          : posix_spawn(&child, path, actions, &attributes, argv, env)
    }
    guard rc == 0 else { throw SystemError("spawn", path, code: rc) }
    return child
}
