import Testing
import FingersealCore
import SodiumKit
@testable import IdentityClient
@testable import TestSupport

@Suite struct IdentityClientTests {
    @Test(arguments: ["https://idp.example.org", "https://idp.example.org/realms/x", "http://127.0.0.1:8000",
                      "http://127.0.0.1", "http://localhost:9000/o", "http://[::1]:8080", "http://127.1.2.3/x"])
    func secureURLsAreAccepted(url: String) throws {
        try Discovery.requireSecure(url)
    }

    @Test(arguments: ["http://idp.example.org", "http://127.0.0.1.evil.example", "http://localhost.evil.example",
                      "http://user@127.0.0.1", "ftp://127.0.0.1", "file:///etc/passwd", "127.0.0.1", "",
                      "http://128.0.0.1", "http://127.0.0.256", "http://[::2]"])
    func insecureURLsAreRefused(url: String) {
        #expect(throws: TokenFailure.self) { try Discovery.requireSecure(url) }
    }

    /// The wrapper says what failed; the broker's table words it, in the sentences the
    /// catalogs translate (the words the tests above once compared).
    @Test func failureReasonsAreWordedInOnePlace() {
        let worded: [(String, String)] = [
            (Messages.reason(TokenFailure.Unreachable.answered(status: 503, by: .provider)), "the provider answered 503"),
            (Messages.reason(TokenFailure.Unreachable.answered(status: 502, by: .discovery)), "discovery answered 502"),
            (Messages.reason(TokenFailure.ConfigurationProblem.answered(status: 404, by: .keySet)), "the key set answered 404"),
            (Messages.reason(TokenFailure.Malformation.idTokenInAnswer), "the ID token in the answer is not valid"),
            (Messages.reason(TokenFailure.Malformation.keySet(.malformed(.tooManyKeys(limit: 32)))),
             "the provider's key set is not valid: the key set has more than 32 keys"),
            (Messages.reason(TokenFailure.IdentityRejection.idToken(.claim(.nonceMismatch))),
             "the ID token was refused: the nonce does not match this sign-in"),
            (Messages.reason(TokenFailure.IdentityRejection.idToken(.badSignature)), "the ID token's signature does not verify"),
            (Messages.reason(TokenFailure.IdentityRejection.idToken(.unknownKey("gone"))),
             "the ID token is signed with a key the provider does not publish"),
            (Messages.reason(TokenFailure.IdentityRejection.signedUserinfo), "signed userinfo answers are not supported"),
            (Messages.reason(TokenFailure.ConfigurationProblem.plainHTTP("http://idp.example.org/o")),
             "http://idp.example.org/o must use https (plain http is allowed only on loopback)"),
            (Messages.reason(TokenFailure.ConfigurationProblem.noAuthorizationEndpoint), "the provider offers no authorization endpoint"),
            (Messages.reason(TokenFailure.Unreachable.transport("Could not resolve host")), "Could not resolve host"),
            (Messages.reason(TokenFailure.chainEnded("invalid_grant")), #"chainEnded("invalid_grant")"#),
        ]
        for (words, expected) in worded { #expect(words == expected) }
    }

    /// The one table of error answers, request kind by request kind.
    @Test func errorAnswersAreClassified() {
        typealias OAuthRequest = TokenRequests.OAuthRequest
        func classify(_ kind: OAuthRequest, _ status: Int, _ body: String, authenticated: Bool = false) -> TokenFailure {
            TokenRequests.failure(kind, status: status, body: Array(body.utf8), authenticated: authenticated)
        }
        // Temporary for every kind: 5xx, 408, 429.
        for kind: OAuthRequest in [.refresh, .passwordGrant, .deviceAuthorization, .devicePoll, .codeExchange, .revocation] {
            for status in [500, 503, 408, 429] {
                #expect(classify(kind, status, #"{"error":"invalid_grant"}"#) == .unreachable(.answered(status: status, by: .provider)))
            }
        }
        // Refresh: any other 4xx ends the chain, body or no body; only the code or status is kept.
        #expect(classify(.refresh, 400, #"{"error":"invalid_grant"}"#) == .chainEnded("invalid_grant"))
        #expect(classify(.refresh, 400, "") == .chainEnded("HTTP 400"))
        #expect(classify(.refresh, 401, "") == .chainEnded("HTTP 401"))
        #expect(classify(.refresh, 403, "<html>secret text</html>") == .chainEnded("HTTP 403"))
        #expect(classify(.refresh, 400, #"{"error":"token_expired_custom"}"#) == .chainEnded("token_expired_custom"))
        #expect(classify(.refresh, 401, #"{"error":"invalid_client"}"#, authenticated: true) == .chainEnded("invalid_client"))
        // Password grant: 400, 401, 403 without a code or with invalid_grant are the credentials.
        for status in [400, 401, 403] {
            #expect(classify(.passwordGrant, status, "") == .credentialsRefused(code: nil))
            #expect(classify(.passwordGrant, status, #"{"error":"invalid_grant"}"#) == .credentialsRefused(code: "invalid_grant"))
        }
        #expect(classify(.passwordGrant, 400, #"{"error":"unauthorized_client"}"#) == .rejected(status: 400, code: "unauthorized_client"))
        #expect(classify(.passwordGrant, 401, #"{"error":"invalid_client"}"#) == .rejected(status: 401, code: "invalid_client"))
        #expect(classify(.passwordGrant, 404, "") == .rejected(status: 404, code: nil))
        // Device poll: RFC 8628's states; invalid_grant is a code no longer taken.
        #expect(classify(.devicePoll, 400, #"{"error":"authorization_pending"}"#) == .authorizationPending)
        #expect(classify(.devicePoll, 400, #"{"error":"slow_down","error_description":"x"}"#) == .slowDown)
        #expect(classify(.devicePoll, 400, #"{"error":"expired_token"}"#) == .expiredToken)
        #expect(classify(.devicePoll, 400, #"{"error":"invalid_grant"}"#) == .expiredToken)
        #expect(classify(.devicePoll, 403, #"{"error":"access_denied"}"#) == .accessDenied)
        #expect(classify(.devicePoll, 400, "") == .rejected(status: 400, code: nil))
        #expect(classify(.devicePoll, 404, #"{"error":"device_not_found"}"#) == .rejected(status: 404, code: "device_not_found"))
        // Device authorization and code exchange: the code as given.
        #expect(classify(.deviceAuthorization, 403, #"{"error":"unauthorized_client"}"#) == .rejected(status: 403, code: "unauthorized_client"))
        #expect(classify(.codeExchange, 400, #"{"error":"invalid_grant"}"#) == .chainEnded("invalid_grant"))
        #expect(classify(.codeExchange, 400, "<html>nope</html>") == .rejected(status: 400, code: nil))
        // Revocation: refused to a public client means "only for clients that authenticate".
        #expect(classify(.revocation, 401, "") == .clientAuthenticationRequired(status: 401))
        #expect(classify(.revocation, 400, #"{"error":"invalid_client"}"#) == .clientAuthenticationRequired(status: 400))
        #expect(classify(.revocation, 401, "", authenticated: true) == .rejected(status: 401, code: nil))
        #expect(classify(.revocation, 400, #"{"error":"unsupported_token_type"}"#) == .rejected(status: 400, code: "unsupported_token_type"))
    }

    @Test func tokenAnswersAreParsedStrictly() throws {
        let good = try TokenRequests.parseTokens(Array(#"{"access_token":"at","token_type":"Bearer","expires_in":300,"refresh_token":"rt"}"#.utf8))
        #expect(good.accessToken.copyBytes() == Array("at".utf8))
        #expect(good.refreshToken?.copyBytes() == Array("rt".utf8))
        #expect(good.expiresIn == 300)
        for bad in ["", "garbage", "{}", #"{"access_token":"","token_type":"bearer"}"#, #"{"access_token":"at"}"#,
                    #"{"access_token":"at","token_type":"mac"}"#, #"{"access_token":5,"token_type":"bearer"}"#] {
            #expect(throws: TokenFailure.self, "\(bad)") { _ = try TokenRequests.parseTokens(Array(bad.utf8)) }
        }
    }

    /// Quirks of real providers other than django-oauth-toolkit: accepted where harmless,
    /// refused where a token could carry something it must not.
    @Test func otherProvidersQuirksAreHandled() throws {
        // expires_in as a string (Azure AD v1), token_type in lower case (GitHub, Okta).
        let quoted = try TokenRequests.parseTokens(Array(#"{"access_token":"at","token_type":"bearer","expires_in":"3599","ext":{"a":1}}"#.utf8))
        #expect(quoted.expiresIn == 3599 && quoted.refreshToken == nil)
        for bad in [#"{"access_token":"at","token_type":"Bearer","expires_in":"-5"}"#,
                    #"{"access_token":"at","token_type":"Bearer","expires_in":"99999999999"}"#,
                    #"{"access_token":"a\nb","token_type":"Bearer"}"#,
                    #"{"access_token":"at","token_type":"Bearer","refresh_token":"r t\u0000"}"#] {
            #expect(throws: TokenFailure.self, "\(bad)") { _ = try TokenRequests.parseTokens(Array(bad.utf8)) }
        }
        // Form-encoded error bodies (GitHub without Accept: application/json), 429 and 408.
        #expect(TokenRequests.failure(.codeExchange, status: 400, body: Array("error=invalid_grant&error_description=bad".utf8),
                                      authenticated: false) == .chainEnded("invalid_grant"))
        // An error code is short printable ASCII, or no code at all.
        #expect(TokenRequests.failure(.deviceAuthorization, status: 400, body: Array(#"{"error":"a\u0007b"}"#.utf8),
                                      authenticated: false) == .rejected(status: 400, code: nil))
    }

    @Test func anAccessTokenIsValidUntilShortlyBeforeItExpires() throws {
        let token = AccessToken(token: try SecureBytes(copying: Array("abc.DEF-1".utf8)), expiresAt: 1_800_000_000)
        #expect(token.isValid(at: 1_800_000_000 - 31) && !token.isValid(at: 1_800_000_000 - 30))
        #expect(AccessToken.isValidToken(Array("abc.DEF-1".utf8)))
        for bad in ["", "a\tb", "a\nb", "é"] { #expect(!AccessToken.isValidToken(Array(bad.utf8)), "\(bad)") }
    }
}
