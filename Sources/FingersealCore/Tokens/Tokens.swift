import JOSEErrors
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
    /// The provider bound the tokens to the proof's key (RFC 9449: `token_type: DPoP`).
    public let boundToKey: Bool

    public init(accessToken: SecureBytes, refreshToken: SecureBytes?, expiresIn: Int?, scope: String?, idToken: String? = nil,
                boundToKey: Bool = false) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.expiresIn = expiresIn
        self.scope = scope
        self.idToken = idToken
        self.boundToKey = boundToKey
    }
}

/// Why a token request did not give tokens, sorted by what the caller must do about it. Data,
/// not sentences: the broker's table words the reasons (`Messages.reason`, TokenMessages.swift).
public enum TokenFailure: Error, Equatable, Sendable {
    /// `invalid_grant`, or on a refresh any refusal: the refresh-token chain is over; a new
    /// sign-in is needed. Carries the error code, or the HTTP status when there was none.
    case chainEnded(String)
    /// Network error, timeout, TLS failure or a 5xx: try again later (offline policy).
    case unreachable(Unreachable)
    /// A password grant refused with 400, 401 or 403: the user name or password (the
    /// provider's code when it gave one).
    case credentialsRefused(code: String?)
    /// The provider takes the request only from a client that authenticates (revocation by
    /// a public client, at some providers).
    case clientAuthenticationRequired(status: Int)
    /// Any other refusal, standard or not.
    case rejected(status: Int, code: String?)
    /// The provider refused this computer's proof of possession (RFC 9449: `invalid_dpop_proof`,
    /// or its nonce asked for again after it was given): most often a clock far off. The
    /// sign-in stays; the token is kept.
    case proofRefused(code: String)
    /// Not a token response: not JSON, oversized, missing fields.
    case malformed(Malformation)
    /// Device grant (RFC 8628) states.
    case authorizationPending, slowDown, expiredToken, accessDenied
    /// The provider's configuration is not acceptable (issuer mismatch, plain http).
    case badConfiguration(ConfigurationProblem)
    /// The provider's statement of who signed in (its ID token or userinfo answer) did not pass
    /// the checks.
    case identityRejected(IdentityRejection)

    /// Which of the provider's services gave an answer.
    public enum Responder: Sendable {
        /// Its discovery document (`/.well-known/openid-configuration`).
        case discovery
        /// Its key set (`jwks_uri`).
        case keySet
        /// Its token, device authorization, revocation or userinfo endpoint.
        case provider
    }

    public enum Unreachable: Equatable, Sendable {
        /// A status that says "later": a 5xx (and, at the endpoints, 429 and 408).
        case answered(status: Int, by: Responder)
        /// libcurl's words for the TLS failure.
        case tls(String)
        case timedOut
        case couldNotConnect
        /// Another transport failure, in libcurl's words (or the error's own).
        case transport(String)
    }

    public enum Malformation: Equatable, Sendable {
        case discoveryDocument
        case deviceAuthorizationAnswer
        case answerTooLarge(limit: Int)
        /// The tokens could not be copied into secure memory.
        case noSecureMemoryForTokens
        /// Not JSON, or no access token in it.
        case tokenAnswer
        case noBearerAccessToken
        case refreshTokenInAnswer
        case idTokenInAnswer
        case negativeLifetime
        /// JOSEKit's refusal of the provider's key set.
        case keySet(JOSEError)
        /// JOSEKit's refusal of a userinfo answer.
        case userinfo(JOSEError)
    }

    public enum ConfigurationProblem: Equatable, Sendable {
        /// A status that is no "later" from the discovery document or the key set.
        case answered(status: Int, by: Responder)
        /// The discovery document names another issuer than the one asked for.
        case otherIssuer(stated: String, asked: String)
        /// A URL that is neither https nor http.
        case notHTTPS(String)
        /// Plain http to a host that is not a loopback address.
        case plainHTTP(String)
        case noAuthorizationEndpoint
        case authorizationEndpointHasFragment
        case noUserinfoEndpoint
        case noDeviceAuthorization
        /// A sealed sign-in from before the token endpoint was kept.
        case noTokenEndpoint
        case noSecureMemoryForCredentials
        /// A proof of possession (RFC 9449) could not be made: the key would not sign.
        case proofUnavailable
        /// libcurl refused the request (its words).
        case invalidRequest(String)
        /// The vault's sign-in names no provider.
        case noProvider
        case clientSecretUnreadable
        case clientSecretMissing
        /// `user_claim`'s map of accounts.
        case userMapUnreadable
    }

    public enum IdentityRejection: Equatable, Sendable {
        /// A userinfo answer as a JWT (signed or encrypted).
        case signedUserinfo
        /// A userinfo answer's claims, refused.
        case userinfo(JOSEError.ClaimProblem)
        /// The ID token, refused.
        case idToken(JOSEError)
    }
}

/// What flows need from an identity provider; the real one speaks HTTP (IdentityClient).
public protocol TokenClient {
    func refresh(_ refreshToken: SecureBytes) throws(TokenFailure) -> TokenSet
}
