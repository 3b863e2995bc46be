import FingersealCore
import Glibc
import Testing
import Foundation
@testable import TestSupport

/// fingerseal-agent for applications (issue 21): on a private session bus, in front of a
/// broker on virtual_device, driven by the example client as an application would drive it
/// (prompt=app: the application draws the prompt from the Status signals and answers with
/// Answer; the agent's own dialog has its tests under Xvfb).
@Suite(.serialized, .enabled(if: AgentRig.missing == nil)) struct AgentTests {
    @Test func capabilitiesSayWhatCanAnswerNow() throws {
        let agent = try AgentRig()
        let run = ClientRun(try agent.client(["capabilities"]).finish())
        #expect(run.result.status == 0, "\(run.result.all)")
        let line = run.result.stdout
        #expect(line.contains(#""fingers": ["right-index-finger"]"#), "\(line)")
        #expect(line.contains(#""methods": ["finger", "pin", "password"]"#), "\(line)")
        #expect(line.contains(#""reader": "present""#) && line.contains(#""vault": true"#), "\(line)")
        // No display in this environment: the agent says it cannot show its dialog.
        #expect(line.contains(#""display": false"#), "\(line)")
        let introspected = try agent.gdbus(["introspect", "--session", "--dest", "org.fingerseal.Agent1", "--object-path",
                                            "/org/fingerseal/Agent1"])
        #expect(introspected.stdout.contains("StepUp(in  s context,") && introspected.stdout.contains("readonly u Version = 1"),
                "\(introspected.all)")
    }

    @Test func aStepUpIsHeldForThisApplicationAndItsContextOnly() throws {
        let agent = try AgentRig()
        // Two step-ups on one connection: a finger for the first, the second held.
        let twice = try agent.run(["step-up", "contacts", "open contact assignments", "--prompt", "app", "--repeat", "2",
                                   "--app-name", "Meander"], scan: "SCAN finger-a")
        #expect(twice.result.status == 0, "\(twice.result.all)")
        #expect(twice.responses.map(\.method) == ["finger", "held"], "\(twice.result.stdout)")
        // An application's context is an identifier: no sentence names it (issue 33 §2).
        #expect(twice.responses.first?.sentence?.hasPrefix("Confirmed with your finger, for ") == true, "\(twice.result.stdout)")
        #expect(!twice.result.stdout.contains("for contacts"), "\(twice.result.stdout)")
        #expect(twice.states.first == "waiting-for-finger")
        // Another application (another connection) asking for the same context is asked again.
        let other = try agent.run(["step-up", "contacts", "--prompt", "app", "--cancel-at", "waiting-for-finger"])
        #expect(other.result.status == 1 && other.responses.first?.outcome == "cancelled", "\(other.result.all)")
        #expect(other.responses.first?.sentence == "Cancelled. Nothing was counted.")
        #expect(try agent.rig.lockout().fingerFailures == 0, "a cancel counts nothing")
        // The audit trail names the application, as the agent's claim.
        let audit = try agent.rig.cli(["audit"])
        #expect(audit.stdout.contains("The session agent said Meander asked (/usr/bin/python3")
                && audit.stdout.contains("the system cannot vouch for this"), "\(audit.stdout)")
    }

    /// What the agent says of the application (issue 31 §6): what the kernel vouches for (its
    /// executable) beside the name it gives itself, that alone when it gives none or one that
    /// is no plain text (a bidi override would turn what follows it around), never the name
    /// alone. The audit trail shows what the agent sent the broker.
    @Test func theExecutableStandsBesideTheNameAnApplicationGivesItself() throws {
        let agent = try AgentRig()
        let executable = AgentRig.pythonExecutable
        for (context, name) in [("named", "Meander"), ("unnamed", nil), ("overridden", "Files\u{202e}")] {
            let run = try agent.run(["step-up", context, "--prompt", "app"] + (name.map { ["--app-name", $0] } ?? []),
                                    scan: "SCAN finger-a")
            #expect(run.responses.first?.method == "finger", "\(context): \(run.result.all)")
        }
        let audit = try agent.rig.cli(["audit"]).stdout
        let said = audit.split(separator: "\n").filter { $0.contains("The session agent said") }
        #expect(said.count == 3, "\(audit)")
        #expect(said.filter { $0.contains("The session agent said Meander asked (\(executable), bus name :") }.count == 1, "\(audit)")
        #expect(said.filter { $0.contains("The session agent said \(executable) asked (bus name :") }.count == 2, "\(audit)")
    }

    /// The agent holds PINs and passwords on their way to the broker, tokens and plaintext on
    /// their way to an application (issue 31 §6): it makes itself non-dumpable at start, so
    /// other processes of its user can neither ptrace it nor read its memory. Its /proc files
    /// are root's (a plain process of the user: the user's), and its memory does not open
    /// for another process of the user.
    @Test func otherProcessesOfTheUserCannotReadTheAgent() throws {
        try #require(TestUsers.ensure(TestUsers.alice))
        let agent = try AgentRig(user: TestUsers.alice)
        let pid = try #require(agent.agent?.pid)
        let entry = try #require(getpwnam(TestUsers.alice)?.pointee)
        let asAlice = ["--reuid=\(entry.pw_uid)", "--regid=\(entry.pw_gid)", "--init-groups", "--"]
        // Ready once its shell speaks: past setpriv's change of user and the exec.
        let plain = try Child("/usr/bin/setpriv", asAlice + ["/bin/sh", "-c", "echo ready; exec /bin/sleep 30"])
        defer {
            plain.signal(SIGKILL)
            _ = plain.finish(limit: 5)
        }
        #expect(plain.waitForLine(containing: "ready"))
        func owner(_ pid: pid_t) -> uid_t? {
            var info = stat()
            return stat("/proc/\(pid)/environ", &info) == 0 ? info.st_uid : nil
        }
        #expect(owner(plain.pid) == entry.pw_uid, "a plain process of the user is the user's")
        #expect(owner(pid) == 0, "the agent's /proc files are the user's: it is dumpable")
        let peek = try Child.run("/usr/bin/setpriv", asAlice + ["/bin/sh", "-c", "exec 3< /proc/\(pid)/mem"])
        #expect(peek.status != 0, "another process of the user opened the agent's memory: \(peek.all)")
    }

    @Test func maxAgeAndEndContextDecideWhenToAskAgain() throws {
        let agent = try AgentRig()
        let client = try agent.client(["step-up", "payroll", "--prompt", "app", "--hold"], stdin: "")
        // The holding client keeps its connection (and so its confirmation) while stdin is open:
        // here stdin is empty, so it ends as soon as the step-up does; the agent then ends the
        // confirmation. Its successor must be asked again.
        #expect(client.waitForLine(containing: "waiting-for-finger"))
        try VirtualSensor.send("SCAN finger-a", to: agent.rig.sensor)
        let first = ClientRun(client.finish())
        #expect(first.responses.first?.method == "finger", "\(first.result.all)")

        // One connection: a step-up, a second within max_age (held), EndContext, then asked again.
        let script = try agent.client(["step-up", "payroll", "--prompt", "app", "--repeat", "2", "--max-age", "60"])
        #expect(script.waitForLine(containing: "waiting-for-finger"))
        try VirtualSensor.send("SCAN finger-a", to: agent.rig.sensor)
        let reused = ClientRun(script.finish())
        #expect(reused.responses.map(\.method) == ["finger", "held"], "\(reused.result.stdout)")
    }

    @Test func aConfirmationOlderThanMaxAgeIsNotReused() throws {
        let agent = try AgentRig()
        let child = try agent.client(["step-up", "payroll", "--prompt", "app", "--repeat", "2", "--max-age", "1",
                                      "--cancel-at", "waiting-for-finger", "--pause", "1.2"])
        #expect(child.waitForLine(containing: "waiting-for-finger"))
        try VirtualSensor.send("SCAN finger-a", to: agent.rig.sensor)
        let run = ClientRun(child.finish())
        // The second, after more than max_age, asked again (and was cancelled by the client).
        #expect(run.responses.map(\.method) == ["finger", nil], "\(run.result.stdout)")
        #expect(run.responses.last?.outcome == "cancelled")
    }

    @Test func endContextAndTheApplicationLeavingEndItsConfirmation() throws {
        let agent = try AgentRig(idleExit: "2")
        let run = try agent.run(["step-up", "payroll", "--prompt", "app", "--repeat", "2", "--end-between",
                                 "--cancel-at", "waiting-for-finger"], scan: "SCAN finger-a")
        // First made with the finger; after EndContext the same connection is asked again.
        #expect(run.responses.map(\.method) == ["finger", nil], "\(run.result.stdout)")
        #expect(run.events.contains { $0.event == "ended" })
        // The client has left: nothing is held any more, so the agent ends when idle.
        #expect(agent.agentEnds(within: 15) == 0, "the agent kept something after the application left: \(agent.agentLog)")
    }

    @Test func theAgentEndsWhenTheSessionBusGoesAway() throws {
        let agent = try AgentRig()
        // A request open and waiting for a finger when the session's bus dies.
        let client = try agent.client(["step-up", "payroll", "--prompt", "app"])
        #expect(client.waitForLine(containing: "waiting-for-finger"), "the request never waited for a finger")
        try #require(agent.bus).stop()
        #expect(agent.agentEnds(within: 10) == 0, "the agent outlived its session bus: \(agent.agentLog)")
        // The application hears of it too (its bus is gone) rather than waiting for ever.
        #expect(client.finish(limit: 10).status != 0)
    }

    @Test func aPINTheApplicationTakesOpensTheVault() throws {
        let agent = try AgentRig(enroll: false)
        // No finger enrolled: the PIN is asked at once; the client reads it from stdin and gives
        // it with Answer, on a descriptor.
        let run = try agent.run(["step-up", "records", "--prompt", "app", "--methods", "pin"], stdin: AgentRig.pin + "\n")
        #expect(run.result.status == 0, "\(run.result.all)")
        #expect(run.states.contains("needs-pin"), "\(run.result.stdout)")
        #expect(run.responses.first?.method == "pin")
        let wrong = try agent.run(["step-up", "records2", "--prompt", "app", "--methods", "pin"], stdin: "0000\n")
        #expect(wrong.result.status != 0 && wrong.responses.first?.outcome == "wrongPIN", "\(wrong.result.stdout)")
        #expect(try agent.rig.lockout().pinFailures == 1)
    }

    @Test func revealGivesThePlaintextOnADescriptorAndNothingOnCancel() throws {
        let agent = try AgentRig()
        let plain = agent.rig.files.file("plain"), sealed = agent.rig.files.file("assignment.sealed")
        writeFile(plain, Array("health details\n".utf8))
        let seal = try agent.rig.cli(["seal", "--context", "contacts", "--out", sealed, plain])
        #expect(seal.status == 0, "\(seal.all)")
        let cancelled = try agent.run(["reveal", "contacts", sealed, "--prompt", "app", "--cancel-at", "waiting-for-finger"])
        #expect(cancelled.result.status == 1 && !cancelled.result.stdout.contains("health"), "\(cancelled.result.all)")
        let revealed = try agent.run(["reveal", "contacts", sealed, "--prompt", "app"], scan: "SCAN finger-a")
        #expect(revealed.result.status == 0 && revealed.result.stdout.hasSuffix("health details\n"), "\(revealed.result.all)")
        let noMatch = try agent.run(["reveal", "contacts", sealed, "--prompt", "app", "--methods", "finger"], scan: "SCAN finger-b")
        #expect(noMatch.result.status != 0 && !noMatch.result.stdout.contains("health"), "\(noMatch.result.all)")
        #expect(noMatch.states.contains("no-match"), "\(noMatch.result.stdout)")
    }

    /// The Status signals an application draws its own prompt from (issue 33 §4): each with
    /// its own sentence, sent once per change, never one the broker had not said yet (no
    /// "no-match" with the sentence before it, no sentence of the agent's before the reader's).
    @Test func statusSignalsCarryTheirOwnSentenceOncePerChange() throws {
        let agent = try AgentRig()
        let statuses = AgentTests.statuses
        let armed = "waiting-for-finger|Swipe your finger across the reader, or type your PIN."
        let match = try agent.run(["step-up", "s1", "--prompt", "app"], scan: "SCAN finger-a")
        #expect(statuses(match) == ["waiting-for-finger|Confirm it is you.", armed], "\(match.result.stdout)")
        // A wrong finger, then the right one.
        let child = try agent.client(["step-up", "s2", "--prompt", "app"])
        #expect(child.waitForLine(containing: "type your PIN"))
        try VirtualSensor.send("SCAN finger-b", to: agent.rig.sensor)
        #expect(child.waitForLine(containing: "no-match"))
        try VirtualSensor.send("SCAN finger-a", to: agent.rig.sensor)
        let retried = ClientRun(child.finish(limit: 60))
        #expect(statuses(retried) == ["waiting-for-finger|Confirm it is you.", armed, "no-match|The fingerprint did not match. Try again."],
                "\(retried.result.stdout)")
        #expect(retried.responses.first?.method == "finger", "\(retried.result.stdout)")
        // The PIN asked alone: the agent's sentence, never the broker's field label ("PIN: ").
        let pin = try agent.run(["step-up", "s3", "--prompt", "app", "--methods", "pin"], stdin: AgentRig.pin + "\n")
        #expect(statuses(pin).contains("needs-pin|Enter your PIN.") && !pin.result.stdout.contains("PIN: "), "\(pin.result.stdout)")
        // A cancel while the reader waits: nothing after it but the Response.
        let cancelled = try agent.run(["step-up", "s4", "--prompt", "app", "--cancel-at", "waiting-for-finger"])
        #expect(statuses(cancelled).allSatisfy { $0.hasPrefix("waiting-for-finger|") } && cancelled.responses.first?.outcome == "cancelled",
                "\(cancelled.result.stdout)")
    }

    /// Each Status as "state|sentence", in order.
    static func statuses(_ run: ClientRun) -> [String] {
        run.events.filter { $0.event == "status" }.map { "\($0.state ?? "")|\($0.sentence ?? "")" }
    }

    /// A settings page (issue 33 §7): GetStatus gives the switch, since when, when last
    /// verified and the fingers, each also as a sentence in the person's language and zone;
    /// SetEnabled turns fingerprint unlock off with a finger and on again with the PIN.
    @Test func aSettingsPageReadsTheStatusAndFlipsTheSwitch() throws {
        let agent = try AgentRig()
        func status() throws -> [String: Any] {
            let run = try agent.run(["status"])
            let line = run.result.stdout.split(separator: "\n").last.map(String.init) ?? ""
            return (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:]
        }
        let before = try status()
        let sentences = before["sentences"] as? [String: Any] ?? [:]
        #expect(before["enabled"] as? Bool == true && before["fingers"] as? [String] == ["right index finger"], "\(before)")
        #expect(sentences["enabled"] as? String == "Fingerprint unlock is on." && (sentences["enabled_since"] as? String)?.hasPrefix("Enabled since ") == true
                && sentences["last_verified"] as? String == "Last verified: never.", "\(before)")
        #expect(try agent.run(["step-up", "settings", "--prompt", "app"], scan: "SCAN finger-a").result.status == 0)
        let verified = try status()
        #expect(verified["last_verified"] != nil
                && ((verified["sentences"] as? [String: Any])?["last_verified"] as? String)?.hasPrefix("Last verified: today at ") == true,
                "\(verified)")
        let off = try agent.run(["set-enabled", "off", "--prompt", "app"], scan: "SCAN finger-a")
        #expect(off.result.status == 0 && off.responses.first?.sentence == "Fingerprint unlock is off. Your vault and enrolled fingers are kept.",
                "\(off.result.stdout)")
        let after = try status()
        #expect(after["enabled"] as? Bool == false
                && (after["sentences"] as? [String: Any])?["enabled"] as? String == "Fingerprint unlock is off, by your choice.", "\(after)")
        let on = try agent.run(["set-enabled", "on", "--prompt", "app"], stdin: AgentRig.pin + "\n")
        #expect(on.result.status == 0 && on.states.contains("needs-pin"), "\(on.result.stdout)")
        #expect(try status()["enabled"] as? Bool == true)
    }

    /// An application's confirmation lasts as long as its screen, up to the administrator's
    /// ceiling (issue 33 §6), not the command line's 5 minutes (a user's: root's ceiling is a
    /// day), and the response says so.
    @Test func anApplicationsConfirmationLastsUpToTheCeiling() throws {
        try #require(TestUsers.ensure(TestUsers.alice))
        let agent = try AgentRig(user: TestUsers.alice, brokerConfig: "stepup_max_ttl=600\n")
        let app = try agent.run(["step-up", "contacts", "--prompt", "app"], scan: "SCAN finger-a")
        #expect(app.responses.first?.sentence?.hasSuffix("for 10 minutes.") == true, "\(app.result.stdout)")
    }

    /// Take after a cancel, after a failure and after the secret was taken answers the
    /// documented error with its sentence: the request's object stays a while after it ended
    /// (issue 33 §5; it used to vanish, so the caller got "Object does not exist").
    @Test func takeWithNothingToTakeAnswersTheDocumentedError() throws {
        let agent = try AgentRig()
        let plain = agent.rig.files.file("plain"), sealed = agent.rig.files.file("notes.sealed")
        writeFile(plain, Array("notes\n".utf8))
        #expect(try agent.rig.cli(["seal", "--context", "notes", "--out", sealed, plain]).status == 0)
        let runs = [try agent.run(["reveal", "notes", sealed, "--prompt", "app", "--cancel-at", "waiting-for-finger", "--take-again"]),
                    try agent.run(["reveal", "notes", sealed, "--prompt", "app", "--methods", "finger", "--take-again"], scan: "SCAN finger-b"),
                    try agent.run(["reveal", "notes", sealed, "--prompt", "app", "--take-again"], scan: "SCAN finger-a")]
        for run in runs {
            let take = run.events.first { $0.event == "take" }
            #expect(take?.error == "org.fingerseal.Agent1.Error.Failed" && take?.sentence?.contains("nothing to take") == true,
                    "\(run.result.stdout)")
        }
        #expect(runs[2].result.stdout.contains("notes\n"), "the first Take still gives the plaintext: \(runs[2].result.stdout)")
    }

    @Test func theAccountPasswordInsteadOfTheFinger() throws {
        try #require(TestUsers.ensure(TestUsers.alice))
        let agent = try AgentRig(user: TestUsers.alice)
        let run = try agent.run(["step-up", "payroll", "--prompt", "app", "--use-password"], stdin: "correct horse\n")
        #expect(run.result.status == 0, "\(run.result.all)")
        #expect(run.states.contains("needs-password") && run.responses.first?.method == "password", "\(run.result.stdout)")
        // "Use password instead": the password's own sentence, then the check; never the PIN's.
        #expect(AgentTests.statuses(run).suffix(2) == ["needs-password|Enter your account password instead of a finger or the PIN.",
                                                       "checking|Checking."] && !run.states.contains("needs-pin"), "\(run.result.stdout)")
        let refused = try agent.run(["step-up", "payroll2", "--prompt", "app", "--use-password"], stdin: "not-the-password\n")
        #expect(refused.result.status != 0 && refused.responses.first?.outcome == "noMatch", "\(refused.result.stdout)")
        #expect(try agent.rig.lockout().fingerFailures == 0)
    }

    /// No reader (issue 33 §3): an application that allows the password asks it first, saying
    /// why, and the PIN is one call away (UsePIN); neither turn is a try.
    @Test func withoutAReaderThePasswordComesFirstAndThePINIsOneStepAway() throws {
        try #require(TestUsers.ensure(TestUsers.alice))
        let agent = try AgentRig(user: TestUsers.alice)
        try agent.rig.unplugReader()
        let password = try agent.run(["step-up", "payroll", "--prompt", "app"], stdin: "correct horse\n")
        #expect(AgentTests.statuses(password) == ["waiting-for-finger|Confirm it is you.",
                                                  "needs-password|No fingerprint reader is connected. Enter your account password.",
                                                  "checking|Checking."], "\(password.result.stdout)")
        #expect(password.result.status == 0 && password.responses.first?.method == "password", "\(password.result.all)")
        let pin = try agent.run(["step-up", "payroll2", "--prompt", "app", "--use-pin"], stdin: AgentRig.pin + "\n")
        #expect(AgentTests.statuses(pin).suffix(3) == ["needs-password|No fingerprint reader is connected. Enter your account password.",
                                                       "needs-pin|Enter your PIN.", "checking|Checking."], "\(pin.result.stdout)")
        #expect(pin.result.status == 0 && pin.responses.first?.method == "pin", "\(pin.result.all)")
        let counters = try agent.rig.lockout()
        #expect(counters.pinFailures == 0 && (counters.passwordFailures ?? 0) == 0, "\(counters)")
        // Without the password allowed, the PIN alone, as before.
        let pinOnly = try agent.run(["step-up", "payroll3", "--prompt", "app", "--methods", "finger,pin"], stdin: AgentRig.pin + "\n")
        #expect(!AgentTests.statuses(pinOnly).contains { $0.hasPrefix("needs-password") } && pinOnly.responses.first?.method == "pin",
                "\(pinOnly.result.stdout)")
    }

    @Test func aDialogWithoutADisplayIsRefusedWithASentence() throws {
        let agent = try AgentRig()
        let asked = try agent.gdbus(["call", "--session", "--dest", "org.fingerseal.Agent1", "--object-path", "/org/fingerseal/Agent1",
                                     "--method", "org.fingerseal.Agent1.StepUp", "contacts", "", "{}"])
        #expect(asked.status != 0 && asked.stderr.contains("org.fingerseal.Agent1.Error.NoDisplay")
                && asked.stderr.contains("There is no display to show the dialog on"), "\(asked.all)")
        // The broker's rule, answered by the agent before anyone is asked: a leading dot too.
        for context in ["no spaces", ".hidden"] {
            let badContext = try agent.gdbus(["call", "--session", "--dest", "org.fingerseal.Agent1", "--object-path",
                                              "/org/fingerseal/Agent1", "--method", "org.fingerseal.Agent1.StepUp", context, "",
                                              "{'prompt': <'app'>}"])
            #expect(badContext.status != 0 && badContext.stderr.contains("InvalidArgs"), "\(context): \(badContext.all)")
        }
    }

    /// Unlock: a fresh access token from the identity provider, taken on a descriptor (the
    /// client prints only its length), a new one each time; also through gdbus's
    /// UnlockAndWait, whose reply carries the descriptor.
    @Test(.enabled(if: LocalIdP.available)) func unlockGivesAFreshTokenOnADescriptor() throws {
        let idp = try LocalIdP()
        let agent = try AgentRig()
        try agent.signIn(at: idp)
        let client = try agent.client(["unlock", "--prompt", "app"])
        #expect(client.waitForLine(containing: "waiting-for-finger"))
        let scanned = VirtualSensor.now()
        try VirtualSensor.send("SCAN finger-a", to: agent.rig.sensor)
        #expect(client.waitForLine(containing: "\"token\""))
        print("agent: match to the token on the descriptor \(Int((VirtualSensor.now() - scanned) * 1000)) ms (the client's own read included)")
        let run = ClientRun(client.finish())
        #expect(run.responses.first?.method == "finger" && run.responses.first?.code == 0, "\(run.result.all)")
        #expect((run.events.first { $0.event == "token" }?.length ?? 0) >= 10, "\(run.result.stdout)")
        // gdbus, which cannot read the descriptor, still drives it to the end.
        let waiting = try agent.gdbusWaiting(["org.fingerseal.Agent1.UnlockAndWait", "{'prompt': <'app'>}"])
        try VirtualSensor.send("SCAN finger-a", to: agent.rig.sensor)
        let reply = waiting.finish(limit: 60)
        #expect(reply.status == 0 && reply.stdout.hasPrefix("(uint32 0, {") && reply.stdout.contains("'method': <'finger'>"),
                "\(reply.all)")
        #expect(try idp.familyAlive("alice"), "the rotated chain is alive")
    }

    /// A bound token in an application (issue 35): Unlock says DPoP, and the application's
    /// request to a DPoP-protected resource (the local IdP's userinfo) carries a proof from
    /// MakeProof, made with no finger; without a token held, MakeProof says why and asks nothing.
    @Test(.enabled(if: LocalIdP.available)) func anApplicationUsesItsBoundTokenWithProofs() throws {
        let idp = try LocalIdP()
        let agent = try AgentRig()
        try agent.signIn(at: idp)
        let url = idp.issuer + "/userinfo/"
        let capabilities = try agent.client(["capabilities"]).finish(limit: 30)
        #expect(capabilities.stdout.contains("\"bound\": true"), "\(capabilities.all)")
        let none = try agent.gdbus(["call", "--session", "--dest", "org.fingerseal.Agent1", "--object-path", "/org/fingerseal/Agent1",
                                    "--method", "org.fingerseal.Agent1.MakeProof", "GET", url, "{}"])
        #expect(none.status != 0 && none.stderr.contains("org.fingerseal.Agent1.Error.Failed")
                && none.stderr.contains("holds no access token that is still valid"), "\(none.all)")
        let run = try agent.run(["unlock", "--prompt", "app", "--fetch", url], scan: "SCAN finger-a")
        #expect(run.events.first { $0.event == "token" }?.tokenType == "DPoP", "\(run.result.all)")
        #expect(run.events.first { $0.event == "fetched" }?.status == 200, "\(run.result.all)")
        #expect(try idp.dpopReport().refused.isEmpty)
        let bad = try agent.gdbus(["call", "--session", "--dest", "org.fingerseal.Agent1", "--object-path", "/org/fingerseal/Agent1",
                                   "--method", "org.fingerseal.Agent1.MakeProof", "GET", "file:///etc/passwd", "{}"])
        #expect(bad.status != 0 && bad.stderr.contains("org.fingerseal.Agent1.Error.InvalidArgs"), "\(bad.all)")
        // One only the broker finds wrong (no host) is the caller's too.
        let hostless = try agent.gdbus(["call", "--session", "--dest", "org.fingerseal.Agent1", "--object-path", "/org/fingerseal/Agent1",
                                        "--method", "org.fingerseal.Agent1.MakeProof", "GET", "https://", "{}"])
        #expect(hostless.status != 0 && hostless.stderr.contains("org.fingerseal.Agent1.Error.InvalidArgs"), "\(hostless.all)")
    }

    /// gdbus, which cannot follow a request object, drives a step-up and a reveal with the
    /// *AndWait methods.
    @Test func commandLinesDriveStepUpAndReveal() throws {
        let agent = try AgentRig()
        let stepUp = try agent.gdbusWaiting(["org.fingerseal.Agent1.StepUpAndWait", "contacts", "open contact assignments",
                                             "{'prompt': <'app'>, 'max_age': <uint32 300>}"])
        try VirtualSensor.send("SCAN finger-a", to: agent.rig.sensor)
        let stepped = stepUp.finish(limit: 60)
        #expect(stepped.status == 0 && stepped.stdout.hasPrefix("(uint32 0, {") && stepped.stdout.contains("'method': <'finger'>"),
                "\(stepped.all)")
        let plain = agent.rig.files.file("plain"), sealed = agent.rig.files.file("assignment.sealed")
        writeFile(plain, Array("health details\n".utf8))
        #expect(try agent.rig.cli(["seal", "--context", "contacts", "--out", sealed, plain]).status == 0)
        // gdbus cannot pass a descriptor: the sealed file's bytes go in the call.
        let bytes = (readFile(sealed) ?? []).map { "0x" + String($0, radix: 16) }.joined(separator: ", ")
        let reveal = try agent.gdbusWaiting(["org.fingerseal.Agent1.RevealAndWait", "[\(bytes)]", "contacts", "{'prompt': <'app'>}"])
        try VirtualSensor.send("SCAN finger-a", to: agent.rig.sensor)
        let revealed = reveal.finish(limit: 60)
        #expect(revealed.status == 0 && revealed.stdout.hasPrefix("(uint32 0, {") && revealed.stdout.contains("'method': <'finger'>"),
                "\(revealed.all)")
        #expect(!revealed.all.contains("health"), "the plaintext went on a descriptor, which gdbus does not read")
    }
}
