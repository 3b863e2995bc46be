import FoundationEssentials

/// A provider's signing keys (RFC 7517), as published at its `jwks_uri`: only the keys this
/// code can use are kept. A key of another type, curve or algorithm, one for encryption
/// (`use` other than "sig", `key_ops` without "verify"), or one whose material is not
/// acceptable (an RSA modulus under 2048 bits, a point off the curve) is skipped, not fatal:
/// providers publish such keys beside the ones they sign ID tokens with.
public struct JSONWebKeySet: Sendable {
    struct Key: Sendable {
        let id: String?
        let publicKey: PublicKey
    }

    let keys: [Key]

    public static let maxBytes = 64 * 1024
    public static let maxKeys = 32

    public init(json: [UInt8]) throws(JOSEError) {
        guard json.count <= Self.maxBytes else { throw .malformed(.keySetTooLarge(limit: Self.maxBytes)) }
        let document = try JSONObject.decode(Document.self, json, what: .keySet)
        guard document.keys.count <= Self.maxKeys else { throw .malformed(.tooManyKeys(limit: Self.maxKeys)) }
        keys = document.keys.compactMap { $0.member.flatMap(Self.usable) }
    }

    /// The key IDs of the usable keys, in the document's order (nil for a key without one).
    public var keyIDs: [String?] { keys.map(\.id) }

    public func contains(keyID: String?) -> Bool {
        keys.contains { $0.id == keyID }
    }

    /// The keys that may verify a token with this alg and kid. Without a kid, only a set with
    /// exactly one key for the alg answers (OIDC Core 10.1: several keys mean a kid is required).
    func candidates(algorithm: Algorithm, keyID: String?) -> [PublicKey] {
        let fitting = keys.filter { $0.publicKey.algorithm == algorithm }
        guard let keyID else { return fitting.count == 1 ? [fitting[0].publicKey] : [] }
        return fitting.filter { $0.id == keyID }.map(\.publicKey)
    }

    private struct Document: Decodable {
        let keys: [Lenient]
    }

    /// One array element: a key object, or anything else (which is skipped).
    private struct Lenient: Decodable {
        let member: Member?
        init(from decoder: Decoder) throws { member = try? Member(from: decoder) }
    }

    private struct Member: Decodable {
        let kty: String
        let kid: String?
        let use: String?
        let alg: String?
        let key_ops: [String]?
        let crv: String?
        let n: String?
        let e: String?
        let x: String?
        let y: String?
    }

    private static func usable(_ member: Member) -> Key? {
        if let use = member.use, use != "sig" { return nil }
        if let operations = member.key_ops, !operations.contains("verify") { return nil }
        func bytes(_ text: String?) -> [UInt8]? { text.flatMap { Base64URL.decode($0.utf8) } }
        let key: PublicKey?
        switch (member.kty, member.crv) {
        case ("RSA", _):
            guard let n = bytes(member.n), let e = bytes(member.e) else { return nil }
            key = PublicKey(rsaModulus: n, exponent: e)
        case ("EC", "P-256"):
            guard let x = bytes(member.x), let y = bytes(member.y) else { return nil }
            key = PublicKey(p256X: x, y: y)
        case ("OKP", "Ed25519"):
            guard let x = bytes(member.x) else { return nil }
            key = PublicKey(ed25519: x)
        default:
            return nil
        }
        guard let key else { return nil }
        // A key that names an alg is used with that alg only.
        if let alg = member.alg, alg != key.algorithm.rawValue { return nil }
        return Key(id: member.kid, publicKey: key)
    }
}
