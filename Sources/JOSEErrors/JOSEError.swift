/// Why a token, a key set or a userinfo answer was refused. Data, not sentences: the broker's
/// table words them (the core's `Messages.jose…`). Its own target, with nothing but the
/// standard library, so that the core can carry it (inside `TokenFailure`) without linking
/// JOSEKit's libcrypto.
public enum JOSEError: Error, Equatable, Sendable {
    /// Not a JWT, JWKS or JSON object of the expected shape: bad base64url, bad JSON,
    /// duplicate members, over the size bounds.
    case malformed(Malformation)
    /// Anything but RS256, ES256 and EdDSA (never "none", never an HMAC).
    case unsupportedAlgorithm(String)
    /// No key in the set with this kid whose type and alg fit the token's alg.
    case unknownKey(String?)
    case badSignature
    /// Which claim failed, and how.
    case claim(ClaimProblem)

    /// What was not of the expected shape.
    public enum Malformation: Equatable, Sendable {
        case tokenTooLarge(limit: Int)
        case userinfoTooLarge(limit: Int)
        case keySetTooLarge(limit: Int)
        case tooManyKeys(limit: Int)
        /// Not three dot-separated parts.
        case notSignedJWT
        case notBase64URL
        case criticalExtensions
        case notJSONObject(Part)
        /// An object in it names a member twice.
        case repeatedMember(Part)
    }

    /// Which JSON document a malformation is in.
    public enum Part: Sendable {
        case claims, header, userinfo, keySet
    }

    public enum ClaimProblem: Equatable, Sendable {
        case missing(Claim)
        /// iss is not this provider.
        case wrongIssuer
        /// aud does not name this client.
        case notForThisClient
        /// aud names several clients and azp is missing.
        case noAuthorizedParty
        /// azp is another client.
        case wrongAuthorizedParty
        case expired
        case issuedInTheFuture
        case nonceMissing
        /// The nonce is not this sign-in's.
        case nonceMismatch
    }

    /// The claims every ID token must carry.
    public enum Claim: String, Sendable {
        case sub, iss, aud, exp, iat
    }
}
