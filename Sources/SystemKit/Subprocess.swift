import CLinux
import Glibc

/// A helper process started from inside a host (a PAM module's sshd or sudo): only its
/// stdout comes back through a pipe; stdin is /dev/null; no other descriptor of the host is
/// inherited; signals are at their defaults and unblocked in the child. Every wait on it
/// is bounded, and it is always reaped.
public final class Subprocess {
    public let pid: pid_t
    /// The read end of the child's stdout.
    public let output: FileDescriptor
    private var reaped = false

    /// `path` is exec'd directly (no shell, no PATH search).
    public init(path: String, arguments: [String], environment: [String]) throws {
        var pipeFDs: [Int32] = [0, 0]
        _ = try syscall("pipe") { pipe(&pipeFDs) }
        let (readEnd, writeEnd) = (pipeFDs[0], pipeFDs[1])
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addclosefrom_np(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        // Its own session: a terminal's Ctrl-C reaches the host, which decides what to do.
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | FS_POSIX_SPAWN_SETSID))
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var child: pid_t = 0
        let rc = posix_spawn(&child, path, &actions, &attributes, argv, envp)
        close(writeEnd)
        guard rc == 0 else {
            close(readEnd)
            throw SystemError("spawn", path, code: rc)
        }
        pid = child
        output = FileDescriptor(owning: readEnd)
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
