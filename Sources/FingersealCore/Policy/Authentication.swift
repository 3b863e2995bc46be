import SodiumKit
import SystemKit

/// What a PAM `auth` call knows about its request (the broker's PAM flow decides on it).
public struct AuthenticationRequest: Sendable {
    public var user: String?
    public var service: String
    /// PAM_RHOST.
    public var remoteHost: String?
    /// The caller's login session is remote (logind says so).
    public var sshSession: Bool
    public var options: Options

    public init(user: String?, service: String, remoteHost: String?, sshSession: Bool, options: Options) {
        self.user = user
        self.service = service
        self.remoteHost = remoteHost
        self.sshSession = sshSession
        self.options = options
    }

    /// A login from another machine: an rhost that is not this one, or an SSH session.
    public var isRemote: Bool {
        if sshSession { return true }
        guard let host = remoteHost, !host.isEmpty else { return false }
        return !["localhost", "127.0.0.1", "::1"].contains(host)
    }
}

/// How an authentication ended, with what to log (never a secret).
public struct AuthenticationResult: Sendable {
    public let outcome: Outcome
    public let detail: String
    /// What opened the vault, when it was opened (kept when the token step changes the outcome).
    public var method: UnlockMethod?
    /// What the audit trail records as the reason, when more than the outcome (a TPM state).
    public var cause: FingersealError.Cause? = nil

    public var auditReason: String { cause?.rawValue ?? outcome.rawValue }

    public init(_ outcome: Outcome, _ detail: String) {
        self.outcome = outcome
        self.detail = detail
    }

    /// Another outcome and detail for the same unlock: the method stays.
    public func replacing(_ outcome: Outcome, _ detail: String) -> AuthenticationResult {
        var result = AuthenticationResult(outcome, detail)
        result.method = method
        return result
    }
}
