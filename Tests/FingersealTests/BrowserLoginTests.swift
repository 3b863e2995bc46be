import CurlKit
import FingersealCore
import FoundationEssentials
import Glibc
@testable import LoopbackKit
import SodiumKit
import Testing
@testable import IdentityClient

/// `fingerseal login --flow browser` against the local IdP, with a scripted browser. The
/// broker runs the loopback listener and makes the token requests; the CLI prints the address
/// and starts the browser (xdg-open) as the person running it.
@Suite(.enabled(if: LocalIdP.available)) struct BrowserLoginTests {
    typealias Home = CLIHome

    /// Starts a browser sign-in that opens no browser; returns it with the address it prints
    /// (its --json line), which it prints only once it listens and watches for Ctrl-C.
    func startBrowserLogin(_ idp: LocalIdP, _ home: Home, client: String = "fingerseal-browser",
                           _ extra: [String] = []) throws -> (Child, String) {
        let child = try home.start(["login", "--issuer", idp.issuer, "--client-id", client, "--flow", "browser",
                                    "--no-browser", "--json", "--pin-fd", "3"] + extra, fd3: "2580\n")
        let line = try #require(child.readLine(), "\(child.finish().all)")
        struct Prompt: Decodable { let authorization_url: String }
        return (child, try JSONDecoder().decode(Prompt.self, from: Data(line.utf8)).authorization_url)
    }

    @Test(arguments: ["fingerseal-browser", "fingerseal-test"])
    func browserSignInSealsTheChain(client: String) throws {
        let idp = try LocalIdP()
        let home = try Home()
        let (child, url) = try startBrowserLogin(idp, home, client: client)
        #expect(url.hasPrefix(idp.issuer + "/authorize/?response_type=code&client_id=\(client)&redirect_uri=http%3A%2F%2F127.0.0.1%3A"))
        let browser = try Browser.signIn(url)
        #expect(browser.status == 0, "\(browser.all)")
        #expect(browser.stdout.hasPrefix("200 http://127.0.0.1:"), "the browser ended on the loopback listener")
        #expect(browser.stdout.contains("You can close this window and return to the terminal."))
        let login = child.finish()
        #expect(login.status == 0, "\(login.all)")
        #expect(login.stdout.contains("Signed in to \(idp.issuer)."))
        let status = try home.run(["status", "--json"])
        #expect(status.stdout.contains("\"sign_in\" : \"active\""), "\(status.stdout)")
        #expect(status.stdout.contains("\"issuer\" : \"\(idp.issuer)\""))
        #expect(status.stdout.contains("\"client_id\" : \"\(client)\""))
        #expect(try idp.familyAlive("alice"), "the IdP issued alice a live refresh token")
        home.storeIsRootOnly()
        #expect(home.leftInHome().isEmpty, "\(home.leftInHome())")
    }

    @Test func strayRequestsAreIgnoredAndTheSignInGoesOn() throws {
        let idp = try LocalIdP()
        let home = try Home()
        let (child, url) = try startBrowserLogin(idp, home)
        let callback = try #require(parameter("redirect_uri", of: url))
        let forged = try idp.http.send(.get(callback + "?code=forged&state=not-the-state"))
        #expect(forged.status == 400)
        #expect(String(decoding: forged.body, as: UTF8.self).contains("does not belong to the sign-in in progress"))
        #expect(try idp.http.send(.get(callback.replacing("/callback", with: "/favicon.ico"))).status == 404)
        let browser = try Browser.signIn(url)
        #expect(browser.status == 0, "\(browser.all)")
        let login = child.finish()
        #expect(login.status == 0, "\(login.all)")
        #expect(try home.run(["status"]).stdout.contains("Sign-in: signed in"))
    }

    /// A redirect that signs nobody in (with the right state): its page, exit code and
    /// message, with the provider's text reduced to printable ASCII; the existing vault is
    /// left byte for byte as it was.
    @Test(arguments: [
        ("error=access_denied&error_description=no", "did not complete", Int32(1), "The sign-in was refused."),
        ("error=invalid_scope%0A%1B%5B31mEVIL%22", "did not complete", Int32(10),
         "it ended the sign-in with the error invalid_scope[31mEVIL."),
        ("error=temporarily_unavailable", "did not complete", Int32(8),
         "it ended the sign-in with the error temporarily_unavailable."),
        ("code=forged", "You can close this window", Int32(1), "The identity provider did not accept the sign-in."),
        ("nothing=here", "did not complete", Int32(8), "neither a code nor an error"),
    ])
    func failedRedirectsLeaveTheVaultAsItWas(query: String, page: String, exitCode: Int32, message: String) throws {
        let idp = try LocalIdP()
        let home = try Home()
        #expect(try home.run(["pin", "set", "--pin-fd", "3"], fd3: "2580\n").status == 0)
        let vaultFile = home.vaultFile
        let before = try #require(readFile(vaultFile))
        let (child, url) = try startBrowserLogin(idp, home)
        let callback = try #require(parameter("redirect_uri", of: url))
        let state = try #require(parameter("state", of: url))
        let answer = try idp.http.send(.get(callback + "?" + query + "&state=" + state))
        #expect(answer.status == 200)
        #expect(String(decoding: answer.body, as: UTF8.self).contains(page))
        let login = child.finish()
        #expect(login.status == exitCode, "\(login.all)")
        #expect(login.stderr.contains(message), "\(login.stderr)")
        #expect(!login.all.contains("\u{1b}"), "no control characters from the URL reach the terminal")
        #expect(readFile(vaultFile) == before)
    }

    @Test func ctrlCWhileWaitingCancelsAndTheListenerWasLoopbackOnly() throws {
        let idp = try LocalIdP()
        let home = try Home()
        let (child, url) = try startBrowserLogin(idp, home)
        let port = try #require(parameter("redirect_uri", of: url).flatMap { URLComponents(string: $0)?.port })
        #expect(listeningAddresses(port: UInt16(port), table: "/proc/net/tcp") == ["0100007F"])
        #expect(listeningAddresses(port: UInt16(port), table: "/proc/net/tcp6").isEmpty)
        #expect(throws: HTTPError.couldNotConnect) { _ = try idp.http.send(.get("http://127.0.0.2:\(port)/callback")) }
        child.signal(SIGINT)
        let login = child.finish()
        #expect(login.status == 3, "\(login.all)")
        #expect(login.stderr.contains("Cancelled."))
        #expect(try home.run(["status"]).status == 6, "no vault was created")
        #expect(listeningAddresses(port: UInt16(port), table: "/proc/net/tcp").isEmpty, "the listener is gone")
    }

    /// For providers that match redirect URIs exactly: a fixed port, and a clear error when it
    /// is taken.
    /// A socket listening on 127.0.0.1 at a free port from 20000 to 32767: below Linux's
    /// default ephemeral range (32768 and up), which outgoing connections draw from.
    static func listeningBelowEphemeralRange() throws -> (Int32, Int) {
        for _ in 0..<200 {
            let port = Int.random(in: 20_000...32_767)
            let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            address.sin_addr = in_addr(s_addr: in_addr_t(0x7f00_0001).bigEndian)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(probe, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if bound == 0 && listen(probe, 1) == 0 { return (probe, port) }
            close(probe)
        }
        throw TestFailure("no free port from 20000 to 32767")
    }

    @Test func aFixedRedirectPortIsUsedAndABusyOneIsReported() throws {
        let idp = try LocalIdP()
        let home = try Home()
        // A port nobody listens on, below the kernel's ephemeral range (so no outgoing
        // connection of another test takes it between the probe's close and the login).
        let (probe, port) = try Self.listeningBelowEphemeralRange()
        // Taken (by the probe): refused with a message, nothing sealed.
        let busy = try home.run(["login", "--issuer", idp.issuer, "--client-id", "fingerseal-browser", "--flow", "browser",
                                 "--no-browser", "--redirect-port", "\(port)"])
        #expect(busy.status == 8 && busy.stderr.contains("Port \(port) on 127.0.0.1 is in use"), "\(busy.all)")
        close(probe)
        let (child, url) = try startBrowserLogin(idp, home, ["--redirect-port", "\(port)"])
        #expect(parameter("redirect_uri", of: url) == "http://127.0.0.1:\(port)/callback")
        #expect(try Browser.signIn(url).status == 0)
        #expect(child.finish().status == 0)
        #expect(try home.run(["login", "--issuer", idp.issuer, "--client-id", "x", "--flow", "browser",
                              "--redirect-port", "80"]).status == 2)
    }

    /// A provider that matches redirect URIs exactly (one registered port): a free port is
    /// refused there, and the registered one works from --redirect-port or from
    /// redirect_port= in the configuration.
    @Test func exactRedirectMatchingNeedsTheRegisteredPort() throws {
        let idp = try LocalIdP()
        let (probe, port) = try Self.listeningBelowEphemeralRange()
        close(probe)
        try idp.exactRedirectPort(port)
        let home = try Home()
        let (refused, url) = try startBrowserLogin(idp, home)
        #expect(parameter("redirect_uri", of: url) != "http://127.0.0.1:\(port)/callback")
        let browser = try Browser.signIn(url)
        // urllib raises on the provider's 400 page: the browser never reaches the listener.
        #expect(browser.status != 0 && browser.stderr.contains("HTTP Error 400"), "\(browser.all)")
        refused.signal(SIGINT)
        #expect(refused.finish().status == 3)

        let (child, fixed) = try startBrowserLogin(idp, home, ["--redirect-port", "\(port)"])
        #expect(parameter("redirect_uri", of: fixed) == "http://127.0.0.1:\(port)/callback")
        #expect(try Browser.signIn(fixed).status == 0)
        let login = child.finish()
        #expect(login.status == 0, "\(login.all)")

        let configured = try Home(brokerConfig: "redirect_port=\(port)\n")
        let (fromConfig, address) = try startBrowserLogin(idp, configured)
        #expect(parameter("redirect_uri", of: address) == "http://127.0.0.1:\(port)/callback")
        #expect(try Browser.signIn(address).status == 0)
        let signedIn = fromConfig.finish()
        #expect(signedIn.status == 0, "\(signedIn.all)")
        #expect(try configured.run(["status"]).stdout.contains("Sign-in: signed in"))
    }

    @Test func theWaitIsBounded() throws {
        let idp = try LocalIdP()
        let home = try Home()
        let arguments = ["login", "--issuer", idp.issuer, "--client-id", "fingerseal-browser", "--flow", "browser", "--no-browser"]
        #expect(try home.run(arguments + ["--timeout", "0"]).status == 2)
        let late = try home.run(arguments + ["--timeout", "1"])
        #expect(late.status == 4, "\(late.all)")
        #expect(late.stdout.hasPrefix("Open this address in a browser to sign in:\n\(idp.issuer)/authorize/?"))
        #expect(late.stderr.contains("The browser did not come back in time."))
        #expect(try home.run(["status"]).status == 6, "no vault was created")
        #expect(try home.run(["login", "--issuer", idp.issuer, "--client-id", "x", "--flow", "bogus"]).stderr
            .contains("device, password or browser"))
    }

    /// Without --no-browser, xdg-open (here a script that plays the browser) gets the address.
    @Test func xdgOpenIsGivenTheAddress() throws {
        let idp = try LocalIdP()
        let home = try Home()
        let bin = home.temp.file("bin")
        #expect(mkdir(bin, 0o700) == 0)
        writeFile(bin + "/browser.py", Array(Browser.script.utf8))
        writeFile(bin + "/xdg-open", Array("#!/bin/sh\nexec \(Browser.python) \(bin)/browser.py \"$1\"\n".utf8), mode: 0o700)
        let login = try home.run(["login", "--issuer", idp.issuer, "--client-id", "fingerseal-browser", "--flow", "browser",
                                  "--pin-fd", "3"], fd3: "2580\n", environment: ["PATH": bin + ":/usr/bin:/bin", "DISPLAY": ":99"])
        #expect(login.status == 0, "\(login.all)")
        #expect(login.stdout.contains("Signed in to \(idp.issuer)."))
        #expect(try home.run(["status"]).stdout.contains("Sign-in: signed in"))
    }
}

/// A scripted browser: Python's urllib with a cookie jar, since CurlKit keeps no cookies. It
/// signs alice in through the IdP's test shortcut, whose redirect leads to the authorization
/// URL and from there to the loopback listener; prints the last status and URL, then the page.
enum Browser {
    static let python = Paths.packageRoot + "/.venv/bin/python"
    static let script = """
        import http.cookiejar, sys, urllib.parse, urllib.request
        url = urllib.parse.urlsplit(sys.argv[1])
        login = f"{url.scheme}://{url.netloc}/test/login?" + urllib.parse.urlencode(
            {"username": "alice", "next": url.path + "?" + url.query})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                             urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        with opener.open(login, timeout=30) as answer:
            print(answer.status, answer.geturl())
            print(answer.read().decode())
        """

    static func signIn(_ url: String) throws -> Child.Result {
        try Child.run(python, ["-c", script, url])
    }
}

/// One query parameter of a URL, decoded.
func parameter(_ name: String, of url: String) -> String? {
    URLComponents(string: url)?.queryItems?.first { $0.name == name }?.value
}

/// The local addresses (hex, as the kernel lists them) of the TCP sockets listening on `port`.
func listeningAddresses(port: UInt16, table: String) -> [String] {
    let lines = String(decoding: readFile(table) ?? [], as: UTF8.self).split(separator: "\n").dropFirst()
    return lines.compactMap { line in
        let fields = line.split(separator: " ")
        guard fields.count > 3, fields[3] == "0A" else { return nil }
        let local = fields[1].split(separator: ":")
        guard local.count == 2, UInt16(local[1], radix: 16) == port else { return nil }
        return String(local[0])
    }
}

/// PKCE, the authorization URL and the reading of the redirect: pure functions.
@Suite struct BrowserLoginPKCETests {
    /// RFC 7636 Appendix B: 32 octets, their base64url (the verifier), and its challenge.
    static let rfcOctets: [UInt8] = [116, 24, 223, 180, 151, 153, 224, 37, 79, 250, 96, 125, 216, 173, 187, 186, 22, 212,
                                     37, 77, 105, 214, 191, 240, 91, 88, 5, 88, 83, 132, 141, 121]
    static let rfcVerifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    static let rfcChallenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"

    @Test func pkceMatchesRFC7636AppendixB() throws {
        #expect(AuthorizationRequest.base64URL(Self.rfcOctets) == Self.rfcVerifier)
        #expect(try PKCE(verifier: Self.rfcVerifier).challenge == Self.rfcChallenge)
    }

    @Test func sha256KnownAnswers() throws {
        func hex(_ text: String) throws -> String {
            try SHA256.hash(Array(text.utf8)).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        }
        #expect(try hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(try hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func freshRequestsAreRandomAndWellFormed() throws {
        let first = try AuthorizationRequest(), second = try AuthorizationRequest()
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        for value in [first.state, first.nonce, first.pkce.verifier] {
            #expect(value.count == 43 && value.allSatisfy(alphabet.contains), "\(value)")
        }
        #expect(Set([first.state, first.nonce, first.pkce.verifier, second.state, second.nonce, second.pkce.verifier]).count == 6)
        #expect(try PKCE(verifier: first.pkce.verifier) == first.pkce)
    }

    @Test func theAuthorizationURLCarriesEveryParameter() throws {
        let request = AuthorizationRequest(state: "st", nonce: "n 1", pkce: try PKCE(verifier: Self.rfcVerifier))
        let redirect = "http://127.0.0.1:5000/callback"
        #expect(request.url(endpoint: "https://idp.example.org/authorize", clientID: "fs", scope: "openid offline_access",
                            redirectURI: redirect)
            == "https://idp.example.org/authorize?response_type=code&client_id=fs"
            + "&redirect_uri=http%3A%2F%2F127.0.0.1%3A5000%2Fcallback&scope=openid%20offline_access&state=st&nonce=n%201"
            + "&code_challenge=\(Self.rfcChallenge)&code_challenge_method=S256")
        #expect(request.url(endpoint: "https://idp.example.org/auth?tenant=a", clientID: "fs", scope: "openid", redirectURI: redirect)
            .hasPrefix("https://idp.example.org/auth?tenant=a&response_type=code&client_id=fs&"))
    }

    @Test func theAuthorizationEndpointMustBeThere() throws {
        func client(_ endpoint: String?) -> OAuthClient {
            OAuthClient(metadata: ProviderMetadata(issuer: "https://idp.example.org", tokenEndpoint: "https://idp.example.org/token",
                                                   authorizationEndpoint: endpoint, deviceAuthorizationEndpoint: nil,
                                                   revocationEndpoint: nil),
                        clientID: "fs", http: HTTPClient())
        }
        let request = try AuthorizationRequest()
        #expect(throws: TokenFailure.badConfiguration("the provider offers no authorization endpoint")) {
            _ = try client(nil).authorizationURL(request, scope: "openid", redirectURI: "http://127.0.0.1:1/callback")
        }
        #expect(throws: TokenFailure.self) {
            _ = try client("https://idp.example.org/auth#x").authorizationURL(request, scope: "openid", redirectURI: "http://127.0.0.1:1/callback")
        }
        #expect(try client("https://idp.example.org/auth").authorizationURL(request, scope: "openid", redirectURI: "http://127.0.0.1:1/callback")
            .contains("&code_challenge=\(request.pkce.challenge)&code_challenge_method=S256"))
    }

    @Test func redirectsAreRead() {
        #expect(AuthorizationResponse(["code": "abc", "state": "s"]) == .code("abc"))
        #expect(AuthorizationResponse(["error": "access_denied", "code": "abc"]) == .refused)
        #expect(AuthorizationResponse(["error": "invalid_scope", "error_description": "x"]) == .failed("invalid_scope"))
        #expect(AuthorizationResponse(["error": "<b>\u{1b}[31m\"é\\" + String(repeating: "x", count: 100)])
            == .failed("<b>[31m" + String(repeating: "x", count: 57)))
        #expect(AuthorizationResponse(["error": "\u{7}\u{0}"]) == .failed("unknown"))
        #expect(AuthorizationResponse(["code": ""]) == .malformed)
        #expect(AuthorizationResponse([:]) == .malformed)
        #expect(AuthorizationResponse(["error": "server_error"]).isTransient)
        #expect(!AuthorizationResponse(["error": "invalid_request"]).isTransient)
    }
}

/// The loopback receiver alone, in this process.
@Suite struct BrowserLoginReceiverTests {
    static let pages: RedirectReceiver.Pages = (received: "received-page", failed: "failed-page", ignored: "ignored-page")
    let http = HTTPClient(configuration: .init(connectTimeout: 2, timeout: 5))

    /// Waits (bounded) until `fd` is readable.
    func readable(_ fd: Int32, within seconds: Int32 = 5) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, seconds * 1000) == 1
    }

    func get(_ url: String) throws -> (status: Int, page: String) {
        let response = try http.send(.get(url))
        return (response.status, String(decoding: response.body, as: UTF8.self))
    }

    @Test func keepsTheFirstGetWithTheStateOnly() throws {
        let receiver = try RedirectReceiver(state: "s-1", pages: Self.pages)
        let base = "http://127.0.0.1:\(receiver.port)"
        #expect(receiver.redirectURI == base + "/callback")
        #expect(try get(base + "/other?code=c&state=s-1").status == 404)
        #expect(try get(base + "/callback?code=c&state=s-2") == (400, Page(status: 400, text: "ignored-page").html))
        #expect(try get(base + "/callback?code=c").status == 400)
        #expect(try get(base + "/callback?code=c&state=s-1&state=s-2").status == 400, "a repeated parameter is refused")
        #expect(try http.send(.postForm(base + "/callback", fields: [("code", "c"), ("state", "s-1")])).status == 405)
        #expect(!readable(receiver.readyFD, within: 0) && receiver.redirect() == nil)

        let answer = try http.send(.get(base + "/callback?code=c%2B1&state=s-1"))
        #expect(answer.status == 200)
        #expect(String(decoding: answer.body, as: UTF8.self).contains("<p>received-page</p>"))
        #expect(answer.headers["cache-control"] == "no-store" && answer.headers["referrer-policy"] == "no-referrer")
        #expect(readable(receiver.readyFD))
        #expect(receiver.redirect() == ["code": "c+1", "state": "s-1"])
        #expect(try get(base + "/callback?code=other&state=s-1").status == 400, "only the first one counts")
        #expect(receiver.redirect() == ["code": "c+1", "state": "s-1"])

        receiver.stop()
        #expect(throws: HTTPError.couldNotConnect) { _ = try http.send(.get(base + "/callback")) }
    }

    @Test func anErrorRedirectGetsTheFailedPage() throws {
        let receiver = try RedirectReceiver(state: "s", pages: Self.pages)
        #expect(try get(receiver.redirectURI + "?error=access_denied&state=s") == (200, Page(status: 200, text: "failed-page").html))
        #expect(readable(receiver.readyFD))
        #expect(receiver.redirect() == ["error": "access_denied", "state": "s"])
    }

    @Test func listensOn127001Only() throws {
        let receiver = try RedirectReceiver(state: "s", pages: Self.pages)
        #expect(listeningAddresses(port: receiver.port, table: "/proc/net/tcp") == ["0100007F"])
        #expect(listeningAddresses(port: receiver.port, table: "/proc/net/tcp6").isEmpty)
        #expect(throws: HTTPError.couldNotConnect) { _ = try http.send(.get("http://127.0.0.2:\(receiver.port)/callback")) }
        #expect(try get("http://127.0.0.1:\(receiver.port)/").status == 404)
    }
}
