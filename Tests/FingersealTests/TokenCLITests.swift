import FoundationEssentials
import Glibc
import Testing

/// `fingerseal unlock`, `token` and `logout` against the local IdP, with libfprint's
/// virtual_device as the reader.
@Suite(.enabled(if: LocalIdP.available)) struct TokenCLITests {
    static let pin = ReaderCLITests.pin

    /// A signed-in vault (alice, password grant) with one enrolled finger, and a runtime
    /// directory for the session's token.
    struct SignedIn {
        let idp: LocalIdP
        var rig: ReaderCLITests.Rig
        let runtimeDirectory: TempDirectory
        var runtime: String { runtimeDirectory.path }

        init(client: String = "fingerseal-test") throws {
            idp = try LocalIdP()
            rig = try ReaderCLITests.Rig()
            runtimeDirectory = try TempDirectory(base: "/dev/shm")
            rig.environment["XDG_RUNTIME_DIR"] = runtimeDirectory.path
            let login = try rig.run(["login", "--issuer", idp.issuer, "--client-id", client, "--flow", "password",
                                     "--user", "alice", "--password-fd", "3", "--pin-fd", "3"],
                                    fd3: "wonderland-7\n\(TokenCLITests.pin)\n")
            #expect(login.status == 0, "\(login.all)")
            try rig.enroll("finger-a")
        }

        func unlock(_ arguments: [String] = []) throws -> Child.Result {
            try rig.scan(["unlock"] + arguments, ["SCAN finger-a"])
        }
    }

    static func isToken(_ text: Substring) -> Bool {
        text.count >= 10 && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f }
    }

    @Test func unlockWithAFingerRefreshesAndShowsTheTokenOnlyWhenAsked() throws {
        let s = try SignedIn()
        let plain = try s.unlock()
        #expect(plain.status == 0, "\(plain.all)")
        #expect(plain.stdout.contains("Unlocked with your finger (right-index-finger). A fresh access token is ready."))
        let cached = try #require(readFile(s.runtime + "/fingerseal/access-token"))
        let token = try #require(String(decoding: cached, as: UTF8.self).split(separator: "\n").last)
        #expect(!plain.all.contains(token), "the token is not shown unless asked for")

        let printed = try s.unlock(["--print-token"])
        #expect(printed.status == 0, "\(printed.all)")
        let lines = printed.stdout.split(separator: "\n")
        #expect(lines.count == 1 && TokenCLITests.isToken(lines[0]), "\(printed.stdout)")
        #expect(lines.first != token, "a new access token each unlock")

        let json = try s.unlock(["--json"])
        #expect(json.status == 0, "\(json.all)")
        #expect(json.stdout.contains("\"token\" : \"refreshed\"") && json.stdout.contains("\"method\" : \"finger\""))
        #expect(!json.stdout.contains("access_token"))
        #expect(try s.idp.familyAlive("alice"))
    }

    @Test func tokenUsesTheSessionCacheAndExecGetsItOnADescriptor() throws {
        let s = try SignedIn()
        // No sensor command: a cached token needs no finger.
        #expect(try s.unlock().status == 0)
        let cached = try s.rig.run(["token"])
        #expect(cached.status == 0, "\(cached.all)")
        let token = String(cached.stdout.dropLast())
        #expect(TokenCLITests.isToken(Substring(token)))
        // --exec: the token on the descriptor, not in argv or the environment.
        let script = #"printf '%s|' "$(cat <&"$FINGERSEAL_ACCESS_TOKEN_FD")" "$FINGERSEAL_ACCESS_TOKEN_FD" "$*"; env | grep -c "^" >/dev/null; env"#
        let exec = try s.rig.scan(["unlock", "--exec", "/bin/sh", "-c", script, "sh", "argument"], ["SCAN finger-a"])
        #expect(exec.status == 0, "\(exec.all)")
        let fields = exec.stdout.split(separator: "|", omittingEmptySubsequences: false)
        #expect(fields.count == 4, "\(exec.stdout)")
        guard fields.count == 4 else { return }
        #expect(TokenCLITests.isToken(fields[0]) && fields[0] != Substring(token))
        #expect(fields[2] == "argument")
        #expect(!fields[3].contains(fields[0]), "the token is not in the environment")
        // The exit status is the command's.
        let failing = try s.rig.scan(["unlock", "--exec", "/bin/sh", "-c", "exit 42"], ["SCAN finger-a"])
        #expect(failing.status == 42)
    }

    @Test func thePINWorksWhereTheFingerCannot() throws {
        let s = try SignedIn()
        let result = try s.rig.run(["unlock", "--pin-fd", "3", "--json"], fd3: TokenCLITests.pin + "\n")
        #expect(result.status == 0, "\(result.all)")
        #expect(result.stdout.contains("\"method\" : \"pin\""))
        // No reader at all: straight to the PIN.
        var noReader = s.rig.environment
        noReader["FP_DRIVERS_WHITELIST"] = "none"
        let pinOnly = try Child.run(Paths.cli, ["unlock", "--pin-fd", "3"], environment: noReader, fd3: Array("\(TokenCLITests.pin)\n".utf8))
        #expect(pinOnly.status == 0, "\(pinOnly.all)")
        #expect(pinOnly.stdout.contains("Unlocked with your PIN."))
    }

    @Test func aRevokedSignInSaysSignInRequired() throws {
        let s = try SignedIn()
        try s.idp.hook("/test/revoke-user-tokens", [("username", "alice")])
        let result = try s.unlock()
        #expect(result.status == 7, "\(result.all)")
        #expect(result.stderr.contains("Your sign-in has ended. Sign in again with: fingerseal login"))
        #expect(try s.rig.run(["status"]).stdout.contains("sign-in required"))
        // From now on it says so before asking for a finger.
        let again = try s.rig.run(["unlock"])
        #expect(again.status == 7 && !again.stderr.contains("Place your finger"), "\(again.all)")
    }

    @Test func offlineWithinTheGraceUnlocksAndKeepsTheCachedToken() throws {
        let s = try SignedIn()
        #expect(try s.unlock().status == 0)
        try s.idp.hook("/test/mode", [("mode", "down-5xx")])
        let offline = try s.unlock(["--json"])
        #expect(offline.status == 0, "\(offline.all)")
        #expect(offline.stdout.contains("\"token\" : \"offline\""))
        // The session's token from the last refresh is still valid, so it is handed out.
        let printed = try s.unlock(["--print-token"])
        #expect(printed.status == 0 && TokenCLITests.isToken(Substring(printed.stdout.dropLast())), "\(printed.all)")
        // Without it there is no token to give.
        #expect(unlink(s.runtime + "/fingerseal/access-token") == 0)
        let none = try s.unlock(["--print-token"])
        #expect(none.status == 8, "\(none.all)")
        #expect(none.stdout.isEmpty && none.stderr.contains("no fresh access token"))
    }

    @Test func logoutRevokesAndForgetsTheSignInButKeepsPINAndFingers() throws {
        let s = try SignedIn()
        #expect(try s.unlock().status == 0)
        let wrong = try s.rig.run(["logout", "--pin-fd", "3"], fd3: "0000\n")
        #expect(wrong.status == 1, "\(wrong.all)")
        #expect(try s.idp.familyAlive("alice"), "a wrong PIN changes nothing")
        let logout = try s.rig.run(["logout", "--pin-fd", "3", "--json"], fd3: TokenCLITests.pin + "\n")
        #expect(logout.status == 0, "\(logout.all)")
        #expect(logout.stdout.contains("\"revoked\" : true"))
        #expect(try !s.idp.familyAlive("alice"), "the provider ended the chain")
        #expect(readFile(s.runtime + "/fingerseal/access-token") == nil)
        let status = try s.rig.run(["status"]).stdout
        #expect(status.contains("right-index-finger") && status.contains("Sign-in: not signed in"), "\(status)")
        let unlock = try s.rig.run(["unlock"])
        #expect(unlock.status == 7 && unlock.stderr.contains("not signed in"), "\(unlock.all)")
    }
}

/// The finger prompt also takes the PIN, on a real pseudo-terminal.
@Suite(.enabled(if: LocalIdP.available)) struct FingerOrPINTests {
    func run(_ steps: [[String]], _ s: TokenCLITests.SignedIn) throws -> TerminalTests.Session {
        let script = Paths.packageRoot + "/Tests/FingersealTests/Support/pty_session.py"
        let stepsJSON = String(decoding: try JSONEncoder().encode(steps), as: UTF8.self)
        var environment = s.rig.environment
        environment["TERM"] = "dumb"
        let result = try Child.run("/usr/bin/python3", [script, stepsJSON, "--", Paths.cli, "unlock"], environment: environment)
        #expect(result.status == 0, "\(result.stderr)")
        return try JSONDecoder().decode(TerminalTests.Session.self, from: Data(result.stdout.utf8))
    }

    static let waiting = "or type your PIN and press Enter."

    @Test func thePINTypedWhileTheReaderWaitsWins() throws {
        let s = try TokenCLITests.SignedIn()
        let session = try run([[FingerOrPINTests.waiting, TokenCLITests.pin + "\r"]], s)
        #expect(session.ok && session.status == 0, "\(session.transcript)")
        #expect(session.transcript.contains("Unlocked with your PIN."))
        #expect(!session.transcript.contains(TokenCLITests.pin), "the PIN was echoed")
        #expect(session.echo)
    }

    @Test func aFingerWhileThePINPromptWaitsWins() throws {
        let s = try TokenCLITests.SignedIn()
        let session = try run([[FingerOrPINTests.waiting, "25"], [FingerOrPINTests.waiting, "@sensor SCAN finger-a"]], s)
        #expect(session.ok && session.status == 0, "\(session.transcript)")
        #expect(session.transcript.contains("Unlocked with your finger (right-index-finger)."))
        #expect(session.echo, "the terminal is restored after the prompt was cut short")
    }

    @Test func enterAloneGoesStraightToThePIN() throws {
        let s = try TokenCLITests.SignedIn()
        let session = try run([[FingerOrPINTests.waiting, "\r"], ["PIN: ", TokenCLITests.pin + "\r"]], s)
        #expect(session.ok && session.status == 0, "\(session.transcript)")
        #expect(session.transcript.contains("Unlocked with your PIN."))
    }

    @Test func aWrongPINKeepsTheReaderWaitingAndCtrlCCancels() throws {
        let s = try TokenCLITests.SignedIn()
        let session = try run([[FingerOrPINTests.waiting, "0000\r"], ["not correct", "\u{03}"]], s)
        #expect(session.ok && session.status == 3, "\(session.transcript)")
        #expect(session.transcript.contains("Cancelled."))
        #expect(session.echo)
        #expect(try s.rig.run(["status"]).stdout.contains("wrong PINs in a row: 1"), "the wrong PIN was counted")
    }
}
