import CLinux
import CMicroHTTPD
import Glibc
import SodiumKit
import Synchronization
import SystemKit

/// Receives one OAuth redirect on the loopback interface (RFC 8252 §7.3) with libmicrohttpd:
/// listens on 127.0.0.1 only, on a port the kernel picks, answers every request with a small
/// page, and keeps the first GET to its path whose `state` matches. MHD's own thread serves;
/// `readyFD` turns readable once that request's page has been sent, so a caller can poll it
/// beside a signalfd and then stop the receiver.
public final class RedirectReceiver {
    /// The sentences of the pages the browser shows (from the caller's message table): the
    /// redirect with a code, the redirect with an error, and any other request to the path.
    public typealias Pages = (received: String, failed: String, ignored: String)

    public let port: UInt16
    private let inbox: Inbox
    private var daemon: OpaquePointer?

    /// Slow or idle connections (a browser's preconnects) cannot hold the receiver for long.
    static let connectionLimit: UInt32 = 16
    static let idleSeconds: UInt32 = 10

    /// Starts listening on 127.0.0.1 at once, on `port` (0: one the kernel picks); throws a
    /// `SystemError` when it cannot.
    public init(path: String = "/callback", port requested: UInt16 = 0, state: String, pages: Pages) throws {
        inbox = try Inbox(path: path, state: Array(state.utf8), pages: pages)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        // RFC 8252 wants any port accepted; a provider that matches redirect URIs exactly needs
        // the one registered.
        address.sin_port = requested.bigEndian
        address.sin_addr = in_addr(s_addr: in_addr_t(0x7f00_0001).bigEndian)
        let context = Unmanaged.passUnretained(inbox).toOpaque()
        errno = 0
        guard let started = fs_mhd_start(MHD_USE_POLL_INTERNAL_THREAD.rawValue, &address, Self.onRequest, Self.onCompleted,
                                         context, Self.connectionLimit, Self.idleSeconds) else {
            throw SystemError("listen", "on 127.0.0.1", code: errno == 0 ? EIO : errno)
        }
        let port = fs_mhd_bound_port(started)
        guard port != 0 else {
            fs_MHD_stop_daemon(started)
            throw SystemError("listen", "on 127.0.0.1", code: EADDRNOTAVAIL)
        }
        daemon = started
        self.port = port
    }

    deinit {
        stop()
    }

    public var redirectURI: String { "http://127.0.0.1:\(port)\(inbox.path)" }

    /// Readable once the redirect has arrived and its page was sent.
    public var readyFD: Int32 { inbox.readyFD }

    /// The redirect's query parameters, once it has arrived.
    public func redirect() -> [String: String]? {
        inbox.received.withLock { $0 }
    }

    /// Closes the socket and every connection; joins MHD's thread, so no callback runs after.
    public func stop() {
        if let daemon { fs_MHD_stop_daemon(daemon) }
        daemon = nil
    }

    // C trampolines (non-capturing); they run on MHD's thread.
    private static let onRequest: MHD_AccessHandlerCallback = { context, connection, url, method, _, _, _, request in
        guard let context, let connection else { return .NO }
        let inbox = Unmanaged<Inbox>.fromOpaque(context).takeUnretainedValue()
        let (page, accepted) = inbox.answer(path: url.map { String(cString: $0) } ?? "",
                                            method: method.map { String(cString: $0) } ?? "",
                                            query: { parameters(connection) })
        // Marks the request whose completion wakes the caller.
        if accepted { request?.pointee = context }
        return respond(page, on: connection)
    }

    private static let onCompleted: MHD_RequestCompletedCallback = { context, _, request, _ in
        guard let context, request?.pointee != nil else { return }
        Unmanaged<Inbox>.fromOpaque(context).takeUnretainedValue().signalReady()
    }

    /// The query parameters (MHD decodes them), or nil when one repeats or there are too many.
    private static func parameters(_ connection: OpaquePointer) -> [String: String]? {
        final class Collected {
            var values: [String: String] = [:]
            var valid = true
        }
        let collected = Collected()
        withExtendedLifetime(collected) {
            _ = fs_MHD_get_connection_values(connection, .GET_ARGUMENT_KIND, { context, _, key, value in
                guard let context, let key else { return .NO }
                let collected = Unmanaged<Collected>.fromOpaque(context).takeUnretainedValue()
                let name = String(cString: key)
                // RFC 6749 §3.1: a parameter must not be sent twice; which one counts would be a guess.
                guard collected.values[name] == nil, collected.values.count < 32 else {
                    collected.valid = false
                    return .NO
                }
                collected.values[name] = value.map { String(cString: $0) } ?? ""
                return .YES
            }, Unmanaged.passUnretained(collected).toOpaque())
        }
        return collected.valid ? collected.values : nil
    }

    private static func respond(_ page: Page, on connection: OpaquePointer) -> MHD_Result {
        var body = Array(page.html.utf8)
        guard let response = body.withUnsafeMutableBytes({
            fs_MHD_create_response_from_buffer($0.count, $0.baseAddress, .RESPMEM_MUST_COPY)
        }) else { return .NO }
        defer { fs_MHD_destroy_response(response) }
        for (name, value) in Page.headers { _ = fs_MHD_add_response_header(response, name, value) }
        if page.status == 405 { _ = fs_MHD_add_response_header(response, "Allow", "GET") }
        return fs_MHD_queue_response(connection, page.status, response)
    }
}

/// A page the receiver answers with.
struct Page {
    let status: UInt32
    let text: String

    static let notFound = Page(status: 404, text: "Not found.")
    static let methodNotAllowed = Page(status: 405, text: "Only GET is accepted here.")

    /// No scripts, frames, referrers or caching: the page may sit beside a code in the history.
    static let headers = [
        ("Content-Type", "text/html; charset=utf-8"),
        ("Cache-Control", "no-store"),
        ("Content-Security-Policy", "default-src 'none'"),
        ("Referrer-Policy", "no-referrer"),
        ("X-Content-Type-Options", "nosniff"),
        ("Connection", "close"),
    ]

    var html: String {
        let escaped = text.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;")
        return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>fingerseal</title></head>"
            + "<body><p>\(escaped)</p></body></html>\n"
    }
}

/// What MHD's thread and the caller share.
final class Inbox: Sendable {
    let path: String
    let state: [UInt8]
    let pages: RedirectReceiver.Pages
    let readyFD: Int32
    let received = Mutex<[String: String]?>(nil)

    init(path: String, state: [UInt8], pages: RedirectReceiver.Pages) throws {
        self.path = path
        self.state = state
        self.pages = pages
        readyFD = try syscall("eventfd") { eventfd(0, Int32(EFD_CLOEXEC) | Int32(EFD_NONBLOCK)) }
    }

    deinit {
        close(readyFD)
    }

    /// The page for one request, and whether it is the redirect (the first GET to the path
    /// with the expected state; `query` is read only for such a GET).
    func answer(path: String, method: String, query: () -> [String: String]?) -> (Page, accepted: Bool) {
        guard method == "GET" else { return (.methodNotAllowed, false) }
        guard path == self.path else { return (.notFound, false) }
        guard let query = query() else { return (Page(status: 400, text: pages.ignored), false) }
        // Constant time: a local process probing the port learns nothing of the state.
        guard let state = query["state"], Sodium.equal(Array(state.utf8), self.state) else {
            return (Page(status: 400, text: pages.ignored), false)
        }
        let first = received.withLock { received in
            guard received == nil else { return false }
            received = query
            return true
        }
        guard first else { return (Page(status: 400, text: pages.ignored), false) }
        return (Page(status: 200, text: query["code"] != nil && query["error"] == nil ? pages.received : pages.failed), true)
    }

    func signalReady() {
        var one: UInt64 = 1
        _ = write(readyFD, &one, 8)
    }
}
