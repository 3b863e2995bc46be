import Testing
import Glibc
import Foundation
import CurlKit
import SodiumKit
@testable import TestSupport

/// What the test server answers (a Python `Handler` class, see `PythonHTTPServer`).
private let curlHandler = #"""
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body, content_type="text/plain; charset=utf-8", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/hello":
            self.reply(200, b"hello world", extra=[("X-Twice", "a"), ("X-Twice", "b")])
        elif self.path.startswith("/big/"):
            self.reply(200, b"x" * int(self.path[5:]))
        elif self.path.startswith("/stream/"):
            # No Content-Length: the size cap must be enforced while bytes arrive.
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            remaining = int(self.path[8:])
            while remaining > 0:
                chunk = min(remaining, 16384)
                try:
                    self.wfile.write(b"y" * chunk)
                except OSError:
                    return
                remaining -= chunk
        elif self.path == "/redirect":
            self.reply(302, b"", extra=[("Location", "/hello")])
        elif self.path == "/authorization":
            self.reply(200, self.headers.get("Authorization", "").encode())
        else:
            self.reply(404, b"not found")

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.reply(200, body, content_type="application/octet-stream",
                   extra=[("X-Request-Content-Type", self.headers.get("Content-Type", "")),
                          ("X-Request-Authorization", self.headers.get("Authorization", ""))])
"""#

/// A socket on 127.0.0.1 that listens but never accepts or answers: the kernel completes
/// the handshake from the backlog, so a client connects and then waits forever.
private final class SilentListener {
    let fd: Int32
    let port: Int

    init(listen shouldListen: Bool) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("no test listener") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && (!shouldListen || Glibc.listen(fd, 4) == 0)
                    && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok else {
            close(fd)
            throw TestFailure("no test listener")
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }
}

@Suite struct CurlKitTests {
    @Test func getReturnsStatusHeadersAndBody() throws {
        let server = try PythonHTTPServer(handler: curlHandler)
        defer { server.stop() }
        let response = try HTTPClient().send(.get(server.url("/hello")))
        #expect(response.status == 200)
        #expect(response.body == Array("hello world".utf8))
        #expect(response.contentType == "text/plain; charset=utf-8")
        #expect(response.headers["x-twice"] == "a, b")
        #expect(response.headers["content-length"] == "11")
    }

    @Test func notFoundIsAResponseNotAnError() throws {
        let server = try PythonHTTPServer(handler: curlHandler)
        defer { server.stop() }
        let response = try HTTPClient().send(.get(server.url("/missing")))
        #expect(response.status == 404)
    }

    @Test func postFormBodyArrivesExactly() throws {
        let server = try PythonHTTPServer(handler: curlHandler)
        defer { server.stop() }
        let fields: [(name: String, value: String)] = [
            ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
            ("device_code", "a b+c&d=e/é~"),
            ("client_id", "fingerseal"),
        ]
        let response = try HTTPClient().send(.postForm(server.url("/echo"), fields: fields))
        #expect(response.status == 200)
        let expected = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code"
            + "&device_code=a%20b%2Bc%26d%3De%2F%C3%A9~&client_id=fingerseal"
        #expect(String(decoding: response.body, as: UTF8.self) == expected)
        #expect(response.headers["x-request-content-type"] == "application/x-www-form-urlencoded")
    }

    @Test func emptyPostBody() throws {
        let server = try PythonHTTPServer(handler: curlHandler)
        defer { server.stop() }
        let response = try HTTPClient().send(HTTPRequest(url: server.url("/echo"), method: .post))
        #expect(response.status == 200)
        #expect(response.body.isEmpty)
    }

    @Test(arguments: ["/big/", "/stream/"])
    func responseLargerThanCapIsRefused(path: String) throws {
        let server = try PythonHTTPServer(handler: curlHandler)
        defer { server.stop() }
        let client = HTTPClient(configuration: .init(maxResponseBytes: 64 * 1024))
        #expect(throws: HTTPError.responseTooLarge(limit: 64 * 1024)) {
            try client.send(.get(server.url(path + "\(1024 * 1024)")))
        }
        // Under the cap the same endpoints work.
        #expect(try client.send(.get(server.url(path + "1000"))).body.count == 1000)
    }

    @Test func silentServerTimesOut() throws {
        let listener = try SilentListener(listen: true)
        let client = HTTPClient(configuration: .init(connectTimeout: 1, timeout: 1))
        let started = ContinuousClock.now
        #expect(throws: HTTPError.timedOut) {
            try client.send(.get("http://127.0.0.1:\(listener.port)/"))
        }
        #expect(ContinuousClock.now - started < .seconds(3))
    }

    @Test func closedPortCannotConnect() throws {
        let port = try SilentListener(listen: false).port  // bound, not listening, then closed
        #expect(throws: HTTPError.couldNotConnect) {
            try HTTPClient().send(.get("http://127.0.0.1:\(port)/"))
        }
    }

    @Test func redirectsAreNotFollowedByDefault() throws {
        let server = try PythonHTTPServer(handler: curlHandler)
        defer { server.stop() }
        let response = try HTTPClient().send(.get(server.url("/redirect")))
        #expect(response.status == 302)
        #expect(response.headers["location"] == "/hello")
        let following = HTTPClient(configuration: .init(maxRedirects: 3))
        #expect(try following.send(.get(server.url("/redirect"))).status == 200)
    }

    @Test func onlyHTTPAndHTTPSAreAllowed() {
        #expect {
            try HTTPClient().send(.get("file:///etc/passwd"))
        } throws: { error in
            guard case HTTPError.other(let code, let message) = error else { return false }
            return code == 1 && !message.isEmpty  // CURLE_UNSUPPORTED_PROTOCOL
        }
    }

    @Test func headerInjectionIsRefused() {
        #expect {
            try HTTPClient().send(.get("http://127.0.0.1:9/", headers: [("X-Evil", "a\r\nHost: other")]))
        } throws: { error in
            if case HTTPError.invalidRequest = error { return true }
            return false
        }
    }

    @Test(arguments: [0.0, -1.0, .nan, .infinity])
    func invalidTimeoutsAreRefused(seconds: Double) {
        #expect {
            try HTTPClient(configuration: .init(timeout: seconds)).send(.get("http://127.0.0.1:9/"))
        } throws: { error in
            if case HTTPError.invalidRequest = error { return true }
            return false
        }
    }

    @Test func formEncodingKeepsOnlyUnreservedCharacters() {
        #expect(FormEncoding.percentEncode("AZaz09-._~") == "AZaz09-._~")
        #expect(FormEncoding.percentEncode(" !*'();:@&=+$,/?#[]%") ==
                "%20%21%2A%27%28%29%3B%3A%40%26%3D%2B%24%2C%2F%3F%23%5B%5D%25")
        #expect(FormEncoding.percentEncode("é😀") == "%C3%A9%F0%9F%98%80")
        #expect(FormEncoding.encode([("a", "1"), ("b c", "")]) == "a=1&b%20c=")
    }

    // MARK: requests that carry secrets

    static func secure(_ text: String) throws -> SecureBytes { try SecureBytes(copying: Array(text.utf8)) }

    /// A form with secret values encodes exactly as the plain one, into secure memory of
    /// exactly its size.
    @Test func aSecureFormEncodesAsThePlainOne() throws {
        let fields: [(name: String, value: String)] = [("grant_type", "refresh_token"), ("refresh_token", "a b+c&d=e/é~"),
                                                       ("empty", ""), ("x y", "z")]
        var form = SecureForm()
        for (index, (name, value)) in fields.enumerated() {
            if index % 2 == 1 { form.add(name, secret: try Self.secure(value)) } else { form.add(name, value) }
        }
        let body = try form.encoded()
        #expect(String(decoding: body.copyBytes(), as: UTF8.self) == FormEncoding.encode(fields))
        #expect(body.capacity == body.count)
        #expect(try SecureForm().encoded().count == 0)
        #expect(form.names == ["grant_type", "refresh_token", "empty", "x y"])
    }

    /// The body goes out as it was built, the secret header line with it, and the answer
    /// comes back into secure memory, growing past its first allocation, within the cap.
    @Test func aSecureRequestArrivesAndItsAnswerIsSecure() throws {
        let server = try PythonHTTPServer(handler: curlHandler)
        defer { server.stop() }
        var form = SecureForm()
        form.add("device_code", secret: try Self.secure("a b+c&d=e/é~"))
        let bearer = try SecureRequest.header("Authorization", "Bearer ", try Self.secure("tok/en+1"))
        let response = try HTTPClient().send(try .postForm(server.url("/echo"), form: form, headers: [("X-A", "1")], secretHeaders: [bearer]))
        #expect(response.status == 200)
        #expect(String(decoding: response.body.copyBytes(), as: UTF8.self) == "device_code=a%20b%2Bc%26d%3De%2F%C3%A9~")
        #expect(response.headers["x-request-authorization"] == "Bearer tok/en+1")
        #expect(response.headers["x-request-content-type"] == "application/x-www-form-urlencoded")

        let get = try HTTPClient().send(SecureRequest(url: server.url("/authorization"), secretHeaders: [bearer]))
        #expect(get.status == 200 && get.body.copyBytes() == Array("Bearer tok/en+1".utf8))
        let big = try HTTPClient().send(SecureRequest(url: server.url("/big/100000")))
        #expect(big.body.count == 100_000 && big.body.copyBytes().allSatisfy { $0 == UInt8(ascii: "x") })
        #expect(throws: HTTPError.responseTooLarge(limit: 64 * 1024)) {
            try HTTPClient(configuration: .init(maxResponseBytes: 64 * 1024)).send(SecureRequest(url: server.url("/stream/100000")))
        }
    }

    @Test func aSecretHeaderCannotInjectAnother() throws {
        for line in ["X-A: a\r\nHost: other", "no colon", ": empty name"] {
            #expect(throws: HTTPError.invalidRequest("invalid secret header")) {
                try HTTPClient().send(SecureRequest(url: "http://127.0.0.1:9/", secretHeaders: [try Self.secure(line)]))
            }
        }
    }
}
