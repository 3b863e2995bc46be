import CLinux
import FingersealWire
import Glibc
import SystemKit

/// The programs the CLI starts as the person running it: never the broker, which starts no
/// program for a caller.
enum Programs {
    static let tokenVariable = "FINGERSEAL_ACCESS_TOKEN_FD"
    /// The token's scheme, Bearer or DPoP: with DPoP each request needs `fingerseal proof`.
    static let tokenTypeVariable = "FINGERSEAL_TOKEN_TYPE"

    /// Replaces this process with `command`, the token in a sealed memfd on a descriptor named
    /// in FINGERSEAL_ACCESS_TOKEN_FD: never in argv or the environment, and gone with the
    /// command; its scheme (not a secret) in FINGERSEAL_TOKEN_TYPE. The caller has restored the
    /// signal mask. Returns only by throwing.
    static func execWithToken(_ command: [String], _ token: [UInt8], type: String?) throws(CLIError) -> Never {
        // Read-only, for the command and anything it starts.
        let fd: Int32
        do { fd = try token.withUnsafeBytes { try sealedMemoryFile(name: "fingerseal-access-token", $0, closeOnExec: false) } } catch {
            throw CLIError(.systemError, Strings.cannotHandOverToken)
        }
        Wire.wipeStorage(token)
        setenv(tokenVariable, "\(fd)", 1)
        // Only the two schemes; a broker that says neither (an older one) hands a bearer token.
        setenv(tokenTypeVariable, type == "DPoP" ? "DPoP" : "Bearer", 1)
        let argv = command.map { strdup($0) } + [nil]
        execvp(command[0], argv)
        let code = errno
        argv.forEach { free($0) }
        throw CLIError(code == ENOENT ? .usage : .systemError, Strings.cannotRun(command[0], String(cString: strerror(code))))
    }

    /// Runs `command` with this terminal and these descriptors, waits for it, passes on
    /// SIGTERM, SIGHUP and SIGQUIT, and returns its exit status (128 + the signal when a
    /// signal ended it). Ctrl-C reaches the command through the terminal; this process waits
    /// for it to end.
    static func runForeground(_ command: [String]) throws(CLIError) -> Int32 {
        let interrupt: InterruptWatch
        let child: pid_t
        do {
            interrupt = try InterruptWatch(signals: [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD])
            child = try spawnProgram(command[0], arguments: command, environment: nil, searchPath: true)
        } catch {
            let code = (error as? SystemError)?.code ?? EIO
            throw CLIError(code == ENOENT ? .usage : .systemError, Strings.cannotRun(command[0], String(cString: strerror(code))))
        }
        while true {
            var status: Int32 = 0
            let done = waitpid(child, &status, WNOHANG)
            if done == child {
                let signalled = status & 0x7f
                return signalled == 0 ? (status >> 8) & 0xff : 128 + signalled
            }
            if done < 0 && errno != EINTR { throw CLIError(.systemError, Strings.cannotWait(command[0])) }
            // SIGCHLD wakes this; the timeout only guards against a lost wake-up.
            var watched = [pollEntry(interrupt.fd)]
            _ = waitReady(&watched, until: monotonicSeconds() + 1)
            while let signal = interrupt.next() {
                if [SIGTERM, SIGHUP, SIGQUIT].contains(signal) { kill(child, signal) }
            }
        }
    }

    /// Starts `xdg-open URL` when there is a display and an xdg-open on PATH; its own session
    /// (Ctrl-C here does not reach the browser), no terminal, none of our descriptors. Never
    /// fails the sign-in: the broker sends the address as a sentence too. Returns its pid.
    static func openInBrowser(_ url: String) -> pid_t? {
        guard isLoopbackStartAddress(url) else { return nil }
        guard Invocation.environment("DISPLAY") != nil || Invocation.environment("WAYLAND_DISPLAY") != nil else { return nil }
        // Absolute PATH entries only: an empty or relative one would mean the current directory.
        let directories = (Invocation.environment("PATH") ?? "").split(separator: ":").filter { $0.hasPrefix("/") }
        guard let opener = directories.map({ String($0) + "/xdg-open" }).first(where: { access($0, X_OK) == 0 }) else {
            return nil
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addclosefrom_np(&actions, 3)
        return try? spawnProgram(opener, arguments: [opener, url], environment: nil, actions: &actions, newSession: true)
    }

    /// Whether `url` is a loopback address with no query or fragment (the broker's start
    /// address, http://127.0.0.1:PORT/start). A command line is readable by every local user
    /// (/proc/PID/cmdline), so nothing that could carry a sign-in's state, nonce, challenge or
    /// code goes into xdg-open's, whatever a broker sends.
    static func isLoopbackStartAddress(_ url: String) -> Bool {
        let prefix = "http://127.0.0.1:"
        guard url.hasPrefix(prefix) else { return false }
        let rest = url.utf8.dropFirst(prefix.utf8.count)
        guard let slash = rest.firstIndex(of: UInt8(ascii: "/")) else { return false }
        let port = rest[..<slash], path = rest[slash...]
        return (1...5).contains(port.count) && port.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
            && path.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                     UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "/"), UInt8(ascii: "-"), UInt8(ascii: "_"): true
                default: false
                }
            }
    }

    /// Reaps `pid` if it has ended; true once it is gone. Never waits: one still running when
    /// fingerseal exits is adopted by init.
    static func reap(_ pid: pid_t) -> Bool {
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        return result == pid || (result < 0 && errno == ECHILD)
    }
}
