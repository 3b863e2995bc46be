import CSystemd
import Glibc
import SystemKit

/// logind's sessions, as sd-login reads them (from /run/systemd, no bus): which session a
/// process is in, and what logind says of it. Every answer is nil (or false) when logind does
/// not know.
public enum LoginSessions {
    /// Whether logind knows any session here: without one (no logind, a container or build
    /// machine, or an image that left /run/systemd's directories behind) no caller can be in
    /// one, and asking costs two cgroup files parsed per request. logind writes a session's
    /// file before the session's first process runs, so a caller in a session is never missed.
    /// The answer is kept while the sessions' directory is unchanged (one stat, not a listing),
    /// and only once that directory has settled: a change within the same tick of its
    /// modification time would otherwise go unseen.
    public static var available: Bool {
        var info = stat()
        guard stat(sessionsDirectory, &info) == 0 else { return false }
        let identity = DirectoryState(info)
        if let known = knownState.locked({ $0?.identity == identity ? $0?.available : nil }) { return known }
        let available = sd_get_sessions(nil) > 0
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        if now.tv_sec - info.st_mtim.tv_sec >= 2 { knownState.locked { $0 = (identity, available) } }
        return available
    }

    static let sessionsDirectory = "/run/systemd/sessions"

    /// The sessions' directory as last listed.
    private struct DirectoryState: Equatable {
        let device: UInt64, inode: UInt64, seconds: Int, nanoseconds: Int

        init(_ info: stat) {
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            seconds = info.st_mtim.tv_sec
            nanoseconds = info.st_mtim.tv_nsec
        }
    }

    private static let knownState = LockedValue<(identity: DirectoryState, available: Bool)?>(nil)

    /// The session `pid` belongs to.
    public static func session(of pid: pid_t) -> String? {
        owned { sd_pid_get_session(pid, &$0) }
    }

    /// Whether the session is remote (ssh, a remote desktop).
    public static func isRemote(_ session: String) -> Bool {
        sd_session_is_remote(session) > 0
    }

    /// Whose session it is.
    public static func owner(of session: String) -> uid_t? {
        var owner = uid_t(0)
        return sd_session_get_uid(session, &owner) < 0 ? nil : owner
    }

    /// Its state: "online", "active" or "closing"; nil once logind no longer knows it.
    public static func state(of session: String) -> String? {
        owned { sd_session_get_state(session, &$0) }
    }

    /// The string an sd-login call allocates for its caller, copied and freed.
    private static func owned(_ call: (inout UnsafeMutablePointer<CChar>?) -> Int32) -> String? {
        var value: UnsafeMutablePointer<CChar>? = nil
        guard call(&value) >= 0, let value else { return nil }
        defer { free(value) }
        return String(cString: value)
    }
}
