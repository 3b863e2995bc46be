import CLinux
import CMicroHTTPD
import Glibc
import SodiumKit
import SystemKit

/// Receives one OAuth redirect on the loopback interface (RFC 8252 §7.3) with libmicrohttpd:
/// listens on 127.0.0.1 only, on a port the kernel picks, answers every request with a small
/// page, and keeps the first GET to its path whose `state` matches. MHD's own thread serves;
/// `readyFD` turns readable once that request's page has been sent (or a stranger was turned
/// away), so a caller can poll it beside a signalfd and then stop the receiver.
///
/// Only the person signing in may complete the sign-in: every request comes from a TCP peer
/// on this machine, and the kernel knows which uid owns the peer's socket (`LoopbackPeer`).
/// A request from any other account, or one whose owner cannot be found, gets a page saying
/// so and changes nothing; its query is not even read, so the state is not consumed.
///
/// Besides the redirect, the receiver serves a start address (`startURI`) that answers the
/// owner with a redirect to the authorization URL: a browser can be started with it, so the
/// state, nonce and PKCE challenge never appear in a command line, which any local user can
/// read in /proc.
public final class RedirectReceiver {
    /// The sentences of the pages the browser shows (from the caller's message table).
    public struct Pages: Sendable {
        /// The redirect, with a code.
        public let received: String
        /// The redirect, with an error.
        public let failed: String
        /// Any other request from the person signing in.
        public let ignored: String
        /// A request from another account on this machine.
        public let otherAccount: String
        /// A request whose account the kernel could not name.
        public let unknownAccount: String

        public init(received: String, failed: String, ignored: String, otherAccount: String, unknownAccount: String) {
            self.received = received
            self.failed = failed
            self.ignored = ignored
            self.otherAccount = otherAccount
            self.unknownAccount = unknownAccount
        }
    }

    /// What came back: the query's parameters, with the authorization code kept apart in
    /// secure memory (it redeems a sign-in together with the PKCE verifier).
    public struct Redirect {
        /// Every parameter but `code`, decoded.
        public let parameters: [String: String]
        /// The `code` parameter, decoded; nil when there was none.
        public let code: SecureBytes?
    }

    /// Who was turned away.
    public enum Stranger: Hashable, Sendable {
        /// A process of this account (a uid).
        case account(UInt32)
        /// A peer whose socket the kernel could not name (gone already, or the table could not
        /// be read).
        case unknown
    }

    public let port: UInt16
    private let inbox: Inbox
    private var daemon: OpaquePointer?

    /// Slow or idle connections (a browser's preconnects) cannot hold the receiver for long.
    static let connectionLimit: UInt32 = 16
    static let idleSeconds: UInt32 = 10

    /// Starts listening on 127.0.0.1 at once, on `port` (0: one the kernel picks), answering
    /// only processes of `owner` (a uid: the person signing in); throws a `SystemError` when it
    /// cannot.
    public init(path: String = "/callback", startPath: String = "/start", port requested: UInt16 = 0, state: String,
                owner: UInt32, pages: Pages) throws {
        inbox = try Inbox(path: path, startPath: startPath, state: Array(state.utf8), owner: owner, pages: pages)
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

    /// The address to start a browser with (it holds no secret): it redirects the owner's
    /// browser to the address given to `startRedirecting(to:)`, and answers 404 before that.
    public var startURI: String { "http://127.0.0.1:\(port)\(inbox.startPath)" }

    /// Makes the start address redirect to `url` (the authorization URL). Throws EINVAL for
    /// an address that could not be a header's value.
    public func startRedirecting(to url: String) throws {
        guard !url.isEmpty, url.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
            throw SystemError("redirect", "to the authorization address", code: EINVAL)
        }
        inbox.lock.locked { inbox.startTarget = url }
    }

    /// Readable once the redirect has arrived and its page was sent, or when a stranger was
    /// turned away (see `takeStrangers`).
    public var readyFD: Int32 { inbox.readyFD }

    /// The redirect, once it has arrived and its page was sent.
    public func redirect() -> Redirect? {
        inbox.lock.locked { inbox.completed ? inbox.received : nil }
    }

    /// The accounts turned away since the last call, each once per receiver; drains
    /// `readyFD` (which a redirect arriving later makes readable again).
    public func takeStrangers() -> [Stranger] {
        inbox.ready.drain()
        return inbox.lock.locked {
            let fresh = inbox.strangers.subtracting(inbox.reported)
            inbox.reported.formUnion(fresh)
            return fresh.sorted { "\($0)" < "\($1)" }
        }
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
        let (page, accepted) = inbox.answer(peer: peerOwner(connection),
                                            path: url.map { String(cString: $0) } ?? "",
                                            method: method.map { String(cString: $0) } ?? "",
                                            query: { parameters(connection) })
        // Marks the request whose completion wakes the caller.
        if accepted { request?.pointee = context }
        return respond(page, on: connection)
    }

    private static let onCompleted: MHD_RequestCompletedCallback = { context, _, request, _ in
        guard let context, request?.pointee != nil else { return }
        Unmanaged<Inbox>.fromOpaque(context).takeUnretainedValue().complete()
    }

    /// The uid owning the other end of `connection`, from the kernel; nil when it cannot tell.
    private static func peerOwner(_ connection: OpaquePointer) -> UInt32? {
        let fd = fs_mhd_connection_fd(connection)
        guard fd >= 0, let peer = address(fd, getpeername), let local = address(fd, getsockname) else { return nil }
        return LoopbackPeer.owner(of: peer, connectedTo: local)
    }

    private static func address(_ fd: Int32, _ query: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32)
        -> sockaddr_in? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let answered = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { query(fd, $0, &length) }
        }
        guard answered == 0, length == socklen_t(MemoryLayout<sockaddr_in>.size), address.sin_family == sa_family_t(AF_INET) else {
            return nil
        }
        return address
    }

    /// The query parameters (MHD decodes them), the code straight into secure memory; nil
    /// when one repeats, there are too many, or there is no secure memory.
    private static func parameters(_ connection: OpaquePointer) -> Redirect? {
        final class Collected {
            var values: [String: String] = [:]
            var code: SecureBytes? = nil
            var valid = true
        }
        let collected = Collected()
        withExtendedLifetime(collected) {
            _ = fs_MHD_get_connection_values(connection, .GET_ARGUMENT_KIND, { context, _, key, value in
                guard let context, let key else { return .NO }
                let collected = Unmanaged<Collected>.fromOpaque(context).takeUnretainedValue()
                let name = String(cString: key)
                // RFC 6749 §3.1: a parameter must not be sent twice; which one counts would be a guess.
                guard collected.values[name] == nil, !(name == "code" && collected.code != nil), collected.values.count < 32 else {
                    collected.valid = false
                    return .NO
                }
                if name == "code" {
                    // Never a String: from MHD's buffer into secure memory.
                    let bytes = value.map { UnsafeRawBufferPointer(start: $0, count: strlen($0)) } ?? UnsafeRawBufferPointer(start: nil, count: 0)
                    guard let code = try? SecureBytes(copying: bytes) else {
                        collected.valid = false
                        return .NO
                    }
                    collected.code = code
                } else {
                    collected.values[name] = value.map { String(cString: $0) } ?? ""
                }
                return .YES
            }, Unmanaged.passUnretained(collected).toOpaque())
        }
        return collected.valid ? Redirect(parameters: collected.values, code: collected.code) : nil
    }

    private static func respond(_ page: Page, on connection: OpaquePointer) -> MHD_Result {
        var body = Array(page.html.utf8)
        guard let response = body.withUnsafeMutableBytes({
            fs_MHD_create_response_from_buffer($0.count, $0.baseAddress, .RESPMEM_MUST_COPY)
        }) else { return .NO }
        defer { fs_MHD_destroy_response(response) }
        for (name, value) in Page.headers { _ = fs_MHD_add_response_header(response, name, value) }
        if page.status == 405 { _ = fs_MHD_add_response_header(response, "Allow", "GET") }
        if let location = page.location { _ = fs_MHD_add_response_header(response, "Location", location) }
        return fs_MHD_queue_response(connection, page.status, response)
    }
}

/// A page the receiver answers with.
struct Page {
    let status: UInt32
    let text: String
    /// Where a redirect (302) sends the browser.
    var location: String? = nil

    static let notFound = Page(status: 404, text: "Not found.")
    static let methodNotAllowed = Page(status: 405, text: "Only GET is accepted here.")

    /// The start address's answer: on to the provider.
    static func redirect(to location: String) -> Page { Page(status: 302, text: location, location: location) }

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

/// What MHD's thread and the caller share; the mutable part under `lock`.
final class Inbox: @unchecked Sendable {
    let path: String
    let startPath: String
    let state: [UInt8]
    let owner: UInt32
    let pages: RedirectReceiver.Pages
    let ready: EventFD
    var readyFD: Int32 { ready.rawValue }
    let lock = ThreadLock()
    var startTarget: String? = nil
    var received: RedirectReceiver.Redirect? = nil
    /// The redirect's page has been sent.
    var completed = false
    var strangers: Set<RedirectReceiver.Stranger> = []
    var reported: Set<RedirectReceiver.Stranger> = []

    init(path: String, startPath: String, state: [UInt8], owner: UInt32, pages: RedirectReceiver.Pages) throws {
        self.path = path
        self.startPath = startPath
        self.state = state
        self.owner = owner
        self.pages = pages
        ready = try EventFD(nonBlocking: true)
    }

    /// The page for one request from a socket of `peer` (nil: no owner found), and whether it
    /// is the redirect (the owner's first GET to the path with the expected state; `query` is
    /// read only for such a GET).
    func answer(peer: UInt32?, path: String, method: String, query: () -> RedirectReceiver.Redirect?) -> (Page, accepted: Bool) {
        // Strangers first, whatever they ask: they learn nothing, and nothing of theirs is read.
        guard let peer, peer == owner else {
            let stranger: RedirectReceiver.Stranger = peer.map { .account($0) } ?? .unknown
            let fresh = lock.locked { strangers.insert(stranger).inserted }
            if fresh { signalReady() }
            return (Page(status: 403, text: peer == nil ? pages.unknownAccount : pages.otherAccount), false)
        }
        guard method == "GET" else { return (.methodNotAllowed, false) }
        if path == startPath {
            guard let target = lock.locked({ startTarget }) else { return (.notFound, false) }
            return (.redirect(to: target), false)
        }
        guard path == self.path else { return (.notFound, false) }
        guard let query = query() else { return (Page(status: 400, text: pages.ignored), false) }
        // Constant time: a local process probing the port learns nothing of the state.
        guard let state = query.parameters["state"], Sodium.equal(Array(state.utf8), self.state) else {
            return (Page(status: 400, text: pages.ignored), false)
        }
        let first = lock.locked {
            guard received == nil else { return false }
            received = query
            return true
        }
        guard first else { return (Page(status: 400, text: pages.ignored), false) }
        let success = query.code.map { $0.count > 0 } == true && query.parameters["error"] == nil
        return (Page(status: 200, text: success ? pages.received : pages.failed), true)
    }

    /// The redirect's page has gone out.
    func complete() {
        lock.locked { completed = true }
        signalReady()
    }

    func signalReady() {
        ready.signal()
    }
}
