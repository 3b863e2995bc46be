import Testing
import FingersealCore
@testable import IdentityClient

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

    @Test func errorAnswersAreClassified() {
        func classify(_ status: Int, _ body: String) -> TokenFailure {
            TokenRequests.failure(status: status, body: Array(body.utf8))
        }
        #expect(classify(400, #"{"error":"invalid_grant"}"#) == .chainEnded("invalid_grant"))
        #expect(classify(400, #"{"error":"authorization_pending"}"#) == .authorizationPending)
        #expect(classify(400, #"{"error":"slow_down","error_description":"x"}"#) == .slowDown)
        #expect(classify(400, #"{"error":"expired_token"}"#) == .expiredToken)
        #expect(classify(403, #"{"error":"access_denied"}"#) == .accessDenied)
        #expect(classify(400, "") == .rejected(status: 400, code: nil))
        #expect(classify(400, "<html>nope</html>") == .rejected(status: 400, code: nil))
        #expect(classify(400, #"{"error":"token_expired_custom"}"#) == .rejected(status: 400, code: "token_expired_custom"))
        #expect(classify(401, #"{"error":"invalid_client"}"#) == .rejected(status: 401, code: "invalid_client"))
        #expect(classify(503, "") == .unreachable("the provider answered 503"))
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
}
