import FoundationEssentials
import Glibc
import Testing
@testable import FingersealCore
import SystemKit
import CPAM
import PAMKit

/// Step-up grants in the core, with an injectable clock and session.
@Suite struct StepUpGrantTests {
    struct Setup {
        let v: TestVault
        let vault: UnlockedVault
        let runtime: TempDirectory
        let account: UserAccount

        init() throws {
            v = try TestVault()
            vault = try v.create()
            runtime = try TempDirectory(base: "/dev/shm")
            account = try #require(try UserAccount.current())
        }

        func grants(session: String = "logind-1", boot: String = "boot-a", at time: Int64 = 1_000_000) -> StepUpGrants {
            StepUpGrants(account: account, runtimeDirectory: runtime.path,
                         identity: SessionIdentity(session: session, boot: boot), clock: FixedClock(time: time))
        }
    }

    @Test func aGrantIsUsedWithinItsTTLAndExpiresAfter() throws {
        let s = try Setup()
        try s.grants().grant("payroll", ttl: 60, method: "finger", vault: s.vault)
        #expect(s.grants(at: 1_000_059).valid("payroll", vault: s.vault)?.method == "finger")
        #expect(s.grants(at: 1_000_060).valid("payroll", vault: s.vault) == nil)
        // An expired grant is removed as it is read.
        #expect(s.grants().valid("payroll", vault: s.vault) == nil)
        var info = stat()
        #expect(stat(s.runtime.file("fingerseal/grants"), &info) == 0 && info.st_mode & 0o777 == 0o700)
    }

    @Test func grantsAreBoundToSessionBootAndVault() throws {
        let s = try Setup()
        try s.grants().grant("payroll", ttl: 60, method: "pin", vault: s.vault)
        #expect(s.grants(session: "logind-2").valid("payroll", vault: s.vault) == nil, "another session is asked")
        #expect(s.grants().valid("payroll", vault: s.vault) != nil, "and its check does not end ours")
        #expect(s.grants(boot: "boot-b").valid("payroll", vault: s.vault) == nil, "a grant does not survive a reboot")
        try s.grants().grant("payroll", ttl: 60, method: "pin", vault: s.vault)
        let other = try TestVault()
        #expect(s.grants().valid("payroll", vault: try other.create()) == nil, "another vault's key does not verify it")
        #expect(s.grants().valid("hr", vault: s.vault) == nil)
    }

    @Test func aForgedOrStretchedGrantIsRefusedAndRemoved() throws {
        let s = try Setup()
        try s.grants().grant("payroll", ttl: 60, method: "finger", vault: s.vault)
        let path = s.runtime.file("fingerseal/grants/logind-1.payroll")
        let text = String(decoding: try #require(readFile(path)), as: UTF8.self)
        #expect(text.contains("\"expiresAt\":1000060"), "\(text)")
        writeFile(path, Array(text.replacing("\"expiresAt\":1000060", with: "\"expiresAt\":9000060").utf8))
        #expect(s.grants(at: 1_000_100).valid("payroll", vault: s.vault) == nil, "stretched")
        #expect(readFile(path) == nil)
        try s.grants().grant("payroll", ttl: 60, method: "pin", vault: s.vault)
        let pin = String(decoding: try #require(readFile(path)), as: UTF8.self)
        writeFile(path, Array(pin.replacing("\"method\":\"pin\"", with: "\"method\":\"finger\"").utf8))
        #expect(s.grants(at: 1_000_030).valid("payroll", vault: s.vault) == nil, "edited within its TTL")
        #expect(readFile(path) == nil)
    }

    @Test func aHeldGrantEndsWithItsHolder() throws {
        let s = try Setup()
        let holder = try Child("/bin/cat", [])
        try s.grants().grant("payroll", ttl: 60, method: "finger", holder: holder.pid, vault: s.vault)
        #expect(s.grants().valid("payroll", vault: s.vault) != nil)
        holder.signal(SIGKILL)
        _ = holder.finish()
        #expect(s.grants().valid("payroll", vault: s.vault) == nil)
    }

    @Test func aRuntimeDirectoryOnDiskKeepsNoGrant() throws {
        let s = try Setup()
        let disk = try TempDirectory()
        let grants = StepUpGrants(account: s.account, runtimeDirectory: disk.path,
                                  identity: SessionIdentity(session: "logind-1", boot: "b"), clock: FixedClock(time: 1))
        expectOutcome(.unavailable) { try grants.grant("payroll", ttl: 60, method: "pin", vault: s.vault) }
        #expect(readFile(disk.file("fingerseal/grants/logind-1.payroll")) == nil)
    }

    @Test func contextNamesAreFileSafe() {
        for good in ["payroll", "hr.reviews", "A-1_b"] { #expect(StepUpGrants.isValidContext(good)) }
        for bad in ["", ".hidden", "a/b", "../x", "a b", String(repeating: "x", count: 65), "é"] {
            #expect(!StepUpGrants.isValidContext(bad), "\(bad)")
        }
    }
}

/// Sealed files in the core.
@Suite struct SealedFileTests {
    @Test func sealAndOpenRoundTripAndRefuseAlterations() throws {
        let v = try TestVault()
        let vault = try v.create()
        let sealed = try SealedFile.seal(secret("salary: 4200"), context: "payroll", vault: vault)
        let parsed = try SealedFile.parse(sealed)
        #expect(parsed.context == "payroll" && parsed.fileID.count == 32)
        #expect(try SealedFile.open(parsed, vault: vault).copyBytes() == Array("salary: 4200".utf8))
        // Another context in the header, a flipped ciphertext byte: refused.
        let text = String(decoding: sealed.prefix(200), as: UTF8.self)
        let relabelled = Array(text.replacing("\"context\":\"payroll\"", with: "\"context\":\"payrolx\"").utf8) + sealed.dropFirst(200)
        expectOutcome(.vaultUnusable) { _ = try SealedFile.open(try SealedFile.parse(relabelled), vault: vault) }
        var flipped = sealed
        flipped[flipped.count - 1] ^= 0x01
        expectOutcome(.vaultUnusable) { _ = try SealedFile.open(try SealedFile.parse(flipped), vault: vault) }
        // Another vault.
        let other = try TestVault()
        expectOutcome(.vaultUnusable) { _ = try SealedFile.open(parsed, vault: try other.create()) }
        // Not a sealed file at all.
        for bad in [[], Array("hello".utf8), Array(sealed.prefix(40)), Array(sealed.prefix(sealed.count - 30))] {
            #expect(throws: (any Error).self) { _ = try SealedFile.open(try SealedFile.parse(bad), vault: vault) }
        }
    }
}

/// `fingerseal step-up`, `seal` and `reveal` as a user runs them.
@Suite struct StepUpCLITests {
    static let pin = "2580"

    struct Home {
        let temp: TempDirectory
        let runtime: TempDirectory
        var environment: [String: String]

        init(session: String = "7") throws {
            temp = try TempDirectory()
            runtime = try TempDirectory(base: "/dev/shm")
            environment = ["XDG_STATE_HOME": temp.path, "XDG_RUNTIME_DIR": runtime.path, "XDG_SESSION_ID": session,
                           "PATH": "/usr/bin:/bin", "NO_COLOR": "1", "FP_DRIVERS_WHITELIST": "none"]
            #expect(try run(["pin", "set", "--pin-fd", "3"], pin: StepUpCLITests.pin).status == 0)
        }

        func run(_ arguments: [String], pin: String? = nil, environment extra: [String: String] = [:]) throws -> Child.Result {
            try Child.run(Paths.cli, arguments, environment: environment.merging(extra) { $1 },
                          fd3: pin.map { Array(($0 + "\n").utf8) })
        }
    }

    /// The audit session id, when the kernel has one, wins over XDG_SESSION_ID.
    static var sessionsFromEnvironment: Bool { !SessionIdentity.current(sessionVariable: nil).session.hasPrefix("audit-") }

    @Test func aGrantMeansNoPromptUntilEnded() throws {
        let home = try Home()
        #expect(try home.run(["step-up", "payroll", "--check"]).status == 1)
        let first = try home.run(["step-up", "--pin-fd", "3", "--ttl", "600", "payroll"], pin: StepUpCLITests.pin)
        #expect(first.status == 0, "\(first.all)")
        #expect(first.stdout.contains("Confirmed with your PIN for payroll, for 10 minutes."))
        // Held: no PIN needed (none is given; there is no terminal either).
        let again = try home.run(["step-up", "payroll"])
        #expect(again.status == 0 && again.stdout.contains("Already confirmed"), "\(again.all)")
        #expect(try home.run(["step-up", "payroll", "--check"]).status == 0)
        #expect(try home.run(["step-up", "payroll", "--end"]).stdout.contains("is ended"))
        #expect(try home.run(["step-up", "payroll", "--check"]).status == 1)
        let asked = try home.run(["step-up", "payroll"])
        #expect(asked.status != 0 && asked.stderr.contains("Confirm it is you for payroll."), "\(asked.all)")
    }

    @Test(.enabled(if: sessionsFromEnvironment)) func anotherSessionIsAsked() throws {
        let home = try Home()
        #expect(try home.run(["step-up", "--pin-fd", "3", "payroll"], pin: StepUpCLITests.pin).status == 0)
        #expect(try home.run(["step-up", "payroll", "--check"], environment: ["XDG_SESSION_ID": "8"]).status == 1)
        #expect(try home.run(["step-up", "payroll", "--check"]).status == 0)
    }

    @Test func aCommandsGrantEndsWithTheCommandEvenWhenKilled() throws {
        let home = try Home()
        let check = "\(Paths.cli) step-up --check hr"
        let ran = try home.run(["step-up", "--pin-fd", "3", "hr", "--", "/bin/sh", "-c", "\(check) && exit 7"], pin: StepUpCLITests.pin)
        #expect(ran.status == 7, "the command ran with the grant and its status is passed on: \(ran.all)")
        #expect(try home.run(["step-up", "hr", "--check"]).status == 1)
        let killed = try home.run(["step-up", "--pin-fd", "3", "hr", "--", "/bin/sh", "-c", "\(check) && kill -9 $$"],
                                  pin: StepUpCLITests.pin)
        #expect(killed.status == 128 + SIGKILL, "\(killed.all)")
        #expect(try home.run(["step-up", "hr", "--check"]).status == 1)
        // A confirmation held before the command keeps its own expiry.
        #expect(try home.run(["step-up", "--pin-fd", "3", "hr"], pin: StepUpCLITests.pin).status == 0)
        #expect(try home.run(["step-up", "hr", "--", "/bin/true"]).status == 0)
        #expect(try home.run(["step-up", "hr", "--check"]).status == 0)
    }

    @Test func freshOperationsWantThePINWhateverIsHeld() throws {
        let home = try Home()
        #expect(try home.run(["step-up", "--pin-fd", "3", "admin"], pin: StepUpCLITests.pin).status == 0)
        // No PIN and no terminal: each refuses, although a confirmation is held.
        for command in [["step-up", "--fresh", "admin"], ["pin", "change"], ["reset", "--yes"]] {
            let result = try home.run(command)
            #expect(result.status == 2 && result.stderr.contains("--pin-fd"), "\(command) without the PIN: \(result.all)")
        }
        #expect(readFile(home.temp.file("fingerseal/vault")) != nil, "nothing was deleted")
        let fresh = try home.run(["step-up", "--fresh", "--pin-fd", "3", "admin"], pin: StepUpCLITests.pin)
        #expect(fresh.status == 0 && fresh.stdout.contains("with your PIN"), "\(fresh.all)")
    }

    @Test func revealNeedsAConfirmationAndNeverShowsOnFailure() throws {
        let home = try Home()
        let plain = home.temp.file("plain")
        writeFile(plain, Array("IBAN DE00 1234\n".utf8))
        let sealed = home.temp.file("iban.sealed")
        #expect(try home.run(["seal", "--context", "bank", "--out", sealed, plain]).status == 0)
        #expect(!String(decoding: try #require(readFile(sealed)), as: UTF8.self).contains("IBAN"))
        // No confirmation, none possible (no terminal, no PIN): nothing revealed.
        let refused = try home.run(["reveal", sealed])
        #expect(refused.status != 0 && !refused.stdout.contains("IBAN"), "\(refused.all)")
        let wrong = try home.run(["reveal", "--pin-fd", "3", sealed], pin: "0000")
        #expect(wrong.status == 1 && wrong.stdout.isEmpty, "\(wrong.all)")
        let shown = try home.run(["reveal", "--pin-fd", "3", sealed], pin: StepUpCLITests.pin)
        #expect(shown.status == 0 && shown.stdout == "IBAN DE00 1234\n", "\(shown.all)")
        #expect(shown.stderr.hasSuffix("Personal data follows.\n"), "the notice comes first, on stderr")
        // The confirmation is now held for the context: no PIN the second time.
        let quiet = try home.run(["reveal", "--no-notice", sealed])
        #expect(quiet.status == 0 && quiet.stdout == "IBAN DE00 1234\n" && quiet.stderr.isEmpty, "\(quiet.all)")
        // The audit trail has the refused and the granted step-up and both reveals, and verifies.
        let audit = try home.run(["audit", "--json"]).stdout
        #expect(audit.components(separatedBy: "\"event\":\"reveal\"").count == 3, "\(audit)")
        #expect(audit.contains("\"event\":\"step-up\"") && audit.contains("\"context\":\"bank\""), "\(audit)")
        #expect(!audit.contains("IBAN"))
        let verify = try home.run(["audit", "--verify"])
        #expect(verify.status == 0 && verify.stdout.contains("intact"), "\(verify.all)")
    }

    @Test func foreignOrAlteredSealedFilesAreRefused() throws {
        let home = try Home(), other = try Home()
        let sealed = home.temp.file("x.sealed")
        let input = home.temp.file("x")
        writeFile(input, Array("secret".utf8))
        #expect(try home.run(["seal", "--context", "bank", "--out", sealed, input]).status == 0)
        let foreign = try other.run(["reveal", "--pin-fd", "3", sealed], pin: StepUpCLITests.pin)
        #expect(foreign.status == 9 && foreign.stderr.contains("another fingerseal vault") && foreign.stdout.isEmpty,
                "\(foreign.all)")
        #expect(!foreign.stderr.contains("Confirm it is you"), "refused before asking")
        let bytes = try #require(readFile(sealed))
        let text = String(decoding: bytes.prefix(150), as: UTF8.self)
        writeFile(sealed, Array(text.replacing("\"bank\"", with: "\"bonk\"").utf8) + bytes.dropFirst(150))
        let altered = try home.run(["reveal", "--pin-fd", "3", sealed], pin: StepUpCLITests.pin)
        #expect(altered.status == 9 && altered.stdout.isEmpty, "\(altered.all)")
        writeFile(home.temp.file("junk"), Array("not sealed".utf8))
        #expect(try home.run(["reveal", home.temp.file("junk")]).status == 2)
    }
}

/// Step-up on a real pseudo-terminal: no reader means the PIN prompt; cancel reveals nothing.
@Suite struct StepUpTerminalTests {
    func run(_ steps: [[String]], _ arguments: [String], _ home: StepUpCLITests.Home) throws -> TerminalTests.Session {
        let script = Paths.packageRoot + "/Tests/FingersealTests/Support/pty_session.py"
        let stepsJSON = String(decoding: try JSONEncoder().encode(steps), as: UTF8.self)
        var environment = home.environment
        environment["TERM"] = "dumb"
        let result = try Child.run("/usr/bin/python3", [script, stepsJSON, "--", Paths.cli] + arguments, environment: environment)
        #expect(result.status == 0, "\(result.stderr)")
        return try JSONDecoder().decode(TerminalTests.Session.self, from: Data(result.stdout.utf8))
    }

    @Test func withoutAReaderThePINIsAsked() throws {
        let home = try StepUpCLITests.Home()
        // A finger enrolled on the virtual reader, which is then gone.
        let socket = home.temp.file("sensor.sock")
        let enroll = try Child(Paths.cli, ["enroll", "--pin-fd", "3"],
                               environment: home.environment.merging(["FP_DRIVERS_WHITELIST": "virtual_device",
                                                                      "FP_VIRTUAL_DEVICE": socket]) { $1 },
                               fd3: Array("\(StepUpCLITests.pin)\n".utf8))
        for _ in 0..<5 { try VirtualSensor.send("SCAN finger-a", to: socket) }
        #expect(enroll.finish().status == 0)
        let session = try run([["PIN: ", StepUpCLITests.pin + "\r"]], ["step-up", "payroll"], home)
        #expect(session.ok && session.status == 0, "\(session.transcript)")
        #expect(session.transcript.contains("Confirm it is you for payroll."))
        #expect(session.transcript.contains("No fingerprint reader"), "it says why it asks for the PIN")
    }

    @Test func cancellingARevealShowsNothing() throws {
        let home = try StepUpCLITests.Home()
        let input = home.temp.file("in"), sealed = home.temp.file("in.sealed")
        writeFile(input, Array("TOP-SECRET-42".utf8))
        #expect(try home.run(["seal", "--context", "bank", "--out", sealed, input]).status == 0)
        let session = try run([["PIN: ", "25\u{03}"]], ["reveal", sealed], home)
        #expect(session.ok && session.status == 3, "\(session.transcript)")
        #expect(!session.transcript.contains("TOP-SECRET-42") && !session.transcript.contains("Personal data follows"))
        #expect(session.echo)
    }
}

/// `stepup=CONTEXT ttl=S` in the module honours the same grants as the CLI.
@Suite(.disabled("moves to the broker (issue 10)")) struct StepUpPAMTests {
    @Test func aConfirmationFromPAMOrTheCLIAnswersWithoutAPrompt() throws {
        let stack = try ModuleAuthenticationTests.Stack()
        let runtime = try TempDirectory(base: "/dev/shm")
        writeFile(stack.services + "/fingerseal-test", Array(
            "auth required \(Paths.module) store=\(stack.temp.path)/%u pin stepup=sudo ttl=120\n".utf8), mode: 0o644)
        func authenticate(session: String, answer: String?) throws -> (Int32, prompted: Bool) {
            var prompted = false
            let client = try PAMClient(service: "fingerseal-test", user: stack.user.name, configDirectory: stack.services) { message in
                if case .promptEchoOff = message { prompted = true; return answer }
                return nil
            }
            #expect(client.setEnvironment("XDG_RUNTIME_DIR", runtime.path) == PAM_SUCCESS)
            #expect(client.setEnvironment("XDG_SESSION_ID", session) == PAM_SUCCESS)
            return (client.authenticate(), prompted)
        }
        let first = try authenticate(session: "4", answer: ModuleAuthenticationTests.pin)
        #expect(first.0 == PAM_SUCCESS && first.prompted)
        let second = try authenticate(session: "4", answer: nil)
        #expect(second.0 == PAM_SUCCESS && !second.prompted, "the confirmation is held")
        // A held confirmation never answers for a remote login (allow_remote is off).
        let remote = try PAMClient(service: "fingerseal-test", user: stack.user.name, configDirectory: stack.services) { _ in nil }
        #expect(remote.setEnvironment("XDG_RUNTIME_DIR", runtime.path) == PAM_SUCCESS)
        #expect(remote.setEnvironment("XDG_SESSION_ID", "4") == PAM_SUCCESS)
        #expect(remote.setItem(.rhost, "203.0.113.9") == PAM_SUCCESS)
        #expect(remote.authenticate() != PAM_SUCCESS)
        if StepUpCLITests.sessionsFromEnvironment {
            let other = try authenticate(session: "5", answer: nil)
            #expect(other.0 != PAM_SUCCESS && other.prompted, "another session is asked")
        }
        let grants = try Child.run("/bin/ls", [runtime.file("fingerseal/grants")]).stdout
        #expect(grants.contains(".sudo"), "\(grants)")
        // Logout drops it.
        writeFile(stack.services + "/fingerseal-test", Array(
            "session required \(Paths.module) store=\(stack.temp.path)/%u\n".utf8), mode: 0o644)
        let session = try PAMClient(service: "fingerseal-test", user: stack.user.name, configDirectory: stack.services) { _ in nil }
        #expect(session.setEnvironment("XDG_RUNTIME_DIR", runtime.path) == PAM_SUCCESS)
        #expect(session.closeSession() == PAM_SUCCESS)
        #expect(try Child.run("/bin/ls", ["-A", runtime.file("fingerseal")]).stdout.isEmpty)
    }
}
