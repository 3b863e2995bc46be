import CLinux
import Glibc

/// syslog(3) for the broker, at LOG_AUTHPRIV like PAM's
/// own log. The PAM module logs through pam_syslog instead and never calls `open`: the
/// host's syslog identity is not ours to change.
public enum Syslog {
    /// The levels fingerseal's own lines use: events, and problems recording them.
    public enum Level: Sendable {
        case notice, warning

        var priority: Int32 { self == .notice ? LOG_NOTICE : LOG_WARNING }
    }

    /// Tags each line with the process id, under the program's own name, at LOG_AUTHPRIV.
    public static func open() {
        openlog(nil, LOG_PID, LOG_AUTHPRIV)
    }

    /// Logs `message` as one line: control characters in it (a caller's text that reached it,
    /// such as a PAM item a root host passed on) are escaped, never written as they are.
    public static func log(_ level: Level, _ message: String) {
        fs_syslog(level.priority | LOG_AUTHPRIV, ControlCharacters.escaped(message))
    }
}
