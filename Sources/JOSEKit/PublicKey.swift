import CCrypto

/// One verification key: owns its OpenSSL EVP_PKEY and frees it in deinit. The pointer never
/// leaves this class.
///
/// Sendable: the key is never changed after init, and OpenSSL 3 allows one EVP_PKEY to be used
/// for verification by several threads at once (the broker serves requests on many).
final class PublicKey: @unchecked Sendable {
    enum KeyType: Sendable { case rsa, p256, ed25519 }

    let kind: KeyType
    private let key: OpaquePointer

    static let rsaBits = 2048...8192

    private init?(_ kind: KeyType, _ key: OpaquePointer?) {
        guard let key else { return nil }
        self.kind = kind
        self.key = key
    }

    deinit { fs_crypto_pkey_free(key) }

    /// RSA from its big-endian modulus and public exponent: 2048 to 8192 bits, and an odd
    /// exponent of at least 3 (e = 1 would make every message its own signature).
    convenience init?(rsaModulus modulus: [UInt8], exponent: [UInt8]) {
        let exponent = Array(exponent.drop { $0 == 0 })
        let significant = modulus.drop { $0 == 0 }.count
        guard (PublicKey.rsaBits.lowerBound / 8...PublicKey.rsaBits.upperBound / 8).contains(significant),
              (1...8).contains(exponent.count), let last = exponent.last, last & 1 == 1,
              exponent.count > 1 || last >= 3 else { return nil }
        self.init(.rsa, fs_crypto_rsa_public_key(modulus, modulus.count, exponent, exponent.count))
        guard PublicKey.rsaBits.contains(Int(fs_crypto_pkey_bits(key))) else { return nil }
    }

    /// P-256 from its affine coordinates; OpenSSL refuses a point off the curve.
    convenience init?(p256X x: [UInt8], y: [UInt8]) {
        guard x.count == 32, y.count == 32 else { return nil }
        self.init(.p256, fs_crypto_p256_public_key(x, y))
    }

    /// Ed25519 from its 32 raw bytes.
    convenience init?(ed25519 x: [UInt8]) {
        guard x.count == 32 else { return nil }
        self.init(.ed25519, fs_crypto_ed25519_public_key(x))
    }

    /// The JWS algorithm this key verifies, and nothing else.
    var algorithm: Algorithm {
        switch kind {
        case .rsa: .rs256
        case .p256: .es256
        case .ed25519: .edDSA
        }
    }

    /// Whether `signature` is this key's JWS signature (RFC 7518 3.3, 3.4; RFC 8037 3.1) over
    /// `message`.
    func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        switch kind {
        case .rsa:
            return fs_crypto_verify(key, 1, signature, signature.count, message, message.count) == 1
        case .p256:
            guard signature.count == 64 else { return false }
            var der = [UInt8](repeating: 0, count: 80)
            let length = fs_crypto_ecdsa_raw_to_der(signature, &der)
            guard length > 0 else { return false }
            return fs_crypto_verify(key, 1, der, length, message, message.count) == 1
        case .ed25519:
            guard signature.count == 64 else { return false }
            return fs_crypto_verify(key, 0, signature, signature.count, message, message.count) == 1
        }
    }
}
