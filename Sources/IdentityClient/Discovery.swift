import CurlKit
import FingersealCore
import FoundationEssentials

/// The parts of an OIDC discovery document fingerseal uses.
public struct ProviderMetadata: Codable, Equatable, Sendable {
    public let issuer: String
    public let tokenEndpoint: String
    public let authorizationEndpoint: String?
    public let deviceAuthorizationEndpoint: String?
    public let revocationEndpoint: String?
    /// The provider's signing keys (JWKS), for verifying ID tokens.
    public let jwksURI: String?
    public let userinfoEndpoint: String?
    /// The JWS algorithms the provider takes in DPoP proofs (RFC 9449 §5.1): listed, it binds
    /// tokens to a key.
    public let dpopAlgorithms: [String]?

    public init(issuer: String, tokenEndpoint: String, authorizationEndpoint: String? = nil,
                deviceAuthorizationEndpoint: String? = nil, revocationEndpoint: String? = nil,
                jwksURI: String? = nil, userinfoEndpoint: String? = nil, dpopAlgorithms: [String]? = nil) {
        self.issuer = issuer
        self.tokenEndpoint = tokenEndpoint
        self.authorizationEndpoint = authorizationEndpoint
        self.deviceAuthorizationEndpoint = deviceAuthorizationEndpoint
        self.revocationEndpoint = revocationEndpoint
        self.jwksURI = jwksURI
        self.userinfoEndpoint = userinfoEndpoint
        self.dpopAlgorithms = dpopAlgorithms
    }

    /// The provider takes proofs fingerseal can make (ES256).
    public var supportsDPoP: Bool { dpopAlgorithms?.contains("ES256") ?? false }

    enum CodingKeys: String, CodingKey {
        case issuer
        case tokenEndpoint = "token_endpoint"
        case authorizationEndpoint = "authorization_endpoint"
        case deviceAuthorizationEndpoint = "device_authorization_endpoint"
        case revocationEndpoint = "revocation_endpoint"
        case jwksURI = "jwks_uri"
        case userinfoEndpoint = "userinfo_endpoint"
        case dpopAlgorithms = "dpop_signing_alg_values_supported"
    }
}

public enum Discovery {
    /// Fetches `<issuer>/.well-known/openid-configuration` and validates it: the document's
    /// issuer must be the one asked for, and every URL must be https (plain http only on a
    /// loopback address).
    public static func discover(issuer: String, http: HTTPClient) throws(TokenFailure) -> ProviderMetadata {
        try requireSecure(issuer)
        let base = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        let response: HTTPResponse
        do {
            response = try http.send(.get(base + "/.well-known/openid-configuration", headers: [("Accept", "application/json")]))
        } catch {
            throw TokenRequests.failure(for: error)
        }
        guard response.status == 200 else {
            throw response.status >= 500 ? .unreachable(.answered(status: response.status, by: .discovery))
                                         : .badConfiguration(.answered(status: response.status, by: .discovery))
        }
        let metadata: ProviderMetadata
        do {
            metadata = try JSONDecoder().decode(ProviderMetadata.self, from: Data(response.body))
        } catch {
            throw .malformed(.discoveryDocument)
        }
        let normalized = metadata.issuer.hasSuffix("/") ? String(metadata.issuer.dropLast()) : metadata.issuer
        guard normalized == base else {
            throw .badConfiguration(.otherIssuer(stated: metadata.issuer, asked: issuer))
        }
        for url in [metadata.tokenEndpoint] + [metadata.authorizationEndpoint, metadata.deviceAuthorizationEndpoint,
                                                metadata.revocationEndpoint, metadata.jwksURI,
                                                metadata.userinfoEndpoint].compactMap({ $0 }) {
            try requireSecure(url)
        }
        return metadata
    }

    /// https, or http to a loopback address (RFC 8252's exception, and the local test IdP);
    /// the rule is `ProviderURL`'s, shared with the configuration file's `issuer=`.
    public static func requireSecure(_ url: String) throws(TokenFailure) {
        if url.hasPrefix("https://") { return }
        guard url.hasPrefix("http://") else { throw .badConfiguration(.notHTTPS(url)) }
        guard ProviderURL.isLoopbackHTTP(url) else {
            throw .badConfiguration(.plainHTTP(url))
        }
    }
}
