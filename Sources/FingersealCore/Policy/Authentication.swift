import FingersealWire
/// Where a login comes from, as far as the broker can tell.
public enum LoginOrigin {
    /// A login from another machine: an rhost that is not this one, or an SSH session.
    public static func isRemote(remoteHost: String?, sshSession: Bool) -> Bool {
        if sshSession { return true }
        guard let host = remoteHost, !host.isEmpty else { return false }
        return !["localhost", "127.0.0.1", "::1"].contains(host)
    }
}

/// How a PAM request ended, with what to log (never a secret).
public struct AuthenticationResult: Sendable {
    public let outcome: Outcome
    public let detail: String

    public init(_ outcome: Outcome, _ detail: String) {
        self.outcome = outcome
        self.detail = detail
    }
}
