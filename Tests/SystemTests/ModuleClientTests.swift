import CPAM
import FingersealWire
import Glibc
import PAMKit
import Testing
import SystemKit
@testable import TestSupport

/// pam_fingerseal.so as the broker's thin client: the real built module in a real PAM stack
/// (pam_start_confdir, a private service directory), against a scripted broker.
@Suite struct ModuleClientTests {
    static let service = "fingerseal-client"
    /// pam_debug's `cred_insufficient`: a code pam_fingerseal never returns. Stacked after the
    /// module with `[ignore=ignore default=die]`, it comes back exactly when the module said
    /// PAM_IGNORE (any other code ends the stack with that code).
    static let ignoredMarker = PAM_CRED_INSUFFICIENT

    /// What the conversation was shown, and what it answers.
    final class HostConversation {
        private(set) var all: [PAMClient.Message] = []
        /// What the conversation was shown, except pam_debug's echo of its own arguments.
        var shown: [PAMClient.Message] {
            all.filter { if case let .textInfo(text) = $0 { return !text.hasSuffix("=cred_insufficient") }; return true }
        }
        var answer: String?
        /// For each message: whether SIGINT was blocked in the thread while the conversation ran.
        var interruptBlocked: [Bool] = []

        init(answer: String?) { self.answer = answer }

        func record(_ message: PAMClient.Message) {
            all.append(message)
            interruptBlocked.append(ModuleClientTests.interruptBlocked())
        }
    }

    /// A PAM application with a private service directory holding `lines`.
    struct Host {
        let services: TempDirectory
        let conversation: HostConversation
        let client: PAMClient

        init(_ lines: [String], user: String = "alice", answer: String? = nil) throws {
            services = try TempDirectory()
            writeFile(services.file(ModuleClientTests.service), Array((lines.joined(separator: "\n") + "\n").utf8), mode: 0o644)
            let conversation = HostConversation(answer: answer)
            self.conversation = conversation
            client = try PAMClient(service: ModuleClientTests.service, user: user, configDirectory: services.path) { message in
                conversation.record(message)
                switch message {
                case .promptEchoOff, .promptEchoOn: return conversation.answer
                case .textInfo, .errorMessage: return nil
                }
            }
        }
    }

    static func auth(_ options: String) -> [String] { ["auth required \(Paths.module) \(options)"] }

    /// The module, then pam_debug: the stack returns `ignoredMarker` exactly when the module
    /// returned PAM_IGNORE.
    static func ignoreOrStop(_ facility: String, _ options: String) -> [String] {
        ["\(facility) [ignore=ignore default=die] \(Paths.module) \(options)",
         "\(facility) required pam_debug.so acct=cred_insufficient open_session=cred_insufficient close_session=cred_insufficient"]
    }

    static func interruptBlocked() -> Bool {
        var mask = sigset_t()
        pthread_sigmask(SIG_SETMASK, nil, &mask)
        return sigismember(&mask, SIGINT) == 1
    }

    /// Runs `body` with SIGINT blocked in this thread (so a SIGINT sent to it stays pending
    /// until the module's signalfd takes it, whenever that is), then checks the module took it
    /// and left the mask as it found it.
    static func withInterruptBlocked(_ body: (pthread_t) throws -> Void,
                                     sourceLocation: SourceLocation = #_sourceLocation) rethrows {
        var interrupt = sigset_t()
        sigemptyset(&interrupt)
        sigaddset(&interrupt, SIGINT)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &interrupt, &previous)
        defer {
            // Nothing may be left pending for this thread: unblocking would deliver it.
            var none = timespec()
            let leftOver = sigtimedwait(&interrupt, nil, &none)
            #expect(leftOver < 0, "a SIGINT was left pending", sourceLocation: sourceLocation)
            #expect(interruptBlocked(), "the module changed the thread's signal mask", sourceLocation: sourceLocation)
            pthread_sigmask(SIG_SETMASK, &previous, nil)
        }
        try body(pthread_self())
    }

    // MARK: The request

    @Test func theRequestCarriesThePAMItemsAndEveryModuleArgument() throws {
        let broker = try ScriptedBroker([.send(.result(Reply(.success)))])
        let arguments = ["socket=\(broker.path)", "debug", "timeout=7", "max_fails=3", "stepup=sudo", "no-such-option=1"]
        let host = try Host(ModuleClientTests.auth(arguments.joined(separator: " ")), user: "alice")
        #expect(host.client.setItem(.tty, "/dev/pts/7") == PAM_SUCCESS)
        #expect(host.client.setItem(.rhost, "203.0.113.7") == PAM_SUCCESS)
        #expect(host.client.setItem(.ruser, "bob") == PAM_SUCCESS)
        #expect(host.client.setItem(.xdisplay, ":1") == PAM_SUCCESS)
        #expect(host.client.authenticate() == PAM_SUCCESS)
        let connection = try broker.finishOne()
        #expect(connection.problems.isEmpty, "\(connection.problems)")
        let request = try #require(connection.request)
        #expect(request.command == .pamAuthenticate)
        #expect(request.origin == .pamHost(PAMItems(user: "alice", service: ModuleClientTests.service, tty: "/dev/pts/7",
                                                    rhost: "203.0.113.7", ruser: "bob", xdisplay: ":1"), moduleArguments: arguments))
        #expect(request.ticket == nil)
        #expect(host.conversation.shown.isEmpty)
    }

    @Test func itemsThatAreNotSetAreAbsent() throws {
        let broker = try ScriptedBroker([.send(.result(Reply(.noVault)))])
        let host = try Host(ModuleClientTests.auth("socket=\(broker.path)"), user: "carol")
        #expect(host.client.authenticate() == PAM_AUTHINFO_UNAVAIL)
        let request = try #require(try broker.finishOne().request)
        #expect(request.origin == .pamHost(PAMItems(user: "carol", service: ModuleClientTests.service),
                                           moduleArguments: ["socket=\(broker.path)"]))
    }

    // MARK: The conversation

    @Test func sentencesReachTheConversation() throws {
        let broker = try ScriptedBroker([
            .send(.info("Place your finger on the reader.")),
            .send(.error("The finger did not match. Try again.")),
            .send(.event(.fingerNeeded)), .send(.output("not for PAM")), .send(.browse("https://idp.example/")),
            .send(.data([1, 2, 3], end: true)),
            .send(.result(Reply(.noMatch))),
        ])
        let host = try Host(ModuleClientTests.auth("socket=\(broker.path)"))
        #expect(host.client.authenticate() == PAM_AUTH_ERR)
        #expect(host.conversation.shown == [.textInfo("Place your finger on the reader."),
                                            .errorMessage("The finger did not match. Try again.")])
        #expect(try broker.finishOne().problems.isEmpty)
    }

    @Test func theResultsOwnSentenceIsShown() throws {
        let broker = try ScriptedBroker([
            [.send(.result(Reply(.lockedOut, "Fingerprint unlock is locked. Use your password.")))],
            [.send(.result(Reply(.success, "Welcome back.")))],
        ])
        let host = try Host(ModuleClientTests.auth("socket=\(broker.path)"))
        #expect(host.client.authenticate() == PAM_AUTH_ERR)
        #expect(host.client.authenticate() == PAM_SUCCESS)
        #expect(host.conversation.shown == [.errorMessage("Fingerprint unlock is locked. Use your password."),
                                            .textInfo("Welcome back.")])
        #expect(broker.finish().allSatisfy { $0.problems.isEmpty })
    }

    @Test(arguments: [(Ask.Echo.secret, "4826"), (Ask.Echo.visible, "yes")])
    func aQuestionIsAnsweredWithWhatTheConversationReturned(kind: Ask.Echo, typed: String) throws {
        let prompt = kind == .secret ? "PIN: " : "Use this reader? "
        let broker = try ScriptedBroker([
            .send(.ask(Ask(kind, kind == .secret ? .pin : .confirm, prompt))), .awaitAnswer, .send(.result(Reply(.success))),
        ])
        let host = try Host(ModuleClientTests.auth("socket=\(broker.path)"), answer: typed)
        #expect(host.client.authenticate() == PAM_SUCCESS)
        #expect(host.conversation.shown == [kind == .secret ? .promptEchoOff(prompt) : .promptEchoOn(prompt)])
        let connection = try broker.finishOne()
        #expect(connection.problems.isEmpty, "\(connection.problems)")
        #expect(connection.answers.map(\.kind) == [kind == .secret ? .secret : .text])
        #expect(connection.answers.map(\.value) == [Array(typed.utf8)])
    }

    /// An empty answer (Enter alone) is a skip; no answer at all (a graphical host that ended
    /// the conversation: the person chose the password) is a cancel. Neither is a failure.
    @Test(arguments: [nil, ""] as [String?])
    func noAnswerIsASkipOrACancel(typed: String?) throws {
        let broker = try ScriptedBroker([
            .send(.ask(Ask(.secret, .pin, "PIN: "))), typed == nil ? .awaitCancel : .awaitAnswer, .send(.result(Reply(.cancelled))),
        ])
        let host = try Host(ModuleClientTests.auth("socket=\(broker.path)"), answer: typed)
        #expect(host.client.authenticate() == PAM_AUTHINFO_UNAVAIL)
        let connection = try broker.finishOne()
        #expect(connection.problems.isEmpty, "\(connection.problems)")
        #expect(connection.answers.map(\.kind) == (typed == nil ? [] : [.skip]))
    }

    // MARK: Return codes

    @Test(arguments: [
        (Outcome.success, PAM_SUCCESS), (.noMatch, PAM_AUTH_ERR), (.wrongPIN, PAM_AUTH_ERR), (.lockedOut, PAM_AUTH_ERR),
        (.signInRequired, PAM_AUTH_ERR), (.cancelled, PAM_AUTHINFO_UNAVAIL), (.noReader, PAM_AUTHINFO_UNAVAIL),
        (.timedOut, PAM_AUTHINFO_UNAVAIL), (.remoteSession, PAM_AUTHINFO_UNAVAIL), (.triesExhausted, PAM_MAXTRIES),
        (.unknownUser, PAM_USER_UNKNOWN), (.badConfiguration, PAM_SERVICE_ERR),
    ])
    func theBrokersOutcomeMapsThroughTheTable(outcome: Outcome, code: Int32) throws {
        let broker = try ScriptedBroker([.send(.result(Reply(outcome)))])
        let host = try Host(ModuleClientTests.auth("socket=\(broker.path)"))
        #expect(host.client.authenticate() == code)
        #expect(try broker.finishOne().problems.isEmpty)
    }

    /// Ways a broker (or whatever listens at the socket) can fail to give a result.
    enum Breakage: String, CaseIterable, Sendable {
        case garbage, wrongVersion, oversized, truncated, unknownKind, closedWithoutResult, silent

        var script: [ScriptedBroker.Step] {
            let success = BrokerMessage.result(Reply(.success))
            switch self {
            case .garbage: return [.raw(Array("PAM_SUCCESS".utf8))]
            case .wrongVersion: return [.raw(success.encoded(version: Wire.version + 1))]
            // A success, but one byte of message over the limit makes the packet too large.
            case .oversized: return [.raw(BrokerMessage.result(Reply(.success, String(repeating: "x", count: Wire.maxPacket))).encoded())]
            case .truncated: return [.raw(Array(success.encoded().dropLast(3)))]
            case .unknownKind: return [.raw(Wire.encode(kind: 99, WireFields()))]
            case .closedWithoutResult: return [.send(.info("Place your finger on the reader.")), .close]
            case .silent: return [.silent]
            }
        }
    }

    /// A result is the only way to success: anything else ends with PAM_AUTHINFO_UNAVAIL, soon
    /// (`backstop=1` for the silent broker).
    @Test(arguments: Breakage.allCases)
    func aBrokenBrokerIsNeverSuccess(breakage: Breakage) throws {
        let broker = try ScriptedBroker(breakage.script)
        let host = try Host(ModuleClientTests.auth("socket=\(broker.path) backstop=1"))
        let start = monotonicSeconds()
        #expect(host.client.authenticate() == PAM_AUTHINFO_UNAVAIL)
        #expect(monotonicSeconds() - start < 5)
        #expect(try broker.finishOne().request?.command == .pamAuthenticate)
    }

    // MARK: Ctrl-C

    @Test func ctrlCWhileWaitingSendsACancelAndTheBrokersAnswerEndsIt() throws {
        try ModuleClientTests.withInterruptBlocked { thread in
            let broker = try ScriptedBroker([
                .send(.info("Place your finger on the reader.")), .interrupt(thread), .awaitCancel,
                .send(.result(Reply(.cancelled))),
            ])
            let host = try Host(ModuleClientTests.auth("socket=\(broker.path)"))
            #expect(host.client.authenticate() == PAM_AUTHINFO_UNAVAIL)
            let connection = try broker.finishOne()
            #expect(connection.cancels == 1)
            #expect(connection.problems.isEmpty, "\(connection.problems)")
        }
    }

    @Test func aCancelTheBrokerDoesNotAnswerEndsWithinThreeSeconds() throws {
        try ModuleClientTests.withInterruptBlocked { thread in
            let broker = try ScriptedBroker([.interrupt(thread), .awaitCancel, .silent])
            // No backstop=: the 45 s bound between messages would apply, but not after a cancel.
            let host = try Host(ModuleClientTests.auth("socket=\(broker.path)"))
            let start = monotonicSeconds()
            #expect(host.client.authenticate() == PAM_AUTHINFO_UNAVAIL)
            let elapsed = monotonicSeconds() - start
            #expect(elapsed >= 2.5 && elapsed < 8, "\(elapsed) s")
            #expect(try broker.finishOne().cancels == 1)
        }
    }

    /// In the conversation, Ctrl-C is the host's (SIGINT is not blocked there), and the thread's
    /// mask is as the host left it afterwards.
    @Test func ctrlCStaysTheHostsInsideTheConversation() throws {
        var interrupt = sigset_t()
        sigemptyset(&interrupt)
        sigaddset(&interrupt, SIGINT)
        var previous = sigset_t()
        pthread_sigmask(SIG_UNBLOCK, &interrupt, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        let broker = try ScriptedBroker([
            .send(.info("Place your finger on the reader.")), .send(.ask(Ask(.secret, .pin, "PIN: "))), .awaitAnswer,
            .send(.result(Reply(.success))),
        ])
        let host = try Host(ModuleClientTests.auth("socket=\(broker.path)"), answer: "4826")
        #expect(host.client.authenticate() == PAM_SUCCESS)
        #expect(host.conversation.interruptBlocked == [false, false])
        #expect(!ModuleClientTests.interruptBlocked())
        #expect(try broker.finishOne().problems.isEmpty)
    }

    // MARK: No broker

    @Test func noBrokerIsUnavailableAtOnceAndSaysNothing() throws {
        let temp = try TempDirectory()
        // A socket nobody listens on any more (a broker that died).
        let stale = temp.file("stale")
        let fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #expect(withUnixAddress(stale) { bind(fd, $0, $1) } == 0)
        close(fd)
        for path in [temp.file("missing"), stale] {
            let host = try Host(ModuleClientTests.auth("socket=\(path)"))
            let start = monotonicSeconds()
            #expect(host.client.authenticate() == PAM_AUTHINFO_UNAVAIL)
            #expect(monotonicSeconds() - start < 0.1, "\(path)")
            #expect(host.conversation.shown.isEmpty)
        }
    }

    @Test func withoutABrokerAccountAndSessionsHaveNoOpinion() throws {
        let temp = try TempDirectory()
        let options = "socket=\(temp.file("missing"))"
        let host = try Host(ModuleClientTests.ignoreOrStop("account", options) + ModuleClientTests.ignoreOrStop("session", options))
        #expect(host.client.accountManagement() == ModuleClientTests.ignoredMarker)
        #expect(host.client.openSession() == ModuleClientTests.ignoredMarker)
        #expect(host.client.closeSession() == ModuleClientTests.ignoredMarker)
        #expect(host.conversation.shown.isEmpty)
    }

    // MARK: Account and sessions

    @Test func accountRelaysTheBrokersSentencesAndDecision() throws {
        let broker = try ScriptedBroker([
            [.send(.error("Sign in again: your identity provider no longer accepts this device.")),
             .send(.result(Reply(.signInRequired)))],
            [.send(.result(Reply(.notApplicable)))],
        ])
        let host = try Host(ModuleClientTests.ignoreOrStop("account", "socket=\(broker.path)"))
        #expect(host.client.accountManagement() == PAM_AUTH_ERR)
        #expect(host.client.accountManagement() == ModuleClientTests.ignoredMarker)
        #expect(host.conversation.shown == [.errorMessage("Sign in again: your identity provider no longer accepts this device.")])
        let connections = broker.finish()
        #expect(connections.map { $0.request?.command } == [.pamAccount, .pamAccount])
        #expect(connections.allSatisfy { $0.request?.origin.pamItems?.user == "alice" && $0.problems.isEmpty })
    }

    @Test func theTicketFromAuthenticationReachesOpenSessionOnTheSameHandle() throws {
        let broker = try ScriptedBroker([
            [.send(.result(Reply(.success, ticket: "t-4711")))],
            [.send(.result(Reply(.success)))],
            [.send(.result(Reply(.success)))],
        ])
        let host = try Host(["auth required \(Paths.module) socket=\(broker.path)",
                             "session required \(Paths.module) socket=\(broker.path)"])
        #expect(host.client.setItem(.tty, "tty3") == PAM_SUCCESS)
        #expect(host.client.authenticate() == PAM_SUCCESS)
        #expect(host.client.openSession() == PAM_SUCCESS)
        #expect(host.client.closeSession() == PAM_SUCCESS)
        let connections = broker.finish()
        #expect(connections.map { $0.request?.command } == [.pamAuthenticate, .pamOpenSession, .pamCloseSession])
        #expect(connections.map { $0.request?.ticket } == [nil, "t-4711", nil])
        #expect(connections.map { $0.request?.origin.pamItems } == Array(repeating: PAMItems(user: "alice", service: ModuleClientTests.service,
                                                                                  tty: "tty3"), count: 3))
    }

    @Test func aLaterFailedAuthenticationDropsTheTicket() throws {
        let broker = try ScriptedBroker([
            [.send(.result(Reply(.success, ticket: "t-4711")))],
            [.send(.result(Reply(.noMatch)))],
            [.send(.result(Reply(.success)))],
        ])
        let host = try Host(["auth required \(Paths.module) socket=\(broker.path)",
                             "session required \(Paths.module) socket=\(broker.path)"])
        #expect(host.client.authenticate() == PAM_SUCCESS)
        #expect(host.client.authenticate() == PAM_AUTH_ERR)
        #expect(host.client.openSession() == PAM_SUCCESS)
        #expect(broker.finish().map { $0.request?.ticket } == [nil, nil, nil])
    }

    // MARK: The log

    /// One line at LOG_AUTHPRIV for a missing broker (notice) and for a broken exchange
    /// (warning), through pam_syslog; the person is shown nothing.
    @Test(.enabled(if: SyslogCapture.availableAnywhere)) func noBrokerAndABrokenOneAreLoggedOnce() throws {
        let temp = try TempDirectory()
        let broker = try ScriptedBroker([.send(.info("Place your finger on the reader.")), .close])
        let missing = temp.file("missing")
        writeFile(temp.file("no-broker"), Array("auth required \(Paths.module) socket=\(missing)\n".utf8), mode: 0o644)
        writeFile(temp.file("broken"), Array("auth required \(Paths.module) socket=\(broker.path)\n".utf8), mode: 0o644)
        let capture = try SyslogCapture(directory: temp.path)
        for service in ["no-broker", "broken"] {
            let (path, arguments) = capture.wrap([Paths.buildDirectory + "/pam-cycles", temp.path, service, "alice", "1"])
            let run = try Child.run(path, arguments)
            #expect(run.stdout.contains("codes \(PAM_AUTHINFO_UNAVAIL):1"), "\(run.all)")
        }
        #expect(try broker.finishOne().problems.isEmpty)
        let lines = capture.messages()
        // <facility*8+severity>: LOG_AUTHPRIV (10) with LOG_NOTICE (5) is 85, with LOG_WARNING (4) 84.
        #expect(lines.filter { $0.contains("fingerseal") }.count == 2, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("<85>") && $0.contains("no fingerseal broker: connect \(missing) failed: No such file or directory") },
                "\(lines)")
        #expect(lines.contains { $0.hasPrefix("<84>") && $0.contains("\(broker.path) closed the connection without a result; unavailable") },
                "\(lines)")
    }

    // MARK: The host

    /// Many transactions in one process (pam-cycles), with and without a broker: no thread,
    /// descriptor, signal disposition or mapping of the module is left behind.
    @Test(arguments: [true, false])
    func cyclesLeaveTheHostAsFound(withBroker: Bool) throws {
        let cycles = 20
        let service = try PAMCyclesService(name: ModuleClientTests.service, cycles: cycles, withBroker: withBroker)
        let run = try Child.run(PAMCyclesService.helper, service.arguments)
        #expect(run.status == 0, "\(run.all)")
        let lines = run.stdout.split(separator: "\n").map(String.init)
        for name in ["threads", "fds"] {
            let fields = lines.first { $0.hasPrefix(name + " ") }?.split(separator: " ") ?? []
            #expect(fields.count == 3 && fields[1] == fields[2], "\(run.stdout)")
        }
        #expect(lines.contains("signals same"), "\(run.stdout)")
        // No -z nodelete: nothing of the module outlives pam_end (ModuleTests.unloadsLikeACModule).
        #expect(lines.contains("module unloaded"), "\(run.stdout)")
        #expect(lines.contains("codes \(withBroker ? PAM_AUTH_ERR : PAM_AUTHINFO_UNAVAIL):\(cycles)"), "\(run.stdout)")
        if let broker = service.broker {
            let connections = broker.finish()
            #expect(connections.count == cycles && connections.allSatisfy { $0.problems.isEmpty })
        }
    }
}
