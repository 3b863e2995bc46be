import CCrypto
import FoundationEssentials
import SodiumKit

/// What signs DPoP proofs (RFC 9449): a P-256 key whose public half goes into each proof's
/// header. The TPM's key (never exported) and `SoftwareProofKey` (sealed in the vault where
/// there is no TPM) are both.
public protocol ProofSigner: Sendable {
    /// The public point's affine coordinates (JWK "x", "y"), 32 bytes each.
    var publicX: [UInt8] { get }
    var publicY: [UInt8] { get }
    /// ES256 over `message` (SHA-256, ECDSA): r || s, 64 bytes.
    func sign(_ message: [UInt8]) throws(ProofKeyError) -> [UInt8]
}

public enum ProofKeyError: Error, Equatable, Sendable {
    /// The stored key is not a P-256 private key (damaged, or of another kind).
    case unreadable
    /// libcrypto or the TPM could not make a key or a signature.
    case failed(String)
    /// The key is another TPM's: this vault was made on another computer (a copy).
    case otherTPM
}

extension ProofSigner {
    /// The key's JWK thumbprint (RFC 7638): SHA-256 over its required members in lexical
    /// order, base64url. What a bound token's `cnf.jkt` and `dpop_jkt` name.
    public var thumbprint: String {
        let members = #"{"crv":"P-256","kty":"EC","x":""# + Base64URL.encode(publicX) + #"","y":""# + Base64URL.encode(publicY) + #""}"#
        // SHA-256 of a few bytes in memory cannot fail short of a broken libcrypto.
        return Base64URL.encode((try? SHA256.hash(Array(members.utf8))) ?? [])
    }
}

/// A P-256 key in this process (libcrypto), for a vault without a TPM: its private half is
/// sealed in the vault (`privateKeyDER`) and read back for each request. Weaker than the TPM's
/// key, which never leaves the chip: `status` says so.
public final class SoftwareProofKey: ProofSigner, @unchecked Sendable {
    private let key: OpaquePointer
    public let publicX: [UInt8]
    public let publicY: [UInt8]

    private init(_ key: OpaquePointer) throws(ProofKeyError) {
        var x = [UInt8](repeating: 0, count: 32), y = [UInt8](repeating: 0, count: 32)
        guard fs_crypto_p256_public_coordinates(key, &x, &y) == 1 else {
            fs_crypto_pkey_free(key)
            throw .failed("the public point")
        }
        self.key = key
        (publicX, publicY) = (x, y)
    }

    deinit { fs_crypto_pkey_free(key) }

    /// A new key.
    public static func generate() throws(ProofKeyError) -> SoftwareProofKey {
        guard let key = fs_crypto_p256_generate() else { throw .failed("key generation") }
        return try SoftwareProofKey(key)
    }

    /// The key sealed earlier (`withPrivateKeyDER`).
    public convenience init(privateKeyDER der: UnsafeRawBufferPointer) throws(ProofKeyError) {
        guard let base = der.baseAddress, let key = fs_crypto_p256_private_key(base.assumingMemoryBound(to: UInt8.self), der.count) else {
            throw .unreadable
        }
        try self.init(key)
    }

    /// Lends the private key's DER to `body` (to seal it), wiped after.
    public func withPrivateKeyDER<T>(_ body: (UnsafeRawBufferPointer) throws -> T) throws -> T {
        var der = [UInt8](repeating: 0, count: 256)
        defer { der.withUnsafeMutableBytes { fs_crypto_cleanse($0.baseAddress, $0.count) } }
        let length = fs_crypto_private_key_der(key, &der, der.count)
        guard length > 0 else { throw ProofKeyError.failed("the private key's encoding") }
        return try der.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[..<length])) }
    }

    public func sign(_ message: [UInt8]) throws(ProofKeyError) -> [UInt8] {
        var raw = [UInt8](repeating: 0, count: 64)
        guard fs_crypto_es256_sign(key, message, message.count, &raw) == 1 else { throw .failed("signing") }
        return raw
    }
}
