import FoundationEssentials

/// The identity claims of an ID token (OIDC Core 2) or a userinfo answer (5.3), as checked.
public struct IDTokenClaims: Sendable, Equatable {
    public let issuer: String, subject: String, audience: [String]
    public let expiresAt: Int64, issuedAt: Int64
    public let nonce: String?, authorizedParty: String?
    public let preferredUsername: String?, email: String?, emailVerified: Bool?, name: String?
    /// `groups` and `roles` (a string or an array of strings; not standard OIDC, but what
    /// providers send for group membership): what an administrator's rule may require.
    public let groups: [String]?, roles: [String]?
    /// `auth_time` (OIDC Core 2): when the person last authenticated at the provider, which a
    /// refreshed ID token keeps (12.2); nil when the provider did not say.
    public let authTime: Int64?

    public init(issuer: String, subject: String, audience: [String], expiresAt: Int64, issuedAt: Int64,
                nonce: String? = nil, authorizedParty: String? = nil, preferredUsername: String? = nil,
                email: String? = nil, emailVerified: Bool? = nil, name: String? = nil,
                groups: [String]? = nil, roles: [String]? = nil, authTime: Int64? = nil) {
        self.authTime = authTime
        self.groups = groups
        self.roles = roles
        self.issuer = issuer
        self.subject = subject
        self.audience = audience
        self.expiresAt = expiresAt
        self.issuedAt = issuedAt
        self.nonce = nonce
        self.authorizedParty = authorizedParty
        self.preferredUsername = preferredUsername
        self.email = email
        self.emailVerified = emailVerified
        self.name = name
    }
}

/// OIDC ID tokens: compact JWS (RFC 7515 7.1) signed with RS256, ES256 or EdDSA.
public enum IDToken {
    public static let maxBytes = 16 * 1024

    /// The header's alg and kid, unverified (to pick a key / decide a JWKS refresh).
    public static func header(_ token: String) throws(JOSEError) -> (algorithm: String, keyID: String?) {
        let header = try Compact(token).header
        return (header.alg, header.kid)
    }

    /// Signature with the JWKS key (kid; alg must match the key type: RS256↔RSA ≥2048 bits,
    /// ES256↔EC P-256, EdDSA↔OKP Ed25519), then iss == issuer (exact string), aud contains
    /// clientID (and azp == clientID when aud has several, or when azp is there at all),
    /// exp > now - leeway, iat <= now + leeway, nonce == expected when expected is non-nil.
    public static func verify(_ token: String, keys: JSONWebKeySet, issuer: String, clientID: String,
                              nonce: String?, now: Int64, leeway: Int64 = 120) throws(JOSEError) -> IDTokenClaims {
        let compact = try Compact(token)
        guard let algorithm = Algorithm(rawValue: compact.header.alg) else {
            throw .unsupportedAlgorithm(printable(compact.header.alg))
        }
        let candidates = keys.candidates(algorithm: algorithm, keyID: compact.header.kid)
        guard !candidates.isEmpty else { throw .unknownKey(compact.header.kid.map(printable)) }
        guard candidates.contains(where: { $0.verify(signature: compact.signature, message: compact.signingInput) }) else {
            throw .badSignature
        }
        // Only now is the payload read at all.
        let claims = try ClaimSet.parse(compact.payload, what: .claims).identity(requireTimes: true)
        guard claims.issuer == issuer else { throw .claim(.wrongIssuer) }
        guard claims.audience.contains(clientID) else { throw .claim(.notForThisClient) }
        if claims.audience.count > 1, claims.authorizedParty == nil { throw .claim(.noAuthorizedParty) }
        if let party = claims.authorizedParty, party != clientID { throw .claim(.wrongAuthorizedParty) }
        guard claims.expiresAt > now - leeway else { throw .claim(.expired) }
        guard claims.issuedAt <= now + leeway else { throw .claim(.issuedInTheFuture) }
        if let nonce {
            guard let got = claims.nonce else { throw .claim(.nonceMissing) }
            guard got == nonce else { throw .claim(.nonceMismatch) }
        }
        return claims
    }

    /// Anyone can put text in a header: errors carry at most 64 printable ASCII characters of it.
    static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.filter { (0x20..<0x7f).contains($0.value) }.prefix(64)))
    }

    /// header.payload.signature, split and decoded; nothing checked but the shape.
    struct Compact {
        struct Header: Decodable {
            let alg: String
            let kid: String?
            let crit: [String]?
        }

        let header: Header
        let payload: [UInt8]
        let signature: [UInt8]
        let signingInput: [UInt8]

        init(_ token: String) throws(JOSEError) {
            let bytes = Array(token.utf8)
            guard bytes.count <= IDToken.maxBytes else { throw .malformed(.tokenTooLarge(limit: IDToken.maxBytes)) }
            let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
            guard parts.count == 3 else { throw .malformed(.notSignedJWT) }
            guard let headerBytes = Base64URL.decode(parts[0]), let payload = Base64URL.decode(parts[1]),
                  let signature = Base64URL.decode(parts[2]) else {
                throw .malformed(.notBase64URL)
            }
            header = try JSONObject.decode(Header.self, headerBytes, what: .header)
            // No extension is understood, so a critical one must be refused (RFC 7515 4.1.11).
            guard header.crit == nil else { throw .malformed(.criticalExtensions) }
            self.payload = payload
            self.signature = signature
            signingInput = Array(bytes[..<(parts[1].endIndex)])
        }
    }
}

/// The claims both ID tokens and userinfo answers carry, as JSON.
struct ClaimSet: Decodable {
    let iss: String?
    let sub: String?
    let aud: Audience?
    let exp: NumericDate?
    let iat: NumericDate?
    let auth_time: NumericDate?
    let nonce: String?
    let azp: String?
    let preferred_username: String?
    let email: String?
    let email_verified: Flag?
    let name: String?
    let groups: LenientStrings?
    let roles: LenientStrings?

    static func parse(_ bytes: [UInt8], what: JOSEError.Part) throws(JOSEError) -> ClaimSet {
        try JSONObject.decode(ClaimSet.self, bytes, what: what)
    }

    /// The claims as `IDTokenClaims`; an ID token must carry iss, aud, exp and iat, and both
    /// kinds a non-empty sub.
    func identity(requireTimes: Bool) throws(JOSEError) -> IDTokenClaims {
        guard let sub, !sub.isEmpty else { throw .claim(.missing(.sub)) }
        if requireTimes {
            guard iss != nil else { throw .claim(.missing(.iss)) }
            guard aud != nil else { throw .claim(.missing(.aud)) }
            guard exp != nil else { throw .claim(.missing(.exp)) }
            guard iat != nil else { throw .claim(.missing(.iat)) }
        }
        return IDTokenClaims(issuer: iss ?? "", subject: sub, audience: aud?.values ?? [],
                             expiresAt: exp?.value ?? 0, issuedAt: iat?.value ?? 0, nonce: nonce, authorizedParty: azp,
                             preferredUsername: preferred_username, email: email, emailVerified: email_verified?.value,
                             name: name, groups: groups?.values ?? nil, roles: roles?.values ?? nil, authTime: auth_time?.value)
    }

    /// "aud": a string or an array of strings (RFC 7519 4.1.3).
    struct Audience: TolerantClaim {
        let values: [String]
        init(_ one: String) { values = [one] }
        init?(fallback: [String]) { values = fallback }
    }

    /// NumericDate (RFC 7519 2): seconds since the epoch, possibly with a fraction, which is
    /// dropped. Values beyond ±2^53 are refused rather than rounded.
    struct NumericDate: TolerantClaim {
        let value: Int64
        init(_ whole: Int64) { value = whole }
        init?(fallback number: Double) {
            guard number.isFinite, abs(number) < 9_007_199_254_740_992 else { return nil }
            value = Int64(number.rounded(.down))
        }
    }

    /// A boolean, or "true"/"false" as a string (as some providers send email_verified).
    struct Flag: TolerantClaim {
        let value: Bool
        init(_ flag: Bool) { value = flag }
        init?(fallback text: String) {
            switch text {
            case "true": value = true
            case "false": value = false
            default: return nil
            }
        }
    }
}

/// A claim that is one JSON type or, as some providers send it, another: converted by
/// `init?(fallback:)`, or refused.
/// A claim that is a string or an array of strings, read leniently: any other shape (a
/// provider's structured groups) is as if the claim were absent, never a refused identity.
struct LenientStrings: Decodable {
    let values: [String]?
    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let one = try? container.decode(String.self) {
            values = [one]
        } else {
            values = try? container.decode([String].self)
        }
    }
}

protocol TolerantClaim: Decodable {
    associatedtype Preferred: Decodable
    associatedtype Fallback: Decodable
    init(_ value: Preferred)
    init?(fallback: Fallback)
}

extension TolerantClaim {
    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Preferred.self) {
            self.init(value)
        } else if let converted = Self(fallback: try container.decode(Fallback.self)) {
            self = converted
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a valid \(Self.self)")
        }
    }
}

/// Userinfo answers (OIDC Core 5.3): the same identity claims, parsed strictly (sub required,
/// bounded size).
public enum UserInfo {
    public static let maxBytes = 64 * 1024

    /// issuer "", audience [], times 0 where absent.
    public static func parse(_ body: [UInt8]) throws(JOSEError) -> IDTokenClaims {
        guard body.count <= maxBytes else { throw .malformed(.userinfoTooLarge(limit: maxBytes)) }
        return try ClaimSet.parse(body, what: .userinfo).identity(requireTimes: false)
    }
}
