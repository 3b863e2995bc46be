public enum HTTPMethod: Sendable, Equatable {
    case get
    case post
}

public struct HTTPRequest: Sendable, Equatable {
    public var url: String
    public var method: HTTPMethod
    /// Extra request headers, sent in this order.
    public var headers: [(name: String, value: String)]
    /// Sent only for POST.
    public var body: [UInt8]
    /// Override the client's timeouts for this request (seconds).
    public var connectTimeout: Double?
    public var timeout: Double?

    public init(url: String, method: HTTPMethod = .get, headers: [(name: String, value: String)] = [],
                body: [UInt8] = [], connectTimeout: Double? = nil, timeout: Double? = nil) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.connectTimeout = connectTimeout
        self.timeout = timeout
    }

    public static func get(_ url: String, headers: [(name: String, value: String)] = []) -> HTTPRequest {
        HTTPRequest(url: url, method: .get, headers: headers)
    }

    /// A POST with an `application/x-www-form-urlencoded` body.
    public static func postForm(_ url: String, fields: [(name: String, value: String)],
                                headers: [(name: String, value: String)] = []) -> HTTPRequest {
        HTTPRequest(url: url, method: .post,
                    headers: [("Content-Type", "application/x-www-form-urlencoded")] + headers,
                    body: Array(FormEncoding.encode(fields).utf8))
    }

    public static func == (lhs: HTTPRequest, rhs: HTTPRequest) -> Bool {
        lhs.url == rhs.url && lhs.method == rhs.method && lhs.body == rhs.body
            && lhs.headers.elementsEqual(rhs.headers, by: { $0 == $1 })
            && lhs.connectTimeout == rhs.connectTimeout && lhs.timeout == rhs.timeout
    }
}

public struct HTTPResponse: Sendable, Equatable {
    public let status: Int
    /// Header names lowercased; repeated headers joined with ", " (RFC 9110 §5.3).
    public let headers: [String: String]
    public let body: [UInt8]

    public init(status: Int, headers: [String: String], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public var contentType: String? { headers["content-type"] }
}

/// `application/x-www-form-urlencoded` as OAuth 2.0 (RFC 6749 App. B) sends it.
public enum FormEncoding {
    /// Percent-encodes everything outside RFC 3986's unreserved set, so the result is also
    /// safe in a query string. Spaces become %20, which every form parser accepts.
    public static func percentEncode(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isUnreserved(byte) {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "%"
                out.unicodeScalars.append(hexDigit(byte >> 4))
                out.unicodeScalars.append(hexDigit(byte & 0x0F))
            }
        }
        return out
    }

    public static func encode(_ fields: [(name: String, value: String)]) -> String {
        fields.map { percentEncode($0.name) + "=" + percentEncode($0.value) }.joined(separator: "&")
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    private static func hexDigit(_ nibble: UInt8) -> Unicode.Scalar {
        Unicode.Scalar(nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") + nibble - 10)
    }
}
