import CSystemd
import Glibc

/// The service manager's side of a daemon (sd-daemon): the sockets systemd passed, and the
/// state the daemon reports to it.
public enum ServiceManager {
    /// The first descriptor systemd passes (SD_LISTEN_FDS_START).
    public static let firstListenedFD = SD_LISTEN_FDS_START

    /// How many sockets systemd passed (LISTEN_FDS, for this process), from `firstListenedFD`
    /// on; 0 when none, negative errno when the environment is wrong. The variables are unset,
    /// so children do not see them.
    public static func listenedSockets() -> Int32 {
        sd_listen_fds(1)
    }

    /// Whether `fd` is a listening unix socket of `type` (SOCK_SEQPACKET, SOCK_STREAM, ...).
    public static func isListeningUnixSocket(_ fd: Int32, type: Int32) -> Bool {
        sd_is_socket_unix(fd, type, 1, nil, 0) > 0
    }

    /// Tells systemd `state` ("READY=1", "STOPPING=1\nSTATUS=…"); nothing without a manager
    /// listening (NOTIFY_SOCKET unset).
    public static func notify(_ state: String) {
        _ = sd_notify(0, state)
    }
}
