import CurlKit
import FingersealCore
import FoundationEssentials
import JOSEKit
import SodiumKit

/// Who signed in, as the provider states it: its ID token, verified against its published
/// keys, or else its userinfo answer.
public enum IdentityVerification {
    /// The ID token's claims when the answer has one and the provider publishes a jwks_uri
    /// (verified: any failure throws `.identityRejected` with JOSEKit's reason, never ignored);
    /// else the userinfo answer when the provider has an endpoint; else nil: nothing to check with.
    public static func verifiedIdentity(tokens: TokenSet, metadata: ProviderMetadata, clientID: String, nonce: String?,
                                        http: HTTPClient, cache: JWKSCache, now: Int64,
                                        binding: DPoPBinding? = nil) throws(TokenFailure) -> IDTokenClaims? {
        if let idToken = tokens.idToken, let jwksURI = metadata.jwksURI {
            let keyID: String?
            do {
                keyID = try IDToken.header(idToken).keyID
            } catch {
                throw .identityRejected(.idToken(error))
            }
            let keys = try cache.keys(for: jwksURI, keyID: keyID, http: http)
            do {
                return try IDToken.verify(idToken, keys: keys, issuer: metadata.issuer, clientID: clientID, nonce: nonce, now: now)
            } catch {
                throw .identityRejected(.idToken(error))
            }
        }
        if metadata.userinfoEndpoint != nil {
            var client = OAuthClient(metadata: metadata, clientID: clientID, http: http)
            // A bound access token is good only with a proof by its key (RFC 9449 §7).
            client.binding = tokens.boundToKey ? binding : nil
            return try client.userInfo(accessToken: tokens.accessToken)
        }
        return nil
    }

    /// The same for a sealed sign-in's provider (its endpoints as the vault keeps them).
    public static func verifiedIdentity(tokens: TokenSet, provider: ProviderRecord, nonce: String?,
                                        http: HTTPClient, cache: JWKSCache, now: Int64,
                                        binding: DPoPBinding? = nil) throws(TokenFailure) -> IDTokenClaims? {
        for url in [provider.jwksURI, provider.userinfoEndpoint].compactMap({ $0 }) { try Discovery.requireSecure(url) }
        let metadata = ProviderMetadata(issuer: provider.issuer, tokenEndpoint: provider.tokenEndpoint ?? "",
                                        jwksURI: provider.jwksURI, userinfoEndpoint: provider.userinfoEndpoint)
        return try verifiedIdentity(tokens: tokens, metadata: metadata, clientID: provider.clientID, nonce: nonce,
                                    http: http, cache: cache, now: now, binding: binding)
    }
}

extension OAuthClient {
    /// The userinfo endpoint's answer for this access token (OIDC Core 5.3): a GET with the
    /// token as a Bearer credential, JSON only. A signed or encrypted (JWT) answer is refused.
    /// With a binding, the token goes as a DPoP credential with a proof carrying its hash, and a
    /// nonce the server asks for is taken up once.
    public func userInfo(accessToken: SecureBytes) throws(TokenFailure) -> IDTokenClaims {
        guard let endpoint = metadata.userinfoEndpoint else {
            throw .badConfiguration(.noUserinfoEndpoint)
        }
        try Discovery.requireSecure(endpoint)
        func send() throws(TokenFailure) -> SecureResponse {
            do {
                // The token as a header line built in secure memory: never a String.
                let credential = try SecureRequest.header("Authorization", binding == nil ? "Bearer " : "DPoP ", accessToken)
                var headers = [("Accept", "application/json")]
                if let binding {
                    headers.append(("DPoP", try accessToken.withUnsafeBytes { token throws(TokenFailure) in
                        try binding.proof(method: "GET", url: endpoint, accessToken: token)
                    }))
                }
                return try http.send(SecureRequest(url: endpoint, headers: headers, secretHeaders: [credential]))
            } catch let failure as TokenFailure {
                throw failure
            } catch {
                throw TokenRequests.failure(for: error)
            }
        }
        let response = try DPoPBinding.sending(binding, send) { answer in
            answer.status == 401 && answer.headers["www-authenticate"]?.contains("use_dpop_nonce") == true
        }
        guard response.status == 200 else {
            throw response.body.withUnsafeBytes {
                TokenRequests.failure(.userInfo, status: response.status, body: $0, authenticated: false)
            }
        }
        if let type = response.headers["content-type"]?.lowercased(), type.hasPrefix("application/jwt") {
            throw .identityRejected(.signedUserinfo)
        }
        do {
            // Who signed in, not a credential: read as ordinary memory by JOSEKit.
            return try UserInfo.parse(response.body.copyBytes())
        } catch let .claim(why) {
            throw .identityRejected(.userinfo(why))
        } catch {
            throw .malformed(.userinfo(error))
        }
    }
}
