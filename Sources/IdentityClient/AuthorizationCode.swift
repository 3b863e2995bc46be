import CurlKit
import FingersealCore
import FoundationEssentials
import JOSEKit
import SodiumKit

/// Proof Key for Code Exchange (RFC 7636), S256 only: the verifier stays on this machine, in
/// secure memory (with the code it redeems a sign-in); the challenge travels in the
/// authorization URL.
public struct PKCE: Equatable {
    public let verifier: SecureBytes
    public let challenge: String

    /// The challenge for a given verifier (RFC 7636 §4.2); `AuthorizationRequest()` makes
    /// random ones.
    public init(verifier: SecureBytes) throws {
        self.verifier = verifier
        challenge = Base64URL.encode(try SHA256.hash(verifier))
    }

    /// A fresh verifier: 32 random bytes as base64url (43 characters), made in secure memory.
    public static func random() throws -> PKCE {
        try PKCE(verifier: try SecureBytes.random(count: 32).base64(urlSafe: true))
    }

    public static func == (lhs: PKCE, rhs: PKCE) -> Bool {
        lhs.challenge == rhs.challenge && lhs.verifier.isEqual(to: rhs.verifier)
    }
}

/// One authorization code request (RFC 6749 §4.1) with PKCE and an OIDC nonce, for a
/// loopback redirect (RFC 8252): its random values and the URL that carries them.
public struct AuthorizationRequest: Equatable {
    public let state: String
    public let nonce: String
    public let pkce: PKCE

    /// Fresh values, each 32 random bytes from libsodium as base64url (43 characters).
    public init() throws {
        try self.init(state: Self.randomText(), nonce: Self.randomText(), pkce: PKCE.random())
    }

    public init(state: String, nonce: String, pkce: PKCE) {
        self.state = state
        self.nonce = nonce
        self.pkce = pkce
    }

    /// The address to open in a browser. The endpoint may have a query of its own (RFC 6749 §3.1).
    /// `keyThumbprint`: the key the code is to be bound to (RFC 9449 §10, `dpop_jkt`).
    public func url(endpoint: String, clientID: String, scope: String, redirectURI: String, keyThumbprint: String? = nil) -> String {
        let query = FormEncoding.encode([
            ("response_type", "code"), ("client_id", clientID), ("redirect_uri", redirectURI), ("scope", scope),
            ("state", state), ("nonce", nonce), ("code_challenge", pkce.challenge), ("code_challenge_method", "S256"),
        ] + (keyThumbprint.map { [("dpop_jkt", $0)] } ?? []))
        let separator = !endpoint.contains("?") ? "?" : endpoint.hasSuffix("?") || endpoint.hasSuffix("&") ? "" : "&"
        return endpoint + separator + query
    }

    static func randomText() throws -> String {
        var bytes = try Sodium.randomBytes(32)
        defer { Sodium.wipe(&bytes) }
        return Base64URL.encode(bytes)
    }
}

/// What the browser brought back to the redirect URI (RFC 6749 §4.1.2), once its `state`
/// has been checked.
public enum AuthorizationResponse: Equatable {
    /// The authorization code, in secure memory.
    case code(SecureBytes)
    /// `access_denied`: the person, or the provider's policy, said no.
    case refused
    /// Another error code, reduced to printable ASCII and capped: anyone can put text in a URL.
    case failed(String)
    /// Neither a code nor an error.
    case malformed

    /// `parameters`: the query without the code; `code`: the `code` parameter.
    public init(_ parameters: [String: String], code: SecureBytes?) {
        if let error = parameters["error"] {
            self = error == "access_denied" ? .refused : .failed(Self.printable(error))
        } else if let code, code.count > 0 {
            self = .code(code)
        } else {
            self = .malformed
        }
    }

    public static func == (lhs: AuthorizationResponse, rhs: AuthorizationResponse) -> Bool {
        switch (lhs, rhs) {
        case let (.code(left), .code(right)): left.isEqual(to: right)
        case (.refused, .refused), (.malformed, .malformed): true
        case let (.failed(left), .failed(right)): left == right
        default: false
        }
    }

    /// RFC 6749's characters for an error code (printable ASCII but `"` and `\`), at most 64.
    static func printable(_ text: String) -> String {
        let kept = text.unicodeScalars.filter { (0x20..<0x7f).contains($0.value) && $0 != "\"" && $0 != "\\" }.prefix(64)
        return kept.isEmpty ? "unknown" : String(String.UnicodeScalarView(kept))
    }

    /// An error the provider may not give next time (RFC 6749 §4.1.2.1); the others mean the
    /// client or its configuration is wrong.
    public var isTransient: Bool {
        self == .failed("server_error") || self == .failed("temporarily_unavailable")
    }
}

extension OAuthClient {
    /// The provider's authorization endpoint with `request`, sending the browser back to
    /// `redirectURI`.
    public func authorizationURL(_ request: AuthorizationRequest, scope: String,
                                 redirectURI: String) throws(TokenFailure) -> String {
        guard let endpoint = metadata.authorizationEndpoint else {
            throw .badConfiguration(.noAuthorizationEndpoint)
        }
        guard !endpoint.contains("#") else { throw .badConfiguration(.authorizationEndpointHasFragment) }
        return request.url(endpoint: endpoint, clientID: clientID, scope: scope, redirectURI: redirectURI,
                           keyThumbprint: binding?.key.thumbprint)
    }

    /// Redeems an authorization code (RFC 6749 §4.1.3) with its PKCE verifier.
    public func exchangeCode(_ code: SecureBytes, redirectURI: String, verifier: SecureBytes) throws(TokenFailure) -> TokenSet {
        var form = SecureForm()
        form.add("grant_type", "authorization_code")
        form.add("code", secret: code)
        form.add("redirect_uri", redirectURI)
        form.add("code_verifier", secret: verifier)
        return try tokenRequest(.codeExchange, form)
    }
}
