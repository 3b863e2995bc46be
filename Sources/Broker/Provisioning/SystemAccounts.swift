import FingersealCore
import Glibc
import SystemKit

/// The system's own tools for accounts (useradd, userdel), run by the broker as root with a
/// fixed environment, nothing of the caller's in it, and a bounded wait. Only names checked
/// by `AccountName.isValid` reach their command lines; no secret ever does.
enum SystemAccounts {
    static let useradd = "/usr/sbin/useradd"
    static let userdel = "/usr/sbin/userdel"
    /// How long one tool may take.
    static let limit = 30.0
    /// The comment (GECOS) of every account provisioning makes: an administrator reading
    /// /etc/passwd sees where it came from; the request's marker follows it.
    static let comment = "fingerseal provisioned"
    /// useradd's exit status for a name (or the group of that name) already in use.
    static let nameInUseStatus: Int32 = 9

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// useradd found the name taken: by someone else, since it was checked.
    struct NameInUse: Error {}

    /// The comment of an account made with `marker` (the bare comment for a record made
    /// before markers were kept).
    static func comment(marker: String?) -> String { marker.map { "\(comment) \($0)" } ?? comment }

    /// A new account: no home directory here (pam_mkhomedir makes it at the first session),
    /// a locked password, its own group (the system's default) and `groups`, and `marker` in
    /// its comment.
    static func create(_ name: String, groups: [String], marker: String) throws {
        guard AccountName.isValid(name), groups.allSatisfy(isSafeGroup), marker.allSatisfy({ $0.isASCII && $0.isHexDigit }) else {
            throw Failure(description: "invalid name")
        }
        var arguments = [useradd, "--no-create-home", "--password", "!", "--comment", comment(marker: marker)]
        if !groups.isEmpty { arguments += ["--groups", groups.joined(separator: ",")] }
        arguments += ["--", name]
        let status = try run(arguments)
        if status == nameInUseStatus { throw NameInUse() }
        guard status == 0 else { throw Failure(description: "useradd exited with status \(status)") }
    }

    /// Whether the account `name` is the one made with `marker`: its comment says so (and its
    /// uid is `uid`, when that is known). False when there is no such account.
    static func isMade(_ name: String, marker: String?, uid: UInt32? = nil) -> Bool {
        guard let entry = entry(name) else { return false }
        return entry.comment == comment(marker: marker) && uid.map { $0 == entry.uid } ?? true
    }

    /// The uid and comment (GECOS) of the account `name`; nil when there is none.
    static func entry(_ name: String) -> (uid: UInt32, comment: String)? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>? = nil
        var buffer = [CChar](repeating: 0, count: 65536)
        return buffer.withUnsafeMutableBufferPointer { raw -> (uid: UInt32, comment: String)? in
            guard let base = raw.baseAddress, getpwnam_r(name, &entry, base, raw.count, &result) == 0, result != nil else { return nil }
            return (entry.pw_uid, entry.pw_gecos.map { String(cString: $0) } ?? "")
        }
    }

    /// A group name useradd's --groups can take as one item (the administrator's
    /// `identify_group=` is any group name): no separator, space or leading dash.
    static func isSafeGroup(_ group: String) -> Bool {
        !group.isEmpty && group.utf8.count <= 256 && !group.hasPrefix("-")
            && !group.unicodeScalars.contains { $0 == "," || $0 == ":" || $0.value <= 0x20 || $0.value == 0x7f }
    }

    /// Removes the account (with `removeHome`, its home directory and mail spool too).
    /// Returns false when userdel refuses (for example while the account is signed in).
    static func remove(_ name: String, removeHome: Bool) throws -> Bool {
        guard AccountName.isValid(name) else { throw Failure(description: "invalid name") }
        let status = try run([userdel] + (removeHome ? ["--remove"] : []) + ["--", name])
        // 6: no such user (already gone). 12: the home directory could not be removed (none
        // was made: the account never opened a session).
        if status == 0 || status == 6 || (removeHome && status == 12) { return true }
        Syslog.log(.warning, "fingersealed: userdel \(name) exited with status \(status)")
        return false
    }

    /// Whether a group of that name exists (useradd would make one of the account's name).
    static func groupExists(_ name: String) -> Bool { groupID(named: name) != nil }

    /// Where systemd is the service manager, the tools run as a transient unit of their own
    /// (`systemd-run --wait`): the broker's unit (ProtectSystem=strict, no CAP_CHOWN, the
    /// @privileged system calls filtered) cannot write /etc or remove a home directory, and
    /// must not be loosened for everything else it does. Elsewhere (containers, the tests:
    /// systemd not running) they run directly, as the broker's children.
    static let systemdRun = "/usr/bin/systemd-run"

    /// The broker's own program, for work it runs outside its sandbox.
    static var ownProgram: String? { symbolicLinkTarget("/proc/self/exe") }

    /// The unit that reads the policy files for the reserved names: root that can read any
    /// file and change nothing (no other capability, nothing writable, no new privileges).
    static let policyReaderProperties = ["CapabilityBoundingSet=CAP_DAC_READ_SEARCH", "NoNewPrivileges=yes", "ProtectSystem=strict",
                                         "ProtectHome=yes", "PrivateTmp=yes", "PrivateDevices=yes", "RestrictAddressFamilies=AF_UNIX"]
    static var underSystemd: Bool { access("/run/systemd/system", F_OK) == 0 && access(systemdRun, X_OK) == 0 }

    /// How `arguments` (the program first) is started: directly, or through systemd-run
    /// (`properties`: the transient unit's own, as `--property=` takes them; `output`: its
    /// standard output comes back through --pipe).
    static func command(_ arguments: [String], underSystemd: Bool, properties: [String] = [], output: Bool = false) -> [String] {
        guard underSystemd else { return arguments }
        return [systemdRun, "--wait", "--quiet", "--collect", "--service-type=exec"] + (output ? ["--pipe"] : [])
            + (["RuntimeMaxSec=\(Int(limit))"] + properties).map { "--property=" + $0 }
            + ["--description=fingerseal: \(arguments[0])", "--"] + arguments
    }

    /// Runs `arguments` (the program first) and returns its exit status (systemd-run --wait
    /// returns its unit's); a program still running after `limit` is killed (status -1).
    static func run(_ arguments: [String]) throws -> Int32 {
        var output: [UInt8]? = nil
        return try run(arguments, properties: [], capturing: &output)
    }

    /// The same, with the unit's `properties` under systemd; `capturing` non-nil: what the
    /// program writes to its standard output, up to `outputLimit` bytes.
    static let outputLimit = 16 << 10
    static func run(_ arguments: [String], properties: [String], capturing output: inout [UInt8]?) throws -> Int32 {
        let capture = output != nil
        let arguments = command(arguments, underSystemd: underSystemd, properties: properties, output: capture)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var pipeFDs: [Int32] = [-1, -1]
        if capture {
            do { (pipeFDs[0], pipeFDs[1]) = try closeOnExecPipe() } catch { throw Failure(description: "pipe: \(error)") }
        }
        defer { for fd in pipeFDs where fd >= 0 { close(fd) } }
        for fd in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] {
            if capture && fd == STDOUT_FILENO {
                posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], STDOUT_FILENO)
                continue
            }
            posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY, 0)
        }
        let pid = try spawnProgram(arguments[0], arguments: arguments,
                                   environment: ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"], actions: &actions)
        let process = ProcessHandle(pid: pid)
        let deadline = monotonicSeconds() + limit
        var status: Int32 = 0
        while true {
            let done = waitpid(pid, &status, WNOHANG)
            if done == pid { break }
            if done < 0 && errno != EINTR { throw Failure(description: "waitpid: \(errno)") }
            if monotonicSeconds() >= deadline {
                kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                Syslog.log(.warning, "fingersealed: \(arguments[0]) took longer than \(Int(limit)) s and was stopped")
                return -1
            }
            if let process {
                var fds = [pollEntry(process.fd)]
                _ = waitReady(&fds, until: min(deadline, monotonicSeconds() + 1))
            } else {
                var fds: [pollfd] = []
                _ = waitReady(&fds, until: min(deadline, monotonicSeconds() + 0.05))
            }
        }
        if capture {
            // Small by design (a line or two): the pipe held all of it while the program ran.
            close(pipeFDs[1])
            pipeFDs[1] = -1
            _ = fcntl(pipeFDs[0], F_SETFL, O_NONBLOCK)
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while bytes.count < outputLimit {
                let count = read(pipeFDs[0], &chunk, chunk.count)
                if count <= 0 { break }
                bytes += chunk[..<count]
            }
            output = Array(bytes.prefix(outputLimit))
        }
        // WIFEXITED / WEXITSTATUS are macros.
        return status & 0x7f == 0 ? (status >> 8) & 0xff : -1
    }
}
