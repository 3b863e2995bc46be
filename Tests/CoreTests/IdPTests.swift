import CurlKit
import Dispatch
import FoundationEssentials
import Glibc
import Testing
@testable import FingersealCore
@testable import IdentityClient
import SodiumKit
@testable import TestSupport

@Suite(.enabled(if: LocalIdP.available)) struct IdPTests {
    /// A vault holding a refresh token from a real sign-in (password grant for alice).
    func signedInVault(_ idp: LocalIdP) throws -> (TestVault, UnlockedVault) {
        let v = try TestVault()
        let vault = try v.create()
        try idp.signIn(vault, at: 1_000_000)
        return (v, vault)
    }

    @Test func discoveryIsValidated() throws {
        let idp = try LocalIdP()
        let http = HTTPClient(configuration: .init(connectTimeout: 2, timeout: 5))
        let metadata = try Discovery.discover(issuer: idp.issuer, http: http)
        #expect(metadata.deviceAuthorizationEndpoint != nil && metadata.revocationEndpoint != nil)
        #expect(throws: TokenFailure.self) { _ = try Discovery.discover(issuer: idp.origin + "/other", http: http) }
        // Plain http off loopback is refused before anything is sent.
        #expect(throws: TokenFailure.badConfiguration(.plainHTTP("http://idp.example.org/o"))) {
            _ = try Discovery.discover(issuer: "http://idp.example.org/o", http: http)
        }
    }

    @Test func fiftyRotationsTenOfThemInConcurrentPairsNeverReuse() throws {
        let idp = try LocalIdP()
        let (v, vault) = try signedInVault(idp)
        // Shared by two threads below, which only read it (its secret is secure memory, a class).
        nonisolated(unsafe) let client = try idp.client()
        var seen: Set<[UInt8]> = []
        for _ in 0..<30 {
            guard case let .refreshed(tokens) = try TokenChain.refresh(vault, client: client, offlineGrace: 0) else {
                throw TestFailure("not refreshed")
            }
            #expect(seen.insert(tokens.accessToken.copyBytes()).inserted)
        }
        // Two unlocks at once (own vault handles, as the CLI and PAM would have): the lock
        // makes the second wait and send the rotated token.
        for _ in 0..<10 {
            let pair = VaultPair([try Vault.unlockWithDevice(v.store), try Vault.unlockWithDevice(v.store)])
            let failures = Failures()
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                do { _ = try TokenChain.refresh(pair.vaults[index], client: client, offlineGrace: 0).tokens() } catch { failures.add("\(error)") }
            }
            #expect(failures.all.isEmpty, "\(failures.all)")
        }
        #expect(try idp.familyAlive("alice"), "the IdP saw a refresh token reused")
    }

    @Test func aRevokedChainMeansSignInRequired() throws {
        let idp = try LocalIdP()
        let (v, vault) = try signedInVault(idp)
        try idp.hook("/test/revoke-user-tokens", [("username", "alice")])
        expectOutcome(.signInRequired) { _ = try TokenChain.refresh(vault, client: try idp.client(), offlineGrace: 0).tokens() }
        #expect(try Vault.status(v.store)?.signIn == .required)
        // Without asking the IdP again.
        try idp.hook("/test/mode", [("mode", "down-5xx")])
        expectOutcome(.signInRequired) { _ = try TokenChain.refresh(vault, client: try idp.client(), offlineGrace: 0).tokens() }
    }

    @Test func offlineGraceAllowsThenDenies() throws {
        let idp = try LocalIdP()
        let (v, vault) = try signedInVault(idp)
        let before = try #require(readFile(v.directory + "/vault"))
        try idp.hook("/test/mode", [("mode", "down-5xx")])
        let grace = 7 * 24 * 3600
        let inside = try TokenChain.refresh(vault, client: try idp.client(), offlineGrace: grace,
                                            clock: FixedClock(time: 1_000_000 + 3600))
        guard case .offline(since: 1_000_000) = inside else { throw TestFailure("expected offline, got \(inside)") }
        expectOutcome(.tokenUnavailable) {
            _ = try TokenChain.refresh(vault, client: try idp.client(), offlineGrace: grace,
                                       clock: FixedClock(time: 1_000_000 + Int64(grace) + 1)).tokens()
        }
        #expect(readFile(v.directory + "/vault") == before, "the refresh token is kept as it was")
        // The IdP back: the chain goes on.
        try idp.hook("/test/mode", [("mode", "normal")])
        guard case .refreshed = try TokenChain.refresh(vault, client: try idp.client(), offlineGrace: grace) else {
            throw TestFailure("not refreshed after the IdP came back")
        }
    }

    /// An answer that is not a token: the chain is kept for the next unlock.
    @Test(arguments: ["garbage", "oversized"])
    func badAnswersLeaveTheVaultUnchanged(mode: String) throws {
        let idp = try LocalIdP()
        let (v, vault) = try signedInVault(idp)
        let before = try #require(readFile(v.directory + "/vault"))
        try idp.hook("/test/mode", [("mode", mode)])
        expectOutcome(.tokenUnavailable) { _ = try TokenChain.refresh(vault, client: try idp.client(), offlineGrace: 0).tokens() }
        #expect(readFile(v.directory + "/vault") == before)
        try idp.hook("/test/mode", [("mode", "normal")])
        guard case .refreshed = try TokenChain.refresh(vault, client: try idp.client(), offlineGrace: 0) else {
            throw TestFailure("the chain did not survive \(mode)")
        }
    }

    /// Issue 12, finding 2: a refusal of a refresh ends the chain, body or no body, standard
    /// code or not (the independent provider answers a dead token with a bare 400); never
    /// "try again later" forever.
    @Test(arguments: [("empty-error", 0), ("nonstandard-error", 0), ("revoked", 400), ("revoked", 401), ("revoked", 403)])
    func aRefusedRefreshEndsTheChain(how: String, emptyStatus: Int) throws {
        let idp = try LocalIdP()
        let (v, vault) = try signedInVault(idp)
        if how == "revoked" {
            try idp.hook("/test/revoke-user-tokens", [("username", "alice")])
            try idp.emptyErrors(emptyStatus, grantType: "refresh_token")
        } else {
            try idp.hook("/test/mode", [("mode", how)])
        }
        expectOutcome(.signInRequired) { _ = try TokenChain.refresh(vault, client: try idp.client(), offlineGrace: 0).tokens() }
        #expect(try Vault.status(v.store)?.signIn == .required)
    }

    /// A refresh whose answer is lost (a timeout after the provider rotated): the next one
    /// sends the token the provider has rotated away, and its refusal, even a bare 400, ends
    /// the chain. The provider's text is never kept.
    @Test func aLostRefreshAnswerThenABareRefusalEndsTheChain() throws {
        let idp = try LocalIdP()
        let (v, vault) = try signedInVault(idp)
        let client = try idp.client(timeout: 1)
        try idp.hook("/test/mode", [("mode", "slow"), ("seconds", "2"), ("count", "1")])
        let lost = try TokenChain.refresh(vault, client: client, offlineGrace: 0)
        guard case .unreachable = lost else { throw TestFailure("expected the refresh to time out, got \(lost)") }
        // The provider went on and rotated once its pause was over.
        let deadline = VirtualSensor.now() + 10
        while VirtualSensor.now() < deadline, !(try idp.family("alice").contains(#""rotations": 1"#)) { usleep(100_000) }
        #expect(try idp.family("alice").contains(#""rotations": 1"#))
        try idp.emptyErrors(400, grantType: "refresh_token")
        let ended = try TokenChain.refresh(vault, client: try idp.client(), offlineGrace: 0)
        guard case .signInRequired = ended else { throw TestFailure("expected sign-in required, got \(ended)") }
        #expect(try Vault.status(v.store)?.signIn == .required)
        #expect(try idp.family("alice").contains(#""reuse_detected": true"#), "the old token was sent once more")
    }

    @Test func aSlowIdPIsCutOffAtTheTimeout() throws {
        let idp = try LocalIdP()
        let (v, vault) = try signedInVault(idp)
        defer { withExtendedLifetime(v) {} }
        let client = try idp.client(timeout: 2)
        try idp.hook("/test/mode", [("mode", "slow"), ("seconds", "20")])
        let start = VirtualSensor.now()
        expectOutcome(.tokenUnavailable) { _ = try TokenChain.refresh(vault, client: client, offlineGrace: 0).tokens() }
        let elapsed = VirtualSensor.now() - start
        #expect(elapsed >= 1.9 && elapsed < 3.5, "\(elapsed) s")
    }

    @Test func deviceGrantApprovedThroughTheIdP() throws {
        let idp = try LocalIdP()
        let client = try idp.client("fingerseal-device")
        let authorization = try client.startDeviceAuthorization(scope: "openid offline_access")
        #expect(authorization.verificationURIComplete?.contains(authorization.userCode) == true)
        #expect(throws: TokenFailure.authorizationPending) { _ = try client.pollDevice(authorization) }
        try idp.hook("/test/approve-device", [("user_code", authorization.userCode), ("username", "alice")])
        let tokens = try client.pollDevice(authorization)
        #expect(tokens.refreshToken != nil)
        // Denied: access_denied.
        let denied = try client.startDeviceAuthorization(scope: "openid offline_access")
        try idp.hook("/test/deny-device", [("user_code", denied.userCode)])
        #expect(throws: TokenFailure.accessDenied) { _ = try client.pollDevice(denied) }
    }

    // MARK: the switches (Tests/IdP/README.md, "other providers' behaviours")

    /// Issue 12, finding 1: every request sends each parameter once, public and confidential.
    @Test func duplicateParametersAreRefusedAndEachOfOursIsSentOnce() throws {
        let idp = try LocalIdP()
        try idp.refuseDuplicateParameters()
        let twice = try idp.post("/o/device-authorization/", [("client_id", "fingerseal-device"), ("client_id", "fingerseal-device")])
        #expect(twice.status == 400 && twice.body.contains("invalid_request"), "\(twice)")
        for (id, secret) in [("fingerseal-test", nil), ("fingerseal-device", nil), ("fingerseal-confidential", try idp.confidentialSecret())] {
            let client = try idp.client(id, secret: secret)
            let authorization = try client.startDeviceAuthorization(scope: "openid offline_access")
            #expect(throws: TokenFailure.authorizationPending) { _ = try client.pollDevice(authorization) }
            try idp.hook("/test/approve-device", [("user_code", authorization.userCode), ("username", "alice")])
            let refresh = try #require(try client.pollDevice(authorization).refreshToken)
            let rotated = try #require(try client.refresh(refresh).refreshToken)
            #expect(try client.revoke(rotated))
        }
        let password = try idp.client().passwordGrant(username: "alice", password: secret("wonderland-7"), scope: "openid")
        #expect(password.refreshToken != nil)
    }

    /// Issue 12, finding 3, at the client: a bare 400, 401 or 403 to a password grant is the
    /// credentials. The switch is per grant type: a device poll keeps DOT's own answer.
    @Test(arguments: [400, 401, 403])
    func emptyErrorsPerGrantType(status: Int) throws {
        let idp = try LocalIdP()
        try idp.emptyErrors(status, grantType: "password")
        let raw = try idp.post("/o/token/", [("grant_type", "password"), ("username", "alice"), ("password", "wrong"),
                                             ("client_id", "fingerseal-password")])
        #expect(raw.status == status && raw.body.isEmpty, "\(raw)")
        #expect(throws: TokenFailure.credentialsRefused(code: nil)) {
            _ = try idp.client().passwordGrant(username: "alice", password: secret("wrong"), scope: "openid")
        }
        let client = try idp.client("fingerseal-device")
        #expect(throws: TokenFailure.authorizationPending) {
            _ = try client.pollDevice(try client.startDeviceAuthorization(scope: "openid"))
        }
        try idp.emptyErrors(nil)
        #expect(throws: TokenFailure.credentialsRefused(code: "invalid_grant")) {
            _ = try idp.client().passwordGrant(username: "alice", password: secret("wrong"), scope: "openid")
        }
    }

    @Test func revocationOnlyForConfidentialClients() throws {
        let idp = try LocalIdP()
        try idp.revokeOnlyForConfidentialClients()
        let raw = try idp.post("/o/revoke_token/", [("token", "x"), ("client_id", "fingerseal-password")])
        #expect(raw.status == 401 && raw.body.isEmpty, "\(raw)")
        let publicClient = try idp.client("fingerseal-password")
        let tokens = try publicClient.passwordGrant(username: "bob", password: secret("builder-3"), scope: "openid")
        #expect(throws: TokenFailure.clientAuthenticationRequired(status: 401)) { _ = try publicClient.revoke(try #require(tokens.refreshToken)) }
        let confidential = try idp.client("fingerseal-confidential", secret: try idp.confidentialSecret())
        let its = try confidential.passwordGrant(username: "bob", password: secret("builder-3"), scope: "openid")
        #expect(try confidential.revoke(try #require(its.refreshToken)))
    }

    /// RS256 (DOT's) and ES256 (ours, jwcrypto) ID tokens, both keys in the JWKS.
    @Test func idTokensAreSignedWithRS256OrES256AndTheJWKSHasBothKeys() throws {
        let idp = try LocalIdP()
        struct Key: Decodable { let kty: String; let alg: String; let kid: String; let crv: String?; let x: String?; let n: String? }
        struct Set: Decodable { let keys: [Key] }
        let jwks = try JSONDecoder().decode(Set.self, from: Data(try idp.http.send(.get(idp.issuer + "/.well-known/jwks.json")).body))
        let rsa = try #require(jwks.keys.first { $0.kty == "RSA" })
        let ec = try #require(jwks.keys.first { $0.kty == "EC" })
        #expect(rsa.alg == "RS256" && rsa.n != nil)
        #expect(ec.alg == "ES256" && ec.crv == "P-256" && ec.x != nil)
        struct Header: Decodable { let alg: String; let kid: String }
        let rs = try JSONDecoder().decode(Header.self, from: Data(try idp.idToken().header.utf8))
        #expect(rs.alg == "RS256" && rs.kid == rsa.kid)
        try idp.signIDTokens("ES256")
        let es = try JSONDecoder().decode(Header.self, from: Data(try idp.idToken().header.utf8))
        #expect(es.alg == "ES256" && es.kid == ec.kid)
        let discovery = String(decoding: try idp.http.send(.get(idp.issuer + "/.well-known/openid-configuration")).body, as: UTF8.self)
        #expect(discovery.contains("ES256"))
    }

    /// preferred_username and email are always in the ID token and userinfo; claims-user
    /// makes them another user's (sub stays the signed-in one's).
    @Test func identityClaimsCanNameAnotherUser() throws {
        let idp = try LocalIdP()
        struct Claims: Decodable { let sub: String; let preferred_username: String; let email: String }
        func userinfo(_ accessToken: String) throws -> Claims {
            let response = try idp.http.send(.get(idp.issuer + "/userinfo/", headers: [("Authorization", "Bearer " + accessToken)]))
            return try JSONDecoder().decode(Claims.self, from: Data(response.body))
        }
        let own = try idp.idToken()
        let ownClaims = try JSONDecoder().decode(Claims.self, from: Data(own.payload.utf8))
        #expect(ownClaims.preferred_username == "alice" && ownClaims.email == "alice@example.test" && ownClaims.sub == "1")
        #expect(try userinfo(own.accessToken).preferred_username == "alice")
        try idp.claimIdentity(of: "bob")
        let other = try idp.idToken()
        let otherClaims = try JSONDecoder().decode(Claims.self, from: Data(other.payload.utf8))
        #expect(otherClaims.preferred_username == "bob" && otherClaims.email == "bob@example.test" && otherClaims.sub == "1")
        let info = try userinfo(other.accessToken)
        #expect(info.preferred_username == "bob" && info.email == "bob@example.test")
    }

    /// auth-time: DOT's auth_time (the last login, or now when there was none), an hour
    /// before now, or none; what the IdP saw of a device authorization request is kept.
    @Test func authTimeCanBeOldOrAbsentAndDeviceRequestsAreKept() throws {
        let idp = try LocalIdP()
        struct Claims: Decodable { let auth_time: Int64? }
        func authTime() throws -> Int64? { try JSONDecoder().decode(Claims.self, from: Data(try idp.idToken().payload.utf8)).auth_time }
        let now = Int64(time(nil))
        #expect(try authTime().map { abs($0 - now) < 60 } == true)
        try idp.authTime("old")
        #expect(try authTime().map { abs($0 - (now - 3600)) < 60 } == true)
        try idp.authTime("absent")
        #expect(try authTime() == nil)
        _ = try idp.client("fingerseal-device").startDeviceAuthorization(scope: "openid", parameters: [("max_age", "0"), ("kiosk", "desk 7")])
        #expect(try idp.deviceAuthorizations().last == ["client_id": ["fingerseal-device"], "scope": ["openid"], "max_age": ["0"],
                                                         "kiosk": ["desk 7"]])
    }

    @Test func revocationEndsTheChain() throws {
        let idp = try LocalIdP()
        let client = try idp.client("fingerseal-password")
        let tokens = try client.passwordGrant(username: "bob", password: secret("builder-3"), scope: "openid")
        let refresh = try #require(tokens.refreshToken)
        #expect(try client.revoke(refresh))
        #expect(throws: TokenFailure.chainEnded("invalid_grant")) { _ = try client.refresh(refresh) }
    }
}

/// Two vault handles, each used by one thread only.
final class VaultPair: @unchecked Sendable {
    let vaults: [UnlockedVault]
    init(_ vaults: [UnlockedVault]) { self.vaults = vaults }
}
