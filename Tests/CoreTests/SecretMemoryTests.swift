import CurlKit
import FingersealCore
import Glibc
@testable import IdentityClient
import SodiumKit
import Testing
@testable import TestSupport

/// Issue 19 item 13: the secrets of a sign-in and of a refresh stay in wiped memory on
/// fingerseal's side. What libcurl and OpenSSL copy is listed in README.md.
@Suite struct SecretMemoryTests {
    /// 40 characters of base64's alphabet with "/" and "+" inside: percent-encoding (what
    /// libcurl is given) and JSON escaping of "/" (what it receives) both change it.
    static func canary() throws -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        let random = try Sodium.randomBytes(38)
        var text = String(random.map { alphabet[Int($0) % alphabet.count] })
        text.insert(contentsOf: "/+", at: text.index(text.startIndex, offsetBy: 19))
        return text
    }

    static let names = ["client_secret", "refresh_token", "password", "code", "verifier", "device_code",
                        "access_token_answer", "refresh_token_answer"]

    /// A token endpoint that checks every form field and the HTTP Basic header it is sent,
    /// and answers with the answer canaries, every "/" escaped as JSON allows ("\/").
    static func endpoint(_ values: [String: String]) -> String {
        func value(_ name: String) -> String { "\"" + (values[name] ?? "") + "\"" }
        return """
            import base64, json, urllib.parse
            CLIENT, SECRET = "canary-client", \(value("client_secret"))
            EXPECTED = {
                ("/token", "refresh_token"): {"grant_type": "refresh_token", "refresh_token": \(value("refresh_token"))},
                ("/token", "password"): {"grant_type": "password", "username": "alice", "password": \(value("password")),
                                         "scope": "openid"},
                ("/token", "authorization_code"): {"grant_type": "authorization_code", "code": \(value("code")),
                                                   "redirect_uri": "http://127.0.0.1:1/callback",
                                                   "code_verifier": \(value("verifier"))},
                ("/token", "urn:ietf:params:oauth:grant-type:device_code"): {
                    "grant_type": "urn:ietf:params:oauth:grant-type:device_code", "device_code": \(value("device_code"))},
                ("/device", None): {"scope": "openid", "client_id": CLIENT},
                ("/revoke", None): {"token": \(value("refresh_token")), "token_type_hint": "refresh_token"},
            }
            TOKENS = json.dumps({"access_token": \(value("access_token_answer")), "token_type": "Bearer",
                                 "refresh_token": \(value("refresh_token_answer")), "expires_in": 300}).replace("/", "\\\\/")
            DEVICE = json.dumps({"device_code": \(value("device_code")), "user_code": "WDJB-MJHT",
                                 "verification_uri": "http://127.0.0.1/device", "expires_in": 600}).replace("/", "\\\\/")
            BASIC = "Basic " + base64.b64encode((urllib.parse.quote(CLIENT, safe="") + ":"
                                                + urllib.parse.quote(SECRET, safe="")).encode()).decode()

            class Handler(http.server.BaseHTTPRequestHandler):
                protocol_version = "HTTP/1.1"

                def log_message(self, *args):
                    pass

                def reply(self, status, body):
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)

                def do_POST(self):
                    body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
                    form = dict(urllib.parse.parse_qsl(body, keep_blank_values=True, strict_parsing=True))
                    key = (self.path, form.get("grant_type") if self.path == "/token" else None)
                    if self.headers.get("Authorization") != BASIC or EXPECTED.get(key) != form:
                        return self.reply(400, json.dumps({"error": "canary_mismatch", "path": self.path}).encode())
                    answer = DEVICE if self.path == "/device" else "" if self.path == "/revoke" else TOKENS
                    self.reply(200, answer.encode())
            """
    }

    /// The canary helper (Tests/Helpers/secret-canary) makes every token request fingerseal
    /// makes, then searches its own memory: no canary may be found in the form only
    /// fingerseal's code could have written it (a String, an array, a Data of a secret). The
    /// same search, told to keep an ordinary copy of one canary, must find that one.
    @Test func tokenRequestsLeaveNoOrdinaryCopyOfASecret() throws {
        var values: [String: String] = [:]
        for name in Self.names { values[name] = try Self.canary() }
        let server = try PythonHTTPServer(handler: Self.endpoint(values))
        defer { server.stop() }
        let input = Self.names.map { name in
            name + " " + Array(values[name, default: ""].utf8).map { byte in
                let masked = byte ^ 0x5A
                return (masked < 16 ? "0" : "") + String(masked, radix: 16)
            }.joined() + "\n"
        }.joined()
        let helper = Paths.buildDirectory + "/secret-canary"
        let clean = try Child.run(helper, [server.url("")], stdin: Array(input.utf8))
        #expect(clean.status == 0 && clean.stdout.hasPrefix("clean "), "\(clean.all)")

        let leaked = try Child.run(helper, [server.url(""), "--leak", "password"], stdin: Array(input.utf8))
        #expect(leaked.status == 1 && leaked.stdout.split(separator: "\n").allSatisfy { $0.hasPrefix("found password in ") },
                "\(leaked.all)")
    }

    /// The canary heap (free keeps every block) belongs to the helper alone: in this process it
    /// would replace the test runner's free and realloc, so that nothing the tests free is ever
    /// freed and ASan sees no use after free. It is in the process when its marker resolves.
    @Test func theCanaryHeapIsNotInTheTestProcess() {
        // nil: RTLD_DEFAULT, the executable and every library loaded.
        #expect(dlsym(nil, "canary_heap_releases") == nil)
    }

    // MARK: the in-place JSON reader

    static func members(_ text: String, _ read: (JSONMembers) throws -> Void) throws {
        try Array(text.utf8).withUnsafeBytes { bytes in try read(try JSONMembers(bytes)) }
    }

    static func accepts(_ text: String) -> Bool {
        Array(text.utf8).withUnsafeBytes { (try? JSONMembers($0)) != nil }
    }

    @Test func theReaderDecodesStringsAndSecrets() throws {
        try Self.members(#" {"a":"x\/y\u002b\n","b":"\ud83d\ude00é","n":-12,"f":300.0,"q":"42","z":null,"o":{"a":[1,{"b":true}]}} "#) { (answer: JSONMembers) throws in
            #expect(try answer.string("a") == "x/y+\n")
            #expect(try answer.secret("a")?.copyBytes() == Array("x/y+\n".utf8))
            #expect(try answer.string("b") == "😀é")
            #expect(try answer.secret("b")?.copyBytes() == Array("😀é".utf8))
            #expect(try answer.integer("n") == -12 && answer.integer("f") == 300 && answer.integer("q") == 42)
            #expect(try answer.string("z") == nil && answer.secret("z") == nil && answer.integer("z") == nil)
            #expect(try answer.string("missing") == nil)
            #expect(throws: JSONMembers.Malformed.self) { try answer.string("n") }
            #expect(throws: JSONMembers.Malformed.self) { try answer.integer("a") }
            #expect(throws: JSONMembers.Malformed.self) { try answer.secret("o") }
            #expect(answer.members.count == 7, "nested members are not top-level ones")
        }
        try Self.members(#"{"e":1e3,"g":2.5,"big":1234567890123456789}"#) { (answer: JSONMembers) throws in
            #expect(throws: JSONMembers.Malformed.self) { try answer.integer("e") }
            #expect(throws: JSONMembers.Malformed.self) { try answer.integer("g") }
            #expect(throws: JSONMembers.Malformed.self) { try answer.integer("big") }
        }
    }

    @Test(arguments: [
        "", " ", "[]", "\"x\"", "{", "{}x", "{} {}", #"{"a"}"#, #"{"a":}"#, #"{"a":1,}"#, #"{,"a":1}"#, #"{a:1}"#,
        #"{"a":1 "b":2}"#, #"{"a":01}"#, #"{"a":1.}"#, #"{"a":.5}"#, #"{"a":-}"#, #"{"a":1e}"#, #"{"a":+1}"#,
        #"{"a":tru}"#, #"{"a":nul}"#, #"{"a":"\x"}"#, #"{"a":"\u12"}"#, #"{"a":"\ud800"}"#, #"{"a":"\udc00"}"#,
        #"{"a":"\ud800\u0041"}"#, "{\"a\":\"\u{01}\"}", "{\"a\":\"x", #"{"a":1,"a":2}"#, #"{"a":1,"\u0061":2}"#,
        #"{"o":{"b":1,"b":2}}"#, #"{"a":[1,]}"#, #"{"a":[1 2]}"#,
    ])
    func theReaderRefuses(text: String) {
        #expect(!Self.accepts(text), "\(text)")
    }

    @Test func theReaderRefusesBadUTF8AndDeepNesting() {
        func accepts(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { (try? JSONMembers($0)) != nil } }
        let prefix = Array(#"{"a":""#.utf8), suffix = Array(#""}"#.utf8)
        #expect(accepts(prefix + [0xC3, 0xA9] + suffix))
        for bad: [UInt8] in [[0xC3], [0xC0, 0xAF], [0xE0, 0x80, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xFF], [0x80]] {
            #expect(!accepts(prefix + bad + suffix), "\(bad)")
        }
        let depth = JSONMembers.maxDepth
        #expect(Self.accepts(#"{"a":"# + String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1) + "}"))
        #expect(!Self.accepts(#"{"a":"# + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}"))
    }

    /// A token answer as some providers write it (escaped slashes, a quoted lifetime) gives
    /// the same tokens, decoded into secure memory.
    @Test func escapedTokenAnswersAreDecoded() throws {
        let tokens = try TokenRequests.parseTokens(Array(#"{"access_token":"a\/b","token_type":"bearer","expires_in":"3599","refresh_token":"r\u002Bs","scope":"openid"}"#.utf8))
        #expect(tokens.accessToken.copyBytes() == Array("a/b".utf8) && tokens.refreshToken?.copyBytes() == Array("r+s".utf8))
        #expect(tokens.expiresIn == 3599 && tokens.scope == "openid")
        #expect(throws: TokenFailure.self) {
            _ = try TokenRequests.parseTokens(Array(#"{"access_token":"a","token_type":"Bearer","refresh_token":"r\u00e9"}"#.utf8))
        }
        #expect(throws: TokenFailure.self) {
            _ = try TokenRequests.parseTokens(Array(#"{"access_token":"a","access_token":"b","token_type":"Bearer"}"#.utf8))
        }
    }

    /// HTTP Basic for a confidential client: both parts form-encoded, then base64, built in
    /// secure memory (RFC 6749 §2.3.1).
    @Test func theBasicHeaderIsBuiltAsRFC6749Says() throws {
        let line = try TokenRequests.basicAuthorization("my client", try SecureBytes(copying: Array("p@ss/wörd".utf8)))
        // base64("my%20client:p%40ss%2Fw%C3%B6rd")
        #expect(String(decoding: line.copyBytes(), as: UTF8.self) == "Authorization: Basic bXklMjBjbGllbnQ6cCU0MHNzJTJGdyVDMyVCNnJk")
    }
}
