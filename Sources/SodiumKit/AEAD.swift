import CSodium

/// XChaCha20-Poly1305 (IETF) with a random 24-byte nonce per message.
public enum AEAD {
    public static let keyLength = Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES)
    public static let nonceLength = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    public static let tagLength = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)

    public struct Sealed: Equatable, Sendable {
        public let nonce: [UInt8]
        public let ciphertext: [UInt8]
        public init(nonce: [UInt8], ciphertext: [UInt8]) {
            self.nonce = nonce
            self.ciphertext = ciphertext
        }
    }

    /// Encrypts with a random nonce, or `nonce` when the caller needs it first (to put it in
    /// the associated data); a nonce must never be used twice with one key.
    public static func seal(_ plaintext: SecureBytes, key: SecureBytes, aad: [UInt8], nonce given: [UInt8]? = nil) throws -> Sealed {
        try check(key: key)
        let nonce = try given ?? Sodium.randomBytes(nonceLength)
        guard nonce.count == nonceLength else {
            throw SodiumError.invalidLength(what: "nonce", expected: nonceLength, actual: nonce.count)
        }
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count + tagLength)
        var written: UInt64 = 0
        let rc = plaintext.withBytePointer { message, messageLength in
            key.withBytePointer { keyBytes, _ in
                crypto_aead_xchacha20poly1305_ietf_encrypt(
                    &ciphertext, &written, message, UInt64(messageLength),
                    aad, UInt64(aad.count), nil, nonce, keyBytes)
            }
        }
        guard rc == 0 else { throw SodiumError.authenticationFailed }
        return Sealed(nonce: nonce, ciphertext: ciphertext)
    }

    /// Decrypts into secure memory; throws `.authenticationFailed` on any tampering, a wrong
    /// key or wrong associated data.
    public static func open(_ sealed: Sealed, key: SecureBytes, aad: [UInt8]) throws -> SecureBytes {
        try check(key: key)
        guard sealed.nonce.count == nonceLength else {
            throw SodiumError.invalidLength(what: "nonce", expected: nonceLength, actual: sealed.nonce.count)
        }
        guard sealed.ciphertext.count >= tagLength else { throw SodiumError.authenticationFailed }
        let plaintext = try SecureBytes(count: sealed.ciphertext.count - tagLength)
        var written: UInt64 = 0
        let rc = plaintext.withBytePointer { output, _ in
            key.withBytePointer { keyBytes, _ in
                crypto_aead_xchacha20poly1305_ietf_decrypt(
                    output, &written, nil, sealed.ciphertext, UInt64(sealed.ciphertext.count),
                    aad, UInt64(aad.count), sealed.nonce, keyBytes)
            }
        }
        guard rc == 0 else { throw SodiumError.authenticationFailed }
        return plaintext
    }

    /// Encrypts `buffer`'s bytes in place and appends the tag (libsodium allows the message
    /// and the ciphertext to be the same memory): a large payload is never held twice. The
    /// buffer needs `tagLength` bytes of spare capacity.
    public static func sealInPlace(_ buffer: SecureBytes, key: SecureBytes, aad: [UInt8], nonce: [UInt8]) throws {
        try check(key: key)
        guard nonce.count == nonceLength else {
            throw SodiumError.invalidLength(what: "nonce", expected: nonceLength, actual: nonce.count)
        }
        let length = buffer.count
        guard buffer.capacity - length >= tagLength else {
            throw SodiumError.invalidLength(what: "buffer", expected: length + tagLength, actual: buffer.capacity)
        }
        buffer.count = length + tagLength
        var written: UInt64 = 0
        let rc = buffer.withBytePointer { bytes, _ in
            key.withBytePointer { keyBytes, _ in
                crypto_aead_xchacha20poly1305_ietf_encrypt(bytes, &written, bytes, UInt64(length), aad, UInt64(aad.count),
                                                           nil, nonce, keyBytes)
            }
        }
        guard rc == 0 else {
            buffer.removeAll()
            throw SodiumError.authenticationFailed
        }
    }

    /// Decrypts the ciphertext that fills `buffer` from `offset` to its end, in place: the
    /// plaintext is left at `offset` and returned as its range. Throws (leaving nothing
    /// readable) on any tampering, a wrong key or wrong associated data.
    public static func openInPlace(_ buffer: SecureBytes, from offset: Int, key: SecureBytes, aad: [UInt8],
                                   nonce: [UInt8]) throws -> Range<Int> {
        try check(key: key)
        guard nonce.count == nonceLength else {
            throw SodiumError.invalidLength(what: "nonce", expected: nonceLength, actual: nonce.count)
        }
        guard offset >= 0, buffer.count - offset >= tagLength else { throw SodiumError.authenticationFailed }
        let length = buffer.count - offset
        var written: UInt64 = 0
        let rc = buffer.withBytePointer { bytes, _ in
            key.withBytePointer { keyBytes, _ in
                crypto_aead_xchacha20poly1305_ietf_decrypt(bytes + offset, &written, nil, bytes + offset, UInt64(length),
                                                           aad, UInt64(aad.count), nonce, keyBytes)
            }
        }
        guard rc == 0 else { throw SodiumError.authenticationFailed }
        return offset..<(offset + Int(written))
    }

    private static func check(key: SecureBytes) throws {
        try Sodium.ensureReady()
        guard key.count == keyLength else { throw SodiumError.invalidLength(what: "key", expected: keyLength, actual: key.count) }
    }
}
