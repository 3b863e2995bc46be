import SodiumKit

/// An access token with its expiry, as the broker keeps it for a login session (in memory
/// only) and hands it to its owner. The bytes live in secure memory.
public struct AccessToken {
    public static let maxToken = 16 * 1024

    public let token: SecureBytes
    public let expiresAt: Int64
    /// For a token bound to the sign-in's key (RFC 9449): the key, as the unlocked vault
    /// yielded it, so that proofs for requests with this token need no new finger while it
    /// is valid. Held in secure memory, and gone with the token.
    public var proofKey: ProofKeyMaterial? = nil

    public init(token: SecureBytes, expiresAt: Int64, proofKey: ProofKeyMaterial? = nil) {
        self.token = token
        self.expiresAt = expiresAt
        self.proofKey = proofKey
    }

    /// The authorization scheme a request with this token names (RFC 9449 §7.1).
    public var scheme: String { proofKey == nil ? "Bearer" : "DPoP" }

    /// Lifetime assumed when a provider does not say (RFC 6749 leaves `expires_in` optional).
    public static let assumedLifetime: Int64 = 300

    public init(_ tokens: TokenSet, issuedAt now: Int64, proofKey: ProofKeyMaterial? = nil) {
        // Bounded, whatever the provider said: a day at most is kept for a session.
        let lifetime = min(max(Int64(tokens.expiresIn ?? Int(AccessToken.assumedLifetime)), 0), 86_400)
        self.init(token: tokens.accessToken, expiresAt: max(now, 0) + lifetime, proofKey: tokens.boundToKey ? proofKey : nil)
    }

    /// Valid for at least `margin` more seconds.
    public func isValid(at now: Int64, margin: Int64 = 30) -> Bool {
        expiresAt > now &+ margin
    }

    /// RFC 6749 A.12/A.17: 1*VSCHAR, bounded.
    public static func isValidToken(_ token: some Collection<UInt8>) -> Bool {
        (1...maxToken).contains(token.count) && token.allSatisfy { $0 >= 0x20 && $0 <= 0x7e }
    }
}

/// How the token step after a successful finger or PIN went, as `unlock --json` names it
/// (`TokenRefresh.verdict` judges it).
public enum TokenStep: String, Codable, Sendable {
    /// A fresh access token; the rotated refresh token is sealed.
    case refreshed
    /// The IdP is unreachable, within the offline grace.
    case offline
    /// The vault was never signed in to an IdP: there is no token to refresh.
    case notSignedIn
    /// The chain is over (invalid_grant now or before): `fingerseal login` is needed.
    case signInRequired
    /// Unreachable, and the last refresh is older than the offline grace. The token is kept.
    case unreachable
    /// A refusal or an answer that is not a token. The token is kept.
    case failed
}
