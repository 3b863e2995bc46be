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
        try data.withUnsafeBytes { try hash($0) }
    }

    /// The digest of bytes where they lie (a token in secure memory, for DPoP's `ath`): no copy.
    public static func hash(_ data: UnsafeRawBufferPointer) throws -> [UInt8] {
        try Sodium.ensureReady()
        var digest = [UInt8](repeating: 0, count: length)
        let rc = crypto_hash_sha256(&digest, data.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(data.count))
        guard rc == 0 else { throw SodiumError.derivationFailed }
        return digest
    }
}
