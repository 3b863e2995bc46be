import CLinux
import Glibc

/// Who is on the other end of a connected Unix socket, as the kernel recorded it at connect
/// time (SO_PEERCRED, SO_PEERGROUPS): nothing the peer says about itself.
public struct PeerCredentials: Sendable {
    public let pid: pid_t
    /// The effective uid and gid at connect time.
    public let uid: UInt32
    public let gid: UInt32
    /// The supplementary groups at connect time; nil where the kernel does not say.
    public let groups: [UInt32]?

    public static func of(socket fd: Int32) throws -> PeerCredentials {
        var credentials = fs_ucred()
        var length = socklen_t(MemoryLayout<fs_ucred>.size)
        _ = try syscall("getsockopt", "SO_PEERCRED") { getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) }
        return PeerCredentials(pid: pid_t(credentials.pid), uid: credentials.uid, gid: credentials.gid, groups: peerGroups(fd))
    }

    private static func peerGroups(_ fd: Int32) -> [UInt32]? {
        var groups = [gid_t](repeating: 0, count: 256)
        var length = socklen_t(groups.count * MemoryLayout<gid_t>.size)
        let rc = groups.withUnsafeMutableBytes { getsockopt(fd, SOL_SOCKET, FS_SO_PEERGROUPS, $0.baseAddress, &length) }
        guard rc == 0 else { return nil }
        return Array(groups.prefix(Int(length) / MemoryLayout<gid_t>.size))
    }
}

/// A process pinned by a pidfd: whatever later reuses its pid, this still names it (or
/// says it is gone). Closed when released.
public final class ProcessHandle: @unchecked Sendable {
    public let fd: Int32

    /// The peer of a connected socket (SO_PEERPIDFD, Linux 6.5); nil on an older kernel.
    public init?(peerOf socket: Int32) {
        var pidfd: Int32 = -1
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(socket, SOL_SOCKET, FS_SO_PEERPIDFD, &pidfd, &length) == 0, pidfd >= 0 else { return nil }
        fd = pidfd
    }

    /// A process of ours or another's, by pid (pidfd_open); nil when it is gone or the kernel
    /// has no pidfds.
    public init?(pid: pid_t) {
        let pidfd = fs_pidfd_open(pid)
        guard pidfd >= 0 else { return nil }
        fd = pidfd
    }

    deinit { close(fd) }

    /// Whether the process still lives. Signal 0 only asks; EPERM (no CAP_KILL over another
    /// user's process) still means it does, ESRCH that it is gone.
    public var isAlive: Bool { fs_pidfd_send_signal(fd, 0) == 0 || errno == EPERM }

    /// The process's real uid, from the kernel (PIDFD_GET_INFO, Linux 6.13): no /proc file to
    /// open and parse. Nil on an older kernel.
    public var realUID: UInt32? {
        var uid: UInt32 = 0
        return fs_pidfd_real_uid(fd, &uid) == 0 ? uid : nil
    }
}
