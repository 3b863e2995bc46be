import CCurl

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
        let connectMS = try Self.milliseconds(request.connectTimeout ?? configuration.connectTimeout, "connect timeout")
        let totalMS = try Self.milliseconds(request.timeout ?? configuration.timeout, "timeout")
        guard configuration.maxResponseBytes >= 0 else { throw HTTPError.invalidRequest("negative response limit") }
        guard configuration.maxRedirects >= 0 else { throw HTTPError.invalidRequest("negative redirect limit") }

        let easy = try EasyHandle()
        try easy.set(CURLOPT_URL, request.url)
        // No signals: libcurl's SIGALRM-based DNS timeout is unsafe in threaded hosts.
        try easy.set(CURLOPT_NOSIGNAL, 1)
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, connectMS)
        try easy.set(CURLOPT_TIMEOUT_MS, totalMS)
        try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
        try easy.set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        // libcurl's defaults, set anyway so no other code path can weaken them.
        try easy.set(CURLOPT_SSL_VERIFYPEER, 1)
        try easy.set(CURLOPT_SSL_VERIFYHOST, 2)
        try easy.set(CURLOPT_FOLLOWLOCATION, configuration.maxRedirects > 0 ? 1 : 0)
        try easy.set(CURLOPT_MAXREDIRS, configuration.maxRedirects)
        // Early refusal when Content-Length is announced; the callbacks enforce it otherwise.
        try easy.set(CURLOPT_MAXFILESIZE_LARGE, offset: Int64(configuration.maxResponseBytes))
        try easy.set(CURLOPT_USERAGENT, configuration.userAgent)
        try easy.setHeaders(request.headers)
        switch request.method {
        case .get:
            try easy.set(CURLOPT_HTTPGET, 1)
        case .post:
            try easy.setPostBody(request.body)
        }
        return try easy.perform(limit: configuration.maxResponseBytes)
    }

    /// libcurl reads 0 as "no timeout", so non-positive and non-finite values are refused.
    private static func milliseconds(_ seconds: Double, _ what: String) throws(HTTPError) -> Int {
        guard seconds.isFinite, seconds > 0, seconds <= 86_400 else {
            throw HTTPError.invalidRequest("\(what) must be in (0, 86400] seconds")
        }
        return max(1, Int((seconds * 1000).rounded(.up)))
    }
}
