import FoundationEssentials
// JOSEError (its own target, the core carries it) comes with JOSEKit.
@_exported import JOSEErrors

/// The signature algorithms accepted (RFC 7518 3.3 and 3.4, RFC 8037 3.1), each bound to one
/// key type: a token's alg picks how its key is used, never the other way round.
enum Algorithm: String, Sendable, CaseIterable {
    case rs256 = "RS256"
    case es256 = "ES256"
    case edDSA = "EdDSA"
}

/// Base64url without padding (RFC 7515 2), as JOSE, PKCE and DPoP use it; decoded strictly:
/// only the URL-safe alphabet, no padding, no length that cannot occur, and the unused low bits
/// of the last character zero, so that each byte string has exactly one accepted encoding.
public enum Base64URL {
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var text = Data(bytes).base64EncodedString()
        text = String(text.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
        while text.last == "=" { text.removeLast() }
        return text
    }

    static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        var standard: [UInt8] = []
        standard.reserveCapacity(text.count + 3)
        var lastValue: UInt8 = 0
        for byte in text {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): lastValue = byte - UInt8(ascii: "A"); standard.append(byte)
            case UInt8(ascii: "a")...UInt8(ascii: "z"): lastValue = byte - UInt8(ascii: "a") + 26; standard.append(byte)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): lastValue = byte - UInt8(ascii: "0") + 52; standard.append(byte)
            case UInt8(ascii: "-"): lastValue = 62; standard.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): lastValue = 63; standard.append(UInt8(ascii: "/"))
            default: return nil
            }
        }
        switch standard.count % 4 {
        case 1: return nil
        case 2: guard lastValue & 0x0f == 0 else { return nil }
        case 3: guard lastValue & 0x03 == 0 else { return nil }
        default: break
        }
        while standard.count % 4 != 0 { standard.append(UInt8(ascii: "=")) }
        return Data(base64Encoded: Data(standard)).map { Array($0) }
    }
}
