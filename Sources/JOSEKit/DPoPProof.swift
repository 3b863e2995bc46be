import FoundationEssentials
import SodiumKit

/// A DPoP proof (RFC 9449 §4): a JWS, typ dpop+jwt, ES256, the signer's public JWK in its
/// header; the request's method and URI, a unique jti, the time, and when they apply the
/// server's nonce and the access token's hash (`ath`, for a resource request).
public enum DPoPProof {
    struct Header: Encodable {
        struct Key: Encodable {
            let crv = "P-256", kty = "EC"
            let x: String, y: String
        }
        let typ = "dpop+jwt", alg = "ES256"
        let jwk: Key
    }

    struct Claims: Encodable {
        let jti: String
        let htm: String
        let htu: String
        let iat: Int64
        let nonce: String?
        let ath: String?
    }

    /// The proof for `method` on `url` (normalized: `htu`), signed by `signer`. `jti`: 16
    /// random bytes or more, the caller's (from libsodium).
    public static func make(signer: some ProofSigner, method: String, url: String, now: Int64, jti: [UInt8],
                            nonce: String? = nil, accessToken: UnsafeRawBufferPointer? = nil) throws(ProofKeyError) -> String {
        guard let htu = targetURI(url) else { throw .failed("the request's URI") }
        var ath: String? = nil
        if let accessToken {
            // Hashed where it lies (secure memory): the token is never copied.
            guard let digest = try? SHA256.hash(accessToken) else { throw .failed("the token's hash") }
            ath = Base64URL.encode(digest)
        }
        let header = Header(jwk: .init(x: Base64URL.encode(signer.publicX), y: Base64URL.encode(signer.publicY)))
        let claims = Claims(jti: Base64URL.encode(jti), htm: method, htu: htu, iat: now, nonce: nonce, ath: ath)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let signingInput: String
        do {
            signingInput = Base64URL.encode(try encoder.encode(header)) + "." + Base64URL.encode(try encoder.encode(claims))
        } catch {
            throw .failed("the proof's JSON")
        }
        return signingInput + "." + Base64URL.encode(try signer.sign(Array(signingInput.utf8)))
    }

    /// `htu` (RFC 9449 §4.2): the URI without query and fragment, its scheme and host in lower
    /// case, the scheme's default port left out. Nil for what is not an http(s) URL.
    public static func targetURI(_ url: String) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
              scheme == "https" || scheme == "http", let host = components.percentEncodedHost?.lowercased(), !host.isEmpty,
              components.user == nil, components.password == nil else { return nil }
        var target = scheme + "://" + host
        if let port = components.port, port != (scheme == "https" ? 443 : 80) { target += ":" + String(port) }
        target += components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        return target
    }
}
