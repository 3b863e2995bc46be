import FoundationEssentials

/// JSON as JOSE reads it: one object, decoded with FoundationEssentials, and refused when any
/// object in it repeats a member name. JSONDecoder keeps one of the duplicates silently, and
/// RFC 7515 4 lets a recipient refuse them: a token whose header says `"alg"` twice must not
/// mean one thing here and another to the provider's own libraries.
enum JSONObject {
    static func decode<T: Decodable>(_ type: T.Type, _ bytes: some Collection<UInt8>, what: JOSEError.Part) throws(JOSEError) -> T {
        let data = Data(bytes)
        guard bytes.first(where: { !isWhitespace($0) }) == UInt8(ascii: "{"),
              let value = try? JSONDecoder().decode(T.self, from: data) else {
            throw .malformed(.notJSONObject(what))
        }
        guard hasUniqueMembers(Array(bytes)) else { throw .malformed(.repeatedMember(what)) }
        return value
    }

    /// Walks text that JSONDecoder has already accepted (so it is well-formed) and collects
    /// each object's member names: a string followed by a colon is a name of the innermost
    /// open object. Names with escapes are compared after unescaping.
    static func hasUniqueMembers(_ bytes: [UInt8]) -> Bool {
        var objects: [Set<String>?] = [] // nil for an array
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "{"): objects.append([])
            case UInt8(ascii: "["): objects.append(nil)
            case UInt8(ascii: "}"), UInt8(ascii: "]"): _ = objects.popLast()
            case UInt8(ascii: "\""):
                let start = index
                var escaped = false
                index += 1
                while index < bytes.count, bytes[index] != UInt8(ascii: "\"") || escaped {
                    escaped = !escaped && bytes[index] == UInt8(ascii: "\\")
                    index += 1
                }
                var next = index + 1
                while next < bytes.count, isWhitespace(bytes[next]) { next += 1 }
                if next < bytes.count, bytes[next] == UInt8(ascii: ":"), let last = objects.indices.last, objects[last] != nil {
                    let raw = bytes[start...min(index, bytes.count - 1)]
                    let name = raw.contains(UInt8(ascii: "\\")) ? (try? JSONDecoder().decode(String.self, from: Data(raw)))
                                                                 : String(decoding: raw.dropFirst().dropLast(), as: UTF8.self)
                    guard let name, objects[last]?.insert(name).inserted == true else { return false }
                }
            default: break
            }
            index += 1
        }
        return true
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0a || byte == 0x0d
    }
}
