import CurlKit
import FoundationEssentials
import Glibc
import JOSEKit
import Testing
@testable import FingersealCore
@testable import IdentityClient
import SodiumKit
@testable import TestSupport

/// Token requests with proofs of possession (RFC 9449) against the local IdP, whose checks are
/// jwcrypto's (Tests/IdP/idp/dpop.py): the tokens are bound to the key, a refresh token is
/// worth nothing without it, the server's nonce is taken up once, and providers without DPoP
/// keep working as before.
@Suite(.enabled(if: LocalIdP.available)) struct DPoPClientTests {
    static func boundClient(_ idp: LocalIdP, _ key: any ProofSigner, clock: @escaping @Sendable () -> Int64 = { Int64(time(nil)) })
        throws -> OAuthClient {
        var client = try idp.client()
        client.binding = DPoPBinding(key: key, clock: clock)
        return client
    }

    static func signIn(_ client: OAuthClient) throws -> TokenSet {
        try client.passwordGrant(username: "alice", password: secret("wonderland-7"), scope: "openid offline_access")
    }

    @Test func theTokensAreBoundAndTheRefreshTokenIsWorthlessWithoutTheKey() throws {
        let idp = try LocalIdP()
        let key = try SoftwareProofKey.generate()
        let client = try Self.boundClient(idp, key)
        let tokens = try Self.signIn(client)
        #expect(tokens.boundToKey)
        let refresh = try #require(tokens.refreshToken)
        // Another machine's key, and no key at all: the provider refuses the copy.
        let thief = try Self.boundClient(idp, try SoftwareProofKey.generate())
        #expect(throws: TokenFailure.chainEnded("invalid_grant")) { _ = try thief.refresh(refresh) }
        #expect(throws: TokenFailure.chainEnded("invalid_grant")) { _ = try idp.client().refresh(refresh) }
        // The key's own refresh rotates, bound again.
        let rotated = try client.refresh(refresh)
        #expect(rotated.boundToKey && rotated.refreshToken != nil)
        #expect(try idp.dpopReport().refused["the token is bound to another key"] == 1)
    }

    @Test func aNonceTheServerAsksForIsTakenUpOnce() throws {
        let idp = try LocalIdP()
        try idp.setSwitch("dpop-nonce", "required")
        let client = try Self.boundClient(idp, try SoftwareProofKey.generate())
        #expect(try Self.signIn(client).boundToKey)
        let nonce = try #require(client.binding?.currentNonce)
        #expect(try idp.dpopReport().refused["a fresh nonce is required"] == 1)
        // Kept for the next request: no second refusal.
        _ = try Self.signIn(client)
        #expect(try idp.dpopReport().refused["a fresh nonce is required"] == 1 && client.binding?.currentNonce == nonce)
        // A rotated nonce costs one more round trip, never a failure.
        try idp.hook("/test/dpop-nonce", [])
        #expect(try Self.signIn(client).boundToKey)
        #expect(try idp.dpopReport().refused["a fresh nonce is required"] == 2)
    }

    /// userinfo is a DPoP-protected resource: the bound token goes with a proof carrying its
    /// hash, and a nonce the resource asks for (RFC 9449 §9) is taken up once, as at the token
    /// endpoint (one helper, `DPoPBinding.sending`).
    @Test func userinfoTakesTheResourcesNonceOnce() throws {
        let idp = try LocalIdP()
        try idp.setSwitch("dpop-nonce", "required")
        let client = try Self.boundClient(idp, try SoftwareProofKey.generate())
        let tokens = try Self.signIn(client)
        #expect(try idp.dpopReport().refused["a fresh nonce is required"] == 1)
        // The nonce kept is not the resource's now: one more round trip, never a failure.
        try idp.hook("/test/dpop-nonce", [])
        #expect(try client.userInfo(accessToken: tokens.accessToken).preferredUsername == "alice")
        #expect(try idp.dpopReport().refused["a fresh nonce is required"] == 2)
        // Kept: the next request needs no second try.
        #expect(try client.userInfo(accessToken: tokens.accessToken).preferredUsername == "alice")
        #expect(try idp.dpopReport().refused == ["a fresh nonce is required": 2])
    }

    @Test func providersWithoutDPoPOrAnsweringBearerGiveBearerTokens() throws {
        let idp = try LocalIdP()
        try idp.setSwitch("dpop-token-type", "bearer")
        #expect(!(try Self.signIn(try Self.boundClient(idp, try SoftwareProofKey.generate())).boundToKey))
        try idp.setSwitch("dpop-token-type", "dpop")
        try idp.setSwitch("dpop", "off")
        let tokens = try Self.signIn(try Self.boundClient(idp, try SoftwareProofKey.generate()))
        #expect(!tokens.boundToKey)
        // Unbound, so the refresh token works without a key, as today.
        #expect(try idp.client().refresh(try #require(tokens.refreshToken)).refreshToken != nil)
    }

    /// A clock ten minutes off makes proofs the provider refuses: the proof's refusal, never a
    /// success, and on a refresh never the end of the chain (the token stays good).
    @Test func aClockFarOffIsRefusedAndEndsNothing() throws {
        let idp = try LocalIdP()
        let key = try SoftwareProofKey.generate()
        let skewed = try Self.boundClient(idp, key, clock: { Int64(time(nil)) - 600 })
        #expect(throws: TokenFailure.proofRefused(code: "invalid_dpop_proof")) { _ = try Self.signIn(skewed) }
        let refresh = try #require(try Self.signIn(try Self.boundClient(idp, key)).refreshToken)
        #expect(throws: TokenFailure.proofRefused(code: "invalid_dpop_proof")) { _ = try skewed.refresh(refresh) }
        // The clock set right: the same refresh token refreshes.
        #expect(try Self.boundClient(idp, key).refresh(refresh).boundToKey)
    }

    /// What the provider checks of a proof, as fingerseal makes them: one replayed, one made
    /// for another URL, one for another method.
    @Test func aReplayedOrMisdirectedProofIsRefused() throws {
        let idp = try LocalIdP()
        let key = try SoftwareProofKey.generate()
        let tokenURL = idp.origin + "/o/token/"
        let form = [("grant_type", "password"), ("username", "alice"), ("password", "wonderland-7"), ("client_id", "fingerseal-test"),
                    ("scope", "openid")]
        func send(_ proof: String) throws -> (status: Int, body: String) {
            try idp.post("/o/token/", form, headers: [("DPoP", proof)])
        }
        let now = Int64(time(nil))
        let proof = try DPoPProof.make(signer: key, method: "POST", url: tokenURL, now: now, jti: try Sodium.randomBytes(16))
        #expect(try send(proof).status == 200)
        let replayed = try send(proof)
        #expect(replayed.status == 400 && replayed.body.contains("invalid_dpop_proof"))
        let elsewhere = try DPoPProof.make(signer: key, method: "POST", url: idp.origin + "/o/revoke_token/", now: now,
                                           jti: try Sodium.randomBytes(16))
        #expect(try send(elsewhere).body.contains("htu is not"))
        let wrongMethod = try DPoPProof.make(signer: key, method: "GET", url: tokenURL, now: now, jti: try Sodium.randomBytes(16))
        #expect(try send(wrongMethod).body.contains("htm is not"))
    }
}
