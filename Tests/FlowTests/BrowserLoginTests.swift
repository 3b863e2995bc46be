import CurlKit
import FingersealCore
import FingersealWire
import FoundationEssentials
import Glibc
@testable import IdentityClient
import JOSEKit
@testable import LoopbackKit
import SodiumKit
import SystemKit
import Testing
@testable import TestSupport

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

    /// Without --no-browser, xdg-open (here a script that records its arguments, then plays the
    /// browser) gets only the local start address: no state, nonce or PKCE challenge in any
    /// argv, where every local user can read it (/proc/PID/cmdline). The full address is still
    /// printed for the person, and the start address leads the browser to it.
    @Test func xdgOpenIsGivenOnlyTheLocalStartAddress() throws {
        let idp = try LocalIdP()
        let home = try Home()
        let bin = home.temp.file("bin")
        #expect(mkdir(bin, 0o700) == 0)
        writeFile(bin + "/browser.py", Array(Browser.script.utf8))
        writeFile(bin + "/xdg-open", Array("""
            #!/bin/sh
            printf '%s\\n' "$0" "$@" > \(bin)/argv
            exec \(Browser.python) \(bin)/browser.py "$1"

            """.utf8), mode: 0o700)
        let login = try home.run(["login", "--issuer", idp.issuer, "--client-id", "fingerseal-browser", "--flow", "browser",
                                  "--pin-fd", "3"], fd3: "2580\n", environment: ["PATH": bin + ":/usr/bin:/bin", "DISPLAY": ":99"])
        #expect(login.status == 0, "\(login.all)")
        #expect(login.stdout.contains("Signed in to \(idp.issuer)."))
        #expect(try home.run(["status"]).stdout.contains("Sign-in: signed in"))

        let printed = try #require(login.stdout.split(separator: "\n").first { $0.hasPrefix(idp.issuer + "/authorize/?") })
        let url = String(printed)
        let port = try #require(parameter("redirect_uri", of: url).flatMap { URLComponents(string: $0)?.port })
        let argv = String(decoding: try #require(readFile(bin + "/argv")), as: UTF8.self)
        #expect(argv == "\(bin)/xdg-open\nhttp://127.0.0.1:\(port)/start\n", "\(argv)")
        for name in ["state", "nonce", "code_challenge"] {
            let value = try #require(parameter(name, of: url))
            #expect(value.count >= 43 && !argv.contains(value), "\(name) reached xdg-open's argv")
        }
    }
}

/// The CLI hands xdg-open only a loopback address without a query, whatever a broker sends:
/// here a scripted one that first sends a full authorization URL, then a start address.
@Suite struct BrowserOpeningTests {
    @Test func onlyALoopbackStartAddressReachesXdgOpen() throws {
        let temp = try TempDirectory()
        let bin = temp.file("bin")
        #expect(mkdir(bin, 0o700) == 0)
        // It says when it ran through a FIFO: the CLI does not wait for it (a session of its own).
        #expect(mkfifo(bin + "/ran", 0o600) == 0)
        writeFile(bin + "/xdg-open", Array("#!/bin/sh\nprintf '%s\\n' \"$1\" >> \(bin)/argv\necho ran > \(bin)/ran\n".utf8),
                  mode: 0o700)
        let ran = open(bin + "/ran", O_RDONLY | O_NONBLOCK)
        defer { close(ran) }
        let broker = try ScriptedBroker([[
            .send(.browse("https://idp.example.org/authorize?response_type=code&state=s3cr3t&nonce=n0nce")),
            .send(.browse("http://127.0.0.1:5/callback?code=c0de")),
            .send(.browse("http://127.0.0.1.evil.example:5/start")),
            .send(.browse("http://127.0.0.1:5/start")),
            .send(.result(Reply(.success))),
        ]])
        let environment = ["FINGERSEAL_SOCKET": broker.path, "PATH": bin + ":/usr/bin:/bin", "DISPLAY": ":99", "NO_COLOR": "1"]
        let login = try Child.run(Paths.cli, ["login", "--issuer", "https://idp.example.org", "--client-id", "c", "--flow", "browser"],
                                  environment: environment)
        #expect(login.status == 0, "\(login.all)")
        _ = broker.finish()
        var entry = pollfd(fd: ran, events: Int16(POLLIN), revents: 0)
        #expect(poll(&entry, 1, 10_000) == 1, "xdg-open ran")
        #expect(String(decoding: readFile(bin + "/argv") ?? [], as: UTF8.self) == "http://127.0.0.1:5/start\n")
    }
}

/// Issue 19 item 11: only the person signing in may complete their browser sign-in. Real
/// accounts (fs-alice, fs-bob), real processes, the local IdP.
@Suite(.serialized, .enabled(if: LocalIdP.available && getuid() == 0)) struct BrowserLoginAccountTests {
    static let pin = "2580"

    /// While fs-alice signs in with --flow browser, a process of fs-bob delivers the redirect
    /// with the right state: once with a real code for bob's own account at the provider (for
    /// alice's request, so her PKCE verifier would redeem it), once forged. Both are refused
    /// with a page saying so, the start address is refused too, and nothing is sealed. Then
    /// alice's own browser completes the sign-in, as alice, and she hears of the attempts.
    @Test func anotherAccountCannotCompleteTheSignIn() throws {
        try #require(TestUsers.ensure(TestUsers.alice) && TestUsers.ensure(TestUsers.bob))
        let idp = try LocalIdP()
        let rig = try ReaderBroker(driver: "none", reader: false)
        let aliceUID = try #require(TestUsers.uid(TestUsers.alice))
        // Root provisions her vault (a PIN), so her sign-in needs no account password.
        let provisioned = try rig.cli(["pin", "set", "--user", TestUsers.alice, "--pin-fd", "3"], fd3: Self.pin + "\n")
        #expect(provisioned.status == 0, "\(provisioned.all)")
        let vault = rig.broker.vaultDirectory(uid: aliceUID) + "/vault"
        let before = try #require(readFile(vault))

        let login = try rig.startCLI(["login", "--issuer", idp.issuer, "--client-id", "fingerseal-browser", "--flow", "browser",
                                      "--no-browser", "--json", "--pin-fd", "3"], fd3: Self.pin + "\n", as: TestUsers.alice,
                                     environment: ["HOME": "/nonexistent"])
        let line = try #require(login.readLine(), "\(login.finish().all)")
        struct Prompt: Decodable { let authorization_url: String }
        let url = try JSONDecoder().decode(Prompt.self, from: Data(line.utf8)).authorization_url
        let callback = try #require(parameter("redirect_uri", of: url))
        let state = try #require(parameter("state", of: url))
        let start = callback.replacing("/callback", with: "/start")

        // bob's browser signs bob in at the provider and is sent back with bob's code.
        let bobsBrowser = try Browser.signIn(url, idpUser: "bob", as: TestUsers.bob)
        #expect(bobsBrowser.status != 0 && bobsBrowser.stdout.hasPrefix("403 http://127.0.0.1:"), "\(bobsBrowser.all)")
        #expect(bobsBrowser.stdout.contains("belongs to another account"), "\(bobsBrowser.stdout)")
        let forged = try Browser.fetch(callback + "?code=forged&state=" + state, as: TestUsers.bob)
        #expect(forged.stdout.hasPrefix("403\n") && forged.stdout.contains("belongs to another account"), "\(forged.all)")
        let started = try Browser.fetch(start, as: TestUsers.bob)
        #expect(started.stdout.hasPrefix("403\n") && !started.stdout.contains(state), "\(started.all)")
        #expect(readFile(vault) == before, "nothing was sealed")

        // alice's own browser: the start address leads her to the provider, and back.
        let alicesStart = try Browser.fetch(start, as: TestUsers.alice)
        #expect(alicesStart.stdout.hasPrefix("302\n\(url)\n"), "\(alicesStart.all)")
        let alicesBrowser = try Browser.signIn(start, idpUser: "alice", as: TestUsers.alice)
        #expect(alicesBrowser.status == 0 && alicesBrowser.stdout.hasPrefix("200 http://127.0.0.1:"), "\(alicesBrowser.all)")
        let result = login.finish()
        #expect(result.status == 0, "\(result.all)")
        #expect(result.stdout.contains("Signed in as alice@example.test."), "\(result.stdout)")
        #expect(!result.stdout.contains("bob@example.test"), "\(result.stdout)")
        #expect(result.stderr.contains("(\(TestUsers.bob)) tried to complete this sign-in"), "\(result.stderr)")
        let status = try rig.cli(["status"], as: TestUsers.alice, environment: ["HOME": "/nonexistent"])
        #expect(status.stdout.contains("Signed in as alice@example.test."), "\(status.stdout)")
    }
}

/// A scripted browser: Python's urllib with a cookie jar, since CurlKit keeps no cookies. It
/// signs `idpUser` (default alice) in through the IdP's test shortcut, whose redirect leads to
/// the authorization URL and from there to the loopback listener; prints the last status and
/// URL, then the page. Given the listener's start address, it asks it for the authorization
/// URL first, as a browser opened by xdg-open does. An HTTP error ends it with status 1.
enum Browser {
    static let python = Paths.packageRoot + "/.venv/bin/python"
    static let script = """
        import http.cookiejar, sys, urllib.error, urllib.parse, urllib.request
        target = sys.argv[1]
        user = sys.argv[2] if len(sys.argv) > 2 else "alice"

        def fail(error):
            print(error.code, error.geturl())
            print(error.read().decode())
            sys.exit(f"HTTP Error {error.code}")

        class Stay(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args):
                return None

        if urllib.parse.urlsplit(target).path == "/start":
            try:
                urllib.request.build_opener(urllib.request.ProxyHandler({}), Stay).open(target, timeout=30)
                sys.exit("the start address did not redirect")
            except urllib.error.HTTPError as error:
                if error.code != 302:
                    fail(error)
                target = error.headers["Location"]
        url = urllib.parse.urlsplit(target)
        login = f"{url.scheme}://{url.netloc}/test/login?" + urllib.parse.urlencode(
            {"username": user, "next": url.path + "?" + url.query})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                             urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        try:
            with opener.open(login, timeout=30) as answer:
                print(answer.status, answer.geturl())
                print(answer.read().decode())
        except urllib.error.HTTPError as error:
            fail(error)
        """

    /// One GET that follows no redirect: the status, then (for a redirect) the Location, then the page.
    static let fetchScript = """
        import sys, urllib.error, urllib.request

        class Stay(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args):
                return None

        try:
            with urllib.request.build_opener(urllib.request.ProxyHandler({}), Stay).open(sys.argv[1], timeout=30) as answer:
                print(answer.status)
                print(answer.read().decode())
        except urllib.error.HTTPError as error:
            print(error.code)
            if error.headers.get("Location"):
                print(error.headers["Location"])
            print(error.read().decode())
        """

    static func signIn(_ url: String, idpUser: String = "alice", as user: String? = nil) throws -> Child.Result {
        try run(["-c", script, url, idpUser], as: user)
    }

    static func fetch(_ url: String, as user: String? = nil) throws -> Child.Result {
        try run(["-c", fetchScript, url], as: user)
    }

    /// Python, as `user` (setpriv, with that account's groups) when one is named.
    static func run(_ arguments: [String], as user: String?) throws -> Child.Result {
        guard let user else { return try Child.run(python, arguments) }
        guard let entry = getpwnam(user) else { throw TestFailure("no user \(user)") }
        return try Child.run("/usr/bin/setpriv", ["--reuid=\(entry.pointee.pw_uid)", "--regid=\(entry.pointee.pw_gid)",
                                                  "--init-groups", "--", python] + arguments)
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

    static func secure(_ text: String) throws -> SecureBytes { try SecureBytes(copying: Array(text.utf8)) }
    static func text(_ secret: SecureBytes) -> String { String(decoding: secret.copyBytes(), as: UTF8.self) }

    @Test func pkceMatchesRFC7636AppendixB() throws {
        #expect(Base64URL.encode(Self.rfcOctets) == Self.rfcVerifier)
        #expect(Self.text(try SecureBytes(copying: Self.rfcOctets).base64(urlSafe: true)) == Self.rfcVerifier)
        #expect(try PKCE(verifier: Self.secure(Self.rfcVerifier)).challenge == Self.rfcChallenge)
    }

    /// libsodium's base64 into secure memory, against RFC 4648 §10's vectors (padded for
    /// HTTP Basic, unpadded base64url for PKCE).
    @Test func secureBase64MatchesRFC4648() throws {
        let vectors = ["": "", "f": "Zg==", "fo": "Zm8=", "foo": "Zm9v", "foob": "Zm9vYg==", "fooba": "Zm9vYmE=", "foobar": "Zm9vYmFy"]
        for (input, output) in vectors {
            #expect(Self.text(try Self.secure(input).base64(urlSafe: false)) == output)
            #expect(Self.text(try Self.secure(input).base64(urlSafe: true)) == output.replacing("=", with: ""))
        }
        #expect(Self.text(try SecureBytes(copying: [0xfb, 0xff]).base64(urlSafe: true)) == "-_8")
        #expect(Self.text(try SecureBytes(copying: [0xfb, 0xff]).base64(urlSafe: false)) == "+/8=")
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
        for value in [first.state, first.nonce, Self.text(first.pkce.verifier)] {
            #expect(value.count == 43 && value.allSatisfy(alphabet.contains), "\(value)")
        }
        #expect(Set([first.state, first.nonce, Self.text(first.pkce.verifier), second.state, second.nonce,
                     Self.text(second.pkce.verifier)]).count == 6)
        #expect(try PKCE(verifier: first.pkce.verifier) == first.pkce)
        #expect(first.pkce != second.pkce)
    }

    @Test func theAuthorizationURLCarriesEveryParameter() throws {
        let request = AuthorizationRequest(state: "st", nonce: "n 1", pkce: try PKCE(verifier: Self.secure(Self.rfcVerifier)))
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
        #expect(throws: TokenFailure.badConfiguration(.noAuthorizationEndpoint)) {
            _ = try client(nil).authorizationURL(request, scope: "openid", redirectURI: "http://127.0.0.1:1/callback")
        }
        #expect(throws: TokenFailure.self) {
            _ = try client("https://idp.example.org/auth#x").authorizationURL(request, scope: "openid", redirectURI: "http://127.0.0.1:1/callback")
        }
        #expect(try client("https://idp.example.org/auth").authorizationURL(request, scope: "openid", redirectURI: "http://127.0.0.1:1/callback")
            .contains("&code_challenge=\(request.pkce.challenge)&code_challenge_method=S256"))
    }

    @Test func redirectsAreRead() throws {
        let abc = try Self.secure("abc")
        #expect(AuthorizationResponse(["state": "s"], code: abc) == .code(try Self.secure("abc")))
        #expect(AuthorizationResponse(["state": "s"], code: abc) != .code(try Self.secure("abd")))
        #expect(AuthorizationResponse(["error": "access_denied"], code: abc) == .refused)
        #expect(AuthorizationResponse(["error": "invalid_scope", "error_description": "x"], code: nil) == .failed("invalid_scope"))
        #expect(AuthorizationResponse(["error": "<b>\u{1b}[31m\"é\\" + String(repeating: "x", count: 100)], code: nil)
            == .failed("<b>[31m" + String(repeating: "x", count: 57)))
        #expect(AuthorizationResponse(["error": "\u{7}\u{0}"], code: nil) == .failed("unknown"))
        #expect(AuthorizationResponse([:], code: try Self.secure("")) == .malformed)
        #expect(AuthorizationResponse([:], code: nil) == .malformed)
        #expect(AuthorizationResponse(["error": "server_error"], code: nil).isTransient)
        #expect(!AuthorizationResponse(["error": "invalid_request"], code: nil).isTransient)
    }
}

/// The loopback receiver alone, in this process.
@Suite struct BrowserLoginReceiverTests {
    static let pages = RedirectReceiver.Pages(received: "received-page", failed: "failed-page", ignored: "ignored-page",
                                              otherAccount: "other-account-page", unknownAccount: "unknown-account-page")
    let http = HTTPClient(configuration: .init(connectTimeout: 2, timeout: 5))

    /// A receiver answering this process's own account (the tests' uid).
    func receiver(state: String) throws -> RedirectReceiver {
        try RedirectReceiver(state: state, owner: getuid(), pages: Self.pages)
    }

    /// Waits (bounded) until `fd` is readable.
    func readable(_ fd: Int32, within seconds: Int32 = 5) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, seconds * 1000) == 1
    }

    func get(_ url: String) throws -> (status: Int, page: String) {
        let response = try http.send(.get(url))
        return (response.status, String(decoding: response.body, as: UTF8.self))
    }

    func parameters(_ redirect: RedirectReceiver.Redirect?) -> [String: String]? {
        guard let redirect else { return nil }
        var all = redirect.parameters
        if let code = redirect.code { all["code"] = String(decoding: code.copyBytes(), as: UTF8.self) }
        return all
    }

    @Test func keepsTheFirstGetWithTheStateOnly() throws {
        let receiver = try receiver(state: "s-1")
        let base = "http://127.0.0.1:\(receiver.port)"
        #expect(receiver.redirectURI == base + "/callback")
        #expect(try get(base + "/other?code=c&state=s-1").status == 404)
        #expect(try get(base + "/callback?code=c&state=s-2") == (400, Page(status: 400, text: "ignored-page").html))
        #expect(try get(base + "/callback?code=c").status == 400)
        #expect(try get(base + "/callback?code=c&state=s-1&state=s-2").status == 400, "a repeated parameter is refused")
        #expect(try get(base + "/callback?code=c&code=d&state=s-1").status == 400, "a repeated code is refused")
        #expect(try http.send(.postForm(base + "/callback", fields: [("code", "c"), ("state", "s-1")])).status == 405)
        #expect(!readable(receiver.readyFD, within: 0) && receiver.redirect() == nil)

        let answer = try http.send(.get(base + "/callback?code=c%2B1&state=s-1"))
        #expect(answer.status == 200)
        #expect(String(decoding: answer.body, as: UTF8.self).contains("<p>received-page</p>"))
        #expect(answer.headers["cache-control"] == "no-store" && answer.headers["referrer-policy"] == "no-referrer")
        #expect(readable(receiver.readyFD))
        #expect(receiver.redirect()?.parameters == ["state": "s-1"], "the code is kept apart")
        #expect(parameters(receiver.redirect()) == ["code": "c+1", "state": "s-1"])
        #expect(try get(base + "/callback?code=other&state=s-1").status == 400, "only the first one counts")
        #expect(parameters(receiver.redirect()) == ["code": "c+1", "state": "s-1"])

        receiver.stop()
        #expect(throws: HTTPError.couldNotConnect) { _ = try http.send(.get(base + "/callback")) }
    }

    @Test func anErrorRedirectGetsTheFailedPage() throws {
        let receiver = try receiver(state: "s")
        #expect(try get(receiver.redirectURI + "?error=access_denied&state=s") == (200, Page(status: 200, text: "failed-page").html))
        #expect(readable(receiver.readyFD))
        #expect(parameters(receiver.redirect()) == ["error": "access_denied", "state": "s"])
        #expect(receiver.redirect()?.code == nil)
    }

    @Test func listensOn127001Only() throws {
        let receiver = try receiver(state: "s")
        #expect(listeningAddresses(port: receiver.port, table: "/proc/net/tcp") == ["0100007F"])
        #expect(listeningAddresses(port: receiver.port, table: "/proc/net/tcp6").isEmpty)
        #expect(throws: HTTPError.couldNotConnect) { _ = try http.send(.get("http://127.0.0.2:\(receiver.port)/callback")) }
        #expect(try get("http://127.0.0.1:\(receiver.port)/").status == 404)
    }

    /// The start address (what xdg-open is given) redirects the owner to the authorization
    /// URL once there is one; an address that could not be a header is refused.
    @Test func theStartAddressRedirectsToTheAuthorizationURL() throws {
        let receiver = try receiver(state: "s")
        #expect(receiver.startURI == "http://127.0.0.1:\(receiver.port)/start")
        #expect(try get(receiver.startURI).status == 404, "nothing to redirect to yet")
        #expect(throws: SystemError.self) { try receiver.startRedirecting(to: "https://idp.example.org/a\r\nSet-Cookie: x") }
        try receiver.startRedirecting(to: "https://idp.example.org/authorize?state=s&nonce=n")
        let answer = try http.send(.get(receiver.startURI))
        #expect(answer.status == 302 && answer.headers["location"] == "https://idp.example.org/authorize?state=s&nonce=n")
        #expect(answer.headers["cache-control"] == "no-store")
        #expect(!readable(receiver.readyFD, within: 0) && receiver.redirect() == nil, "the start address completes nothing")
    }

    /// A request from a socket of another account (made here under setfsuid, as the kernel
    /// records a socket's owner when it is created) is turned away before its query is read:
    /// the state is not consumed, the owner's redirect still completes.
    @Test(.enabled(if: getuid() == 0)) func anotherAccountsRequestChangesNothing() throws {
        try #require(TestUsers.ensure(TestUsers.bob))
        let bob = try #require(try UserAccount.named(TestUsers.bob))
        let receiver = try receiver(state: "s")
        try receiver.startRedirecting(to: "https://idp.example.org/authorize?state=s")
        for path in ["/callback?code=bobs&state=s", "/start", "/other"] {
            let (status, page) = try rawGet(port: receiver.port, path: path, as: bob)
            #expect(status == 403 && page.contains("<p>other-account-page</p>"), "\(path): \(status) \(page)")
            #expect(!page.contains("state=s"), "\(path)")
        }
        #expect(readable(receiver.readyFD, within: 0), "the caller hears of it")
        #expect(receiver.redirect() == nil)
        #expect(receiver.takeStrangers() == [.account(bob.uid)])
        #expect(receiver.takeStrangers().isEmpty, "each account is told once")
        #expect(!readable(receiver.readyFD, within: 0))

        #expect(try rawGet(port: receiver.port, path: "/callback?code=mine&state=s").status == 200)
        #expect(readable(receiver.readyFD))
        #expect(parameters(receiver.redirect()) == ["code": "mine", "state": "s"])
    }

    /// The kernel's owner of the peer's socket, both ways of asking, and none once the peer
    /// has closed its socket (an orphaned or time-wait socket names no owner).
    @Test func thePeersOwnerComesFromTheKernel() throws {
        let server = try LoopbackPair()
        for source in LoopbackPeer.Source.allCases {
            #expect(try LoopbackPeer.owner(of: server.peer, connectedTo: server.local, from: source) == getuid(), "\(source)")
        }
        #expect(LoopbackPeer.owner(of: server.peer, connectedTo: server.local) == getuid())
        var elsewhere = server.peer
        elsewhere.sin_port = (UInt16(bigEndian: elsewhere.sin_port) &+ 1).bigEndian
        for source in LoopbackPeer.Source.allCases {
            #expect(try LoopbackPeer.owner(of: elsewhere, connectedTo: server.local, from: source) == nil, "\(source)")
        }
        server.closeClient()
        // A process another test starts at this moment holds a copy of every descriptor between
        // its clone and its exec (close-on-exec acts only then), and with it the socket: the
        // kernel names the owner until that exec. Bounded: an exec takes milliseconds.
        for source in LoopbackPeer.Source.allCases {
            let deadline = VirtualSensor.now() + 5
            var owner = try LoopbackPeer.owner(of: server.peer, connectedTo: server.local, from: source)
            while owner != nil && VirtualSensor.now() < deadline {
                sched_yield()
                owner = try LoopbackPeer.owner(of: server.peer, connectedTo: server.local, from: source)
            }
            #expect(owner == nil, "\(source)")
        }
    }

    /// One GET over a socket created as `account` (the tests' own when nil); the status and
    /// the page. The receiver closes the connection after answering.
    func rawGet(port: UInt16, path: String, as account: UserAccount? = nil) throws -> (status: Int, page: String) {
        // Close-on-exec: a process another test spawns meanwhile must not keep it open.
        let kind = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = try account.map { try asUser($0) { socket(AF_INET, kind, 0) } } ?? socket(AF_INET, kind, 0)
        guard fd >= 0 else { throw TestFailure("socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr = in_addr(s_addr: in_addr_t(0x7f00_0001).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw TestFailure("connect failed") }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == request.count else { throw TestFailure("write failed") }
        var answer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 5000) == 1 else { throw TestFailure("no answer") }
            let count = read(fd, &chunk, chunk.count)
            if count <= 0 { break }
            answer += chunk[..<count]
        }
        let text = String(decoding: answer, as: UTF8.self)
        let status = Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0
        return (status, text)
    }
}

/// A TCP connection on 127.0.0.1 made in this process: the accepted end's view of it.
final class LoopbackPair {
    private let listener: Int32
    private var client: Int32
    private let accepted: Int32
    /// The client's address (the peer, seen from the accepted end) and the listener's.
    let peer: sockaddr_in
    let local: sockaddr_in

    init() throws {
        func address(_ fd: Int32, _ query: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32) -> sockaddr_in {
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { query(fd, $0, &length) } }
            return address
        }
        // Close-on-exec: a process another test spawns meanwhile would keep the client's socket
        // open (and owned) after closeClient.
        let kind = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let listener = socket(AF_INET, kind, 0)
        var any = sockaddr_in()
        any.sin_family = sa_family_t(AF_INET)
        any.sin_addr = in_addr(s_addr: in_addr_t(0x7f00_0001).bigEndian)
        let bound = withUnsafePointer(to: &any) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard listener >= 0, bound == 0, listen(listener, 1) == 0 else { throw TestFailure("no listener") }
        var target = address(listener, getsockname)
        let client = socket(AF_INET, kind, 0)
        let connected = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw TestFailure("connect failed") }
        let accepted = accept(listener, nil, nil)
        guard accepted >= 0, fcntl(accepted, F_SETFD, FD_CLOEXEC) == 0 else { throw TestFailure("accept failed") }
        self.listener = listener
        self.client = client
        self.accepted = accepted
        peer = address(accepted, getpeername)
        local = address(accepted, getsockname)
    }

    func closeClient() {
        if client >= 0 { close(client) }
        client = -1
    }

    deinit {
        closeClient()
        close(accepted)
        close(listener)
    }
}
