import CurlKit
import FingersealCore
import FoundationEssentials
import SodiumKit

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

    public func refresh(_ refreshToken: SecureBytes) throws(TokenFailure) -> TokenSet {
        try tokenRequest([("grant_type", "refresh_token"), ("refresh_token", TokenRequests.text(refreshToken))])
    }

    public func passwordGrant(username: String, password: SecureBytes, scope: String) throws(TokenFailure) -> TokenSet {
        try tokenRequest([("grant_type", "password"), ("username", username), ("password", TokenRequests.text(password)),
                          ("scope", scope)])
    }

    public func startDeviceAuthorization(scope: String) throws(TokenFailure) -> DeviceAuthorization {
        guard let endpoint = metadata.deviceAuthorizationEndpoint else {
            throw .badConfiguration("the provider offers no device authorization")
        }
        let body = try post(endpoint, [("client_id", clientID), ("scope", scope)])
        struct Answer: Decodable {
            let device_code: String
            let user_code: String
            let verification_uri: String
            let verification_uri_complete: String?
            let interval: Int?
            let expires_in: Int
        }
        guard let answer = try? JSONDecoder().decode(Answer.self, from: Data(body)), !answer.device_code.isEmpty else {
            throw .malformed("the device authorization answer is not valid")
        }
        try Discovery.requireSecure(answer.verification_uri)
        return DeviceAuthorization(deviceCode: answer.device_code, userCode: answer.user_code,
                                   verificationURI: answer.verification_uri,
                                   verificationURIComplete: answer.verification_uri_complete,
                                   interval: max(answer.interval ?? 5, 1), expiresIn: answer.expires_in)
    }

    /// One poll; throws `.authorizationPending` or `.slowDown` while the user has not acted.
    public func pollDevice(_ authorization: DeviceAuthorization) throws(TokenFailure) -> TokenSet {
        try tokenRequest([("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
                          ("device_code", authorization.deviceCode)])
    }

    /// RFC 7009. Returns false when the provider offers no revocation endpoint.
    @discardableResult
    public func revoke(_ token: SecureBytes, hint: String = "refresh_token") throws(TokenFailure) -> Bool {
        guard let endpoint = metadata.revocationEndpoint else { return false }
        _ = try post(endpoint, [("token", TokenRequests.text(token)), ("token_type_hint", hint)])
        return true
    }

    func tokenRequest(_ fields: [(name: String, value: String)]) throws(TokenFailure) -> TokenSet {
        try TokenRequests.parseTokens(try post(metadata.tokenEndpoint, fields))
    }

    /// POSTs a form with the client's credentials; returns the body of a 200, or throws the
    /// classified error.
    func post(_ url: String, _ fields: [(name: String, value: String)]) throws(TokenFailure) -> [UInt8] {
        var form = fields
        var headers: [(name: String, value: String)] = [("Accept", "application/json")]
        if let clientSecret {
            // client_secret_basic (RFC 6749 2.3.1): both parts form-encoded first.
            let pair = FormEncoding.percentEncode(clientID) + ":" + FormEncoding.percentEncode(clientSecret)
            headers.append(("Authorization", "Basic " + Data(pair.utf8).base64EncodedString()))
        } else {
            form.append(("client_id", clientID))
        }
        let response: HTTPResponse
        do {
            response = try http.send(.postForm(url, fields: form, headers: headers))
        } catch {
            throw TokenRequests.failure(for: error)
        }
        if response.status == 200 { return response.body }
        throw TokenRequests.failure(status: response.status, body: response.body)
    }
}

enum TokenRequests {
    static func text(_ secret: SecureBytes) -> String {
        secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    static func failure(for error: Error) -> TokenFailure {
        switch error as? HTTPError {
        case .responseTooLarge?: return .malformed("the answer is larger than \(OAuthClient.maxResponse) bytes")
        case let .tls(detail)?: return .unreachable("TLS: \(detail)")
        case .timedOut?: return .unreachable("timed out")
        case .couldNotConnect?: return .unreachable("could not connect")
        case let .invalidRequest(detail)?: return .badConfiguration(detail)
        case let .other(_, message)?: return .unreachable(message)
        case nil: return .unreachable("\(error)")
        }
    }

    /// An error answer: the OAuth error code when there is one, whatever the body.
    static func failure(status: Int, body: [UInt8]) -> TokenFailure {
        if status >= 500 { return .unreachable("the provider answered \(status)") }
        struct OAuthErrorBody: Decodable { let error: String }
        let code = (try? JSONDecoder().decode(OAuthErrorBody.self, from: Data(body)))?.error
        switch code {
        case "invalid_grant": return .chainEnded("invalid_grant")
        case "authorization_pending": return .authorizationPending
        case "slow_down": return .slowDown
        case "expired_token": return .expiredToken
        case "access_denied": return .accessDenied
        default: return .rejected(status: status, code: code)
        }
    }

    /// A token response (RFC 6749 5.1), strictly: an access token and a Bearer token type.
    static func parseTokens(_ body: [UInt8]) throws(TokenFailure) -> TokenSet {
        struct Answer: Decodable {
            let access_token: String
            let token_type: String
            let expires_in: Int?
            let refresh_token: String?
            let scope: String?
        }
        guard let answer = try? JSONDecoder().decode(Answer.self, from: Data(body)) else {
            throw .malformed("the token answer is not valid JSON with an access token")
        }
        guard !answer.access_token.isEmpty, answer.token_type.lowercased() == "bearer" else {
            throw .malformed("the token answer has no bearer access token")
        }
        do {
            let refresh = try answer.refresh_token.map { try SecureBytes(copying: Array($0.utf8)) }
            return TokenSet(accessToken: try SecureBytes(copying: Array(answer.access_token.utf8)), refreshToken: refresh,
                            expiresIn: answer.expires_in, scope: answer.scope)
        } catch {
            throw .malformed("no secure memory for the tokens")
        }
    }
}
