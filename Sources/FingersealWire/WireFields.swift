import CLinux

/// The encoding under every message on the broker's socket: one message per SOCK_SEQPACKET
/// packet, so framing is the kernel's. A packet is
///
///     "FS" version(1 byte) kind(1 byte) field*
///     field = keyLength(1 byte) key(ASCII a-z 0-9 . -) valueLength(4 bytes, little endian) value
///
/// Field names are explicit so that either end can add a field without breaking the other;
/// a key may repeat only where a message says it is a list. Every size is bounded.
public enum Wire {
    /// The protocol version this build speaks. A peer with another version gets a clear refusal.
    public static let version: UInt8 = 1
    /// The largest packet either end sends or accepts.
    public static let maxPacket = 64 * 1024
    /// Fields per packet.
    public static let maxFields = 256
    static let maxKey = 32
    static let magic: [UInt8] = [0x46, 0x53] // "FS"
}

/// Why a packet was refused. The broker answers a client that sends one with an error and
/// closes the connection; it never guesses.
public enum WireError: Error, Equatable, Sendable {
    case tooShort, badMagic, badVersion(UInt8), unknownKind(UInt8), tooLarge, truncated, tooManyFields
    case badKey, repeatedField(String), missingField(String), badValue(String)
    /// A command its origin's client never sends (`Command.sender`): a PAM command without
    /// PAM items, PAM items on the command line's, an application asking for anything else.
    case wrongSender(command: String)
}

/// The fields of one packet, in order.
public struct WireFields: Sendable {
    public private(set) var pairs: [(key: String, value: [UInt8])] = []

    public init() {}

    public mutating func add(_ key: String, _ value: [UInt8]) { pairs.append((key, value)) }
    public mutating func add(_ key: String, _ value: String) { add(key, Array(value.utf8)) }
    public mutating func add(_ key: String, _ value: String?) { if let value { add(key, value) } }
    public mutating func add(_ key: String, _ value: Bool) { if value { add(key, "1") } }
    public mutating func add(_ key: String, _ value: Int64?) { if let value { add(key, String(value)) } }

    /// The one value of `key`; nil when absent. Throws when it repeats.
    public func bytes(_ key: String) throws(WireError) -> [UInt8]? {
        var found: [UInt8]? = nil
        for pair in pairs where pair.key == key {
            if found != nil { throw .repeatedField(key) }
            found = pair.value
        }
        return found
    }

    /// The one value of `key` as UTF-8 text without NUL; nil when absent.
    public func string(_ key: String) throws(WireError) -> String? {
        guard let bytes = try bytes(key) else { return nil }
        return try Wire.text(bytes, key)
    }

    public func required(_ key: String) throws(WireError) -> String {
        guard let value = try string(key) else { throw .missingField(key) }
        return value
    }

    public func flag(_ key: String) throws(WireError) -> Bool {
        guard let value = try string(key) else { return false }
        guard value == "1" else { throw .badValue(key) }
        return true
    }

    public func integer(_ key: String) throws(WireError) -> Int64? {
        guard let text = try string(key) else { return nil }
        guard let number = Int64(text), String(number) == text else { throw .badValue(key) }
        return number
    }

    /// Every value of a list field, in order.
    public func list(_ key: String) throws(WireError) -> [String] {
        var values: [String] = []
        for pair in pairs where pair.key == key { values.append(try Wire.text(pair.value, key)) }
        return values
    }

    /// Overwrites every value (a packet that carried a secret).
    public mutating func wipe() {
        for index in pairs.indices { Wire.wipe(&pairs[index].value) }
    }
}

extension Wire {
    static func text(_ bytes: [UInt8], _ key: String) throws(WireError) -> String {
        guard !bytes.contains(0), let text = String(validating: bytes, as: UTF8.self) else { throw .badValue(key) }
        return text
    }

    /// Zeroes `bytes` in place (the compiler may not drop a write through an opaque pointer).
    /// Zeroes the storage of `bytes` in place, which every copy of the array shares (a
    /// mutating wipe of a shared array would copy it first and wipe only the copy).
    public static func wipeStorage(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            zeroVolatile(UnsafeMutableRawPointer(mutating: base), buffer.count)
        }
    }

    public static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            zeroVolatile(base, buffer.count)
        }
    }

    static func isKeyByte(_ byte: UInt8) -> Bool {
        (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2e || byte == 0x2d
    }

    /// One packet: header, then the fields.
    public static func encode(kind: UInt8, _ fields: WireFields) -> [UInt8] {
        var packet = magic + [version, kind]
        for (key, value) in fields.pairs {
            let keyBytes = Array(key.utf8)
            packet.append(UInt8(truncatingIfNeeded: keyBytes.count))
            packet += keyBytes
            let count = UInt32(truncatingIfNeeded: value.count)
            packet += [UInt8(count & 0xff), UInt8((count >> 8) & 0xff), UInt8((count >> 16) & 0xff), UInt8(count >> 24)]
            packet += value
        }
        return packet
    }

    /// Splits a packet into its kind and fields; refuses anything not exactly in the format.
    public static func decode(_ packet: UnsafeRawBufferPointer) throws(WireError) -> (kind: UInt8, fields: WireFields) {
        guard packet.count <= maxPacket else { throw .tooLarge }
        guard packet.count >= 4 else { throw .tooShort }
        guard packet[0] == magic[0], packet[1] == magic[1] else { throw .badMagic }
        guard packet[2] == version else { throw .badVersion(packet[2]) }
        var fields = WireFields()
        var offset = 4
        while offset < packet.count {
            guard fields.pairs.count < maxFields else { throw .tooManyFields }
            let keyLength = Int(packet[offset])
            offset += 1
            guard keyLength >= 1, keyLength <= maxKey, offset + keyLength + 4 <= packet.count else { throw .truncated }
            var keyBytes: [UInt8] = []
            for index in offset..<(offset + keyLength) {
                guard isKeyByte(packet[index]) else { throw .badKey }
                keyBytes.append(packet[index])
            }
            offset += keyLength
            let length = Int(packet[offset]) | Int(packet[offset + 1]) << 8 | Int(packet[offset + 2]) << 16
                | Int(packet[offset + 3]) << 24
            offset += 4
            guard length <= packet.count - offset else { throw .truncated }
            fields.add(String(decoding: keyBytes, as: UTF8.self), Array(packet[offset..<(offset + length)]))
            offset += length
        }
        return (packet[3], fields)
    }
}

@inline(never)
func zeroVolatile(_ base: UnsafeMutableRawPointer, _ count: Int) {
    fs_wipe(base, count)
}
