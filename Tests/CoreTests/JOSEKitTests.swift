import Foundation
import Glibc
import Testing
import FingersealCore
import CurlKit
import JOSEKit
import SodiumKit
@testable import IdentityClient
@testable import TestSupport

/// Keys made at test time with the openssl CLI (RSA 2048, P-256, Ed25519), their public parts
/// as JWK members (through Debian's python3-cryptography), and tokens signed with them by
/// `openssl dgst -sign` and `openssl pkeyutl -sign -rawin`: an implementation independent of
/// the one under test.
final class TokenSigner: @unchecked Sendable {
    enum KeyType: String, CaseIterable { case rsa, ec, ed }

    static let shared = Result { try TokenSigner() }

    private let directory: TempDirectory
    /// Each key's public JWK members, without braces (so a test can add kid, alg, use).
    private let members: [KeyType: String]

    private static let exporter = #"""
import base64, json, sys
from cryptography.hazmat.primitives.serialization import load_pem_private_key, Encoding, PublicFormat
def b64(data): return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
def key(name): return load_pem_private_key(open(sys.argv[1] + "/" + name + ".pem", "rb").read(), None).public_key()
rsa = key("rsa").public_numbers()
ec = key("ec").public_numbers()
out = {
    "rsa": {"kty": "RSA", "n": b64(rsa.n.to_bytes((rsa.n.bit_length() + 7) // 8, "big")), "e": b64(rsa.e.to_bytes(3, "big"))},
    "ec": {"kty": "EC", "crv": "P-256", "x": b64(ec.x.to_bytes(32, "big")), "y": b64(ec.y.to_bytes(32, "big"))},
    "ed": {"kty": "OKP", "crv": "Ed25519", "x": b64(key("ed").public_bytes(Encoding.Raw, PublicFormat.Raw))},
}
for name, members in out.items(): print(name, json.dumps(members)[1:-1])
"""#

    private init() throws {
        directory = try TempDirectory()
        let generate: [(KeyType, [String])] = [(.rsa, ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]),
                                            (.ec, ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]),
                                            (.ed, ["-algorithm", "ed25519"])]
        for (kind, options) in generate {
            let made = try Child.run("/usr/bin/openssl", ["genpkey"] + options + ["-out", directory.file(kind.rawValue + ".pem")])
            guard made.status == 0 else { throw TestFailure("openssl genpkey: \(made.all)") }
        }
        let exported = try Child.run("/usr/bin/python3", ["-c", Self.exporter, directory.path])
        guard exported.status == 0 else { throw TestFailure("JWK export: \(exported.all)") }
        var members: [KeyType: String] = [:]
        for line in exported.stdout.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            if parts.count == 2, let kind = KeyType(rawValue: String(parts[0])) { members[kind] = String(parts[1]) }
        }
        guard members.count == 3 else { throw TestFailure("JWK export: \(exported.all)") }
        self.members = members
    }

    /// The public JWK of `kind`, with `kid` (and any `extra` members, e.g. `"use":"enc"`).
    func jwk(_ kind: KeyType, kid: String?, extra: String = "") -> String {
        "{" + (kid.map { #""kid":"\#($0)","# } ?? "") + (extra.isEmpty ? "" : extra + ",") + members[kind, default: ""] + "}"
    }

    /// A compact JWS of `claims` under `header`, signed with the key of `kind`.
    func sign(_ kind: KeyType, header: String, claims: String) throws -> String {
        let input = base64URL(Array(header.utf8)) + "." + base64URL(Array(claims.utf8))
        let name = UUID().uuidString
        let inputFile = directory.file(name + ".in"), signatureFile = directory.file(name + ".sig")
        try Data(input.utf8).write(to: URL(fileURLWithPath: inputFile))
        let key = directory.file(kind.rawValue + ".pem")
        let arguments = kind == .ed ? ["pkeyutl", "-sign", "-rawin", "-inkey", key, "-in", inputFile, "-out", signatureFile]
                                    : ["dgst", "-sha256", "-sign", key, "-out", signatureFile, inputFile]
        let signed = try Child.run("/usr/bin/openssl", arguments)
        guard signed.status == 0 else { throw TestFailure("openssl: \(signed.all)") }
        var signature = Array(try Data(contentsOf: URL(fileURLWithPath: signatureFile)))
        if kind == .ec { signature = try Self.rawECDSA(signature) }
        return input + "." + base64URL(signature)
    }

    /// DER ECDSA-Sig-Value → r || s, 32 bytes each (RFC 7518 3.4).
    static func rawECDSA(_ der: [UInt8]) throws -> [UInt8] {
        guard der.count > 2, der[0] == 0x30 else { throw TestFailure("not a DER signature") }
        var index = 2, raw: [UInt8] = []
        for _ in 0..<2 {
            guard index + 1 < der.count, der[index] == 0x02 else { throw TestFailure("not a DER INTEGER") }
            let length = Int(der[index + 1])
            let integer = der[(index + 2)..<(index + 2 + length)].drop { $0 == 0 }
            raw += [UInt8](repeating: 0, count: 32 - integer.count) + integer
            index += 2 + length
        }
        return raw
    }
}

func base64URL(_ bytes: [UInt8]) -> String {
    Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
        .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
}

/// The token with one bit of its signature flipped.
func flippingSignatureBit(_ token: String) -> String {
    var parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    var standard = parts[2].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while standard.count % 4 != 0 { standard += "=" }
    var signature = Array(Data(base64Encoded: standard) ?? Data())
    signature[signature.count / 2] ^= 0x01
    parts[2] = base64URL(signature)
    return parts.joined(separator: ".")
}

private let issuer = "https://idp.example.org/o"
private let client = "fingerseal-test"
private let now: Int64 = 1_800_000_000

private func claims(iss: String = issuer, aud: String = #""fingerseal-test""#, exp: Int64 = now + 300, iat: Int64 = now,
                    nonce: String? = "n-0S6_WzA2Mj", extra: String = "") -> String {
    #"{"iss":"\#(iss)","sub":"248289761001","aud":\#(aud),"exp":\#(exp),"iat":\#(iat)"#
        + (nonce.map { #","nonce":"\#($0)""# } ?? "") + extra + "}"
}

@Suite struct JOSEKitTests {
    // MARK: known answers (RFC 7515 A.2, A.3; RFC 8037 A.4)

    static let rfcPayload = "eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
    static let rfc7515RSA = #"{"keys":[{"kty":"RSA","n":"ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ","e":"AQAB"}]}"#
    static let rfc7515RSAToken = "eyJhbGciOiJSUzI1NiJ9." + rfcPayload + ".cC4hiUPoj9Eetdgtv3hF80EGrhuB__dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh7AAuHIm4Bh-0Qc_lF5YKt_O8W2Fp5jujGbds9uJdbF9CUAr7t1dnZcAcQjbKBYNX4BAynRFdiuB--f_nZLgrnbyTyWzO75vRK5h6xBArLIARNPvkSjtQBMHlb1L07Qe7K0GarZRmB_eSN9383LcOLn6_dO--xi12jzDwusC-eOkHWEsqtFZESc6BfI7noOPqvhJ1phCnvWh6IeYI2w9QOYEUipUTI8np6LbgGY9Fs98rqVt5AXLIhWkWywlVmtVrBp0igcN_IoypGlUPQGe77Rw"
    static let rfc7515EC = #"{"keys":[{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}"#
    static let rfc7515ECToken = "eyJhbGciOiJFUzI1NiJ9." + rfcPayload + ".DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q"
    static let rfc8037 = #"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#
    static let rfc8037Token = "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc.hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg"

    /// The RFCs' signatures verify: what fails is the payload, read only after the signature
    /// (the JWS examples carry no sub; RFC 8037's payload is not JSON). One flipped bit fails
    /// the signature itself.
    @Test(arguments: [(rfc7515RSA, rfc7515RSAToken, JOSEError.claim(.missing(.sub))),
                      (rfc7515EC, rfc7515ECToken, .claim(.missing(.sub))),
                      (rfc8037, rfc8037Token, .malformed(.notJSONObject(.claims)))])
    func knownAnswers(jwks: String, token: String, afterSignature: JOSEError) throws {
        let keys = try JSONWebKeySet(json: Array(jwks.utf8))
        #expect(keys.keyIDs == [nil])
        #expect(throws: afterSignature) {
            _ = try IDToken.verify(token, keys: keys, issuer: "joe", clientID: client, nonce: nil, now: 1_300_819_000)
        }
        #expect(throws: JOSEError.badSignature) {
            _ = try IDToken.verify(flippingSignatureBit(token), keys: keys, issuer: "joe", clientID: client, nonce: nil,
                                   now: 1_300_819_000)
        }
    }

    // MARK: tokens signed here

    @Test(arguments: TokenSigner.KeyType.allCases)
    func aTokenSignedWithEachKindVerifies(kind: TokenSigner.KeyType) throws {
        let signer = try TokenSigner.shared.get()
        let keys = try JSONWebKeySet(json: Array(#"{"keys":[\#(signer.jwk(.rsa, kid: "r")),\#(signer.jwk(.ec, kid: "e")),\#(signer.jwk(.ed, kid: "d"))]}"#.utf8))
        #expect(keys.keyIDs == ["r", "e", "d"])
        let algorithm = ["rsa": "RS256", "ec": "ES256", "ed": "EdDSA"][kind.rawValue] ?? ""
        let kid = ["rsa": "r", "ec": "e", "ed": "d"][kind.rawValue] ?? ""
        let token = try signer.sign(kind, header: #"{"alg":"\#(algorithm)","kid":"\#(kid)","typ":"JWT"}"#, claims: claims(
            extra: #","azp":"fingerseal-test","preferred_username":"alice","email":"a@example.org","email_verified":true,"name":"Alice""#))
        let header = try IDToken.header(token)
        #expect(header.algorithm == algorithm && header.keyID == kid)
        let verified = try IDToken.verify(token, keys: keys, issuer: issuer, clientID: client, nonce: "n-0S6_WzA2Mj", now: now)
        #expect(verified == IDTokenClaims(issuer: issuer, subject: "248289761001", audience: [client], expiresAt: now + 300,
                                          issuedAt: now, nonce: "n-0S6_WzA2Mj", authorizedParty: client,
                                          preferredUsername: "alice", email: "a@example.org", emailVerified: true, name: "Alice"))
        #expect(throws: JOSEError.badSignature) {
            _ = try IDToken.verify(flippingSignatureBit(token), keys: keys, issuer: issuer, clientID: client, nonce: nil, now: now)
        }
    }

    /// Every refusal, each with the reason it must give.
    @Test func refusals() throws {
        let signer = try TokenSigner.shared.get()
        let keys = try JSONWebKeySet(json: Array(#"{"keys":[\#(signer.jwk(.rsa, kid: "r")),\#(signer.jwk(.ec, kid: "e", extra: #""alg":"ES256""#))]}"#.utf8))
        func rsa(_ claims: String, header: String = #"{"alg":"RS256","kid":"r"}"#) throws -> String {
            try signer.sign(.rsa, header: header, claims: claims)
        }
        func check(_ token: String, nonce: String? = "n-0S6_WzA2Mj", _ expected: JOSEError, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(throws: expected, sourceLocation: sourceLocation) {
                _ = try IDToken.verify(token, keys: keys, issuer: issuer, clientID: client, nonce: nonce, now: now)
            }
        }
        let good = try rsa(claims())
        _ = try IDToken.verify(good, keys: keys, issuer: issuer, clientID: client, nonce: "n-0S6_WzA2Mj", now: now)
        let parts = good.split(separator: ".").map(String.init)

        check(flippingSignatureBit(good), .badSignature)
        // The RSA key's kid under ES256: no EC key has that kid. An RSA signature under the EC key's kid.
        check(try rsa(claims(), header: #"{"alg":"ES256","kid":"r"}"#), .unknownKey("r"))
        check(try rsa(claims(), header: #"{"alg":"RS256","kid":"e"}"#), .unknownKey("e"))
        check(#"\#(base64URL(Array(#"{"alg":"none"}"#.utf8))).\#(parts[1])."#, .unsupportedAlgorithm("none"))
        check(#"\#(base64URL(Array(#"{"alg":"HS256","kid":"r"}"#.utf8))).\#(parts[1]).\#(parts[2])"#, .unsupportedAlgorithm("HS256"))
        check(try rsa(claims(), header: #"{"alg":"RS256","kid":"nope"}"#), .unknownKey("nope"))
        // What a header says reaches an error as at most 64 printable characters.
        check(#"\#(base64URL(Array(#"{"alg":"\u0007\#(String(repeating: "x", count: 99))"}"#.utf8))).e30.AA"#,
              .unsupportedAlgorithm(String(repeating: "x", count: 64)))
        // Without a kid, a set with one key for the alg answers; here the RSA key is the only one.
        _ = try IDToken.verify(try rsa(claims(), header: #"{"alg":"RS256"}"#), keys: keys, issuer: issuer, clientID: client,
                               nonce: nil, now: now)
        check(try rsa(claims(iss: issuer + "/")), .claim(.wrongIssuer))
        check(try rsa(claims(aud: #"["someone-else"]"#)), .claim(.notForThisClient))
        check(try rsa(claims(aud: #"["fingerseal-test","other"]"#)), .claim(.noAuthorizedParty))
        check(try rsa(claims(aud: #"["fingerseal-test","other"]"#, extra: #","azp":"other""#)), .claim(.wrongAuthorizedParty))
        _ = try IDToken.verify(try rsa(claims(aud: #"["fingerseal-test","other"]"#, extra: #","azp":"fingerseal-test""#)),
                               keys: keys, issuer: issuer, clientID: client, nonce: nil, now: now)
        check(try rsa(claims(exp: now - 120)), .claim(.expired))
        check(try rsa(#"{"iss":"\#(issuer)","sub":"a","aud":"fingerseal-test","exp":\#(now - 120).9,"iat":1}"#), nonce: nil,
              .claim(.expired))
        check(try rsa(#"{"iss":"\#(issuer)","sub":"a","aud":"fingerseal-test","exp":1e300,"iat":1}"#), nonce: nil,
              .malformed(.notJSONObject(.claims)))
        #expect(try IDToken.verify(try rsa(#"{"iss":"\#(issuer)","sub":"a","aud":"fingerseal-test","exp":\#(now).5,"iat":1.5}"#),
                                   keys: keys, issuer: issuer, clientID: client, nonce: nil, now: now).issuedAt == 1)
        _ = try IDToken.verify(try rsa(claims(exp: now - 119)), keys: keys, issuer: issuer, clientID: client, nonce: nil, now: now)
        check(try rsa(claims(iat: now + 121)), .claim(.issuedInTheFuture))
        check(try rsa(claims(nonce: "other")), .claim(.nonceMismatch))
        check(try rsa(claims(nonce: nil)), .claim(.nonceMissing))
        _ = try IDToken.verify(try rsa(claims(nonce: nil)), keys: keys, issuer: issuer, clientID: client, nonce: nil, now: now)
        check(try rsa(#"{"sub":"x","aud":"fingerseal-test","exp":1,"iat":1}"#), .claim(.missing(.iss)))
        check(try rsa(claims(), header: #"{"alg":"RS256","kid":"r","alg":"RS256"}"#), .malformed(.repeatedMember(.header)))
        check(try rsa(#"{"iss":"\#(issuer)","sub":"a","sub":"b","aud":"fingerseal-test","exp":\#(now + 9),"iat":\#(now)}"#),
              .malformed(.repeatedMember(.claims)))
        check(try rsa(claims(), header: #"{"alg":"RS256","kid":"r","crit":["exp"]}"#), .malformed(.criticalExtensions))
        check(good + String(repeating: "A", count: 16 * 1024), .malformed(.tokenTooLarge(limit: 16384)))
        check("a.b", .malformed(.notSignedJWT))
        check("e30.e30.!!", .malformed(.notBase64URL))
        check("e30=.e30.AA", .malformed(.notBase64URL))
        // "e31" decodes to "{}" as well, but its last character has a stray low bit.
        check("e31.e30.AA", .malformed(.notBase64URL))
        check("W10.e30.AA", .malformed(.notJSONObject(.header)))
    }

    @Test func keySetsSkipWhatTheyCannotUse() throws {
        let signer = try TokenSigner.shared.get()
        let rsa = signer.jwk(.rsa, kid: "x")
        let n = try #require(rsa.split(separator: #""n": ""#).last?.prefix { $0 != "\"" })
        let short = rsa.replacingOccurrences(of: String(n), with: String(n.prefix(171)) + "w") // 1024 bits
        let set = #"""
        {"keys":[
          {"kty":"oct","k":"AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ","kid":"hmac"},
          \#(signer.jwk(.ec, kid: "enc", extra: #""use":"enc""#)),
          \#(signer.jwk(.ec, kid: "wrap", extra: #""key_ops":["wrapKey"]"#)),
          \#(signer.jwk(.rsa, kid: "ps", extra: #""alg":"PS256""#)),
          \#(signer.jwk(.rsa, kid: "mismatch", extra: #""alg":"ES256""#)),
          {"kty":"EC","crv":"P-384","x":"AAAA","y":"AAAA","kid":"p384"},
          {"kty":"OKP","crv":"X25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"x25519"},
          {"kty":"EC","crv":"P-256","x":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","y":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","kid":"offcurve"},
          {"kty":"RSA","n":"AQAB","e":"AQAB","kid":"tiny"},
          {"kty":"RSA","kid":"no-n","e":"AQAB"},
          "junk", 5, {"kid":7},
          \#(short.replacingOccurrences(of: #""kid":"x""#, with: #""kid":"1024""#)),
          \#(rsa.replacingOccurrences(of: #""e": "AQAB""#, with: #""e": "AQ""#).replacingOccurrences(of: #""kid":"x""#, with: #""kid":"e1""#)),
          \#(signer.jwk(.rsa, kid: "good", extra: #""use":"sig","alg":"RS256","key_ops":["verify"]"#)),
          \#(signer.jwk(.ed, kid: nil))
        ]}
        """#
        let keys = try JSONWebKeySet(json: Array(set.utf8))
        #expect(keys.keyIDs == ["good", nil])
        #expect(keys.contains(keyID: "good") && keys.contains(keyID: nil) && !keys.contains(keyID: "enc"))

        let notJSON = JOSEError.Malformation.notJSONObject(.keySet)
        for (bad, reason, words) in [("", notJSON, "the key set is not a valid JSON object"),
                                     ("[]", notJSON, "the key set is not a valid JSON object"),
                                     (#"{"keys":{}}"#, notJSON, "the key set is not a valid JSON object"),
                                     (#"{"keys":[],"keys":[]}"#, .repeatedMember(.keySet), "the key set repeats a member"),
                                     (#"{"keys":[\#(Array(repeating: "{}", count: 33).joined(separator: ","))]}"#, .tooManyKeys(limit: 32),
                                      "the key set has more than 32 keys"),
                                     (#"{"keys":[],"pad":"\#(String(repeating: "x", count: 65536))"}"#, .keySetTooLarge(limit: 65536),
                                      "the key set is larger than 65536 bytes")] {
            #expect(throws: JOSEError.malformed(reason)) { _ = try JSONWebKeySet(json: Array(bad.utf8)) }
            #expect(Messages.jose(reason) == words)
        }
    }

    @Test func userinfoAnswersAreParsedStrictly() throws {
        let claims = try UserInfo.parse(Array(#"{"sub":"248289761001","name":"Jane Doe","email":"j@example.org","email_verified":"true","picture":{"x":1}}"#.utf8))
        #expect(claims == IDTokenClaims(issuer: "", subject: "248289761001", audience: [], expiresAt: 0, issuedAt: 0,
                                        email: "j@example.org", emailVerified: true, name: "Jane Doe"))
        // Names are compared as JSON means them; the same name in another object is no repeat.
        #expect(try UserInfo.parse(Array(#"{"s\u0075b":"x","a":{"sub":1},"b":[{"sub":2},{"sub":3}]}"#.utf8)).subject == "x")
        for (bad, expected) in [(#"{"name":"x"}"#, JOSEError.claim(.missing(.sub))), (#"{"sub":""}"#, .claim(.missing(.sub))),
                                (#"{"sub":5}"#, .malformed(.notJSONObject(.userinfo))),
                                (#"{"sub":"a","sub":"b"}"#, .malformed(.repeatedMember(.userinfo))),
                                (#"{"sub":"a","na\u006de":"x","name":"y"}"#, .malformed(.repeatedMember(.userinfo))),
                                ("eyJhbGciOiJSUzI1NiJ9.e30.AA", .malformed(.notJSONObject(.userinfo)))] {
            #expect(throws: expected, "\(bad)") { _ = try UserInfo.parse(Array(bad.utf8)) }
        }
    }

    @Test func tokenAnswersCarryTheIDToken() throws {
        let answer = #"{"access_token":"at","token_type":"Bearer","id_token":"eyJhbGciOiJSUzI1NiJ9.e30.c2ln"}"#
        #expect(try TokenRequests.parseTokens(Array(answer.utf8)).idToken == "eyJhbGciOiJSUzI1NiJ9.e30.c2ln")
        #expect(try TokenRequests.parseTokens(Array(#"{"access_token":"at","token_type":"Bearer"}"#.utf8)).idToken == nil)
        for bad in ["a b.c.d", "", #"a.b.c\n"#, #"a.b\u0000"#, String(repeating: "a", count: 16 * 1024 + 1)] {
            let body = #"{"access_token":"at","token_type":"Bearer","id_token":"\#(bad)"}"#
            #expect(throws: TokenFailure.malformed(.idTokenInAnswer)) {
                _ = try TokenRequests.parseTokens(Array(body.utf8))
            }
        }
    }

    @Test func providerEndpointsArePublishedKeptAndChecked() throws {
        // A vault written before the fields existed still decodes.
        let old = try JSONDecoder().decode(ProviderRecord.self, from: Data(#"{"issuer":"https://i","clientID":"c"}"#.utf8))
        #expect(old.jwksURI == nil && old.userinfoEndpoint == nil)
        let metadata = try JSONDecoder().decode(ProviderMetadata.self, from: Data(#"{"issuer":"https://i","token_endpoint":"https://i/t","jwks_uri":"https://i/k","userinfo_endpoint":"https://i/u"}"#.utf8))
        let client = OAuthClient(metadata: metadata, clientID: "c", http: HTTPClient())
        #expect(client.providerRecord.jwksURI == "https://i/k" && client.providerRecord.userinfoEndpoint == "https://i/u")
        var record = client.providerRecord
        #expect(try OAuthClient(provider: record, clientSecret: nil, http: HTTPClient()).metadata == metadata)
        record.jwksURI = "http://idp.example.org/k"
        #expect(throws: TokenFailure.self) { _ = try OAuthClient(provider: record, clientSecret: nil, http: HTTPClient()) }
    }
}

/// A provider's key set and userinfo endpoint on 127.0.0.1: /jwks serves the file named in the
/// path's query and counts the fetches (/count), /userinfo answers the Bearer token "at".
private let providerHandler = #"""
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fetches = 0

    def log_message(self, *args):
        pass

    def reply(self, status, body, content_type="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.startswith("/jwks?"):
            Handler.fetches += 1
            self.reply(200, open(self.path[6:], "rb").read())
        elif self.path == "/count":
            self.reply(200, str(Handler.fetches).encode())
        elif self.path == "/userinfo":
            if self.headers.get("Authorization") != "Bearer at":
                self.reply(401, b"")
            else:
                self.reply(200, b'{"sub":"248289761001","preferred_username":"alice"}')
        elif self.path == "/userinfo-jwt":
            self.reply(200, b"eyJhbGciOiJSUzI1NiJ9.e30.AA", "application/jwt")
        else:
            self.reply(404, b"")
"""#

@Suite(.serialized) struct JWKSCacheTests {
    let signer: TokenSigner
    let server: PythonHTTPServer
    let directory: TempDirectory

    init() throws {
        signer = try TokenSigner.shared.get()
        server = try PythonHTTPServer(handler: providerHandler)
        directory = try TempDirectory()
    }

    func publish(_ keys: [String]) throws {
        try Data(#"{"keys":[\#(keys.joined(separator: ","))]}"#.utf8).write(to: URL(fileURLWithPath: directory.file("jwks.json")))
    }

    var jwksURI: String { server.url("/jwks?" + directory.file("jwks.json")) }

    func fetches() throws -> Int {
        Int(String(decoding: try HTTPClient().send(.get(server.url("/count"))).body, as: UTF8.self)) ?? -1
    }

    @Test func setsAreCachedRefetchedForNewKidsAndNotHammered() throws {
        defer { server.stop() }
        let clock = ManualClock(now)
        let cache = JWKSCache(clock: clock)
        try publish([signer.jwk(.rsa, kid: "one")])
        #expect(try cache.keys(for: jwksURI, keyID: "one", http: HTTPClient()).keyIDs == ["one"])
        #expect(try cache.keys(for: jwksURI, keyID: "one", http: HTTPClient()).keyIDs == ["one"])
        #expect(try fetches() == 1)

        // The provider rotates; a token with the new kid refetches once, at once.
        try publish([signer.jwk(.rsa, kid: "one"), signer.jwk(.ec, kid: "two")])
        clock.time += 1
        #expect(try cache.keys(for: jwksURI, keyID: "two", http: HTTPClient()).keyIDs == ["one", "two"])
        #expect(try fetches() == 2)
        // Another unknown kid within a minute of that fetch: the cached set, no request.
        clock.time += JWKSCache.refetchInterval - 1
        #expect(try cache.keys(for: jwksURI, keyID: "three", http: HTTPClient()).keyIDs == ["one", "two"])
        #expect(try fetches() == 2)
        // After the minute, it may ask again.
        clock.time += 1
        _ = try cache.keys(for: jwksURI, keyID: "three", http: HTTPClient())
        #expect(try fetches() == 3)
        // A known kid is served from memory until the set is a day old.
        clock.time += JWKSCache.maxAge - 1
        _ = try cache.keys(for: jwksURI, keyID: "one", http: HTTPClient())
        #expect(try fetches() == 3)
        clock.time += 1
        _ = try cache.keys(for: jwksURI, keyID: "one", http: HTTPClient())
        #expect(try fetches() == 4)
    }

    @Test func identityIsCheckedWithTheIDTokenOrElseUserinfo() throws {
        defer { server.stop() }
        try publish([signer.jwk(.ed, kid: "k")])
        let metadata = ProviderMetadata(issuer: issuer, tokenEndpoint: server.url("/token"), jwksURI: jwksURI,
                                        userinfoEndpoint: server.url("/userinfo"))
        let cache = JWKSCache(clock: ManualClock(now))
        let idToken = try signer.sign(.ed, header: #"{"alg":"EdDSA","kid":"k"}"#, claims: claims())
        func tokens(_ idToken: String?, access: String = "at") throws -> TokenSet {
            TokenSet(accessToken: try SecureBytes(copying: Array(access.utf8)), refreshToken: nil, expiresIn: nil, scope: nil,
                     idToken: idToken)
        }
        func check(_ tokens: TokenSet, _ metadata: ProviderMetadata, nonce: String? = "n-0S6_WzA2Mj") throws -> IDTokenClaims? {
            try IdentityVerification.verifiedIdentity(tokens: tokens, metadata: metadata, clientID: client, nonce: nonce,
                                               http: HTTPClient(), cache: cache, now: now)
        }
        #expect(try check(tokens(idToken), metadata)?.nonce == "n-0S6_WzA2Mj")
        #expect(throws: TokenFailure.identityRejected(.idToken(.claim(.nonceMismatch)))) {
            _ = try check(tokens(idToken), metadata, nonce: "other")
        }
        #expect(throws: TokenFailure.identityRejected(.idToken(.badSignature))) {
            _ = try check(tokens(flippingSignatureBit(idToken)), metadata)
        }
        #expect(throws: TokenFailure.identityRejected(.idToken(.unknownKey("gone")))) {
            _ = try check(tokens(try signer.sign(.ed, header: #"{"alg":"EdDSA","kid":"gone"}"#, claims: claims())), metadata)
        }
        // No ID token: userinfo, with the access token as the Bearer credential.
        #expect(try check(tokens(nil), metadata)?.preferredUsername == "alice")
        #expect(throws: TokenFailure.rejected(status: 401, code: nil)) { _ = try check(tokens(nil, access: "wrong"), metadata) }
        let jwtUserinfo = ProviderMetadata(issuer: issuer, tokenEndpoint: "", userinfoEndpoint: server.url("/userinfo-jwt"))
        #expect(throws: TokenFailure.identityRejected(.signedUserinfo)) {
            _ = try check(tokens(nil), jwtUserinfo)
        }
        // An ID token but no jwks_uri: userinfo too. Neither: nothing to check with.
        let noKeys = ProviderMetadata(issuer: issuer, tokenEndpoint: "", userinfoEndpoint: server.url("/userinfo"))
        #expect(try check(tokens(idToken), noKeys)?.subject == "248289761001")
        #expect(try check(tokens(idToken), ProviderMetadata(issuer: issuer, tokenEndpoint: "")) == nil)
    }
}
