import FingersealWire
import Localization
import SodiumKit

/// The envelope of every vault file: magic, kind, format version, body length, body, and a
/// BLAKE2b checksum of everything before it. Any flipped, missing or extra byte is caught
/// here, before a body is parsed.
///
///     "FSEAL" kind(3) version(1) length(u32 LE) body checksum(32)
enum Container {
    enum FileType: String {
        case vault = "VLT", deviceKey = "DKY", lockout = "LCK", birth = "ACB"
    }

    static let magic = Array("FSEAL".utf8)
    static let version: UInt8 = 1
    static let headerLength = 5 + 3 + 1 + 4
    static let checksumLength = 32

    static func encode(_ kind: FileType, body: [UInt8]) throws -> [UInt8] {
        var bytes = magic + Array(kind.rawValue.utf8) + [version]
        let length = UInt32(body.count)
        bytes += [UInt8(length & 0xff), UInt8((length >> 8) & 0xff), UInt8((length >> 16) & 0xff), UInt8(length >> 24)]
        bytes += body
        bytes += try GenericHash.hash(bytes, length: checksumLength)
        return bytes
    }

    /// The body, or a `.vaultUnusable` error naming the file and saying what is wrong.
    static func decode(_ kind: FileType, _ bytes: [UInt8], file: String) throws -> [UInt8] {
        func damaged(_ why: String) -> FingersealError {
            FingersealError(.vaultUnusable, Messages.vaultDamaged(file, why))
        }
        if bytes.isEmpty { throw damaged(tr("it is empty")) }
        guard bytes.count >= headerLength + checksumLength else { throw damaged(tr("it is truncated")) }
        guard Array(bytes[0..<5]) == magic else { throw damaged(tr("it is not a fingerseal file")) }
        let stored = Array(bytes[(bytes.count - checksumLength)...])
        let computed = try GenericHash.hash(Array(bytes[..<(bytes.count - checksumLength)]), length: checksumLength)
        guard Sodium.equal(stored, computed) else { throw damaged(tr("it is corrupt or was modified (checksum mismatch)")) }
        guard Array(bytes[5..<8]) == Array(kind.rawValue.utf8) else { throw damaged(tr("it holds a different kind of data")) }
        guard bytes[8] == version else { throw damaged(tr("it has format version %1$s, which this fingerseal cannot read", bytes[8])) }
        let length = Int(bytes[9]) | Int(bytes[10]) << 8 | Int(bytes[11]) << 16 | Int(bytes[12]) << 24
        guard length == bytes.count - headerLength - checksumLength else { throw damaged(tr("its length is wrong")) }
        return Array(bytes[headerLength..<(headerLength + length)])
    }
}
