import CPAM
import FingersealWire
import Glibc
import SystemKit
import Testing
@testable import FingersealCore
@testable import TestSupport

/// pam_fingerseal.so under valgrind's memcheck (issue 24 §5): pamtester (under pam_wrapper)
/// runs whole transactions (authenticate, acct_mgmt, open_session, close_session) through a
/// stack with the module in every phase, one pamtester per transaction, each under valgrind:
/// a finger match through a broker with a reader, the PIN through a broker without one, no
/// broker at all, and a broker that answers garbage. No leak (definite or indirect) and no
/// invalid access anywhere in the process: what libpam, pam_wrapper or glibc do that is not
/// the module's is suppressed in Tests/Valgrind/pamtester.supp, each entry with why.
///
/// `make check` runs 12 transactions (`FINGERSEAL_VALGRIND`); `make valgrind` runs 100.
/// The logs are kept in .build/test-output/ValgrindTests/.
@Suite(.serialized) struct ValgrindTests {
    static let pin = "5170"
    static let valgrind = "/usr/bin/valgrind"
    static var transactions: Int { getenv("FINGERSEAL_VALGRIND").flatMap { Int(String(cString: $0)) } ?? 12 }
    static var skip: String? {
        guard access(valgrind, X_OK) == 0 else { return "valgrind is missing" }
        return Pamtester.available ? nil : "pamtester or pam_wrapper is missing"
    }

    enum Scenario: String, CaseIterable {
        case fingerMatch = "finger-match", pin, noBroker = "no-broker", garbage
    }

    /// What valgrind's log says at the end: its error count, and whether the module appears in
    /// any reported stack.
    struct Verdict {
        let errors: Int?
        let moduleInAStack: Bool
        let log: String

        init(_ path: String) {
            log = String(decoding: readFile(path) ?? [], as: UTF8.self)
            let summary = log.split(separator: "\n").last { $0.contains("ERROR SUMMARY:") }
            errors = summary.flatMap { line in
                line.split(separator: " ").drop { $0 != "SUMMARY:" }.dropFirst().first.flatMap { Int($0) }
            }
            // A frame "by 0x…: … (in …/pam_fingerseal.so)" inside an error's block.
            moduleInAStack = log.split(separator: "\n").contains { $0.contains("pam_fingerseal") && ($0.contains(" at 0x") || $0.contains(" by 0x")) }
        }
    }

    /// memcheck as every run here uses it: every leak a definite or indirect one counts as an
    /// error, and any error is exit status 99; the report goes to `log`.
    static func memcheck(log: String) -> [String] {
        ["--tool=memcheck", "--leak-check=full", "--errors-for-leak-kinds=definite,indirect", "--show-leak-kinds=definite,indirect",
         "--error-exitcode=99", "--num-callers=30", "--log-file=\(log)"]
    }

    /// The stack: the module in every phase, each phase ending well whatever the module says
    /// (a password after it, pam_permit after the others), so every entry point runs.
    static func stack(socket: String, passdb: String) -> String {
        """
        auth [success=done default=ignore] \(Paths.module) socket=\(socket) pin
        auth required \(Pamtester.matrix) passdb=\(passdb)
        account optional \(Paths.module) socket=\(socket)
        account required pam_permit.so
        session optional \(Paths.module) socket=\(socket)
        session required pam_permit.so

        """
    }

    @Test(.enabled(if: skip == nil)) func theModuleLeaksNothingAndTouchesNothingItMustNot() throws {
        let user = String(cString: getpwuid(geteuid()).pointee.pw_name)
        // A broker with a reader and root's finger; another with root's PIN and no reader.
        let reader = try ReaderBroker(pin: ValgrindTests.pin)
        let enrolled = try reader.enroll("valgrind-finger", pin: ValgrindTests.pin)
        #expect(enrolled.status == 0, "\(enrolled.all)")
        let pinOnly = try ReaderBroker(driver: "none", reader: false)
        guard let account = try UserAccount.current() else { throw TestFailure("no account") }
        _ = try Vault.create(VaultStore(location: .broker(stateDirectory: pinOnly.broker.state, account: account)),
                             pin: PINKeyslot(pin: secret(ValgrindTests.pin), cost: .fastForTests))
        let count = ValgrindTests.transactions
        let garbageRuns = (0..<count).filter { Scenario.allCases[$0 % 4] == .garbage }.count
        // Each phase's request gets garbage (the module connects once per phase).
        let garbage = try ScriptedBroker(Array(repeating: [.raw(Array("PAM_SUCCESS garbage".utf8))], count: garbageRuns * 4),
                                         patience: 60)
        let files = try TempDirectory()
        writeFile(files.file("passdb"), Array("\(user):secret:valgrind\n".utf8))
        let output = Paths.packageRoot + "/.build/test-output/ValgrindTests"
        _ = Child.runQuietly("/bin/rm", ["-rf", output])
        _ = Child.runQuietly("/bin/mkdir", ["-p", output])
        var failures: [String] = []
        var tally: [Scenario: (runs: Int, ok: Int)] = [:]
        let started = VirtualSensor.now()
        for index in 0..<count {
            let scenario = Scenario.allCases[index % 4]
            let socket: String
            var answers: [String] = []
            switch scenario {
            case .fingerMatch: socket = reader.broker.socketPath
            case .pin: (socket, answers) = (pinOnly.broker.socketPath, [ValgrindTests.pin])
            case .noBroker: (socket, answers) = (files.file("no-broker"), ["secret"])
            case .garbage: (socket, answers) = (garbage.path, ["secret"])
            }
            _ = mkdir(files.file("pam.d"), 0o755)
            writeFile(files.file("pam.d/valgrind"), Array(ValgrindTests.stack(socket: socket, passdb: files.file("passdb")).utf8),
                      mode: 0o644)
            let log = output + "/\(index)-\(scenario.rawValue).log"
            let arguments = ["-oL", ValgrindTests.valgrind] + ValgrindTests.memcheck(log: log)
                + ["--keep-debuginfo=yes", "--suppressions=\(Paths.packageRoot)/Tests/Valgrind/pamtester.supp",
                   "/usr/bin/pamtester", "-I", "tty=/dev/pts/0", "valgrind", user,
                   "authenticate", "acct_mgmt", "open_session", "close_session"]
            let child = try Child("/usr/bin/stdbuf", arguments, environment: Pamtester.environment(files.file("pam.d")),
                                  stdin: Array(answers.map { $0 + "\n" }.joined().utf8), terminal: .leader)
            if scenario == .fingerMatch {
                #expect(child.waitForLine(containing: "finger"), "no prompt to scan")
                try VirtualSensor.send("SCAN valgrind-finger", to: reader.sensor)
            }
            let result = child.finish(limit: 120)
            let verdict = Verdict(log)
            var problems: [String] = []
            if result.status != 0 { problems.append("pamtester exited \(result.status): \(result.all)") }
            if !result.all.contains("session has successfully been closed") { problems.append("the transaction did not end: \(result.all)") }
            if scenario == .fingerMatch && result.stderr.contains("Password") { problems.append("the finger did not match: \(result.all)") }
            if verdict.errors != 0 { problems.append("valgrind: \(verdict.errors.map(String.init) ?? "no summary") errors, see \(log)") }
            if verdict.moduleInAStack { problems.append("pam_fingerseal.so in a reported stack, see \(log)") }
            tally[scenario, default: (0, 0)].runs += 1
            if problems.isEmpty { tally[scenario, default: (0, 0)].ok += 1 }
            failures += problems.map { "#\(index) \(scenario.rawValue): \($0)" }
        }
        let garbageSeen = garbage.finish()
        #expect(garbageSeen.count == garbageRuns * 4 && garbageSeen.allSatisfy { $0.request != nil },
                "the garbage broker was asked \(garbageSeen.filter { $0.request != nil }.count) times")
        let summary = Scenario.allCases.map { "\($0.rawValue) \(tally[$0]?.ok ?? 0)/\(tally[$0]?.runs ?? 0)" }.joined(separator: ", ")
        let report = "valgrind (memcheck, leak-check=full, definite+indirect as errors): \(count) transactions of pamtester "
            + "(authenticate acct_mgmt open_session close_session), clean: \(summary); \(Int(VirtualSensor.now() - started)) s\n"
        print(report, terminator: "")
        writeFile(output + "/summary.txt", Array(report.utf8), mode: 0o644)
        #expect(failures.isEmpty, "\(failures.prefix(10).joined(separator: "\n"))")
    }

    /// Many transactions in one process (pam-cycles: pam_start_confdir, authenticate, pam_end,
    /// the module loaded and unloaded each time), under memcheck: what a transaction leaves
    /// behind adds up in a long-lived host (a display manager), and memory the module still
    /// pointed at when it was unloaded shows as lost. With a broker that answers (a prompt,
    /// then no match) and with none.
    @Test(.enabled(if: access(valgrind, X_OK) == 0), arguments: [true, false])
    func manyTransactionsInOneHostLeaveNothing(withBroker: Bool) throws {
        let cycles = max(ValgrindTests.transactions / 2, 5)
        let service = try PAMCyclesService(name: "cycles", cycles: cycles, withBroker: withBroker, patience: 60)
        let log = service.directory.file("memcheck.log")
        let run = try Child.run(ValgrindTests.valgrind, ValgrindTests.memcheck(log: log) + [PAMCyclesService.helper] + service.arguments)
        let verdict = Verdict(log)
        #expect(run.status == 0, "\(run.all)\n\(verdict.log.suffix(3000))")
        #expect(verdict.errors == 0 && !verdict.moduleInAStack, "\(verdict.log.suffix(3000))")
        #expect(run.stdout.contains("codes \(withBroker ? PAM_AUTH_ERR : PAM_AUTHINFO_UNAVAIL):\(cycles)"), "\(run.stdout)")
        #expect(run.stdout.contains("module unloaded"), "\(run.stdout)")
        if let broker = service.broker {
            #expect(broker.finish().count == cycles)
        }
    }
}
