import CSodium

/// Subkeys from a master key (libsodium's BLAKE2b-based crypto_kdf).
public enum KeyDerivation {
    public static let contextLength = Int(crypto_kdf_CONTEXTBYTES)

    /// `context` must be exactly 8 ASCII bytes; `id` separates keys within one context.
    public static func subkey(of master: SecureBytes, id: UInt64, context: String, length: Int = 32) throws -> SecureBytes {
        try Sodium.ensureReady()
        let contextBytes = Array(context.utf8)
        guard contextBytes.count == contextLength else {
            throw SodiumError.invalidLength(what: "context", expected: contextLength, actual: contextBytes.count)
        }
        guard master.count == Int(crypto_kdf_KEYBYTES) else {
            throw SodiumError.invalidLength(what: "master key", expected: Int(crypto_kdf_KEYBYTES), actual: master.count)
        }
        let subkey = try SecureBytes(count: length)
        let contextChars = contextBytes.map { CChar(bitPattern: $0) }
        let rc = subkey.withBytePointer { output, outputLength in
            master.withBytePointer { key, _ in
                crypto_kdf_derive_from_key(output, outputLength, id, contextChars, key)
            }
        }
        guard rc == 0 else { throw SodiumError.derivationFailed }
        return subkey
    }
}

/// BLAKE2b (crypto_generichash): unkeyed for checksums, keyed for MACs.
public enum GenericHash {
    /// Keyed BLAKE2b of a secret, into protected memory: a key from two secrets (`key` and
    /// `message`), each of which alone gives nothing of it.
    public static func hash(secret message: SecureBytes, key: SecureBytes, length: Int = 32) throws -> SecureBytes {
        try Sodium.ensureReady()
        let output = try SecureBytes(count: length)
        let rc = output.withBytePointer { out, outLength in
            key.withBytePointer { keyBytes, keyLength in
                message.withBytePointer { bytes, count in
                    crypto_generichash(out, outLength, bytes, UInt64(count), keyBytes, keyLength)
                }
            }
        }
        guard rc == 0 else { throw SodiumError.derivationFailed }
        return output
    }

    public static func hash(_ data: [UInt8], key: SecureBytes? = nil, length: Int = 32) throws -> [UInt8] {
        try Sodium.ensureReady()
        var output = [UInt8](repeating: 0, count: length)
        let rc: Int32
        if let key {
            rc = key.withBytePointer { keyBytes, keyLength in
                crypto_generichash(&output, length, data, UInt64(data.count), keyBytes, keyLength)
            }
        } else {
            rc = crypto_generichash(&output, length, data, UInt64(data.count), nil, 0)
        }
        guard rc == 0 else { throw SodiumError.derivationFailed }
        return output
    }
}
