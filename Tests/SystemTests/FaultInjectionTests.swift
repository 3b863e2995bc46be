import Glibc
import Testing
@testable import TestSupport

/// Injected faults (issue 24 §2): the fault-injection library (Tests/Helpers/fault-inject)
/// fails one call at a time, at each site where the path under test makes it, and every run
/// must end with no crash, no hang past its bound, no success on an error path, a sentence for
/// the person, and afterwards a vault whose audit trail verifies and which unlocks.
///
/// A path's sites are found by a calibration run (the library logs each site it sees), then
/// each chosen site is failed in a run of its own. `make check` fails one site of each call
/// group per path; `make faults` (FAULT_SWEEP=full) every site, and each interruptible one a
/// second time with EINTR, except the allocations that end the process by design (the Swift
/// runtime's own, GLib's g_malloc), of which a seeded sample is failed
/// (`FaultPlan.allocationsEndingByDesign`: each ends the same way).
/// Allocation failures trap in full Swift by design (the runtime's allocator never returns
/// nil): counted apart, and judged on what the client said and what the store kept. The
/// module, in its host, must survive them.
@Suite(.serialized, .enabled(if: FaultLibrary.available && getuid() == 0)) struct FaultInjectionTests {
    static let pin = VaultTorture.pin
    /// Each run's bound: a path that fails must say so well before this.
    static let runLimit = 30.0

    // MARK: the broker's paths

    /// The broker's PIN unlock (the PAM channel, as a PAM host asks it): the right PIN, and the
    /// wrong one, which must never succeed whatever fails.
    @Test func brokerPINUnlock() throws {
        let rig = try FaultyBroker()
        let tally = FaultTally(path: "broker PIN unlock")
        try rig.sweep(tally, groups: Set(FaultLibrary.allGroups)) { index in try rig.pinUnlock(index % 2 == 1 ? "0000" : Self.pin) }
        tally.report()
        expectNoFindings(tally)
        #expect(!tally.failed.isEmpty, "no fault was injected: \(tally.line)")
    }

    /// The audit append of a failure (recorded before the answer): a wrong PIN, its files'
    /// calls failed one at a time.
    @Test func auditAppendOfAFailure() throws {
        let rig = try FaultyBroker()
        let tally = FaultTally(path: "audit append")
        try rig.sweep(tally, groups: ["open", "read", "write", "fsync", "rename"]) { _ in try rig.pinUnlock("0000") }
        tally.report()
        expectNoFindings(tally)
        #expect(!tally.failed.isEmpty, "no fault was injected: \(tally.line)")
    }

    /// seal, then reveal with the PIN: a reveal that succeeds shows exactly what was sealed
    /// and is in the audit trail.
    @Test func sealAndReveal() throws {
        let rig = try FaultyBroker()
        let tally = FaultTally(path: "seal/reveal")
        let plain = rig.files.file("plain"), sealed = rig.files.file("sealed")
        writeFile(plain, Array("health details\n".utf8))
        try rig.sweep(tally, groups: Set(FaultLibrary.allGroups)) { _ in
            unlink(sealed)
            let before = try rig.reveals()
            let seal = try rig.home.start(["seal", "--context", "assignments", "--out", sealed, plain]).finish(limit: Self.runLimit)
            guard seal.status == 0 else { return Attempt(result: seal, succeeded: false, mustFail: false) }
            let reveal = try rig.home.start(["reveal", "--no-notice", "--pin-fd", "3", sealed], fd3: Self.pin + "\n")
                .finish(limit: Self.runLimit)
            var problems: [String] = []
            if reveal.status == 0 {
                if reveal.stdout != "health details\n" { problems.append("reveal succeeded with other content: \(reveal.stdout)") }
                rig.settle()
                if try rig.reveals() <= before { problems.append("a reveal that succeeded is not in the audit trail") }
            }
            return Attempt(result: reveal, succeeded: reveal.status == 0, mustFail: false, problems: problems)
        }
        tally.report()
        expectNoFindings(tally)
        #expect(!tally.failed.isEmpty, "no fault was injected: \(tally.line)")
    }

    /// Enroll with the PIN and five scans: an enroll that fails leaves no finger behind, one
    /// that succeeds leaves one that can be forgotten.
    @Test func enroll() throws {
        let rig = try FaultyBroker(reader: true)
        let tally = FaultTally(path: "enroll")
        try rig.sweep(tally, groups: Set(FaultLibrary.allGroups)) { _ in
            let child = try rig.home.start(["enroll", "--finger", "left-thumb", "--timeout", "5", "--pin-fd", "3"],
                                           fd3: Self.pin + "\n")
            // No scan once the enroll has ended (a failure, a broker's trap): each would wait
            // for a reader that is gone.
            for _ in 0..<5 where child.exited() == nil { _ = try? VirtualSensor.send("SCAN finger-b", to: rig.sensor, timeout: 3) }
            let result = child.finish(limit: Self.runLimit)
            rig.disarm()
            // Either way, the next run starts with no finger.
            _ = try? rig.home.run(["forget", "left-thumb", "--pin-fd", "3"], fd3: Self.pin + "\n")
            return Attempt(result: result, succeeded: result.status == 0, mustFail: false)
        }
        tally.report()
        expectNoFindings(tally)
        #expect(!tally.failed.isEmpty, "no fault was injected: \(tally.line)")
    }

    // MARK: the IdP's paths

    /// A finger unlock and its refresh at the local IdP: a lost answer may end the chain (the
    /// next unlock then says sign-in required, and a new sign-in works), never tear the vault.
    @Test(.enabled(if: LocalIdP.available)) func fingerUnlockAndRefresh() throws {
        let idp = try LocalIdP()
        let rig = try FaultyBroker(reader: true, idp: idp)
        try rig.enrollFinger()
        let tally = FaultTally(path: "finger unlock + refresh")
        try rig.sweep(tally, groups: Set(FaultLibrary.allGroups)) { _ in
            let child = try rig.home.start(["unlock", "--timeout", "5"])
            _ = try? VirtualSensor.send("SCAN finger-a", to: rig.sensor)
            let result = child.finish(limit: Self.runLimit)
            return Attempt(result: result, succeeded: result.status == 0, mustFail: false)
        }
        tally.report()
        expectNoFindings(tally)
        #expect(!tally.failed.isEmpty, "no fault was injected: \(tally.line)")
    }

    /// The proof builder (issue 35): an unlock with the PIN that keeps a bound token in this
    /// session, then `fingerseal proof` for the IdP's userinfo. A proof printed must be one the
    /// resource accepts (jwcrypto checks it); anything else is a failure with a sentence.
    @Test(.enabled(if: LocalIdP.available)) func proofForABoundToken() throws {
        let idp = try LocalIdP()
        let rig = try FaultyBroker(idp: idp)
        let url = idp.issuer + "/userinfo/"
        let tally = FaultTally(path: "proof")
        // The session's token: the last unlock that gave one (a failed unlock leaves it).
        var token = ""
        try rig.sweep(tally, groups: Set(FaultLibrary.allGroups)) { _ in
            let unlock = try rig.home.start(["unlock", "--print-token", "--pin-fd", "3"], fd3: Self.pin + "\n", newSession: false)
                .finish(limit: Self.runLimit)
            if unlock.status == 0 { token = String(unlock.stdout.dropLast()) }
            let result = try rig.home.start(["proof", "GET", url], newSession: false).finish(limit: Self.runLimit)
            var problems: [String] = []
            if result.status == 0 {
                // The proof judged by the resource's own checks. The token itself may be dead: a
                // refresh whose answer a fault lost still rotated at the provider, which revokes
                // the access token it had given before.
                let refusedBefore = try idp.dpopReport().refused.values.reduce(0, +)
                let answered = try LocalIdP.getResource(url, token: token, proof: String(result.stdout.dropLast())).status
                let refused = try idp.dpopReport().refused.values.reduce(0, +) - refusedBefore
                if answered != 200 && refused > 0 { problems.append("a proof printed that userinfo refused (\(answered))") }
            }
            return Attempt(result: result, succeeded: result.status == 0, mustFail: false, problems: problems)
        }
        tally.report()
        expectNoFindings(tally)
        #expect(!tally.failed.isEmpty, "no fault was injected: \(tally.line)")
    }

    /// `fingerseal login` (the password sign-in) against the local IdP, over a vault that
    /// exists (signed out after each run).
    @Test(.enabled(if: LocalIdP.available)) func signIn() throws {
        let idp = try LocalIdP()
        let rig = try FaultyBroker(idp: idp)
        let tally = FaultTally(path: "sign-in")
        try rig.sweep(tally, groups: Set(FaultLibrary.allGroups)) { _ in
            let result = try rig.home.start(["login", "--issuer", idp.issuer, "--client-id", "fingerseal-test", "--flow", "password",
                                             "--idp-user", "alice", "--password-fd", "3", "--pin-fd", "3"],
                                            fd3: "wonderland-7\n\(Self.pin)\n").finish(limit: Self.runLimit)
            rig.disarm()
            if result.status == 0 { _ = try? rig.home.run(["logout", "--pin-fd", "3"], fd3: Self.pin + "\n") }
            return Attempt(result: result, succeeded: result.status == 0, mustFail: false)
        }
        tally.report()
        expectNoFindings(tally)
        #expect(!tally.failed.isEmpty, "no fault was injected: \(tally.line)")
    }

    // MARK: the clients' processes

    /// The PAM module inside pamtester (pam_wrapper), its own calls failed (FAULT_CALLER): the
    /// host never crashes, and a wrong PIN never authenticates. Its allocations are all one site
    /// to the library (the Embedded runtime allocates in one place), so they are also failed one
    /// by one, the Nth of the transaction in the Nth run: each must come from the reserve.
    @Test(.enabled(if: Pamtester.available)) func moduleInPamtester() throws {
        let rig = try FaultyBroker()
        let services = rig.services
        let authenticate = { (index: Int, faults: [String: String]) throws -> Attempt in
            let wrong = index % 2 == 1
            var environment = Pamtester.environment(services.path)
            environment.merge(FaultLibrary.environment(faults, preload: Pamtester.wrapper)) { $1 }
            let result = try Child("/usr/bin/pamtester", ["-I", "tty=/dev/pts/0", "fault-test", "root", "authenticate"],
                                   environment: environment, stdin: Array(((wrong ? "0000" : Self.pin) + "\n").utf8))
                .finish(limit: Self.runLimit)
            // pamtester words its own result; a module that cannot reach its broker is silent by
            // design (PAM_AUTHINFO_UNAVAIL, the password next).
            return Attempt(result: result, succeeded: result.status == 0, mustFail: wrong, needsSentence: false)
        }
        let tally = FaultTally(path: "module in pamtester")
        try rig.sweepClient(tally, groups: Set(FaultLibrary.allGroups), caller: "pam_fingerseal", operation: authenticate)
        tally.report()
        expectNoFindings(tally)
        #expect(!tally.failed.isEmpty, "no fault was injected: \(tally.line)")

        let allocations = FaultTally(path: "module in pamtester, each allocation")
        try rig.sweepAllocations(allocations, caller: "pam_fingerseal", operation: authenticate)
        allocations.report()
        expectNoFindings(allocations)
        #expect(allocations.failed.count > 10, "too few allocations failed: \(allocations.line)")
    }

    /// The CLI's own calls: a reveal with the PIN (the socket, the PIN, the sealed file, the
    /// output), right and wrong.
    @Test func commandLine() throws {
        let rig = try FaultyBroker()
        let plain = rig.files.file("plain"), sealed = rig.files.file("sealed")
        writeFile(plain, Array("health details\n".utf8))
        let seal = try rig.home.run(["seal", "--context", "assignments", "--out", sealed, plain])
        #expect(seal.status == 0, "\(seal.all)")
        let tally = FaultTally(path: "CLI")
        try rig.sweepClient(tally, groups: Set(FaultLibrary.allGroups), caller: nil) { index, faults in
            let wrong = index % 2 == 1
            let result = try rig.home.start(["reveal", "--no-notice", "--pin-fd", "3", sealed], fd3: (wrong ? "0000" : Self.pin) + "\n",
                                            environment: FaultLibrary.environment(faults)).finish(limit: Self.runLimit)
            var problems: [String] = []
            if result.status == 0 && result.stdout != "health details\n" { problems.append("reveal succeeded with: \(result.stdout)") }
            return Attempt(result: result, succeeded: result.status == 0, mustFail: wrong, problems: problems)
        }
        tally.report()
        expectNoFindings(tally)
        #expect(!tally.failed.isEmpty, "no fault was injected: \(tally.line)")
    }
}

func expectNoFindings(_ tally: FaultTally, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(tally.findings.isEmpty, "\(tally.findings.joined(separator: "\n"))", sourceLocation: sourceLocation)
}

/// What one run did, as the path judges it.
struct Attempt {
    let result: Child.Result
    /// The operation said it succeeded.
    let succeeded: Bool
    /// An error path (a wrong PIN): success here is a false success.
    let mustFail: Bool
    /// Whether a failure must come with a sentence (pamtester words its own).
    var needsSentence = true
    /// What the path itself found wrong (a reveal not audited, other content).
    var problems: [String] = []
}

/// A broker under the fault-injection library (armed only during runs, through its control
/// file), a vault with a cheap PIN for root (the tests' user), and the CLI as its client.
final class FaultyBroker {
    let files: TempDirectory
    let control: FaultControl
    let log: FaultLog
    let home: CLIHome
    let idp: LocalIdP?
    var sensor: String { home.sensor ?? "" }

    init(reader: Bool = false, idp: LocalIdP? = nil) throws {
        files = try TempDirectory()
        chmod(files.path, 0o755)
        control = try FaultControl(path: files.file("control"))
        log = FaultLog(path: files.file("broker.faults"))
        self.idp = idp
        home = try CLIHome(reader: reader, brokerEnvironment: FaultLibrary.environment(["FAULT_CONTROL": control.path,
                                                                                          "FAULT_LOG": log.path]))
        if let idp {
            let login = try LocalIdP.passwordLogin(idp, home, pin: FaultInjectionTests.pin)
            guard login.status == 0 else { throw TestFailure("sign-in failed: \(login.all)") }
        } else {
            // The vault the torture helper makes (a cheap PIN), as TPMUpgradeCrashTests does.
            let template = files.file("template")
            let made = try Child.run(Paths.torture, ["init", template, FaultInjectionTests.pin])
            guard made.status == 0 else { throw TestFailure("vault-torture init: \(made.all)") }
            guard Child.runQuietly("/bin/cp", ["-a", template, home.vaultDirectory]) == 0 else { throw TestFailure("cp failed") }
        }
    }

    func enrollFinger() throws {
        let result = try home.scan(["enroll", "--finger", "right-index-finger", "--pin-fd", "3"],
                                   Array(repeating: "SCAN finger-a", count: 5), fd3: FaultInjectionTests.pin + "\n")
        guard result.status == 0 else { throw TestFailure("enroll failed: \(result.all)") }
    }

    /// The broker's PIN unlock through the PAM channel: pamtester with the module (neither
    /// failed), as a PAM host asks it.
    func pinUnlock(_ pin: String) throws -> Attempt {
        let result = try Child("/usr/bin/pamtester", ["-I", "tty=/dev/pts/0", "fault-test", "root", "authenticate"],
                               environment: Pamtester.environment(services.path), stdin: Array((pin + "\n").utf8))
            .finish(limit: FaultInjectionTests.runLimit)
        // A broker that cannot answer leaves the module silent by design (PAM_AUTHINFO_UNAVAIL,
        // the password next): no sentence is owed; pamtester words the result.
        return Attempt(result: result, succeeded: result.status == 0, mustFail: pin != FaultInjectionTests.pin, needsSentence: false)
    }

    /// A PAM service of the module alone, PIN only, against this broker.
    private(set) lazy var services: TempDirectory = {
        let services = (try? TempDirectory()) ?? files
        writeFile(services.file("fault-test"), Array("auth required \(Paths.module) socket=\(home.broker.socketPath) pin\n".utf8),
                  mode: 0o644)
        return services
    }()

    /// Reveals recorded in the audit trail so far.
    func reveals() throws -> Int {
        try home.run(["audit", "--json"]).stdout.split(separator: "\n").filter { $0.contains(#""event":"reveal""#) }.count
    }

    /// Waits until the broker has made no call for a moment (its bookkeeping after an answer
    /// runs on), bounded: the counter it keeps in the control file is what is watched.
    func settle() {
        var last = control.calls
        let deadline = VirtualSensor.now() + 3
        var quiet = 0
        while VirtualSensor.now() < deadline && quiet < 4 {
            var pause = timespec(tv_sec: 0, tv_nsec: 50_000_000)
            nanosleep(&pause, nil)
            let now = control.calls
            quiet = now == last ? quiet + 1 : 0
            last = now
        }
    }

    func disarm() {
        settle()
        control.disarm()
    }

    /// Fails each chosen site of the broker in a run of its own (`operation(index)` does one
    /// run), and judges the run and the store after it.
    func sweep(_ tally: FaultTally, groups: Set<String>, operation: (Int) throws -> Attempt) throws {
        let calls = groups.sorted().joined(separator: ",")
        // Calibration: every site the operation reaches (both variants), nothing failed.
        _ = log.fresh()
        for index in 0..<2 {
            control.arm("FAULT_CALL=\(calls)")
            _ = try operation(index)
            disarm()
            // A wrong PIN counts: the right one after it keeps later runs free of PIN delays.
            _ = afterwards(label: "calibration")
        }
        let sites = FaultSite.parse(log.fresh())
        tally.seen.formUnion(sites.map(\.hash))
        for (index, run) in FaultPlan.current.runs(sites, groups: groups).enumerated() {
            control.arm("FAULT_CALL=\(run.site.group) FAULT_SITE=\(run.site.hash)" + (run.errno.map { " FAULT_ERRNO=\($0)" } ?? ""))
            let attempt = try operation(index)
            disarm()
            tally.runs += 1
            let fired = control.faults > 0
            if fired { tally.failed.insert(run.site.hash) }
            let label = "\(run.site.group) \(run.site.symbol) \(run.site.hash) \(run.errno ?? "default errno")"
            var findings = judge(attempt, label: label)
            if let status = home.broker.ended() {
                if run.site.group == "malloc" && status > 128 {
                    tally.allocationTraps += 1
                } else {
                    findings.append("\(label): the broker ended with status \(status)")
                }
                try home.broker.restart()
            }
            findings += afterwards(label: label)
            tally.findings += findings
            if tally.findings.count >= 8 { break }
        }
    }

    /// Fails each chosen site of a client process (the CLI, pamtester) in a run of its own;
    /// `operation(index, settings)` starts it with the library's settings in its environment.
    func sweepClient(_ tally: FaultTally, groups: Set<String>, caller: String?,
                     operation: (Int, [String: String]) throws -> Attempt) throws {
        let calibration = FaultLog(path: files.file("client.faults"))
        var base = ["FAULT_LOG": calibration.path]
        if let caller { base["FAULT_CALLER"] = caller }
        for index in 0..<2 {
            _ = try operation(index, base.merging(["FAULT_CALL": groups.sorted().joined(separator: ",")]) { $1 })
        }
        let sites = FaultSite.parse(calibration.fresh())
        tally.seen.formUnion(sites.map(\.hash))
        for (index, run) in FaultPlan.current.runs(sites, groups: groups).enumerated() {
            var settings = base.merging(["FAULT_CALL": run.site.group, "FAULT_SITE": run.site.hash]) { $1 }
            if let errno = run.errno { settings["FAULT_ERRNO"] = errno }
            let attempt = try operation(index, settings)
            tally.runs += 1
            let failed = FaultSite.failed(calibration.fresh())
            if failed.contains(run.site.hash) { tally.failed.insert(run.site.hash) }
            let label = "\(run.site.group) \(run.site.symbol) \(run.site.hash) \(run.errno ?? "default errno") [\(run.site.frames)]"
            var findings: [String] = []
            if run.site.group == "malloc" && caller == nil && Self.diedOfTheRuntimesAllocation(run.site, attempt.result.status) {
                tally.allocationTraps += 1
                if attempt.succeeded && attempt.mustFail { findings.append("\(label): success on an error path") }
            } else {
                findings = judge(attempt, label: label)
            }
            tally.findings += findings + (try clientRunEnded(label: label))
            if tally.findings.count >= 8 { break }
        }
    }

    /// After a client's run: the broker must have lived through the client's fault (it is
    /// restarted when not), and the store must verify and unlock (`afterwards`).
    func clientRunEnded(label: String) throws -> [String] {
        var findings: [String] = []
        if home.broker.ended() != nil {
            findings.append("\(label): the broker ended (a client's fault)")
            try home.broker.restart()
        }
        return findings + afterwards(label: label)
    }

    /// Fails the Nth allocation of the client's calls (FAULT_NTH), for N from 1 until a run
    /// makes fewer (all of them in a full sweep; a spread of them for `make check`).
    func sweepAllocations(_ tally: FaultTally, caller: String, operation: (Int, [String: String]) throws -> Attempt) throws {
        let log = FaultLog(path: files.file("allocations.faults"))
        let plan = FaultPlan.current
        var nth = 1
        while nth <= 5000 {
            let attempt = try operation(nth, ["FAULT_LOG": log.path, "FAULT_CALLER": caller, "FAULT_CALL": "malloc", "FAULT_NTH": "\(nth)"])
            let fired = !FaultSite.failed(log.fresh()).isEmpty
            guard fired else { break }
            tally.runs += 1
            tally.failed.insert("allocation \(nth)")
            let label = "allocation \(nth) of the transaction"
            tally.findings += judge(attempt, label: label) + (try clientRunEnded(label: label))
            if tally.findings.count >= 8 { break }
            nth += plan.full ? 1 : 7
        }
        tally.seen = tally.failed
    }

    /// A full-Swift client (the CLI) that died of a failed allocation the way its runtime does:
    /// Swift's allocator traps when malloc fails (by design: it never returns nil), and the
    /// runtime's own metadata and conformance caches (libswiftCore calling malloc itself, most
    /// often before main) use the result unchecked and die of SIGSEGV. Neither is code of
    /// fingerseal's; both are counted apart and judged on what the store kept. The module, in
    /// its host, must survive both (reserve.c), and is judged as a crash.
    static func diedOfTheRuntimesAllocation(_ site: FaultSite, _ status: Int32) -> Bool {
        if [128 + SIGABRT, 128 + SIGILL, 128 + SIGTRAP].contains(status) { return true }
        return status == 128 + SIGSEGV && site.isTheSwiftRuntimes
    }

    /// No crash, no hang, no success on an error path, a sentence and no trap message.
    func judge(_ attempt: Attempt, label: String) -> [String] {
        var findings: [String] = []
        let result = attempt.result
        let said = "[\(result.status)] \(result.all.suffix(600))"
        if result.stderr.contains("[test harness: killed after") { findings.append("\(label): hung past its bound: \(said)") }
        else if result.status > 128 { findings.append("\(label): crashed: \(said)") }
        if attempt.succeeded && attempt.mustFail { findings.append("\(label): success on an error path: \(said)") }
        if let trap = FaultVerdict.trap(in: result.all) { findings.append("\(label): a trap message (\(trap)): \(said)") }
        if !attempt.succeeded && attempt.needsSentence && !FaultVerdict.hasSentence(result.all) {
            findings.append("\(label): no sentence: \(said)")
        }
        return findings + attempt.problems.map { "\(label): \($0)" }
    }

    /// Afterwards, with nothing failed: the audit trail verifies and an unlock succeeds.
    func afterwards(label: String) -> [String] {
        var findings: [String] = []
        let verified = try? home.run(["audit", "--verify"])
        if verified?.status != 0 { findings.append("\(label): audit --verify afterwards: \(verified?.all ?? "did not run")") }
        if idp != nil {
            // The chain may have ended (an answer lost after the IdP rotated): sign in again.
            let unlock: Child.Result?
            if home.sensor != nil {
                let child = try? home.start(["unlock", "--timeout", "5"])
                _ = try? VirtualSensor.send("SCAN finger-a", to: sensor)
                unlock = child?.finish(limit: FaultInjectionTests.runLimit)
            } else {
                unlock = try? home.run(["unlock", "--pin-fd", "3"], fd3: FaultInjectionTests.pin + "\n")
            }
            if unlock?.status != 0 {
                guard let idp, unlock?.all.contains("sign") == true,
                      (try? LocalIdP.passwordLogin(idp, home, pin: FaultInjectionTests.pin))?.status == 0
                else { return findings + ["\(label): an unlock afterwards: \(unlock?.all ?? "did not run")"] }
            }
        } else {
            let unlock = try? pinUnlock(FaultInjectionTests.pin)
            if unlock?.succeeded != true {
                findings.append("\(label): a PIN unlock afterwards: \(unlock?.result.all ?? "did not run")")
            }
        }
        return findings
    }
}
