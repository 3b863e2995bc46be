import FoundationEssentials
import Glibc
import Testing

/// The CLI on a real pseudo-terminal: PINs are not echoed, Ctrl-C cancels and restores echo.
@Suite struct TerminalTests {
    struct Session: Decodable {
        let ok: Bool
        let transcript: String
        let status: Int32
        let echo: Bool
    }

    func run(_ steps: [[String]], _ arguments: [String], home: TempDirectory) throws -> Session {
        let script = Paths.packageRoot + "/Tests/FingersealTests/Support/pty_session.py"
        let stepsJSON = String(decoding: try JSONEncoder().encode(steps), as: UTF8.self)
        let result = try Child.run("/usr/bin/python3", [script, stepsJSON, "--", Paths.cli] + arguments,
                                   environment: ["XDG_STATE_HOME": home.path, "TERM": "dumb", "PATH": "/usr/bin:/bin"])
        #expect(result.status == 0, "\(result.stderr)")
        return try JSONDecoder().decode(Session.self, from: Data(result.stdout.utf8))
    }

    @Test func pinIsReadWithoutEcho() throws {
        let home = try TempDirectory()
        let session = try run([["New PIN: ", "73915\r"], ["Repeat the new PIN: ", "73915\r"]], ["pin", "set"], home: home)
        #expect(session.ok, "\(session.transcript)")
        #expect(session.status == 0, "\(session.transcript)")
        #expect(session.transcript.contains("The PIN is set."))
        #expect(!session.transcript.contains("73915"), "the PIN was echoed: \(session.transcript)")
        #expect(session.echo)
    }

    @Test func backspaceEditsThePIN() throws {
        let home = try TempDirectory()
        _ = try run([["New PIN: ", "24689\u{7f}0\r"], ["Repeat the new PIN: ", "24680\r"]], ["pin", "set"], home: home)
        let change = try run([["Current PIN: ", "24680\r"], ["New PIN: ", "1357\r"], ["Repeat the new PIN: ", "1357\r"]],
                             ["pin", "change"], home: home)
        #expect(change.status == 0, "\(change.transcript)")
    }

    @Test func mismatchedRepeatChangesNothing() throws {
        let home = try TempDirectory()
        let session = try run([["New PIN: ", "73915\r"], ["Repeat the new PIN: ", "73916\r"]], ["pin", "set"], home: home)
        #expect(session.status == 2)
        #expect(session.transcript.contains("not the same"))
        #expect(readFile(home.path + "/fingerseal/vault") == nil)
    }

    @Test func ctrlCCancelsAndRestoresTheTerminal() throws {
        let home = try TempDirectory()
        let session = try run([["New PIN: ", "12\u{03}"]], ["pin", "set"], home: home)
        #expect(session.status == 3, "\(session.transcript)")
        #expect(session.transcript.contains("Cancelled."))
        #expect(session.echo, "echo left off after cancel")
        #expect(readFile(home.path + "/fingerseal/vault") == nil)
    }

    @Test func resetAsksAndAcceptsOnlyYes() throws {
        let home = try TempDirectory()
        _ = try run([["New PIN: ", "73915\r"], ["Repeat the new PIN: ", "73915\r"]], ["pin", "set"], home: home)
        let no = try run([["Type yes to continue: ", "y\r"]], ["reset"], home: home)
        #expect(no.status == 3)
        #expect(readFile(home.path + "/fingerseal/vault") != nil)
        let yes = try run([["Type yes to continue: ", "yes\r"], ["PIN: ", "73915\r"]], ["reset"], home: home)
        #expect(yes.status == 0, "\(yes.transcript)")
        #expect(readFile(home.path + "/fingerseal/vault") == nil)
    }
}
