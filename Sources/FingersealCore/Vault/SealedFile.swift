import FingersealWire
import FoundationEssentials
import SodiumKit

/// Sensitive data sealed for one context with a key derived from the vault's master key:
///
///     fingerseal-sealed v1\n
///     {"context":"…","file_id":"…","format":1,"nonce":"…","vault_id":"…"}\n
///     CIPHERTEXT (XChaCha20-Poly1305; the two lines above are its associated data)
///
/// Changing the context, the vault id or a byte of the ciphertext makes it fail to open.
public enum SealedFile {
    static let magic = Array("fingerseal-sealed v1\n".utf8)
    static let maxHeader = 1024
    /// Larger inputs are refused rather than read into memory.
    public static let maxPlaintext = 64 * 1024 * 1024

    struct Header: Codable, Equatable {
        var format: Int
        var context: String
        var fileID: String
        var vaultID: String
        var nonce: String

        enum CodingKeys: String, CodingKey {
            case format, context, nonce
            case fileID = "file_id"
            case vaultID = "vault_id"
        }
    }

    /// The most a sealed file adds to its plaintext: the magic line, the header line and the tag.
    public static let overhead = magic.count + maxHeader + 1 + AEAD.tagLength

    /// What the header says; not trusted until `open` succeeds.
    public struct Parsed {
        public let context: String
        public let fileID: String
        public let vaultID: String
        let associatedData: [UInt8]
        let nonce: [UInt8]
        /// Where the ciphertext starts in the file (it runs to the end).
        let ciphertextOffset: Int
    }

    /// Seals `buffer`'s plaintext for `context` in place: afterwards the buffer holds the
    /// ciphertext, and the returned header goes before it. The buffer needs `AEAD.tagLength`
    /// bytes of spare capacity; a large plaintext is never held twice.
    public static func seal(inPlace buffer: SecureBytes, context: String, vault: UnlockedVault) throws -> [UInt8] {
        guard StepUpRules.isValidContext(context) else { throw FingersealError(.usage, Messages.badContext) }
        guard buffer.count <= maxPlaintext else { throw FingersealError(.usage, Messages.tooLargeToSeal(maxPlaintext)) }
        let key = try contextKey(context, vault)
        // The nonce goes in the header, which is the associated data: seal with a nonce
        // chosen first, so the header is complete before encrypting.
        let nonce = try Sodium.randomBytes(AEAD.nonceLength)
        let header = Header(format: 1, context: context, fileID: Encoding.hex(try Sodium.randomBytes(16)),
                            vaultID: vault.vaultID, nonce: Encoding.base64(nonce))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let aad = magic + Array(try encoder.encode(header)) + [0x0a]
        try AEAD.sealInPlace(buffer, key: key, aad: aad, nonce: nonce)
        return aad
    }

    /// Parses the layout strictly; throws for anything that is not a sealed file.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws -> Parsed {
        let notSealed = FingersealError(.usage, Messages.notSealedFile)
        guard bytes.count > magic.count, bytes.starts(with: magic) else { throw notSealed }
        let rest = bytes[magic.count...]
        guard let newline = rest.prefix(maxHeader).firstIndex(of: 0x0a) else { throw notSealed }
        let headerBytes = rest[..<newline]
        guard let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes)), header.format == 1,
              StepUpRules.isValidContext(header.context), header.fileID.utf8.count == 32,
              header.fileID.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }),
              (1...64).contains(header.vaultID.utf8.count),
              let nonce = Data(base64Encoded: header.nonce), nonce.count == AEAD.nonceLength else { throw notSealed }
        let ciphertext = bytes.count - (newline + 1)
        guard ciphertext >= AEAD.tagLength, ciphertext - AEAD.tagLength <= maxPlaintext else { throw notSealed }
        return Parsed(context: header.context, fileID: header.fileID, vaultID: header.vaultID,
                      associatedData: Array(bytes[...newline]), nonce: Array(nonce), ciphertextOffset: newline + 1)
    }

    public static func parse(_ bytes: [UInt8]) throws -> Parsed {
        try bytes.withUnsafeBytes { try parse($0) }
    }

    /// Whether `vault` sealed it (checked before asking anyone for a finger).
    public static func belongs(_ parsed: Parsed, to vault: UnlockedVault) -> Bool {
        parsed.vaultID == vault.vaultID
    }

    /// Decrypts the sealed file in `buffer` in place; returns where the plaintext is in it.
    /// Throws when the file is from another vault or was altered.
    public static func open(_ parsed: Parsed, inPlace buffer: SecureBytes, vault: UnlockedVault) throws -> Range<Int> {
        guard parsed.vaultID == vault.vaultID else { throw FingersealError(.vaultUnusable, Messages.sealedByAnotherVault) }
        let key = try contextKey(parsed.context, vault)
        do {
            return try AEAD.openInPlace(buffer, from: parsed.ciphertextOffset, key: key, aad: parsed.associatedData,
                                        nonce: parsed.nonce)
        } catch {
            throw FingersealError(.vaultUnusable, Messages.sealedTampered)
        }
    }

    /// The key for one context: BLAKE2b keyed with a sealing root key (KDF id 4).
    static func contextKey(_ context: String, _ vault: UnlockedVault) throws -> SecureBytes {
        let root = try vault.subkey(id: 4, context: "fsseal01")
        var bytes = try GenericHash.hash(Array(("context\u{0}" + context).utf8), key: root, length: AEAD.keyLength)
        defer { Sodium.wipe(&bytes) }
        return try SecureBytes(copying: bytes)
    }
}
