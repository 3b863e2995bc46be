import CCurl
import SodiumKit

/// A small, strict HTTP client over libcurl: http/https only, TLS always verified, every
/// transfer bounded by a connect and a total timeout and a response-size cap.
///
/// `send` blocks the calling thread for at most about `timeout` seconds. Values are plain
/// data, so a client may be shared; each call uses its own libcurl handle.
public struct HTTPClient: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Seconds to establish the connection (including TLS).
        public var connectTimeout: Double
        /// Seconds for the whole transfer.
        public var timeout: Double
        /// Cap on response headers plus body, in bytes.
        public var maxResponseBytes: Int
        /// 0 = never follow redirects (the default: an IdP endpoint should not redirect).
        public var maxRedirects: Int
        public var userAgent: String

        public init(connectTimeout: Double = 5, timeout: Double = 15, maxResponseBytes: Int = 1 << 20,
                    maxRedirects: Int = 0, userAgent: String = "fingerseal") {
            self.connectTimeout = connectTimeout
            self.timeout = timeout
            self.maxResponseBytes = maxResponseBytes
            self.maxRedirects = maxRedirects
            self.userAgent = userAgent
        }
    }

    public var configuration: Configuration

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    public func send(_ request: HTTPRequest) throws(HTTPError) -> HTTPResponse {
        let easy = try prepared(request.url, connectTimeout: request.connectTimeout, timeout: request.timeout)
        try easy.setHeaders(request.headers)
        switch request.method {
        case .get: try easy.set(CURLOPT_HTTPGET, 1)
        case .post: try easy.setPostBody(request.body)
        }
        let body = PlainBody()
        let (status, headers) = try easy.perform(limit: configuration.maxResponseBytes, into: body)
        return HTTPResponse(status: status, headers: headers, body: body.bytes)
    }

    /// A request that carries secrets: its secret headers and body go from secure memory to
    /// libcurl (which reads the body in place), and the answer arrives in secure memory.
    public func send(_ request: SecureRequest) throws(HTTPError) -> SecureResponse {
        let easy = try prepared(request.url, connectTimeout: request.connectTimeout, timeout: request.timeout)
        try easy.setHeaders(request.headers, secret: request.secretHeaders)
        let body = try SecureBody(limit: configuration.maxResponseBytes)
        let (status, headers): (Int, [String: String])
        if request.method == .post {
            let posted: SecureBytes
            if let given = request.body { posted = given } else { posted = try SecureForm().encoded() }
            (status, headers) = try easy.perform(posting: posted, limit: configuration.maxResponseBytes, into: body)
        } else {
            try easy.set(CURLOPT_HTTPGET, 1)
            (status, headers) = try easy.perform(limit: configuration.maxResponseBytes, into: body)
        }
        return SecureResponse(status: status, headers: headers, body: body.bytes)
    }

    /// A handle with every setting but the headers and the body.
    private func prepared(_ url: String, connectTimeout: Double?, timeout: Double?) throws(HTTPError) -> EasyHandle {
        let connectMS = try Self.milliseconds(connectTimeout ?? configuration.connectTimeout, "connect timeout")
        let totalMS = try Self.milliseconds(timeout ?? configuration.timeout, "timeout")
        guard configuration.maxResponseBytes >= 0 else { throw HTTPError.invalidRequest("negative response limit") }
        guard configuration.maxRedirects >= 0 else { throw HTTPError.invalidRequest("negative redirect limit") }

        let easy = try EasyHandle()
        try easy.set(CURLOPT_URL, url)
        // No signals: libcurl's SIGALRM-based DNS timeout is unsafe in threaded hosts.
        try easy.set(CURLOPT_NOSIGNAL, 1)
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, connectMS)
        try easy.set(CURLOPT_TIMEOUT_MS, totalMS)
        try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
        try easy.set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        // libcurl's defaults, set anyway so no other code path can weaken them.
        try easy.set(CURLOPT_SSL_VERIFYPEER, 1)
        try easy.set(CURLOPT_SSL_VERIFYHOST, 2)
        // HTTP/1.1 only: with HTTP/2 a second library (nghttp2) would copy every header,
        // Authorization included, into buffers of its own that nobody wipes.
        try easy.set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1))
        try easy.set(CURLOPT_FOLLOWLOCATION, configuration.maxRedirects > 0 ? 1 : 0)
        try easy.set(CURLOPT_MAXREDIRS, configuration.maxRedirects)
        // Early refusal when Content-Length is announced; the callbacks enforce it otherwise.
        try easy.set(CURLOPT_MAXFILESIZE_LARGE, offset: Int64(configuration.maxResponseBytes))
        try easy.set(CURLOPT_USERAGENT, configuration.userAgent)
        return easy
    }

    /// libcurl reads 0 as "no timeout", so non-positive and non-finite values are refused.
    private static func milliseconds(_ seconds: Double, _ what: String) throws(HTTPError) -> Int {
        guard seconds.isFinite, seconds > 0, seconds <= 86_400 else {
            throw HTTPError.invalidRequest("\(what) must be in (0, 86400] seconds")
        }
        return max(1, Int((seconds * 1000).rounded(.up)))
    }
}
