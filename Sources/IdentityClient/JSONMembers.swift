import SodiumKit

/// One JSON object (RFC 8259), read strictly and in place, for the answers that carry
/// secrets (token and device answers, in secure memory): JSONDecoder would copy the body and
/// make Strings of the tokens, which are freed unwiped. This reads the bytes where they are,
/// keeps where each top-level member's value lies, and decodes a member only when asked: a
/// secret one straight into secure memory (`secret`), the others as Strings or numbers.
///
/// Refused: anything that is not one object (whitespace around it allowed), invalid UTF-8,
/// control characters or bad escapes in strings, lone surrogates, malformed numbers, a
/// member name repeated at any depth (which one counts would be a guess, as in JOSEKit),
/// nesting deeper than `maxDepth`.
struct JSONMembers {
    struct Malformed: Error, Equatable {}

    enum ValueType: Equatable {
        case string, number, literal, object, array
    }

    struct Member {
        let kind: ValueType
        /// The value's bytes; for a string, inside the quotes (still escaped).
        let range: Range<Int>
        /// A string with at least one escape.
        let escaped: Bool
    }

    static let maxDepth = 32

    private let bytes: UnsafeRawBufferPointer
    /// By the name's bytes: Strings compare by canonical equivalence, which would merge two
    /// names this reader keeps apart.
    private(set) var members: [[UInt8]: Member] = [:]

    /// Reads `bytes`, which must outlive this value (it keeps positions in them).
    init(_ bytes: UnsafeRawBufferPointer) throws(Malformed) {
        self.bytes = bytes
        var reader = Cursor(bytes: bytes)
        reader.skipWhitespace()
        guard reader.peek() == UInt8(ascii: "{") else { throw Malformed() }
        members = try reader.object(depth: 1, collect: true)
        reader.skipWhitespace()
        guard reader.atEnd else { throw Malformed() }
    }

    /// Reads `body` (secure memory) and hands the members to `read`, within the body's lifetime.
    static func reading<T, E: Error>(_ body: SecureBytes, malformed: E,
                                     _ read: (JSONMembers) throws(E) -> T) throws(E) -> T {
        let result: Result<T, E> = body.withUnsafeBytes { bytes in
            Result { () throws(E) -> T in
                let members: JSONMembers
                do { members = try JSONMembers(bytes) } catch { throw malformed }
                return try read(members)
            }
        }
        return try result.get()
    }

    /// A string member, decoded; nil when absent or null. Another kind is malformed.
    func member(_ name: String) -> Member? { members[Array(name.utf8)] }

    func string(_ name: String) throws(Malformed) -> String? {
        guard let member = try present(name, .string) else { return nil }
        guard member.escaped else { return String(decoding: bytes[member.range], as: UTF8.self) }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(member.range.count)
        Cursor.unescape(bytes[member.range]) { decoded.append($0) }
        return String(decoding: decoded, as: UTF8.self)
    }

    /// A string member decoded straight into secure memory: no String, no ordinary copy.
    func secret(_ name: String) throws(Malformed) -> SecureBytes? {
        guard let member = try present(name, .string) else { return nil }
        // Unescaping never lengthens: the raw length is enough.
        guard let secret = try? SecureBytes(capacity: member.range.count) else { throw Malformed() }
        if member.escaped {
            Cursor.unescape(bytes[member.range]) { secret.append($0) }
        } else {
            _ = secret.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[member.range]))
        }
        return secret
    }

    /// A whole number: a JSON integer (a fraction of zeros allowed, "300.0"), or a string of 1
    /// to 9 digits, as some providers quote `expires_in` and `interval`. Nil when absent or null.
    func integer(_ name: String) throws(Malformed) -> Int? {
        guard let member = member(name) else { return nil }
        var digits = bytes[member.range]
        switch member.kind {
        case .number:
            if let dot = digits.firstIndex(of: UInt8(ascii: ".")) {
                guard digits[(dot + 1)...].allSatisfy({ $0 == UInt8(ascii: "0") }) else { throw Malformed() }
                digits = digits[..<dot]
            }
            guard !digits.contains(where: { $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }) else { throw Malformed() }
            let negative = digits.first == UInt8(ascii: "-")
            let magnitude = negative ? digits.dropFirst() : digits
            guard (1...18).contains(magnitude.count) else { throw Malformed() }
            let value = magnitude.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
            return negative ? -value : value
        case .string:
            guard !member.escaped, (1...9).contains(digits.count),
                  digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { throw Malformed() }
            return digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        case .literal where bytes[member.range].elementsEqual("null".utf8):
            return nil
        default:
            throw Malformed()
        }
    }

    /// The member when it is there with `kind`; nil when absent or null.
    private func present(_ name: String, _ kind: ValueType) throws(Malformed) -> Member? {
        guard let member = member(name) else { return nil }
        if member.kind == .literal && bytes[member.range].elementsEqual("null".utf8) { return nil }
        guard member.kind == kind else { throw Malformed() }
        return member
    }
}

/// The scanner: one pass, positions only; strings are decoded by `unescape` when asked.
private struct Cursor {
    let bytes: UnsafeRawBufferPointer
    var index = 0

    init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var atEnd: Bool { index == bytes.count }
    func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func skipWhitespace() {
        while let byte = peek(), byte == 0x20 || byte == 0x09 || byte == 0x0a || byte == 0x0d { index += 1 }
    }

    mutating func expect(_ byte: UInt8) throws(JSONMembers.Malformed) {
        guard peek() == byte else { throw JSONMembers.Malformed() }
        index += 1
    }

    /// An object at `index` ("{" ahead); its members when `collect` (the top level only).
    mutating func object(depth: Int, collect: Bool) throws(JSONMembers.Malformed) -> [[UInt8]: JSONMembers.Member] {
        guard depth <= JSONMembers.maxDepth else { throw JSONMembers.Malformed() }
        try expect(UInt8(ascii: "{"))
        var found: [[UInt8]: JSONMembers.Member] = [:]
        var names: Set<[UInt8]> = []
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            index += 1
            return found
        }
        while true {
            skipWhitespace()
            let (nameRange, nameEscaped) = try string()
            var name: [UInt8] = []
            if nameEscaped { Cursor.unescape(bytes[nameRange]) { name.append($0) } } else { name = Array(bytes[nameRange]) }
            guard names.insert(name).inserted else { throw JSONMembers.Malformed() }
            skipWhitespace()
            try expect(UInt8(ascii: ":"))
            skipWhitespace()
            let member = try value(depth: depth)
            if collect { found[name] = member }
            skipWhitespace()
            if peek() == UInt8(ascii: ",") {
                index += 1
                continue
            }
            try expect(UInt8(ascii: "}"))
            return found
        }
    }

    mutating func array(depth: Int) throws(JSONMembers.Malformed) {
        guard depth <= JSONMembers.maxDepth else { throw JSONMembers.Malformed() }
        try expect(UInt8(ascii: "["))
        skipWhitespace()
        if peek() == UInt8(ascii: "]") {
            index += 1
            return
        }
        while true {
            skipWhitespace()
            _ = try value(depth: depth)
            skipWhitespace()
            if peek() == UInt8(ascii: ",") {
                index += 1
                continue
            }
            try expect(UInt8(ascii: "]"))
            return
        }
    }

    mutating func value(depth: Int) throws(JSONMembers.Malformed) -> JSONMembers.Member {
        let start = index
        switch peek() {
        case UInt8(ascii: "{"):
            _ = try object(depth: depth + 1, collect: false)
            return JSONMembers.Member(kind: .object, range: start..<index, escaped: false)
        case UInt8(ascii: "["):
            try array(depth: depth + 1)
            return JSONMembers.Member(kind: .array, range: start..<index, escaped: false)
        case UInt8(ascii: "\""):
            let (range, escaped) = try string()
            return JSONMembers.Member(kind: .string, range: range, escaped: escaped)
        case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
            for word in ["true", "false", "null"] where bytes[index...].starts(with: word.utf8) {
                index += word.utf8.count
                return JSONMembers.Member(kind: .literal, range: start..<index, escaped: false)
            }
            throw JSONMembers.Malformed()
        default:
            try number()
            return JSONMembers.Member(kind: .number, range: start..<index, escaped: false)
        }
    }

    /// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    mutating func number() throws(JSONMembers.Malformed) {
        func digits(_ reader: inout Cursor) -> Int {
            let start = reader.index
            while let byte = reader.peek(), byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") { reader.index += 1 }
            return reader.index - start
        }
        if peek() == UInt8(ascii: "-") { index += 1 }
        if peek() == UInt8(ascii: "0") {
            index += 1
        } else {
            guard digits(&self) > 0 else { throw JSONMembers.Malformed() }
        }
        if peek() == UInt8(ascii: ".") {
            index += 1
            guard digits(&self) > 0 else { throw JSONMembers.Malformed() }
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            index += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { index += 1 }
            guard digits(&self) > 0 else { throw JSONMembers.Malformed() }
        }
    }

    /// A string at `index`: the range inside its quotes, and whether it has escapes. Checks
    /// everything `unescape` relies on.
    mutating func string() throws(JSONMembers.Malformed) -> (Range<Int>, Bool) {
        try expect(UInt8(ascii: "\""))
        let start = index
        var escaped = false
        while true {
            guard let byte = peek() else { throw JSONMembers.Malformed() }
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return (start..<(index - 1), escaped)
            case UInt8(ascii: "\\"):
                escaped = true
                index += 1
                switch peek() {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                     UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    index += 1
                case UInt8(ascii: "u"):
                    index += 1
                    let unit = try hex4()
                    if (0xD800..<0xDC00).contains(unit) {
                        // A high surrogate needs its low one, escaped too.
                        guard peek() == UInt8(ascii: "\\") else { throw JSONMembers.Malformed() }
                        index += 1
                        guard peek() == UInt8(ascii: "u") else { throw JSONMembers.Malformed() }
                        index += 1
                        guard (0xDC00..<0xE000).contains(try hex4()) else { throw JSONMembers.Malformed() }
                    } else if (0xDC00..<0xE000).contains(unit) {
                        throw JSONMembers.Malformed()
                    }
                default:
                    throw JSONMembers.Malformed()
                }
            case 0x00..<0x20:
                throw JSONMembers.Malformed()
            case 0x20..<0x80:
                index += 1
            default:
                try utf8Sequence()
            }
        }
    }

    mutating func hex4() throws(JSONMembers.Malformed) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = peek(), let digit = Cursor.hexValue(byte) else { throw JSONMembers.Malformed() }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    /// One multi-byte UTF-8 sequence (RFC 3629: no overlongs, no surrogates, at most U+10FFFF).
    mutating func utf8Sequence() throws(JSONMembers.Malformed) {
        let lead = bytes[index]
        let count: Int
        var low: UInt8 = 0x80, high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: count = 1
        case 0xE0: count = 2; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: count = 2
        case 0xED: count = 2; high = 0x9F
        case 0xF0: count = 3; low = 0x90
        case 0xF1...0xF3: count = 3
        case 0xF4: count = 3; high = 0x8F
        default: throw JSONMembers.Malformed()
        }
        guard index + count < bytes.count else { throw JSONMembers.Malformed() }
        for offset in 1...count {
            let byte = bytes[index + offset]
            let (minimum, maximum) = offset == 1 ? (low, high) : (UInt8(0x80), UInt8(0xBF))
            guard byte >= minimum && byte <= maximum else { throw JSONMembers.Malformed() }
        }
        index += count + 1
    }

    static func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(byte - UInt8(ascii: "A") + 10)
        default: return nil
        }
    }

    /// The UTF-8 bytes of a string's content that `string()` accepted, one at a time to `emit`
    /// (so a secret goes straight where it is kept).
    static func unescape(_ raw: Slice<UnsafeRawBufferPointer>, _ emit: (UInt8) -> Void) {
        var index = raw.startIndex
        func unit(at position: Int) -> UInt32 {
            (position..<position + 4).reduce(0) { $0 << 4 | (hexValue(raw[$1]) ?? 0) }
        }
        while index < raw.endIndex {
            let byte = raw[index]
            guard byte == UInt8(ascii: "\\") else {
                emit(byte)
                index += 1
                continue
            }
            let kind = raw[index + 1]
            index += 2
            switch kind {
            case UInt8(ascii: "b"): emit(0x08)
            case UInt8(ascii: "f"): emit(0x0C)
            case UInt8(ascii: "n"): emit(0x0A)
            case UInt8(ascii: "r"): emit(0x0D)
            case UInt8(ascii: "t"): emit(0x09)
            case UInt8(ascii: "u"):
                var scalar = unit(at: index)
                index += 4
                if (0xD800..<0xDC00).contains(scalar) {
                    // `string()` checked that "\uDCxx" follows.
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (unit(at: index + 2) - 0xDC00)
                    index += 6
                }
                switch scalar {
                case 0..<0x80:
                    emit(UInt8(scalar))
                case 0x80..<0x800:
                    emit(UInt8(0xC0 | scalar >> 6)); emit(UInt8(0x80 | scalar & 0x3F))
                case 0x800..<0x10000:
                    emit(UInt8(0xE0 | scalar >> 12)); emit(UInt8(0x80 | scalar >> 6 & 0x3F)); emit(UInt8(0x80 | scalar & 0x3F))
                default:
                    emit(UInt8(0xF0 | scalar >> 18)); emit(UInt8(0x80 | scalar >> 12 & 0x3F))
                    emit(UInt8(0x80 | scalar >> 6 & 0x3F)); emit(UInt8(0x80 | scalar & 0x3F))
                }
            default:
                emit(kind) // \" \\ \/
            }
        }
    }
}
