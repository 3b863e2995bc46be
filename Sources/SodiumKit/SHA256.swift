import CSodium

/// SHA-256 (libsodium's crypto_hash_sha256), for protocols that name it, such as PKCE's S256.
/// Fingerseal's own hashing uses BLAKE2b (`GenericHash`).
public enum SHA256 {
    public static let length = Int(crypto_hash_sha256_BYTES)

    public static func hash(_ data: [UInt8]) throws -> [UInt8] {
        try Sodium.ensureReady()
        var digest = [UInt8](repeating: 0, count: length)
        guard crypto_hash_sha256(&digest, data, UInt64(data.count)) == 0 else { throw SodiumError.derivationFailed }
        return digest
    }

    /// The digest of a secret (a PKCE verifier): the digest itself is what gets published.
    public static func hash(_ data: SecureBytes) throws -> [UInt8] {
        try Sodium.ensureReady()
        var digest = [UInt8](repeating: 0, count: length)
        let rc = data.withBytePointer { bytes, count in crypto_hash_sha256(&digest, bytes, UInt64(count)) }
        guard rc == 0 else { throw SodiumError.derivationFailed }
        return digest
    }
}
