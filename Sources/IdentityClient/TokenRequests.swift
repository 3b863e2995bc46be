import CurlKit
import FingersealCore
import FoundationEssentials
import JOSEKit
import SodiumKit
import Localization

/// A device authorization (RFC 8628) in progress.
public struct DeviceAuthorization: Sendable, Equatable {
    public let deviceCode: String
    public let userCode: String
    public let verificationURI: String
    public let verificationURIComplete: String?
    /// Seconds between polls.
    public var interval: Int
    public let expiresIn: Int
}

/// OAuth 2.0 token endpoint requests for one client, over libcurl (TLS always verified).
public struct OAuthClient: TokenClient, Sendable {
    public let metadata: ProviderMetadata
    public let clientID: String
    public let clientSecret: String?
    public let http: HTTPClient

    /// Responses larger than this are refused (no token response comes near it).
    public static let maxResponse = 64 * 1024

    public init(metadata: ProviderMetadata, clientID: String, clientSecret: String? = nil, http: HTTPClient) {
        self.metadata = metadata
        self.clientID = clientID
        self.clientSecret = clientSecret
        var capped = http
        capped.configuration.maxResponseBytes = min(http.configuration.maxResponseBytes, OAuthClient.maxResponse)
        self.http = capped
    }

    /// The client a sealed sign-in names, with the endpoints validated at sign-in (checked
    /// again here: the vault's MAC covers them, but a vault from an older version may lack them).
    public init(provider: ProviderRecord, clientSecret: String?, http: HTTPClient) throws(TokenFailure) {
        guard let tokenEndpoint = provider.tokenEndpoint else {
            throw .badConfiguration(tr("the sign-in has no token endpoint; sign in again"))
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
    public var providerRecord: ProviderRecord {
        ProviderRecord(issuer: metadata.issuer, clientID: clientID, tokenEndpoint: metadata.tokenEndpoint,
                       revocationEndpoint: metadata.revocationEndpoint, confidential: clientSecret != nil,
                       jwksURI: metadata.jwksURI, userinfoEndpoint: metadata.userinfoEndpoint)
    }

    public func refresh(_ refreshToken: SecureBytes) throws(TokenFailure) -> TokenSet {
        try tokenRequest(.refresh, [("grant_type", "refresh_token"), ("refresh_token", TokenRequests.text(refreshToken))])
    }

    public func passwordGrant(username: String, password: SecureBytes, scope: String) throws(TokenFailure) -> TokenSet {
        try tokenRequest(.passwordGrant, [("grant_type", "password"), ("username", username), ("password", TokenRequests.text(password)),
                          ("scope", scope)])
    }

    public func startDeviceAuthorization(scope: String) throws(TokenFailure) -> DeviceAuthorization {
        guard let endpoint = metadata.deviceAuthorizationEndpoint else {
            throw .badConfiguration(tr("the provider offers no device authorization"))
        }
        // post() adds client_id (public client) or the credentials: each parameter once.
        let body = try post(.deviceAuthorization, endpoint, [("scope", scope)])
        struct Answer: Decodable {
            let device_code: String
            let user_code: String
            let verification_uri: String?
            let verification_uri_complete: String?
            let verification_url: String? // Google's name for it
            let interval: FlexibleInteger?
            let expires_in: FlexibleInteger
        }
        guard let answer = try? JSONDecoder().decode(Answer.self, from: Data(body)), !answer.device_code.isEmpty,
              let uri = answer.verification_uri ?? answer.verification_url,
              answer.user_code.utf8.count <= 64, answer.user_code.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
            throw .malformed(tr("the device authorization answer is not valid"))
        }
        try Discovery.requireSecure(uri)
        if let complete = answer.verification_uri_complete { try Discovery.requireSecure(complete) }
        // Bounded, whatever the provider says: poll at 1 to 60 s, for at most an hour.
        return DeviceAuthorization(deviceCode: answer.device_code, userCode: answer.user_code,
                                   verificationURI: uri, verificationURIComplete: answer.verification_uri_complete,
                                   interval: min(max(answer.interval?.value ?? 5, 1), 60),
                                   expiresIn: min(max(answer.expires_in.value, 1), 3600))
    }

    /// One poll; throws `.authorizationPending` or `.slowDown` while the user has not acted.
    public func pollDevice(_ authorization: DeviceAuthorization) throws(TokenFailure) -> TokenSet {
        try tokenRequest(.devicePoll, [("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
                          ("device_code", authorization.deviceCode)])
    }

    /// RFC 7009. Returns false when the provider offers no revocation endpoint.
    @discardableResult
    public func revoke(_ token: SecureBytes, hint: String = "refresh_token") throws(TokenFailure) -> Bool {
        guard let endpoint = metadata.revocationEndpoint else { return false }
        _ = try post(.revocation, endpoint, [("token", TokenRequests.text(token)), ("token_type_hint", hint)])
        return true
    }

    func tokenRequest(_ kind: TokenRequests.Kind, _ fields: [(name: String, value: String)]) throws(TokenFailure) -> TokenSet {
        try TokenRequests.parseTokens(try post(kind, metadata.tokenEndpoint, fields))
    }

    /// POSTs a form, adding the client's authentication (the only place that does: `client_id`
    /// for a public client, HTTP Basic for a confidential one); returns the body of a success,
    /// or throws what `TokenRequests.failure` makes of the answer.
    func post(_ kind: TokenRequests.Kind, _ url: String, _ fields: [(name: String, value: String)]) throws(TokenFailure) -> [UInt8] {
        var form = fields
        var headers: [(name: String, value: String)] = [("Accept", "application/json")]
        if let clientSecret {
            // client_secret_basic (RFC 6749 2.3.1): both parts form-encoded first.
            let pair = FormEncoding.percentEncode(clientID) + ":" + FormEncoding.percentEncode(clientSecret)
            headers.append(("Authorization", "Basic " + Data(pair.utf8).base64EncodedString()))
        }
        // A public client names itself. So does a confidential one asking for a device code:
        // RFC 8628 §3.1 shows client_id there, and oauthlib requires it beside HTTP Basic.
        if clientSecret == nil || kind == .deviceAuthorization { form.append(("client_id", clientID)) }
        let response: HTTPResponse
        do {
            response = try http.send(.postForm(url, fields: form, headers: headers))
        } catch {
            throw TokenRequests.failure(for: error)
        }
        if response.status == 200 || (kind == .revocation && (200..<300).contains(response.status)) { return response.body }
        throw TokenRequests.failure(kind, status: response.status, body: response.body, authenticated: clientSecret != nil)
    }
}

enum TokenRequests {
    static func text(_ secret: SecureBytes) -> String {
        secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    static func failure(for error: Error) -> TokenFailure {
        switch error as? HTTPError {
        case .responseTooLarge?: return .malformed(tr("the answer is larger than %1$s bytes", OAuthClient.maxResponse))
        case let .tls(detail)?: return .unreachable(tr("TLS: %1$s", detail))
        case .timedOut?: return .unreachable(tr("timed out"))
        case .couldNotConnect?: return .unreachable(tr("could not connect"))
        case let .invalidRequest(detail)?: return .badConfiguration(detail)
        case let .other(_, message)?: return .unreachable(message)
        case nil: return .unreachable("\(error)")
        }
    }

    /// The requests fingerseal makes; an error answer means something different for each.
    enum Kind: Equatable, Sendable, CaseIterable {
        case refresh, passwordGrant, deviceAuthorization, devicePoll, codeExchange, revocation
        /// OIDC userinfo with a fresh access token: a refusal is the provider's, not the chain's.
        case userInfo
    }

    /// What an error answer means: the one table of statuses and OAuth error codes (RFC 6749
    /// §5.2, RFC 8628 §3.5, RFC 7009 §2.2.1) for every request, written for providers that
    /// follow the standards and for those that bend them (an empty body, 401 or 403 where the
    /// RFC says 400, codes of their own). `authenticated`: a confidential client sent its secret.
    static func failure(_ kind: Kind, status: Int, body: [UInt8], authenticated: Bool) -> TokenFailure {
        // Overloaded, rate-limited or timed out at the provider: temporary, whatever was asked
        // (the offline policy treats it as unreachable).
        if status >= 500 || status == 429 || status == 408 { return .unreachable(tr("the provider answered %1$s", status)) }
        let code = errorCode(body)
        let refusal = (400..<500).contains(status)
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
    /// providers send. Codes are short printable ASCII; anything else counts as no code.
    static func errorCode(_ body: [UInt8]) -> String? {
        struct OAuthErrorBody: Decodable { let error: String }
        var code = (try? JSONDecoder().decode(OAuthErrorBody.self, from: Data(body)))?.error
        if code == nil, body.count <= 4096, body.first != 0x7b {
            let text = String(decoding: body, as: UTF8.self)
            for pair in text.split(separator: "&") where pair.hasPrefix("error=") {
                code = String(pair.dropFirst("error=".count))
            }
        }
        guard let code, (1...64).contains(code.utf8.count),
              code.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7e && $0 != 0x22 && $0 != 0x5c }) else { return nil }
        return code
    }

    /// A token response (RFC 6749 5.1), strictly: an access token and a Bearer token type,
    /// both tokens 1*VSCHAR. Tolerated, because real providers send them: `expires_in` as a
    /// string of digits, `token_type` in any case, and unknown fields.
    static func parseTokens(_ body: [UInt8]) throws(TokenFailure) -> TokenSet {
        struct Answer: Decodable {
            let access_token: String
            let token_type: String
            let expires_in: FlexibleInteger?
            let refresh_token: String?
            let scope: String?
            let id_token: String?
        }
        guard let answer = try? JSONDecoder().decode(Answer.self, from: Data(body)) else {
            throw .malformed(tr("the token answer is not valid JSON with an access token"))
        }
        guard AccessToken.isValidToken(answer.access_token.utf8), answer.token_type.lowercased() == "bearer" else {
            throw .malformed(tr("the token answer has no bearer access token"))
        }
        if let refresh = answer.refresh_token, !AccessToken.isValidToken(refresh.utf8) {
            throw .malformed(tr("the refresh token in the answer is not valid"))
        }
        if let idToken = answer.id_token, !isCompactJWS(idToken) {
            throw .malformed(tr("the ID token in the answer is not valid"))
        }
        let lifetime = answer.expires_in?.value
        if let lifetime, lifetime < 0 { throw .malformed(tr("the token answer has a negative lifetime")) }
        do {
            let refresh = try answer.refresh_token.map { try SecureBytes(copying: Array($0.utf8)) }
            return TokenSet(accessToken: try SecureBytes(copying: Array(answer.access_token.utf8)), refreshToken: refresh,
                            expiresIn: lifetime, scope: answer.scope, idToken: answer.id_token)
        } catch {
            throw .malformed(tr("no secure memory for the tokens"))
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

/// A JSON integer, or a string of digits (some providers quote `expires_in` and `interval`).
struct FlexibleInteger: Decodable {
    let value: Int

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int.self) {
            value = number
        } else {
            let text = try container.decode(String.self)
            guard (1...9).contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let number = Int(text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a whole number")
            }
            value = number
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
        try self.init(provider: provider, clientSecret: clientSecret.map(TokenRequests.text), http: HTTPClient(options: options))
    }

    /// Makes clients for `TokenChain.refresh`.
    public static func factory(_ options: Options) -> TokenChain.ClientFactory {
        { provider, secret throws(TokenFailure) in try OAuthClient(provider: provider, clientSecret: secret, options: options) }
    }
}
