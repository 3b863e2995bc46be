// One libFuzzer entry for every parser of untrusted input; the first byte picks the parser,
// so one corpus and one build cover them all. Crashes, traps and leaks are the findings;
// the round-trip checks below trap on a broken invariant.
@testable import FingersealCore
import FingersealWire
import FoundationEssentials
@testable import IdentityClient
@testable import JOSEKit
import SodiumKit
@testable import ZoneInfo

func fuzzParsers(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data, size > 0 else { return 0 }
    let selector = data[0]
    let input = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch selector % 21 {
    case 0:
        // The envelope of every vault file: whatever it accepts must re-encode to the input.
        for kind in [Container.FileType.vault, .deviceKey, .lockout] {
            if let body = try? Container.decode(kind, input, file: "fuzz") {
                guard (try? Container.encode(kind, body: body)) == input else { trap() }
            }
        }
    case 1:
        // The vault document's JSON (reached only behind a valid checksum in real use).
        if let document = try? VaultDocument.decode(input, file: "fuzz") {
            _ = try? document.authenticatedBytes()
            for slot in document.keyslots { _ = slot.associatedData(vaultID: document.vaultID) }
        }
    case 2:
        // The lockout record, and the policy applied to whatever it accepts.
        if let state = try? LockoutState.decode(input) {
            // The owner's counters and every other account's.
            for applicant in [nil] + (state.others ?? [:]).keys.compactMap({ UInt32($0) }) {
                let counters = state.counters(for: applicant)
                _ = LockoutPolicy.pinWait(counters, now: 1_800_000_000)
                _ = LockoutPolicy.pinDelay(afterFailures: counters.pinFailures)
            }
            _ = LockoutPolicy.pinDelay(afterFailures: state.passwordFailures ?? 0)
        }
    case 3:
        // /etc/fingerseal/fingerseal.conf (or the older /etc/security/fingerseal.conf)
        var options = Options()
        _ = try? options.applyConfigFile(String(decoding: input, as: UTF8.self), source: "fuzz")
    case 4:
        // PAM module arguments (NUL-separated here).
        var options = Options()
        let arguments = input.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        _ = try? options.apply(arguments, source: "fuzz")
    case 6:
        // An identity provider's token answer (untrusted network input).
        _ = try? TokenRequests.parseTokens(input)
    case 7:
        // An identity provider's error answer to each kind of request, with the status from
        // the first byte and whether the client authenticated from the second.
        let status = 400 + Int(input.first ?? 0) % 200
        let authenticated = input.dropFirst().first.map { $0 & 1 == 1 } ?? false
        for kind in TokenRequests.OAuthRequest.allCases {
            _ = TokenRequests.failure(kind, status: status, body: Array(input.dropFirst(2)), authenticated: authenticated)
        }
    case 8:
        // A discovery document, and the URL policy on whatever it names.
        if let metadata = try? JSONDecoder().decode(ProviderMetadata.self, from: Data(input)) {
            _ = try? Discovery.requireSecure(metadata.tokenEndpoint)
            _ = try? Discovery.requireSecure(metadata.issuer)
        }
    case 10:
        // The broker's wire decoder: any packet a client (or, for the module and the CLI, a
        // broker) can send. Whatever decodes must encode to a packet that decodes to the same
        // encoding again.
        input.withUnsafeBytes { packet in
            if let message = try? ClientMessage.decode(packet) {
                let again = message.encoded()
                guard let second = again.withUnsafeBytes({ try? ClientMessage.decode($0) }), second.encoded() == again else { trap() }
                // The request's options as the broker types them: what decodes must encode
                // to options that decode to the same value, and pass the same checks.
                if case let .request(request) = message,
                   let options = try? RequestOptions(request.command, decoding: request.options, arguments: request.arguments) {
                    guard let typed = try? RequestOptions(request.command, decoding: options.values, arguments: request.arguments),
                          typed == options else { trap() }
                }
            }
            if let message = try? BrokerMessage.decode(packet) {
                let again = message.encoded()
                guard let second = again.withUnsafeBytes({ try? BrokerMessage.decode($0) }), second.encoded() == again else { trap() }
            }
        }
    case 11:
        // The browser's redirect: NUL-separated name=value pairs, as the listener hands them
        // over (the code apart, in secure memory).
        var parameters: [String: String] = [:]
        var code: SecureBytes? = nil
        for pair in input.split(separator: 0) {
            let parts = pair.split(separator: 0x3d, maxSplits: 1, omittingEmptySubsequences: false)
            let value = parts.count > 1 ? Array(parts[1]) : []
            if parts[0].elementsEqual("code".utf8) {
                code = try? SecureBytes(copying: value)
            } else {
                parameters[String(decoding: parts[0], as: UTF8.self)] = String(decoding: value, as: UTF8.self)
            }
        }
        _ = AuthorizationResponse(parameters, code: code)
    case 12:
        // A sealed file given to `fingerseal reveal` (any file a user may be handed).
        _ = try? SealedFile.parse(input)
    case 14:
        // The audit trail (audit.jsonl): the file split into lines, each line's parser, and
        // the chain walk over whatever comes out (with a fixed key: nothing verifies, every
        // classification path runs). A line the parser accepts must parse the same again.
        let contents = AuditFileContents.parse(input)
        guard contents.lines.count == input.lazy.filter({ $0 == 0x0a }).count else { trap() }
        for line in contents.lines {
            guard let parsed = line.parsed else { continue }
            guard AuditLine.parse(parsed.raw[...]) == parsed, parsed.body.last == 0x7d else { trap() }
            _ = parsed.entry.sentence
        }
        if let key = try? SecureBytes(count: 32) {
            var verifier = AuditVerifier(key: key, vaultID: String(repeating: "0", count: 32))
            _ = verifier.walk(contents, "fuzz", expected: 1, prev: AuditLine.genesis)
        }
    case 15:
        // A provider's key set (JWKS), and a userinfo answer: every key kept must be found
        // again by its kid.
        if let keys = try? JSONWebKeySet(json: input) {
            guard keys.keyIDs.allSatisfy({ keys.contains(keyID: $0) }) else { trap() }
        }
        _ = try? UserInfo.parse(input)
        _ = JSONObject.hasUniqueMembers(input)
    case 16:
        // An ID token, its header alone, then verified with the RFC 7515/8037 example keys:
        // nothing the fuzzer makes may pass (it cannot sign).
        let token = String(decoding: input, as: UTF8.self)
        _ = try? IDToken.header(token)
        if (try? IDToken.verify(token, keys: fuzzKeys, issuer: "joe", clientID: "c", nonce: nil, now: 1_300_819_000)) != nil {
            trap()
        }
    case 9:
        // A TZif file under a name a client chose (issue 23 §4): whatever parses must answer
        // for any instant, with offsets inside the bound the parser promises.
        if let zone = try? TZif(parsing: input) {
            for instant: Int64 in [Int64.min, -4_000_000_000, -1, 0, 1_784_116_800, 4_102_444_800, Int64.max] {
                guard abs(Int(zone.type(at: instant).utcOffset)) < 26 * 3600 else { trap() }
            }
        }
    case 13:
        // A POSIX TZ rule (a client's TZ, a TZif footer): the same.
        if let rule = PosixRule(String(decoding: input, as: UTF8.self)) {
            for instant: Int64 in [Int64.min, -4_000_000_000, -1, 0, 1_784_116_800, 4_102_444_800, Int64.max] {
                guard abs(Int(rule.type(at: instant).utcOffset)) < 26 * 3600 else { trap() }
            }
        }
    case 17:
        // The strict in-place JSON reader of token and device answers: whatever it accepts,
        // JSONDecoder must read as an object too, with the same strings, and a secret read
        // into secure memory must be the same bytes as the string.
        input.withUnsafeBytes { bytes in
            guard let members = try? JSONMembers(bytes) else { return }
            let decoded = try? JSONDecoder().decode([String: FuzzJSON].self, from: Data(input))
            guard let decoded else { trap() }
            // Strings compare by canonical equivalence: only ASCII names are compared one to one.
            guard members.members.keys.allSatisfy({ $0.allSatisfy { $0 < 0x80 } }) else { return }
            guard decoded.count == members.members.count else { trap() }
            for (bytes, member) in members.members {
                let name = String(decoding: bytes, as: UTF8.self)
                _ = try? members.integer(name)
                guard member.kind == .string else { continue }
                guard case let .string(text)? = decoded[name], (try? members.string(name)) == text,
                      (try? members.secret(name))?.copyBytes() == Array(text.utf8) else { trap() }
            }
        }
        if let body = try? SecureBytes(copying: input) {
            _ = try? TokenRequests.parseTokens(body)
        }
    case 18:
        // The policy files that reserve names from provisioning (sudoers, polkit, /etc/security,
        // PAM, login.defs: root's files, but read by the broker for every new account): every
        // name found must be one useradd could be given.
        let text = String(decoding: input, as: UTF8.self)
        let found = PolicyNames.sudoers(text).union(PolicyNames.polkit(text)).union(PolicyNames.semicolonFields(text, [2, 4]))
            .union(PolicyNames.access(text)).union(PolicyNames.limits(text)).union(PolicyNames.pamWheel(text))
        guard found.allSatisfy(AccountName.isValid) else { trap() }
        _ = PolicyNames.loginDefs(text)
    case 19:
        // A provider's DPoP-Nonce header and a request's URL (RFC 9449): a nonce kept is
        // NQCHAR only and bounded; a proof is made for any URL its target accepts, whose htu
        // has neither query nor fragment; a token answer read as proved.
        let text = String(decoding: input, as: UTF8.self)
        let binding = FuzzDPoP.binding
        let before = binding.currentNonce
        binding.remember(nonce: text)
        if let kept = binding.currentNonce, kept != before {
            guard kept == text, kept.utf8.count <= 256, kept.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7e && $0 != 0x22 && $0 != 0x5c })
            else { trap() }
        }
        if let htu = DPoPProof.targetURI(text) {
            guard !htu.contains("?"), !htu.contains("#"), (try? binding.proof(method: "POST", url: text)) != nil else { trap() }
        }
        if let body = try? SecureBytes(copying: input) { _ = try? TokenRequests.parseTokens(body, proved: true) }
    case 20:
        // The proof key's record in the vault (behind the vault's MAC in real use): what it
        // accepts re-encodes to the input.
        if let bytes = try? SecureBytes(copying: input), let material = try? ProofKeyMaterial.decode(bytes) {
            guard let again = try? material.encoded(), again.copyBytes() == input else { trap() }
        }
    default:
        // A full vault file: envelope, then document.
        if let body = try? Container.decode(.vault, input, file: "fuzz") {
            _ = try? VaultDocument.decode(body, file: "fuzz")
        }
    }
    return 0
}

/// Any JSON value, for comparing what JSONMembers accepts with what JSONDecoder reads.
enum FuzzJSON: Decodable {
    case string(String), other

    init(from decoder: Decoder) throws {
        // Whatever is not a string is not compared (a number JSONDecoder finds too large is
        // still JSON).
        let container = try decoder.singleValueContainer()
        self = (try? container.decode(String.self)).map { .string($0) } ?? .other
    }
}

/// The public keys of RFC 7515 A.2 (RSA), A.3 (P-256) and RFC 8037 A.2 (Ed25519), one per alg.
let fuzzKeys: JSONWebKeySet = {
    let set = #"{"keys":[{"kty":"RSA","n":"ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ","e":"AQAB"},{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#
    guard let keys = try? JSONWebKeySet(json: Array(set.utf8)), keys.keyIDs.count == 3 else { trap() }
    return keys
}()

/// A deliberate crash: libFuzzer saves the input that broke the invariant.
func trap() -> Never {
    fatalError("fuzz invariant broken")
}

/// One key for every proof the fuzzer makes (a key per input would be most of the time).
enum FuzzDPoP {
    nonisolated(unsafe) static let binding = DPoPBinding(key: try! SoftwareProofKey.generate(), clock: { 1_700_000_000 })
}
