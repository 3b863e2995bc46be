/// The ways a person confirms it is them, one spelling for every end: an application's
/// allowed methods, a reply's method, the audit trail's and the lockout's.
public enum UnlockMethod: String, CaseIterable, Sendable {
    case finger, pin
    /// The account password, checked by the broker (an application's dialog).
    case password
}

extension Array where Element == UnlockMethod {
    /// Whether `method` may be used where an application named these: every way when it named
    /// none. The one rule, for the broker (`Application.allows`) and the agent's dialog.
    public func allow(_ method: UnlockMethod) -> Bool { isEmpty || contains(method) }
}

/// How `fingerseal login` signs in (`flow=`, `--flow`).
public enum SignInFlow: String, CaseIterable, Sendable {
    /// RFC 8628: a code to enter on any device.
    case device
    /// The resource-owner password grant.
    case password
    /// Authorization code + PKCE in a browser, with a loopback redirect (RFC 8252).
    case browser
}
