import SodiumKit

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

/// A request that carries secrets (a token request): the secret header lines and the body are
/// secure memory, which libcurl reads in place (see `HTTPClient.send(_:)`).
public struct SecureRequest {
    public var url: String
    public var method: HTTPMethod
    /// Headers with nothing secret in them, sent first, in this order.
    public var headers: [(name: String, value: String)]
    /// Whole header lines, "Name: value" without CR LF ("Authorization: Basic ..."), sent after
    /// `headers`.
    public var secretHeaders: [SecureBytes]
    /// Sent only for POST (nil: an empty body).
    public var body: SecureBytes?
    /// Override the client's timeouts for this request (seconds).
    public var connectTimeout: Double?
    public var timeout: Double?

    public init(url: String, method: HTTPMethod = .get, headers: [(name: String, value: String)] = [],
                secretHeaders: [SecureBytes] = [], body: SecureBytes? = nil, connectTimeout: Double? = nil, timeout: Double? = nil) {
        self.url = url
        self.method = method
        self.headers = headers
        self.secretHeaders = secretHeaders
        self.body = body
        self.connectTimeout = connectTimeout
        self.timeout = timeout
    }

    /// A POST of `form`, encoded straight into secure memory.
    public static func postForm(_ url: String, form: SecureForm, headers: [(name: String, value: String)] = [],
                                secretHeaders: [SecureBytes] = []) throws(HTTPError) -> SecureRequest {
        SecureRequest(url: url, method: .post, headers: [("Content-Type", "application/x-www-form-urlencoded")] + headers,
                      secretHeaders: secretHeaders, body: try form.encoded())
    }

    /// The header line "`name`: `prefix``value`" in secure memory ("Authorization: Bearer " and a token).
    public static func header(_ name: StaticString, _ prefix: StaticString = "", _ value: SecureBytes) throws(HTTPError) -> SecureBytes {
        let line: SecureBytes
        do { line = try SecureBytes(capacity: name.utf8CodeUnitCount + 2 + prefix.utf8CodeUnitCount + value.count) } catch {
            throw HTTPError.invalidRequest("no secure memory for a header")
        }
        line.append(name)
        line.append(": ")
        line.append(prefix)
        _ = value.withUnsafeBytes { line.append(contentsOf: $0) }
        return line
    }
}

/// The answer to a `SecureRequest`: the body in secure memory.
public struct SecureResponse {
    public let status: Int
    /// Header names lowercased; repeated headers joined with ", " (RFC 9110 §5.3).
    public let headers: [String: String]
    public let body: SecureBytes

    public init(status: Int, headers: [String: String], body: SecureBytes) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// An `application/x-www-form-urlencoded` body whose secret values never become Strings: each
/// is percent-encoded from its secure memory straight into the body's.
public struct SecureForm {
    enum Value {
        case text(String)
        case secret(SecureBytes)
    }

    private(set) var fields: [(name: String, value: Value)] = []

    public init() {}

    public mutating func add(_ name: String, _ value: String) { fields.append((name, .text(value))) }
    public mutating func add(_ name: String, secret: SecureBytes) { fields.append((name, .secret(secret))) }

    /// The names, in order (a parameter must be sent once).
    public var names: [String] { fields.map(\.name) }

    /// The body, as `FormEncoding.encode` writes it, in secure memory of exactly its size.
    public func encoded() throws(HTTPError) -> SecureBytes {
        func each<R>(_ value: Value, _ body: (UnsafeRawBufferPointer) -> R) -> R {
            switch value {
            case let .text(text):
                var text = text
                return text.withUTF8 { body(UnsafeRawBufferPointer($0)) }
            case let .secret(secret):
                return secret.withUnsafeBytes(body)
            }
        }
        var length = max(fields.count - 1, 0)
        for (name, value) in fields {
            length += FormEncoding.encodedLength(name.utf8) + 1 + each(value) { FormEncoding.encodedLength($0) }
        }
        let body: SecureBytes
        do { body = try SecureBytes(capacity: length) } catch { throw HTTPError.invalidRequest("no secure memory for the form") }
        for (index, (name, value)) in fields.enumerated() {
            if index > 0 { body.append(UInt8(ascii: "&")) }
            FormEncoding.percentEncode(name.utf8, into: body)
            body.append(UInt8(ascii: "="))
            _ = each(value) { FormEncoding.percentEncode($0, into: body) }
        }
        return body
    }
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

    /// How long `percentEncode` makes `bytes`.
    public static func encodedLength(_ bytes: some Sequence<UInt8>) -> Int {
        bytes.reduce(0) { $0 + (isUnreserved($1) ? 1 : 3) }
    }

    /// `bytes` percent-encoded as `percentEncode` does, appended to `output` (secure memory,
    /// with room for `encodedLength(bytes)` more); false when it is too small.
    @discardableResult
    public static func percentEncode(_ bytes: some Sequence<UInt8>, into output: SecureBytes) -> Bool {
        for byte in bytes {
            if isUnreserved(byte) {
                guard output.append(byte) else { return false }
            } else {
                guard output.append(UInt8(ascii: "%")), output.append(UInt8(hexDigit(byte >> 4).value)),
                      output.append(UInt8(hexDigit(byte & 0x0F).value)) else { return false }
            }
        }
        return true
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
