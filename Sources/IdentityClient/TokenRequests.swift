import CurlKit
import FingersealCore
import FoundationEssentials
import JOSEKit
import SodiumKit

/// A device authorization (RFC 8628) in progress.
public struct DeviceAuthorization {
    /// What each poll sends: in secure memory, like every credential of a sign-in.
    public let deviceCode: SecureBytes
    public let userCode: String
    public let verificationURI: String
    public let verificationURIComplete: String?
    /// Seconds between polls.
    public var interval: Int
    public let expiresIn: Int
}

/// OAuth 2.0 token endpoint requests for one client, over libcurl (TLS always verified).
///
/// Every secret (the refresh token, the password, the client secret, the PKCE verifier, the
/// authorization and device codes, and the tokens that come back) stays in secure memory on
/// our side: request bodies and the Authorization header are built in `SecureBytes`, libcurl
/// reads the body in place, and answers are received into `SecureBytes` and read in place
/// (`JSONMembers`). What libcurl and OpenSSL copy on their side is listed in README.md.
public struct OAuthClient: TokenClient {
    public let metadata: ProviderMetadata
    public let clientID: String
    /// A confidential client's secret (client_secret_basic).
    public let clientSecret: SecureBytes?
    public let http: HTTPClient
    /// The key every token request proves possession of (RFC 9449); nil: bearer tokens.
    public var binding: DPoPBinding? = nil

    /// Responses larger than this are refused (no token response comes near it).
    public static let maxResponse = 64 * 1024

    public init(metadata: ProviderMetadata, clientID: String, clientSecret: SecureBytes? = nil, http: HTTPClient) {
        self.metadata = metadata
        self.clientID = clientID
        self.clientSecret = clientSecret
        var capped = http
        capped.configuration.maxResponseBytes = min(http.configuration.maxResponseBytes, OAuthClient.maxResponse)
        self.http = capped
    }

    /// The client a sealed sign-in names, with the endpoints validated at sign-in (checked
    /// again here: the vault's MAC covers them, but a vault from an older version may lack them).
    public init(provider: ProviderRecord, clientSecret: SecureBytes?, http: HTTPClient) throws(TokenFailure) {
        guard let tokenEndpoint = provider.tokenEndpoint else {
            throw .badConfiguration(.noTokenEndpoint)
        }
        try Discovery.requireSecure(tokenEndpoint)
        for url in [provider.revocationEndpoint, provider.jwksURI, provider.userinfoEndpoint].compactMap({ $0 }) {
            try Discovery.requireSecure(url)
        }
        self.init(metadata: ProviderMetadata(issuer: provider.issuer, tokenEndpoint: tokenEndpoint,
                                             revocationEndpoint: provider.revocationEndpoint, jwksURI: provider.jwksURI,
                                             userinfoEndpoint: provider.userinfoEndpoint),
                  clientID: provider.clientID, clientSecret: clientSecret, http: http)
    }

    /// What the vault keeps of this client.
    public var providerRecord: ProviderRecord { providerRecord(proofKey: nil) }

    /// What the vault keeps of this client, for a sign-in whose tokens are bound to a key.
    public func providerRecord(proofKey: ProofKeyHolder?) -> ProviderRecord {
        ProviderRecord(issuer: metadata.issuer, clientID: clientID, tokenEndpoint: metadata.tokenEndpoint,
                       revocationEndpoint: metadata.revocationEndpoint, confidential: clientSecret != nil,
                       jwksURI: metadata.jwksURI, userinfoEndpoint: metadata.userinfoEndpoint, proofKey: proofKey)
    }

    public func refresh(_ refreshToken: SecureBytes) throws(TokenFailure) -> TokenSet {
        var form = SecureForm()
        form.add("grant_type", "refresh_token")
        form.add("refresh_token", secret: refreshToken)
        return try tokenRequest(.refresh, form)
    }

    public func passwordGrant(username: String, password: SecureBytes, scope: String) throws(TokenFailure) -> TokenSet {
        var form = SecureForm()
        form.add("grant_type", "password")
        form.add("username", username)
        form.add("password", secret: password)
        form.add("scope", scope)
        return try tokenRequest(.passwordGrant, form)
    }

    /// RFC 8628 §3.1. `parameters`: more of the request (OIDC's `max_age` and `prompt`, a
    /// provider's own), each sent once, after the scope.
    public func startDeviceAuthorization(scope: String, parameters: [(name: String, value: String)] = []) throws(TokenFailure)
        -> DeviceAuthorization {
        guard let endpoint = metadata.deviceAuthorizationEndpoint else {
            throw .badConfiguration(.noDeviceAuthorization)
        }
        // post() adds client_id (public client) or the credentials: each parameter once.
        var form = SecureForm()
        form.add("scope", scope)
        for (name, value) in parameters { form.add(name, value) }
        let body = try post(.deviceAuthorization, endpoint, form)
        let malformed = TokenFailure.malformed(.deviceAuthorizationAnswer)
        let authorization = try JSONMembers.reading(body, malformed: malformed) { answer throws(TokenFailure) -> DeviceAuthorization in
            let deviceCode: SecureBytes?, userCode: String?, uri: String?, url: String?, complete: String?
            let expiresIn: Int?, interval: Int?
            do throws(JSONMembers.Malformed) {
                deviceCode = try answer.secret("device_code")
                userCode = try answer.string("user_code")
                uri = try answer.string("verification_uri")
                url = try answer.string("verification_url") // Google's name for it
                complete = try answer.string("verification_uri_complete")
                expiresIn = try answer.integer("expires_in")
                interval = try answer.integer("interval")
            } catch {
                throw malformed
            }
            guard let deviceCode, deviceCode.count > 0, let userCode, let verificationURI = uri ?? url, let expiresIn,
                  userCode.utf8.count <= 64, userCode.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else { throw malformed }
            // Bounded, whatever the provider says: poll at 1 to 60 s, for at most an hour.
            return DeviceAuthorization(deviceCode: deviceCode, userCode: userCode, verificationURI: verificationURI,
                                       verificationURIComplete: complete, interval: min(max(interval ?? 5, 1), 60),
                                       expiresIn: min(max(expiresIn, 1), 3600))
        }
        try Discovery.requireSecure(authorization.verificationURI)
        if let complete = authorization.verificationURIComplete { try Discovery.requireSecure(complete) }
        return authorization
    }

    /// One poll; throws `.authorizationPending` or `.slowDown` while the user has not acted.
    public func pollDevice(_ authorization: DeviceAuthorization) throws(TokenFailure) -> TokenSet {
        var form = SecureForm()
        form.add("grant_type", "urn:ietf:params:oauth:grant-type:device_code")
        form.add("device_code", secret: authorization.deviceCode)
        return try tokenRequest(.devicePoll, form)
    }

    /// RFC 7009. Returns false when the provider offers no revocation endpoint.
    @discardableResult
    public func revoke(_ token: SecureBytes, hint: String = "refresh_token") throws(TokenFailure) -> Bool {
        guard let endpoint = metadata.revocationEndpoint else { return false }
        var form = SecureForm()
        form.add("token", secret: token)
        form.add("token_type_hint", hint)
        _ = try post(.revocation, endpoint, form)
        return true
    }

    func tokenRequest(_ kind: TokenRequests.OAuthRequest, _ form: SecureForm) throws(TokenFailure) -> TokenSet {
        try TokenRequests.parseTokens(try post(kind, metadata.tokenEndpoint, form), proved: binding != nil)
    }

    /// The request `post` sends: `form` plus the client's authentication (the only place that
    /// adds it: `client_id` for a public client, HTTP Basic for a confidential one).
    func request(_ kind: TokenRequests.OAuthRequest, _ url: String, _ fields: SecureForm,
                 proof: String? = nil) throws(TokenFailure) -> SecureRequest {
        var form = fields
        var secretHeaders: [SecureBytes] = []
        if let clientSecret { secretHeaders.append(try TokenRequests.basicAuthorization(clientID, clientSecret)) }
        // A public client names itself. So does a confidential one asking for a device code:
        // RFC 8628 §3.1 shows client_id there, and oauthlib requires it beside HTTP Basic.
        if clientSecret == nil || kind == .deviceAuthorization { form.add("client_id", clientID) }
        do {
            let headers = [("Accept", "application/json")] + (proof.map { [("DPoP", $0)] } ?? [])
            return try .postForm(url, form: form, headers: headers, secretHeaders: secretHeaders)
        } catch {
            throw TokenRequests.failure(for: error)
        }
    }

    /// POSTs a form with the client's authentication; returns the body of a success (secure
    /// memory), or throws what `TokenRequests.failure` makes of the answer.
    ///
    /// With a binding, a request to the token endpoint carries a proof (RFC 9449 §5), and one
    /// the server refuses for want of its nonce (`use_dpop_nonce`, §8) is sent once more with
    /// the nonce it gave.
    func post(_ kind: TokenRequests.OAuthRequest, _ url: String, _ fields: SecureForm) throws(TokenFailure) -> SecureBytes {
        let binding = kind.provesPossession ? binding : nil
        func send() throws(TokenFailure) -> SecureResponse {
            let request = try request(kind, url, fields, proof: try binding?.proof(method: "POST", url: url))
            do {
                return try http.send(request)
            } catch {
                throw TokenRequests.failure(for: error)
            }
        }
        let response = try DPoPBinding.sending(binding, send) { answer in
            answer.status != 200 && answer.body.withUnsafeBytes { TokenRequests.errorCode($0) } == "use_dpop_nonce"
        }
        if response.status == 200 || (kind == .revocation && (200..<300).contains(response.status)) { return response.body }
        throw response.body.withUnsafeBytes {
            TokenRequests.failure(kind, status: response.status, body: $0, authenticated: clientSecret != nil)
        }
    }
}

enum TokenRequests {
    /// "Authorization: Basic ..." for client_secret_basic (RFC 6749 §2.3.1: both parts
    /// form-encoded first), built in secure memory.
    static func basicAuthorization(_ clientID: String, _ secret: SecureBytes) throws(TokenFailure) -> SecureBytes {
        do {
            let pair = try SecureBytes(capacity: FormEncoding.encodedLength(clientID.utf8) + 1
                                           + secret.withUnsafeBytes { FormEncoding.encodedLength($0) })
            FormEncoding.percentEncode(clientID.utf8, into: pair)
            pair.append(UInt8(ascii: ":"))
            _ = secret.withUnsafeBytes { FormEncoding.percentEncode($0, into: pair) }
            return try SecureRequest.header("Authorization", "Basic ", try pair.base64(urlSafe: false))
        } catch {
            throw .badConfiguration(.noSecureMemoryForCredentials)
        }
    }

    static func failure(for error: Error) -> TokenFailure {
        switch error as? HTTPError {
        case .responseTooLarge?: return .malformed(.answerTooLarge(limit: OAuthClient.maxResponse))
        case let .tls(detail)?: return .unreachable(.tls(detail))
        case .timedOut?: return .unreachable(.timedOut)
        case .couldNotConnect?: return .unreachable(.couldNotConnect)
        case let .invalidRequest(detail)?: return .badConfiguration(.invalidRequest(detail))
        case let .other(_, message)?: return .unreachable(.transport(message))
        case nil: return .unreachable(.transport("\(error)"))
        }
    }

    /// The requests fingerseal makes; an error answer means something different for each.
    enum OAuthRequest: Equatable, Sendable, CaseIterable {
        case refresh, passwordGrant, deviceAuthorization, devicePoll, codeExchange, revocation
        /// OIDC userinfo with a fresh access token: a refusal is the provider's, not the chain's.
        case userInfo

        /// Requests to the token endpoint: each carries a proof when the sign-in is bound.
        var provesPossession: Bool { [.refresh, .passwordGrant, .devicePoll, .codeExchange].contains(self) }
    }

    static func failure(_ kind: OAuthRequest, status: Int, body: [UInt8], authenticated: Bool) -> TokenFailure {
        body.withUnsafeBytes { failure(kind, status: status, body: $0, authenticated: authenticated) }
    }

    /// What an error answer means: the one table of statuses and OAuth error codes (RFC 6749
    /// §5.2, RFC 8628 §3.5, RFC 7009 §2.2.1) for every request, written for providers that
    /// follow the standards and for those that bend them (an empty body, 401 or 403 where the
    /// RFC says 400, codes of their own). `authenticated`: a confidential client sent its secret.
    static func failure(_ kind: OAuthRequest, status: Int, body: UnsafeRawBufferPointer, authenticated: Bool) -> TokenFailure {
        // Overloaded, rate-limited or timed out at the provider: temporary, whatever was asked
        // (the offline policy treats it as unreachable).
        if status >= 500 || status == 429 || status == 408 { return .unreachable(.answered(status: status, by: .provider)) }
        let code = errorCode(body)
        let refusal = (400..<500).contains(status)
        // Our proof, not the grant: a refresh token refused for it is still good (RFC 9449 §7.1's
        // codes, at the token endpoint and at userinfo).
        if let code, ["invalid_dpop_proof", "use_dpop_nonce"].contains(code) { return .proofRefused(code: code) }
        switch kind {
        case .refresh where refusal:
            // Any other refusal ends the chain, body or no body: a provider that answers a
            // revoked, expired or reused refresh token with a bare 400 or 401 has ended it as
            // surely as one that says invalid_grant. Only the code (or status) is kept: no
            // text from the body.
            return .chainEnded(code ?? "HTTP \(status)")
        case .passwordGrant where [400, 401, 403].contains(status) && (code == nil || code == "invalid_grant"):
            // The user name or password, even when the provider says nothing more; a code of
            // another kind (invalid_client, unauthorized_client, invalid_scope) is the client's
            // or the configuration's, and is shown as it is.
            return .credentialsRefused(code: code)
        case .devicePoll:
            switch code {
            case "authorization_pending": return .authorizationPending
            case "slow_down": return .slowDown
            // A device code the provider no longer takes (some say invalid_grant for expired).
            case "expired_token", "invalid_grant": return .expiredToken
            case "access_denied": return .accessDenied
            default: break
            }
        case .revocation where !authenticated && [400, 401, 403].contains(status)
            && (code == nil || code == "invalid_client" || code == "unauthorized_client"):
            // Some providers revoke only for clients that authenticate; a public client's
            // sign-in then ends when its token expires.
            return .clientAuthenticationRequired(status: status)
        default:
            break
        }
        switch code {
        case "invalid_grant": return .chainEnded("invalid_grant")
        case "access_denied": return .accessDenied
        default: return .rejected(status: status, code: code)
        }
    }

    /// The `error` of an error body: JSON (RFC 6749 5.2), or a form-encoded body as some
    /// providers send. Codes are short printable ASCII; anything else counts as no code. Read
    /// in place, like a token answer: only the code becomes a String.
    static func errorCode(_ body: UnsafeRawBufferPointer) -> String? {
        var code = (try? JSONMembers(body)).flatMap { try? $0.string("error") }
        if code == nil, body.count <= 4096, body.first != 0x7b {
            for pair in body.split(separator: UInt8(ascii: "&")) where pair.starts(with: "error=".utf8) {
                code = String(decoding: pair.dropFirst("error=".utf8.count), as: UTF8.self)
            }
        }
        guard let code, (1...64).contains(code.utf8.count),
              code.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7e && $0 != 0x22 && $0 != 0x5c }) else { return nil }
        return code
    }

    static func parseTokens(_ body: [UInt8]) throws(TokenFailure) -> TokenSet {
        let copy: SecureBytes
        do { copy = try SecureBytes(copying: body) } catch { throw .malformed(.noSecureMemoryForTokens) }
        return try parseTokens(copy)
    }

    /// A token response (RFC 6749 5.1), strictly, read in place: an access token and a Bearer
    /// token type, both tokens 1*VSCHAR, decoded straight into secure memory. Tolerated,
    /// because real providers send them: `expires_in` as a string of digits, `token_type` in
    /// any case, and unknown fields.
    ///
    /// `proved`: the request carried a proof of possession, so `token_type` may also be
    /// `DPoP` (the tokens bound to its key); `Bearer` then means the provider did not bind them.
    static func parseTokens(_ body: SecureBytes, proved: Bool = false) throws(TokenFailure) -> TokenSet {
        let notJSON = TokenFailure.malformed(.tokenAnswer)
        return try JSONMembers.reading(body, malformed: notJSON) { answer throws(TokenFailure) -> TokenSet in
            let access: SecureBytes?, refresh: SecureBytes?, tokenType: String?, lifetime: Int?, scope: String?, idToken: String?
            do throws(JSONMembers.Malformed) {
                access = try answer.secret("access_token")
                tokenType = try answer.string("token_type")
                refresh = try answer.secret("refresh_token")
                lifetime = try answer.integer("expires_in")
                scope = try answer.string("scope")
                idToken = try answer.string("id_token")
            } catch {
                throw notJSON
            }
            guard let access, let tokenType else { throw notJSON }
            let bound = proved && tokenType.lowercased() == "dpop"
            guard access.withUnsafeBytes({ AccessToken.isValidToken($0) }), tokenType.lowercased() == "bearer" || bound else {
                throw .malformed(.noBearerAccessToken)
            }
            if let refresh, !refresh.withUnsafeBytes({ AccessToken.isValidToken($0) }) {
                throw .malformed(.refreshTokenInAnswer)
            }
            if let idToken, !isCompactJWS(idToken) {
                throw .malformed(.idTokenInAnswer)
            }
            if let lifetime, lifetime < 0 { throw .malformed(.negativeLifetime) }
            return TokenSet(accessToken: access, refreshToken: refresh, expiresIn: lifetime, scope: scope, idToken: idToken,
                            boundToKey: bound)
        }
    }

    /// An ID token's outer shape: base64url parts joined by dots, within `IDToken.maxBytes`
    /// (what is inside is for `IDToken.verify`).
    static func isCompactJWS(_ token: String) -> Bool {
        (1...IDToken.maxBytes).contains(token.utf8.count) && token.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."): true
            default: false
            }
        }
    }
}

extension HTTPClient {
    /// A client for the identity provider, with the timeouts in `options`.
    public init(options: Options) {
        self.init(configuration: .init(connectTimeout: Double(options.connectTimeout), timeout: Double(options.idpTimeout)))
    }
}

extension OAuthClient {
    /// The client for a sealed sign-in, with the timeouts in `options`.
    public init(provider: ProviderRecord, clientSecret: SecureBytes?, options: Options) throws(TokenFailure) {
        try self.init(provider: provider, clientSecret: clientSecret, http: HTTPClient(options: options))
    }

    /// Makes clients for `TokenChain.refresh`: a bound sign-in's proves possession of its key
    /// (held by the TPM `tpm` names, or sealed in the vault).
    public static func factory(_ options: Options, tpm: TPMPolicy) -> TokenChain.ClientFactory {
        { provider, secret, proofKey throws(TokenFailure) in
            var client = try OAuthClient(provider: provider, clientSecret: secret, options: options)
            if let proofKey {
                guard let material = try? ProofKeyMaterial.decode(proofKey), let key = try? ProofSigners.signer(material, tpm: tpm) else {
                    throw .badConfiguration(.proofUnavailable)
                }
                client.binding = DPoPBinding(key: key)
            }
            return client
        }
    }
}
