import Foundation
import Glibc
import JOSEKit
import Testing
@testable import TestSupport

/// DPoP proofs (RFC 9449 §4) as an independent implementation reads them: jwcrypto, from the
/// test venv, verifies each proof's signature with the JWK in its header and reports the
/// claims and the key's thumbprint.
@Suite struct DPoPProofTests {
    static let reader = #"""
import base64, hashlib, json, sys
from jwcrypto import jwk, jws
token = sys.argv[1]
header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
key = jwk.JWK(**header["jwk"])
proof = jws.JWS()
proof.deserialize(token)
proof.allowed_algs = ["ES256"]
proof.verify(key)
claims = json.loads(proof.payload)
token_hash = base64.urlsafe_b64encode(hashlib.sha256(sys.argv[2].encode()).digest()).rstrip(b"=").decode()
print(json.dumps({"typ": header["typ"], "alg": header["alg"], "private": "d" in header["jwk"],
                  "thumbprint": key.thumbprint(), "expected_ath": token_hash, **claims}))
"""#

    struct Read: Decodable {
        let typ: String, alg: String, `private`: Bool, thumbprint: String, expected_ath: String
        let jti: String, htm: String, htu: String, iat: Int64
        let nonce: String?, ath: String?
    }

    static func read(_ proof: String, token: String = "") throws -> Read {
        let run = try Child.run(Paths.packageRoot + "/.venv/bin/python", ["-c", reader, proof, token])
        guard run.status == 0 else { throw TestFailure("jwcrypto refused the proof: \(run.stderr)") }
        return try JSONDecoder().decode(Read.self, from: Data(run.stdout.utf8))
    }

    @Test func jwcryptoVerifiesTheProofAndItsClaims() throws {
        let key = try SoftwareProofKey.generate()
        let token = Array("an access token".utf8)
        let proof = try token.withUnsafeBytes {
            try DPoPProof.make(signer: key, method: "GET", url: "HTTPS://IdP.Example:443/o/userinfo/?a=1#f",
                               now: 1_700_000_000, jti: Array(repeating: 7, count: 16), nonce: "n-1", accessToken: $0)
        }
        let read = try Self.read(proof, token: "an access token")
        #expect(read.typ == "dpop+jwt" && read.alg == "ES256" && !read.private)
        #expect(read.htm == "GET" && read.htu == "https://idp.example/o/userinfo/" && read.iat == 1_700_000_000 && read.nonce == "n-1")
        #expect(read.thumbprint == key.thumbprint, "RFC 7638 as jwcrypto computes it")
        #expect(read.ath == read.expected_ath)
        #expect(read.jti.count >= 22)
    }

    /// The key sealed as DER comes back as the same key: proofs after a restart are the
    /// same key's.
    @Test func theSealedKeyComesBackAsItself() throws {
        let key = try SoftwareProofKey.generate()
        let again = try key.withPrivateKeyDER { try SoftwareProofKey(privateKeyDER: $0) }
        #expect(again.thumbprint == key.thumbprint && again.publicX == key.publicX)
        let proof = try DPoPProof.make(signer: again, method: "POST", url: "http://127.0.0.1:8000/o/token/", now: 1, jti: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16])
        #expect(try Self.read(proof).thumbprint == key.thumbprint)
        #expect(throws: ProofKeyError.unreadable) {
            try [UInt8](repeating: 0x30, count: 40).withUnsafeBytes { try SoftwareProofKey(privateKeyDER: $0) }
        }
    }

    @Test(arguments: [
        ("https://idp.example/o/token/", "https://idp.example/o/token/"),
        ("https://IDP.example:443/o/token/?x=1", "https://idp.example/o/token/"),
        ("http://127.0.0.1:80/token#frag", "http://127.0.0.1/token"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/"),
        ("https://[::1]:8443/t", "https://[::1]:8443/t"),
    ])
    func theTargetURIIsNormalized(_ url: String, _ htu: String) {
        #expect(DPoPProof.targetURI(url) == htu)
    }

    @Test(arguments: ["ftp://idp.example/", "https://user:pw@idp.example/", "not a url", "https:///path"])
    func whatIsNotAnHTTPURLHasNoTarget(_ url: String) {
        #expect(DPoPProof.targetURI(url) == nil)
    }
}
