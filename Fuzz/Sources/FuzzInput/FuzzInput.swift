/// The fuzzer's bytes read front to back as choices: a byte, a pick from a table, a short
/// byte string. Past the end every read gives zero or empty, so any input decodes to
/// something and a mutation changes one choice at a time.
public struct FuzzInput {
    private var bytes: ArraySlice<UInt8>

    public init(_ data: UnsafePointer<UInt8>?, _ size: Int) {
        bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size))[...] } ?? []
    }

    public init(_ bytes: [UInt8]) { self.bytes = bytes[...] }

    public var isEmpty: Bool { bytes.isEmpty }

    public mutating func byte() -> UInt8 { bytes.popFirst() ?? 0 }

    public mutating func flag() -> Bool { byte() & 1 == 1 }

    /// One of `table`.
    public mutating func pick<T>(_ table: [T]) -> T { table[Int(byte()) % table.count] }

    /// A length byte (below `limit`), then that many bytes.
    public mutating func bytes(below limit: Int = 256) -> [UInt8] {
        let count = min(Int(byte()) % limit, bytes.count)
        defer { bytes = bytes.dropFirst(count) }
        return Array(bytes.prefix(count))
    }

    /// `bytes` as text (invalid UTF-8 repaired: the wire refuses it, which a raw packet tries).
    public mutating func text(below limit: Int = 256) -> String { String(decoding: bytes(below: limit), as: UTF8.self) }

    /// One of `table`, or (for the last slot) a text of the input's own.
    public mutating func textOrPick(_ table: [String]) -> String {
        let index = Int(byte()) % (table.count + 1)
        return index < table.count ? table[index] : text(below: 64)
    }
}

/// One wire field appended to an encoded packet (a field the sender's encoder never writes:
/// a repeated key, an unknown one, a value no decoder expects).
public func appendField(_ packet: inout [UInt8], key: [UInt8], value: [UInt8]) {
    packet.append(UInt8(truncatingIfNeeded: key.count))
    packet += key
    let count = UInt32(value.count)
    packet += [UInt8(count & 0xff), UInt8((count >> 8) & 0xff), UInt8((count >> 16) & 0xff), UInt8(count >> 24)]
    packet += value
}
