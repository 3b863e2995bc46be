import CSodium

/// Argon2id (v1.3) password hashing into a key.
public enum Argon2id {
    public static let saltLength = Int(crypto_pwhash_SALTBYTES)
    public static let minimumOpsLimit = UInt64(crypto_pwhash_OPSLIMIT_MIN)
    public static let interactiveOpsLimit = UInt64(crypto_pwhash_OPSLIMIT_INTERACTIVE)
    public static let interactiveMemLimit = UInt64(crypto_pwhash_MEMLIMIT_INTERACTIVE)
    public static let minimumMemLimit = UInt64(crypto_pwhash_MEMLIMIT_MIN)

    public static func deriveKey(password: SecureBytes, salt: [UInt8], opsLimit: UInt64, memLimit: UInt64,
                                 length: Int) throws -> SecureBytes {
        try Sodium.ensureReady()
        guard salt.count == saltLength else {
            throw SodiumError.invalidLength(what: "salt", expected: saltLength, actual: salt.count)
        }
        let key = try SecureBytes(count: length)
        let rc = key.withBytePointer { output, outputLength in
            password.withBytePointer { secret, secretLength in
                secret.withMemoryRebound(to: CChar.self, capacity: max(secretLength, 1)) { secretChars in
                    crypto_pwhash(output, UInt64(outputLength), secretChars, UInt64(secretLength),
                                  salt, opsLimit, Int(memLimit), crypto_pwhash_ALG_ARGON2ID13)
                }
            }
        }
        // crypto_pwhash fails only for out-of-range parameters or when memory runs out.
        guard rc == 0 else { throw SodiumError.derivationFailed }
        return key
    }
}
