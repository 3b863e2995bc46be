import CLinux
import CSystemd
import Glibc
import SystemKit

/// Who is on the other end of a connection, as the kernel says: never the environment or
/// a field the caller fills in (design §2).
public struct Caller: Sendable, CustomStringConvertible {
    public let pid: pid_t
    public let uid: UInt32
    public let gid: UInt32
    /// Every group of the calling process (primary and supplementary), from the kernel.
    public let groups: [UInt32]
    /// The caller's login session: the kernel's audit session (pam_loginuid), else logind's,
    /// else the process session id, which a process cannot join from outside.
    public let session: String
    /// The caller is in a login session (audit or logind), not only a process session.
    public let inLoginSession: Bool
    /// logind says the caller's session is remote (ssh).
    public let remote: Bool

    public var isRoot: Bool { uid == 0 }

    public var description: String { "uid \(uid) pid \(pid) session \(session)" }

    /// Reads the peer of a connected socket. The pid is pinned with a pidfd (SO_PEERPIDFD)
    /// where the kernel has it, and checked to still be the same process after /proc was
    /// read, so a reused pid cannot lend another process's session.
    public static func of(socket fd: Int32) throws -> Caller {
        var credentials = fs_ucred()
        var length = socklen_t(MemoryLayout<fs_ucred>.size)
        _ = try syscall("getsockopt", "SO_PEERCRED") { getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) }
        let pid = pid_t(credentials.pid)
        var pidfd: Int32 = -1
        var pidfdLength = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(fd, SOL_SOCKET, FS_SO_PEERPIDFD, &pidfd, &pidfdLength) != 0 { pidfd = -1 }
        defer { if pidfd >= 0 { close(pidfd) } }
        // Without a pidfd, the start time read before and after pins the process instead.
        let started = pidfd >= 0 ? nil : processStartTime(pid)
        let groups = processGroups(pid) ?? [credentials.gid]
        let logind = logindSession(pid)
        let session = loginSession(pid, logind: logind)
        let remote = logind.map { sd_session_is_remote($0) > 0 } ?? false
        // The process we read about must still be the peer.
        if pidfd >= 0 {
            // Signal 0 only asks whether it lives; EPERM (no CAP_KILL over another user's
            // process, as the unit bounds it) still means it does. ESRCH: it is gone.
            guard fs_pidfd_send_signal(pidfd, 0) == 0 || errno == EPERM else { throw SystemError("pidfd", "peer", code: ESRCH) }
        } else {
            guard let started, processStartTime(pid) == started else { throw SystemError("peer", "start time", code: ESRCH) }
        }
        return Caller(pid: pid, uid: credentials.uid, gid: credentials.gid, groups: groups, session: session,
                      inLoginSession: !session.hasPrefix("sid-"), remote: remote)
    }

    static func loginSession(_ pid: pid_t, logind: String?) -> String {
        if let audit = readSmall("/proc/\(pid)/sessionid"), let id = UInt32(audit), id != UInt32.max {
            return "audit-\(id)"
        }
        if let logind { return "logind-" + logind }
        return "sid-\(getsid(pid))"
    }

    /// logind's session of `pid`, when logind knows one.
    static func logindSession(_ pid: pid_t) -> String? {
        // Without logind (containers, build machines) there is nothing to ask, and asking
        // costs two cgroup files per request.
        guard access("/run/systemd/sessions", F_OK) == 0 else { return nil }
        var name: UnsafeMutablePointer<CChar>? = nil
        guard sd_pid_get_session(pid, &name) >= 0, let name else { return nil }
        defer { free(name) }
        return String(cString: name)
    }

    /// The `Groups:` line of /proc/PID/status.
    static func processGroups(_ pid: pid_t) -> [UInt32]? {
        guard let status = readSmall("/proc/\(pid)/status", keepLines: true, limit: 16384) else { return nil }
        var groups: [UInt32] = []
        for line in status.split(separator: "\n") where line.hasPrefix("Groups:") {
            groups = line.dropFirst("Groups:".count).split(whereSeparator: { $0 == " " || $0 == "\t" }).compactMap { UInt32($0) }
        }
        for line in status.split(separator: "\n") where line.hasPrefix("Gid:") {
            // Real, effective, saved, filesystem: the effective group counts.
            let ids = line.dropFirst(4).split(whereSeparator: { $0 == " " || $0 == "\t" }).compactMap { UInt32($0) }
            if ids.count > 1 { groups.append(ids[1]) }
        }
        return groups
    }

    static func readSmall(_ path: String, keepLines: Bool = false, limit: Int = 256) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        let file = FileDescriptor(owning: fd)
        guard let bytes = try? file.readAll(limit: limit, subject: path) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        return keepLines ? text : text.filter { !$0.isWhitespace }
    }

    /// Whether the caller's process belongs to the group named `name`.
    public func isInGroup(named name: String) -> Bool {
        guard let id = groupID(name) else { return false }
        return groups.contains(id)
    }
}

func groupID(_ name: String) -> UInt32? {
    var entry = Glibc.group()
    var result: UnsafeMutablePointer<Glibc.group>? = nil
    var buffer = [CChar](repeating: 0, count: 16384)
    return buffer.withUnsafeMutableBufferPointer { raw -> UInt32? in
        guard let base = raw.baseAddress, getgrnam_r(name, &entry, base, raw.count, &result) == 0, result != nil else { return nil }
        return entry.gr_gid
    }
}
