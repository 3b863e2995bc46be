import FoundationEssentials
import Glibc
import Testing
@testable import FingersealCore
import SodiumKit
import SystemKit
import CPAM
import PAMKit
@testable import TestSupport

/// Step-up grants in the core, with an injectable clock and session.
@Suite struct SealedFileTests {
    /// What the broker does: seal a plaintext in place, then open the file (header and
    /// ciphertext, as received) in place again.
    static func seal(_ text: String, context: String, vault: UnlockedVault) throws -> [UInt8] {
        let buffer = try SecureBytes(capacity: text.utf8.count + AEAD.tagLength)
        Array(text.utf8).withUnsafeBytes { _ = buffer.append(contentsOf: $0) }
        let header = try SealedFile.seal(inPlace: buffer, context: context, vault: vault)
        return header + buffer.copyBytes()
    }

    static func open(_ file: [UInt8], vault: UnlockedVault) throws -> [UInt8] {
        let buffer = try SecureBytes(copying: file)
        let parsed = try buffer.withUnsafeBytes { try SealedFile.parse($0) }
        let plaintext = try SealedFile.open(parsed, inPlace: buffer, vault: vault)
        return buffer.withUnsafeBytes(in: plaintext) { Array($0) }
    }

    @Test func sealAndOpenRoundTripAndRefuseAlterations() throws {
        let v = try TestVault()
        let vault = try v.create()
        let sealed = try SealedFileTests.seal("salary: 4200", context: "payroll", vault: vault)
        let parsed = try SealedFile.parse(sealed)
        #expect(parsed.context == "payroll" && parsed.fileID.count == 32)
        #expect(try SealedFileTests.open(sealed, vault: vault) == Array("salary: 4200".utf8))
        // Another context in the header, a flipped ciphertext byte: refused.
        let text = String(decoding: sealed.prefix(200), as: UTF8.self)
        let relabelled = Array(text.replacing("\"context\":\"payroll\"", with: "\"context\":\"payrolx\"").utf8) + sealed.dropFirst(200)
        expectOutcome(.vaultUnusable) { _ = try SealedFileTests.open(relabelled, vault: vault) }
        var flipped = sealed
        flipped[flipped.count - 1] ^= 0x01
        expectOutcome(.vaultUnusable) { _ = try SealedFileTests.open(flipped, vault: vault) }
        // Another vault.
        let other = try TestVault()
        expectOutcome(.vaultUnusable) { _ = try SealedFileTests.open(sealed, vault: try other.create()) }
        // Not a sealed file at all.
        for bad in [[], Array("hello".utf8), Array(sealed.prefix(40)), Array(sealed.prefix(sealed.count - 30))] {
            #expect(throws: (any Error).self) { _ = try SealedFileTests.open(bad, vault: vault) }
        }
    }
}

/// `fingerseal step-up`, `seal` and `reveal` as a user runs them, against a broker of each
/// test's own (no reader). Confirmations live in the broker's memory per (uid, login session);
/// the CLI runs in the test runner's session unless a test says otherwise, so that one test's
/// runs share a session as a person's commands in one terminal do.
@Suite struct StepUpCLITests {
    static let pin = StepUpHome.pin
    /// Where a run takes its PIN from: descriptor 3, which is empty unless the run gives a PIN
    /// (no run of the test session may fall back to a terminal).
    static let pinFD = ["--pin-fd", "3"]

    typealias Home = StepUpHome

    @Test func aGrantMeansNoPromptUntilEnded() throws {
        let home = try Home()
        #expect(try home.run(["step-up", "payroll", "--check"]).status == 1)
        let first = try home.run(["step-up", "--pin-fd", "3", "--ttl", "600", "payroll"], pin: StepUpCLITests.pin)
        #expect(first.status == 0, "\(first.all)")
        #expect(first.stdout.contains("Confirmed with your PIN for payroll, for 10 minutes."))
        // Held: no PIN needed (none is given).
        let again = try home.run(["step-up"] + StepUpCLITests.pinFD + ["payroll"])
        #expect(again.status == 0 && again.stdout.contains("Already confirmed"), "\(again.all)")
        #expect(try home.run(["step-up", "payroll", "--check"]).status == 0)
        #expect(try home.run(["step-up", "payroll", "--end"]).stdout.contains("is ended"))
        #expect(try home.run(["step-up", "payroll", "--check"]).status == 1)
        let asked = try home.run(["step-up"] + StepUpCLITests.pinFD + ["payroll"])
        #expect(asked.status != 0 && asked.stderr.contains("Confirm it is you for payroll."), "\(asked.all)")
    }

    /// A confirmation lasts its TTL (whole seconds, so between one and two seconds here), then
    /// the next step-up asks again.
    @Test func aGrantExpiresAfterItsTTL() throws {
        let home = try Home()
        #expect(try home.run(["step-up", "--pin-fd", "3", "--ttl", "2", "payroll"], pin: StepUpCLITests.pin).status == 0)
        #expect(try home.run(["step-up", "payroll", "--check"]).status == 0)
        // Expiry is the clock's business: look (bounded) until it has passed.
        #expect(ReaderBroker.waitUntil(6) { (try? home.run(["step-up", "payroll", "--check"]).status) == 1 })
        let asked = try home.run(["step-up"] + StepUpCLITests.pinFD + ["payroll"])
        #expect(asked.status != 0 && asked.stderr.contains("Confirm it is you for payroll."), "\(asked.all)")
    }

    /// The session is the caller's, as the kernel tells the broker; the variables that once
    /// named it (XDG_SESSION_ID, XDG_RUNTIME_DIR) change nothing either way.
    @Test func anotherSessionIsAskedWhateverItsVariablesSay() throws {
        let home = try Home()
        #expect(try home.run(["step-up", "--pin-fd", "3", "payroll"], pin: StepUpCLITests.pin).status == 0)
        #expect(try home.run(["step-up", "payroll", "--check"], ownSession: true).status == 1)
        let runtime = try TempDirectory(base: "/dev/shm")
        let variables = ["XDG_SESSION_ID": "8", "XDG_RUNTIME_DIR": runtime.path]
        #expect(try home.run(["step-up", "payroll", "--check"], environment: variables).status == 0)
        #expect(try home.run(["step-up", "payroll", "--check"], ownSession: true, environment: variables).status == 1)
        #expect(try home.run(["step-up", "payroll", "--check"]).status == 0)
        #expect(try Child.run("/bin/ls", ["-A", runtime.path]).stdout.isEmpty, "nothing is written to the runtime directory")
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
        // No PIN given: each asks for it and refuses, although a confirmation is held.
        for command in [["step-up", "--fresh", "admin"], ["pin", "change"], ["reset", "--yes"]] {
            let result = try home.run(command + StepUpCLITests.pinFD)
            #expect(result.status == 2 && result.stderr.contains("No PIN was given."), "\(command) without the PIN: \(result.all)")
        }
        #expect(readFile(home.rig.broker.vaultDirectory() + "/vault") != nil, "nothing was deleted")
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
        // No confirmation, none possible (no PIN given): nothing revealed.
        let refused = try home.run(["reveal"] + StepUpCLITests.pinFD + [sealed])
        #expect(refused.status != 0 && !refused.stdout.contains("IBAN"), "\(refused.all)")
        let wrong = try home.run(["reveal", "--pin-fd", "3", sealed], pin: "0000")
        #expect(wrong.status == 1 && wrong.stdout.isEmpty, "\(wrong.all)")
        let shown = try home.run(["reveal", "--pin-fd", "3", sealed], pin: StepUpCLITests.pin)
        #expect(shown.status == 0 && shown.stdout == "IBAN DE00 1234\n", "\(shown.all)")
        #expect(shown.stderr.hasSuffix("Personal data follows.\n"), "the notice comes first, on stderr")
        // The confirmation is now held for the context: no PIN the second time.
        let quiet = try home.run(["reveal", "--no-notice"] + StepUpCLITests.pinFD + [sealed])
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
        let script = Paths.packageRoot + "/Tests/TestSupport/pty_session.py"
        let stepsJSON = String(decoding: try JSONEncoder().encode(steps), as: UTF8.self)
        var environment = home.environment
        environment["TERM"] = "dumb"
        let result = try Child.run("/usr/bin/python3", [script, stepsJSON, "--", Paths.cli] + arguments, environment: environment)
        #expect(result.status == 0, "\(result.stderr)")
        return try JSONDecoder().decode(TerminalTests.Session.self, from: Data(result.stdout.utf8))
    }

    @Test func withoutAReaderThePINIsAsked() throws {
        let home = try StepUpCLITests.Home()
        // A finger enrolled on the virtual reader, which is then gone (the broker's reader).
        try home.rig.broker.restart(environment: ["FP_DRIVERS_WHITELIST": "virtual_device", "FP_VIRTUAL_DEVICE": home.rig.sensor])
        let enroll = try home.rig.scan(["enroll", "--pin-fd", "3"], Array(repeating: "SCAN finger-a", count: 5),
                                       fd3: "\(StepUpCLITests.pin)\n")
        #expect(enroll.status == 0, "\(enroll.all)")
        try home.rig.broker.restart(environment: ["FP_DRIVERS_WHITELIST": "virtual_device"])
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

/// `stepup=CONTEXT ttl=S` in the module honours the same grants as the CLI: the broker's, per
/// (uid, login session). The PAM transactions run in this process (one session, the test
/// runner's), with a terminal named as PAM_TTY; "another session" is a pamtester of its own.
@Suite struct StepUpPAMTests {
    struct Stack {
        let home: StepUpCLITests.Home
        var services: String { home.temp.file("pam.d") }
        var user: String { String(cString: getpwuid(geteuid()).pointee.pw_name) }

        init() throws {
            home = try StepUpCLITests.Home()
            #expect(mkdir(home.temp.file("pam.d"), 0o755) == 0)
            service("auth required \(Paths.module) socket=\(home.rig.broker.socketPath) pin stepup=sudo ttl=120")
        }

        func service(_ lines: String) {
            writeFile(services + "/fingerseal-test", Array((lines + "\n").utf8), mode: 0o644)
        }

        /// A PAM transaction in this process: authenticate, answering a PIN prompt with `answer`.
        func authenticate(answer: String?, rhost: String? = nil,
                          environment: [String: String] = [:]) throws -> (code: Int32, prompted: Bool) {
            var prompted = false
            let client = try PAMClient(service: "fingerseal-test", user: user, configDirectory: services) { message in
                if case .promptEchoOff = message { prompted = true; return answer }
                return nil
            }
            #expect(client.setItem(.tty, "/dev/pts/0") == PAM_SUCCESS)
            if let rhost { #expect(client.setItem(.rhost, rhost) == PAM_SUCCESS) }
            for (name, value) in environment { #expect(client.setEnvironment(name, value) == PAM_SUCCESS) }
            return (client.authenticate(), prompted)
        }

        /// pamtester OPERATION in a session of its own.
        func elsewhere(_ operation: String, answers: [String] = []) throws -> Child.Result {
            try Pamtester.run(services: services, service: "fingerseal-test", user: user, operations: [operation], answers: answers)
        }
    }

    @Test(.enabled(if: Pamtester.available)) func aConfirmationFromPAMOrTheCLIAnswersWithoutAPrompt() throws {
        let stack = try Stack()
        let first = try stack.authenticate(answer: StepUpCLITests.pin)
        #expect(first.code == PAM_SUCCESS && first.prompted)
        let second = try stack.authenticate(answer: nil)
        #expect(second.code == PAM_SUCCESS && !second.prompted, "the confirmation is held")
        // The CLI in the same session sees it, and only there.
        #expect(try stack.home.run(["step-up", "sudo", "--check"]).status == 0)
        #expect(try stack.home.run(["step-up", "sudo", "--check"], ownSession: true).status == 1)
        // And the reverse: a confirmation made with the CLI answers the module.
        #expect(try stack.home.run(["step-up", "--pin-fd", "3", "admin"], pin: StepUpCLITests.pin).status == 0)
        stack.service("auth required \(Paths.module) socket=\(stack.home.rig.broker.socketPath) pin stepup=admin")
        let fromCLI = try stack.authenticate(answer: nil)
        #expect(fromCLI.code == PAM_SUCCESS && !fromCLI.prompted, "the CLI's confirmation is held")
        stack.service("auth required \(Paths.module) socket=\(stack.home.rig.broker.socketPath) pin stepup=sudo ttl=120")
        // A held confirmation never answers for a remote login (allow_remote is off).
        let remote = try stack.authenticate(answer: nil, rhost: "203.0.113.9")
        #expect(remote.code != PAM_SUCCESS && !remote.prompted)
        // Variables in the PAM environment do not choose the session.
        let named = try stack.authenticate(answer: nil, environment: ["XDG_SESSION_ID": "5", "XDG_RUNTIME_DIR": "/nonexistent"])
        #expect(named.code == PAM_SUCCESS && !named.prompted)
        // Another session is asked.
        let other = try stack.elsewhere("authenticate")
        #expect(other.status != 0 && other.stderr.contains("PIN: "), "\(other.all)")
    }

    /// `ttl=` bounds the module's confirmation: after it, the PIN is asked again.
    @Test func aConfirmationFromPAMExpiresAfterItsTTL() throws {
        let stack = try Stack()
        stack.service("auth required \(Paths.module) socket=\(stack.home.rig.broker.socketPath) pin stepup=sudo ttl=2")
        #expect(try stack.authenticate(answer: StepUpCLITests.pin) == (PAM_SUCCESS, true))
        #expect(try stack.authenticate(answer: nil) == (PAM_SUCCESS, false), "held")
        // Each look answers nothing when asked, which is no failure.
        #expect(ReaderBroker.waitUntil(6) { (try? stack.authenticate(answer: nil).prompted) == true }, "asked again after the TTL")
    }

    /// close_session drops the grants of its own session, and no other session's.
    @Test(.enabled(if: Pamtester.available)) func closingASessionDropsItsGrantsOnly() throws {
        let stack = try Stack()
        #expect(try stack.authenticate(answer: StepUpCLITests.pin).code == PAM_SUCCESS)
        // The module has no opinion where nothing was dropped (PAM_IGNORE): pam_permit decides.
        stack.service("""
            session [success=ok ignore=ignore default=die] \(Paths.module) socket=\(stack.home.rig.broker.socketPath)
            session required pam_permit.so
            """)
        let elsewhere = try stack.elsewhere("close_session")
        #expect(elsewhere.status == 0, "\(elsewhere.all)")
        #expect(try stack.home.run(["step-up", "sudo", "--check"]).status == 0, "another session's close leaves it")
        let client = try PAMClient(service: "fingerseal-test", user: stack.user, configDirectory: stack.services) { _ in nil }
        #expect(client.closeSession() == PAM_SUCCESS)
        #expect(try stack.home.run(["step-up", "sudo", "--check"]).status == 1, "this session's close drops it")
    }
}
