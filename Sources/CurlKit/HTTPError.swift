import CCurl

public enum HTTPError: Error, Equatable, Sendable {
    /// The connect or total timeout elapsed.
    case timedOut
    /// No connection could be made: refused, unreachable, or the name did not resolve.
    case couldNotConnect
    /// TLS handshake or certificate verification failed; carries libcurl's detail.
    case tls(String)
    /// The response (headers plus body) exceeded the configured limit in bytes.
    case responseTooLarge(limit: Int)
    /// The request was rejected before anything was sent (bad URL, header or timeout value).
    case invalidRequest(String)
    /// Any other libcurl failure: its CURLcode and `curl_easy_strerror` text.
    case other(code: Int, message: String)

    static func from(_ code: CURLcode, detail: String) -> HTTPError {
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            return .timedOut
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return .couldNotConnect
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM,
             CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CRL_BADFILE, CURLE_SSL_ISSUER_ERROR,
             CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CLIENTCERT,
             CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED,
             CURLE_SSL_SHUTDOWN_FAILED:
            // The error buffer says which certificate problem; strerror only says "TLS failed".
            return .tls(detail.isEmpty ? strerror(code) : detail)
        default:
            return .other(code: Int(code.rawValue), message: strerror(code))
        }
    }

    static func strerror(_ code: CURLcode) -> String {
        guard let text = fs_curl_easy_strerror(code) else { return "CURLcode \(code.rawValue)" }
        return String(cString: text)
    }
}
