/// A zone's history as a TZif file gives it (RFC 8536, versions 1 to 4): the instants its
/// clocks changed, the local time type after each, and the POSIX rule for every instant after
/// the last one. The file is read from the system's database, but under a name a client
/// chose: the parser trusts nothing in it. Counts are checked against the bytes there are,
/// every index against its table, transitions must rise, offsets stay within a day and two
/// hours, and anything else is a refusal, never a trap.
public struct TZif: Equatable, Sendable {
    /// Ascending UTC instants; `transitionTypes[i]` holds from `transitions[i]` on.
    let transitions: [Int64]
    let transitionTypes: [Int]
    let types: [LocalTimeType]
    /// What holds after the last transition (version 2 and later; nil when the footer is empty).
    let footer: PosixRule?

    /// The largest file accepted: tzdata's biggest are under 4 KiB.
    public static let sizeLimit = 64 * 1024

    public struct Malformed: Error, Equatable, Sendable {
        public let reason: String
    }

    public init(parsing bytes: [UInt8]) throws(Malformed) {
        guard bytes.count <= TZif.sizeLimit else { throw Malformed(reason: "larger than \(TZif.sizeLimit) bytes") }
        var reader = ByteReader(bytes)
        let first = try Header(&reader)
        // Version 1 files have 32-bit times only; later ones repeat everything with 64-bit
        // times after the first block, which is skipped (the second is authoritative).
        guard first.version >= 2 else {
            (transitions, transitionTypes, types) = try TZif.block(first, &reader, timeSize: 4)
            footer = nil
            return
        }
        try reader.skip(first.blockLength(timeSize: 4))
        let second = try Header(&reader)
        (transitions, transitionTypes, types) = try TZif.block(second, &reader, timeSize: 8)
        footer = try TZif.footer(&reader, types: types)
    }

    /// What holds at `instant`.
    public func type(at instant: Int64) -> LocalTimeType {
        guard let last = transitions.last, instant >= transitions[0] else {
            // Before the first transition (or with none): type 0, by RFC 8536 §3.2, unless
            // only the footer speaks.
            if transitions.isEmpty, let footer { return footer.type(at: instant) }
            return types[0]
        }
        if instant >= last, let footer { return footer.type(at: instant) }
        // The last transition at or before `instant`.
        var low = 0, high = transitions.count - 1
        while low < high {
            let middle = low + (high - low + 1) / 2
            if transitions[middle] <= instant { low = middle } else { high = middle - 1 }
        }
        return types[transitionTypes[low]]
    }

    /// The six counts that open each block, after "TZif" and the version.
    private struct Header {
        let version: Int
        let utIndicators, standardIndicators, leapSeconds, transitions, types, characters: Int

        init(_ reader: inout ByteReader) throws(Malformed) {
            guard Array(try reader.bytes(4)) == Array("TZif".utf8) else { throw Malformed(reason: "no TZif magic") }
            let versionByte = try reader.byte()
            switch versionByte {
            case 0: version = 1
            case UInt8(ascii: "2"), UInt8(ascii: "3"), UInt8(ascii: "4"): version = Int(versionByte - UInt8(ascii: "0"))
            default: throw Malformed(reason: "unknown version \(versionByte)")
            }
            try reader.skip(15)
            utIndicators = try reader.count()
            standardIndicators = try reader.count()
            leapSeconds = try reader.count()
            transitions = try reader.count()
            types = try reader.count()
            characters = try reader.count()
            guard types >= 1, characters >= 1 else { throw Malformed(reason: "no local time types") }
            guard utIndicators == 0 || utIndicators == types, standardIndicators == 0 || standardIndicators == types else {
                throw Malformed(reason: "indicator counts differ from the type count")
            }
        }

        /// The data block's length; the counts are at most 2^32 each, so this cannot overflow
        /// an Int on a 64-bit machine, and the reader refuses what the file does not hold.
        func blockLength(timeSize: Int) -> Int {
            transitions * (timeSize + 1) + types * 6 + characters + leapSeconds * (timeSize + 4) + standardIndicators + utIndicators
        }
    }

    private static func block(_ header: Header, _ reader: inout ByteReader, timeSize: Int) throws(Malformed)
        -> ([Int64], [Int], [LocalTimeType]) {
        guard reader.remaining >= header.blockLength(timeSize: timeSize) else { throw Malformed(reason: "shorter than its counts say") }
        var transitions: [Int64] = []
        transitions.reserveCapacity(header.transitions)
        for _ in 0..<header.transitions {
            let time = try timeSize == 4 ? Int64(Int32(bitPattern: reader.uint32())) : reader.int64()
            guard transitions.last.map({ $0 < time }) ?? true else { throw Malformed(reason: "transitions out of order") }
            transitions.append(time)
        }
        var indices: [Int] = []
        indices.reserveCapacity(header.transitions)
        for _ in 0..<header.transitions {
            let index = Int(try reader.byte())
            guard index < header.types else { throw Malformed(reason: "a transition names a type that is not there") }
            indices.append(index)
        }
        var raw: [(offset: Int32, isDST: Bool, designation: Int)] = []
        for _ in 0..<header.types {
            let offset = Int32(bitPattern: try reader.uint32())
            let dst = try reader.byte()
            let designation = Int(try reader.byte())
            guard offset > -LocalTimeType.offsetLimit, offset < LocalTimeType.offsetLimit else { throw Malformed(reason: "an offset beyond a day") }
            guard dst <= 1, designation < header.characters else { throw Malformed(reason: "a type out of range") }
            raw.append((offset, dst == 1, designation))
        }
        let characters = Array(try reader.bytes(header.characters))
        let types = try raw.map { type throws(Malformed) -> LocalTimeType in
            guard let end = characters[type.designation...].firstIndex(of: 0) else { throw Malformed(reason: "an unterminated abbreviation") }
            return LocalTimeType(utcOffset: type.offset, isDST: type.isDST,
                                 abbreviation: String(decoding: characters[type.designation..<end], as: UTF8.self))
        }
        // Leap seconds and the indicators say nothing a clock on a wall shows.
        try reader.skip(header.leapSeconds * (timeSize + 4) + header.standardIndicators + header.utIndicators)
        return (transitions, indices, types)
    }

    /// "\nRULE\n" after the 64-bit block; an empty rule says nothing.
    private static func footer(_ reader: inout ByteReader, types: [LocalTimeType]) throws(Malformed) -> PosixRule? {
        guard try reader.byte() == 0x0a else { throw Malformed(reason: "no footer") }
        var text: [UInt8] = []
        while true {
            let byte = try reader.byte()
            if byte == 0x0a { break }
            guard text.count < PosixRule.lengthLimit else { throw Malformed(reason: "a footer too long") }
            text.append(byte)
        }
        if text.isEmpty { return nil }
        guard let rule = PosixRule(String(decoding: text, as: UTF8.self)) else { throw Malformed(reason: "a footer that is no POSIX TZ rule") }
        return rule
    }
}

/// Big-endian reads from a byte array that never run past its end.
private struct ByteReader {
    let bytes: [UInt8]
    var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }

    mutating func bytes(_ count: Int) throws(TZif.Malformed) -> ArraySlice<UInt8> {
        guard count >= 0, count <= remaining else { throw TZif.Malformed(reason: "ends early") }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    mutating func byte() throws(TZif.Malformed) -> UInt8 {
        let slice = try bytes(1)
        return slice[slice.startIndex]
    }

    mutating func skip(_ count: Int) throws(TZif.Malformed) { _ = try bytes(count) }

    mutating func uint32() throws(TZif.Malformed) -> UInt32 {
        try bytes(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func int64() throws(TZif.Malformed) -> Int64 {
        Int64(bitPattern: try bytes(8).reduce(0) { $0 << 8 | UInt64($1) })
    }

    /// A header count, which the block then has to hold.
    mutating func count() throws(TZif.Malformed) -> Int { Int(try uint32()) }
}
