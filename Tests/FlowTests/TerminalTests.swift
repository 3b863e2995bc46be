import FoundationEssentials
import Glibc
import Testing
@testable import TestSupport

/// The CLI on a real pseudo-terminal against a broker of its own: the broker asks, the CLI
/// reads from the terminal; PINs are not echoed, Ctrl-C cancels and restores echo.
@Suite struct TerminalTests {
    struct Session: Decodable {
        let ok: Bool
        let transcript: String
        let status: Int32
        let echo: Bool
    }

    /// Plays `steps` against `fingerseal ARGUMENTS` on a pty (a session of its own), with the
    /// client environment of `home`; "@sensor COMMAND" steps go to the broker's reader.
    static func run(_ steps: [[String]], _ arguments: [String], home: CLIHome,
                    sourceLocation: SourceLocation = #_sourceLocation) throws -> Session {
        var environment = home.environment
        if let sensor = home.sensor { environment["PTY_SENSOR"] = sensor }
        return try run(steps, arguments, environment: environment, sourceLocation: sourceLocation)
    }

    /// The same with a client environment of the caller's.
    static func run(_ steps: [[String]], _ arguments: [String], environment client: [String: String],
                    sourceLocation: SourceLocation = #_sourceLocation) throws -> Session {
        let script = Paths.packageRoot + "/Tests/TestSupport/pty_session.py"
        let stepsJSON = String(decoding: try JSONEncoder().encode(steps), as: UTF8.self)
        var environment = client
        environment["TERM"] = "dumb"
        let result = try Child.run("/usr/bin/python3", [script, stepsJSON, "--", Paths.cli] + arguments, environment: environment)
        #expect(result.status == 0, "\(result.stderr)", sourceLocation: sourceLocation)
        return try JSONDecoder().decode(Session.self, from: Data(result.stdout.utf8))
    }

    func run(_ steps: [[String]], _ arguments: [String], home: CLIHome) throws -> Session {
        try TerminalTests.run(steps, arguments, home: home)
    }

    @Test func pinIsReadWithoutEcho() throws {
        let home = try CLIHome()
        let session = try run([["New PIN: ", "73915\r"], ["Repeat the new PIN: ", "73915\r"]], ["pin", "set"], home: home)
        #expect(session.ok, "\(session.transcript)")
        #expect(session.status == 0, "\(session.transcript)")
        #expect(session.transcript.contains("The PIN is set."))
        #expect(!session.transcript.contains("73915"), "the PIN was echoed: \(session.transcript)")
        #expect(session.echo)
        #expect(readFile(home.vaultFile) != nil, "the vault is the broker's")
        #expect(home.leftInHome().isEmpty, "\(home.leftInHome())")
    }

    @Test func backspaceEditsThePIN() throws {
        let home = try CLIHome()
        let set = try run([["New PIN: ", "24689\u{7f}0\r"], ["Repeat the new PIN: ", "24680\r"]], ["pin", "set"], home: home)
        #expect(set.status == 0, "\(set.transcript)")
        let change = try run([["Current PIN: ", "24680\r"], ["New PIN: ", "1357\r"], ["Repeat the new PIN: ", "1357\r"]],
                             ["pin", "change"], home: home)
        #expect(change.status == 0, "\(change.transcript)")
        #expect(change.transcript.contains("The PIN is changed."), "\(change.transcript)")
    }

    @Test func mismatchedRepeatChangesNothing() throws {
        let home = try CLIHome()
        let session = try run([["New PIN: ", "73915\r"], ["Repeat the new PIN: ", "73916\r"]], ["pin", "set"], home: home)
        #expect(session.status == 2)
        #expect(session.transcript.contains("not the same"))
        #expect(readFile(home.vaultFile) == nil)
        #expect(try home.run(["status"]).status == 6)
    }

    @Test func ctrlCCancelsAndRestoresTheTerminal() throws {
        let home = try CLIHome()
        let session = try run([["New PIN: ", "12\u{03}"]], ["pin", "set"], home: home)
        #expect(session.status == 3, "\(session.transcript)")
        #expect(session.transcript.contains("Cancelled."))
        #expect(session.echo, "echo left off after cancel")
        #expect(readFile(home.vaultFile) == nil)
        // The broker took the cancel and serves the next request.
        #expect(try home.run(["status"]).status == 6)
    }

    @Test func resetAsksAndAcceptsOnlyYes() throws {
        let home = try CLIHome()
        _ = try run([["New PIN: ", "73915\r"], ["Repeat the new PIN: ", "73915\r"]], ["pin", "set"], home: home)
        #expect(readFile(home.vaultFile) != nil)
        let no = try run([["Type yes to continue: ", "y\r"]], ["reset"], home: home)
        #expect(no.status == 3)
        #expect(readFile(home.vaultFile) != nil)
        let yes = try run([["Type yes to continue: ", "yes\r"], ["PIN: ", "73915\r"]], ["reset"], home: home)
        #expect(yes.status == 0, "\(yes.transcript)")
        #expect(readFile(home.vaultFile) == nil)
    }
}
