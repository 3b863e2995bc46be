import CurlKit
import FoundationEssentials
import Glibc
import Testing
@testable import TestSupport

/// `fingerseal proof METHOD URL` (issue 35): a proof for the session's bound access token,
/// signed in the broker by the sign-in's key, with no finger while that token is valid. The
/// local IdP's userinfo is the DPoP-protected resource; jwcrypto checks every proof there.
@Suite(.enabled(if: LocalIdP.available && getuid() == 0)) struct ProofCommandTests {
    typealias SignedIn = TokenCLITests.SignedIn

    static func userinfo(_ idp: LocalIdP) -> String { idp.issuer + "/userinfo/" }

    static func get(_ url: String, token: String, scheme: String = "DPoP", proof: String?) throws -> HTTPResponse {
        try LocalIdP.getResource(url, token: token, scheme: scheme, proof: proof)
    }

    /// `proof ARGUMENTS` in the test runner's session, where the unlock kept the token.
    static func proof(_ s: SignedIn, _ arguments: [String]) throws -> Child.Result {
        try s.run(["proof"] + arguments, newSession: false)
    }

    @Test func aProofForTheSessionsTokenPassesTheProtectedResource() throws {
        let s = try SignedIn()
        let url = Self.userinfo(s.idp)
        #expect(try s.unlock(newSession: false).status == 0)
        let token = try #require(try s.cachedToken())

        let made = try Self.proof(s, ["GET", url])
        #expect(made.status == 0, "\(made.all)")
        #expect(made.stderr.isEmpty, "nothing is asked and nothing said: \(made.stderr)")
        let proof = String(made.stdout.dropLast())
        #expect(proof.split(separator: ".").count == 3 && !proof.contains(token), "\(made.stdout)")
        let answered = try Self.get(url, token: token, proof: proof)
        #expect(answered.status == 200 && String(decoding: answered.body, as: UTF8.self).contains("alice"), "\(answered.status)")

        // The resource's own checks, by an independent JOSE library: a proof once only, for its
        // URL and method only, and a bound token never as a bearer token.
        #expect(try Self.get(url, token: token, proof: proof).status == 401, "a replayed proof")
        let elsewhere = String(try Self.proof(s, ["GET", s.idp.issuer + "/other/"]).stdout.dropLast())
        #expect(try Self.get(url, token: token, proof: elsewhere).status == 401, "a proof for another URL")
        let posted = String(try Self.proof(s, ["POST", url]).stdout.dropLast())
        #expect(try Self.get(url, token: token, proof: posted).status == 401, "a proof for another method")
        #expect(try Self.get(url, token: token, scheme: "Bearer", proof: nil).status == 401, "the bound token as a bearer token")
        let refused = try s.idp.dpopReport().refused
        #expect(refused["jti was used before"] == 1 && refused["htu is not the request's URI"] == 1
                && refused["htm is not the request's method"] == 1 && refused["a bound token used as a bearer token"] == 1, "\(refused)")

        // --json: the proof and until when its token is valid; each proof is a new one.
        let json = try Self.proof(s, ["GET", url, "--json"])
        #expect(json.status == 0 && json.stdout.contains("\"proof\" : \"") && json.stdout.contains("\"expires_at\" : "), "\(json.all)")
        let tokenJSON = try s.run(["token", "--json"], newSession: false)
        #expect(tokenJSON.stdout.contains("\"token_type\" : \"DPoP\""), "\(tokenJSON.all)")
        let fresh = String(try Self.proof(s, ["GET", url]).stdout.dropLast())
        #expect(try Self.get(url, token: token, proof: fresh).status == 200)
    }

    /// A resource that asks for its own nonce (RFC 9449 §9): the proof carries `--nonce`.
    @Test func aResourceNonceIsCarried() throws {
        let s = try SignedIn()
        let url = Self.userinfo(s.idp)
        #expect(try s.unlock(newSession: false).status == 0)
        let token = try #require(try s.cachedToken())
        try s.idp.setSwitch("dpop-nonce", "required")
        let without = try Self.get(url, token: token, proof: String(try Self.proof(s, ["GET", url]).stdout.dropLast()))
        let nonce = try #require(without.headers["dpop-nonce"], "the server's nonce")
        #expect(without.status == 401)
        let with = try Self.proof(s, ["GET", url, "--nonce", nonce])
        #expect(with.status == 0, "\(with.all)")
        #expect(try Self.get(url, token: token, proof: String(with.stdout.dropLast())).status == 200)
        let bad = try Self.proof(s, ["GET", url, "--nonce", "two words"])
        #expect(bad.status == 2 && bad.stderr.contains("DPoP-Nonce"), "\(bad.all)")
    }

    /// Nothing to prove with: no valid token in this session (no finger is asked for: the
    /// person runs unlock), a bearer sign-in, or a request that is not one.
    @Test func withoutABoundTokenTheProofIsRefusedWithASentence() throws {
        let s = try SignedIn()
        let url = Self.userinfo(s.idp)
        let none = try Self.proof(s, ["GET", url])
        #expect(none.status == 8 && none.stdout.isEmpty && none.stderr.contains("holds no access token that is still valid"),
                "\(none.all)")
        #expect(!none.stderr.contains("reader"), "no finger is asked for: \(none.all)")
        for arguments in [["GET"], ["GET", "ftp://example.com/"], ["G ET", url], ["GET", url, "extra"], ["GET", "https://"],
                          ["GET", "https://user@example.com/"]] {
            let wrong = try Self.proof(s, arguments)
            #expect(wrong.status == 2 && wrong.stderr.contains("fingerseal proof GET https://"), "\(arguments): \(wrong.all)")
        }

        let bearer = try SignedIn { try $0.setSwitch("dpop", "off") }
        #expect(try bearer.unlock(newSession: false).status == 0)
        #expect(try bearer.run(["token", "--json"], newSession: false).stdout.contains("\"token_type\" : \"Bearer\""))
        let unbound = try Self.proof(bearer, ["GET", Self.userinfo(bearer.idp)])
        #expect(unbound.status == 8 && unbound.stderr.contains("needs no proof. Send it as a Bearer token."), "\(unbound.all)")
    }

    /// `unlock --exec`: the command learns the scheme from FINGERSEAL_TOKEN_TYPE, and gets its
    /// proofs from `fingerseal proof` (its session is the one the unlock kept the token in).
    @Test func execTellsTheCommandHowToUseTheToken() throws {
        let s = try SignedIn()
        let url = Self.userinfo(s.idp)
        let script = #"printf '%s|%s|%s' "$FINGERSEAL_TOKEN_TYPE" "$(cat <&"$FINGERSEAL_ACCESS_TOKEN_FD")" "$("$0" proof GET "$1")""#
        let exec = try s.home.scan(["unlock", "--exec", "/bin/sh", "-c", script, Paths.cli, url], ["SCAN finger-a"])
        #expect(exec.status == 0, "\(exec.all)")
        let fields = exec.stdout.split(separator: "|").map(String.init)
        #expect(fields.count == 3 && fields.first == "DPoP", "\(exec.stdout)")
        guard fields.count == 3 else { return }
        #expect(try Self.get(url, token: fields[1], proof: fields[2]).status == 200)
    }
}
