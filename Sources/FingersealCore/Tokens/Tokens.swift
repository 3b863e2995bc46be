import SodiumKit

/// Tokens an identity provider issued. Secrets stay in secure memory.
public struct TokenSet {
    public let accessToken: SecureBytes
    /// The rotated refresh token, when the provider sent one.
    public let refreshToken: SecureBytes?
    /// Seconds the access token lives, when the provider said.
    public let expiresIn: Int?
    public let scope: String?
    /// The OIDC ID token, when the provider sent one (a compact JWS, not yet verified).
    public let idToken: String?

    public init(accessToken: SecureBytes, refreshToken: SecureBytes?, expiresIn: Int?, scope: String?, idToken: String? = nil) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.expiresIn = expiresIn
        self.scope = scope
        self.idToken = idToken
    }
}

/// Why a token request did not give tokens, sorted by what the caller must do about it.
public enum TokenFailure: Error, Equatable, Sendable {
    /// `invalid_grant`, or on a refresh any refusal: the refresh-token chain is over; a new
    /// sign-in is needed. Carries the error code, or the HTTP status when there was none.
    case chainEnded(String)
    /// Network error, timeout, TLS failure or a 5xx: try again later (offline policy).
    case unreachable(String)
    /// A password grant refused with 400, 401 or 403: the user name or password (the
    /// provider's code when it gave one).
    case credentialsRefused(code: String?)
    /// The provider takes the request only from a client that authenticates (revocation by
    /// a public client, at some providers).
    case clientAuthenticationRequired(status: Int)
    /// Any other refusal, standard or not.
    case rejected(status: Int, code: String?)
    /// Not a token response: not JSON, oversized, missing fields.
    case malformed(String)
    /// Device grant (RFC 8628) states.
    case authorizationPending, slowDown, expiredToken, accessDenied
    /// The provider's configuration is not acceptable (issuer mismatch, plain http).
    case badConfiguration(String)
    /// The provider's statement of who signed in (its ID token or userinfo answer) did not pass
    /// the checks: a plain reason ("the ID token's signature does not verify").
    case identityRejected(String)
}

/// What flows need from an identity provider; the real one speaks HTTP (IdentityClient).
public protocol TokenClient {
    func refresh(_ refreshToken: SecureBytes) throws(TokenFailure) -> TokenSet
}
