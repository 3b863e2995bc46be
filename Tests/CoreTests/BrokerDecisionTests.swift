@testable import Broker
import FingersealCore
import FingersealWire
import FoundationEssentials
import Glibc
import SystemKit
import Testing
@testable import TestSupport

/// The broker's decisions in this process (issue 34 §6), the fuzz harness's way: a state
/// directory and a configuration of the test's own, callers made with the ids a test needs,
/// and a socketpair for what the server answers. No broker process, no reader.
final class InProcessBroker {
    let directory: String
    let state: BrokerState
    let server: Server

    init(configuration: String = "") throws {
        var template = Array("/tmp/fingerseal-in-process.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw TestFailure("mkdtemp") }
        directory = String(cString: made)
        var settings = BrokerSettings(stateDirectory: directory + "/state")
        settings.configPath = directory + "/fingerseal.conf"
        settings.bootIDPath = directory + "/boot_id"
        settings.pinCost = .fastForTests
        try Data(configuration.utf8).write(to: URL(fileURLWithPath: directory + "/fingerseal.conf"))
        try Data("0123456789abcdef0123456789abcdef\n".utf8).write(to: URL(fileURLWithPath: directory + "/boot_id"))
        let listener = try Listener.bind(path: directory + "/socket")
        server = try Server(listener: listener, settings: settings)
        state = server.state
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    /// `packet` served as an accepted connection from root; what the broker sent back.
    func serve(_ packet: [UInt8]) throws -> [BrokerMessage] {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw TestFailure("socketpair")
        }
        let client = pair[0], brokerEnd = pair[1]
        defer { close(client) }
        _ = packet.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        shutdown(client, Int32(SHUT_WR))
        server.serve(WireConnection(owning: brokerEnd), try Caller.of(socket: brokerEnd), AdmissionSlot {})
        var replies: [BrokerMessage] = []
        var buffer = [UInt8](repeating: 0, count: Wire.maxPacket + 1)
        while true {
            let count = recv(client, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard count > 0 else { break }
            replies.append(try buffer[..<count].withUnsafeBytes { try BrokerMessage.decode($0) })
        }
        return replies
    }
}

@Suite struct BrokerDecisionTests {
    static let user = Caller(inProcess: 4242, gid: 4242)
    static let root = Caller(inProcess: 0, gid: 0)

    static func refusal(_ body: () throws -> Void) -> FingersealError? {
        do { try body() } catch let error as FingersealError { return error } catch { return nil }
        return nil
    }

    /// Who may ask for what (`Authorization.rule`): a user only for their own account, root's
    /// commands only from root, touch to sign in only from a system host, a rig's commands
    /// only from its group.
    @Test func theAuthorizationTableRefusesEachCallerWhatIsNotTheirs() {
        let cases: [(Request, String?, String)] = [
            (Request(.status), "root", Messages.onlyRootNamesUser),
            (Request(.accountList), nil, Messages.accountRootOnly),
            (Request(.pamIdentify, from: .pamHost(PAMItems(), moduleArguments: [])), nil, Messages.identifyOnlyForSystemHosts),
            (Request(.capture), nil, Messages.rigOnly(Authorization.rigGroup)),
        ]
        for (request, named, sentence) in cases {
            let refused = Self.refusal { _ = try Authorization.account(for: request, named: named, caller: Self.user) }
            #expect(refused?.outcome == .notPermitted && refused?.message == sentence, "\(request.command.rawValue): \(String(describing: refused))")
        }
        // Root may name an account; a PAM host's request without a user name has none.
        #expect(Self.refusal { _ = try Authorization.account(for: Request(.status), named: "root", caller: Self.root) } == nil)
        let nameless = Self.refusal {
            _ = try Authorization.account(for: Request(.pamAccount, from: .pamHost(PAMItems(), moduleArguments: [])), named: String?.none,
                                          caller: Self.root)
        }
        #expect(nameless?.outcome == .unknownUser)
    }

    /// The channel is the origin's (issue 34 §2): how each is told things and how its person
    /// turns to the password.
    @Test func theChannelFollowsTheOrigin() {
        let display = Channel(Request(.pamAuthenticate, from: .pamHost(PAMItems(user: "a", service: "gdm-password", xdisplay: ":0"),
                                                                        moduleArguments: [])), from: Self.root)
        #expect(display.showsOnlyTheConversation && display.leavesThePasswordToTheStack)
        #expect(display.wayToPassword == .besideTheScan && display.skippedPIN == .stackPassword && display.audited == .pam)
        let commandLine = Channel(Request(.unlock), from: Self.user)
        #expect(!commandLine.showsOnlyTheConversation && commandLine.wayToPassword == nil && commandLine.skippedPIN == .mistake)
        #expect(commandLine.cancelHint == .pressCtrlC && commandLine.audited == .cli)
        let application = Channel(Request(.stepUp, from: .application(Application(busName: ":1.7"))), from: Self.user)
        #expect(application.skippedPIN == .accountPassword && application.cancelHint == .none && application.audited == .application)
        #expect(application.explainsQuietFallbacks && !display.explainsQuietFallbacks)
    }

    /// The one order of settings (`Dispatcher.effectiveOptions`): a `[service]` section's
    /// policy and every module argument reach a root host; a host a user runs gets only
    /// what it could be given as a module argument; the command line names no service.
    @Test func aHostAUserRunsGetsOnlyWhatItMayBeGiven() throws {
        let broker = try InProcessBroker(configuration: "max_fails=5\n[service sudo]\nallow_remote=yes\ntimeout=20\n")
        func options(_ request: Request, _ caller: Caller) throws -> Options {
            try Dispatcher.effectiveOptions(request, caller: caller, state: broker.state).0
        }
        let sudo = Origin.pamHost(PAMItems(user: "a", service: "sudo"), moduleArguments: ["max_fails=9", "timeout=7"])
        let asRoot = try options(Request(.pamAuthenticate, from: sudo), Self.root)
        #expect(asRoot.allowRemote && asRoot.maxFails == 9 && asRoot.timeout == 7)
        let asUser = try options(Request(.pamAuthenticate, from: sudo), Self.user)
        #expect(!asUser.allowRemote && asUser.maxFails == 5 && asUser.timeout == 7, "the section's policy and max_fails are not the user's to pick")
        let commandLine = try options(Request(.unlock), Self.root)
        #expect(!commandLine.allowRemote && commandLine.timeout == Options().timeout)
    }

    /// A request its client would never send is answered with a sentence, not dropped.
    @Test func aCommandFromTheWrongClientIsAnsweredWithASentence() throws {
        let broker = try InProcessBroker()
        var fields = WireFields()
        fields.add("command", Command.pamAuthenticate.rawValue)
        let replies = try broker.serve(Wire.encode(kind: 1, fields))
        guard case let .result(reply)? = replies.last else { Issue.record("no result: \(replies)"); return }
        #expect(reply.outcome == .usage && reply.message == Messages.notFromThisProgram(Command.pamAuthenticate.rawValue))
    }

    // MARK: what a call is made of (the request builders)

    /// Text with a control character is refused from every caller but a root PAM host, whose
    /// stack passes on what it was given (sshd: a user name off the network).
    @Test func controlCharactersAreRefusedExceptFromARootPAMHost() {
        var commandLine = Request(.unlock)
        commandLine.arguments = ["a\u{1b}[2Jb"]
        #expect(Self.refusal { try Dispatcher.refuseControlCharacters(commandLine, from: Self.root) }?.message == Messages.controlCharacters("arg"))
        let fromHost = Request(.pamAuthenticate, from: .pamHost(PAMItems(user: "a\u{7}b", service: "sshd"), moduleArguments: []))
        #expect(Self.refusal { try Dispatcher.refuseControlCharacters(fromHost, from: Self.root) } == nil)
        #expect(Self.refusal { try Dispatcher.refuseControlCharacters(fromHost, from: Self.user) }?.message == Messages.controlCharacters("pam.user"))
        #expect(Self.refusal { try Dispatcher.refuseControlCharacters(Request(.unlock), from: Self.user) } == nil)
    }

    /// What the session agent says of an application is bounded before anything reads it.
    @Test func anApplicationIsBoundedBeforeItIsUsed() {
        func checked(_ application: Application) -> FingersealError? {
            Self.refusal { try Dispatcher.checkApplication(Request(.stepUp, from: .application(application))) }
        }
        #expect(checked(Application(busName: ":1.7", name: "Meander", grantKey: [UInt8](repeating: 7, count: 32))) == nil)
        #expect(checked(Application(busName: ""))?.message == Messages.badApplication)
        #expect(checked(Application(busName: ":1.7", name: String(repeating: "n", count: 256)))?.message == Messages.badApplication)
        #expect(checked(Application(busName: ":1.7", grantKey: [UInt8](repeating: 7, count: 31)))?.message == Messages.badApplication)
        #expect(Self.refusal { try Dispatcher.checkApplication(Request(.unlock)) } == nil)
    }

    /// Whose tries a request counts against (`Call.applicant`): a user's own; root's command
    /// line none; a setuid host its real user; a host at a login its login uid; nobody when
    /// it is the account's owner who asks.
    @Test func whoseTriesARequestCounts() {
        let account = UserAccount(name: "b", uid: 5001, gid: 5001, home: "/nonexistent")
        func applicant(_ request: Request, _ caller: Caller) -> UInt32? {
            Call.applicant(caller, Channel(request, from: caller), account)
        }
        let host = Request(.pamAuthenticate, from: .pamHost(PAMItems(user: "b", service: "su"), moduleArguments: []))
        #expect(applicant(Request(.unlock), Self.user) == 4242)
        #expect(applicant(Request(.unlock), Self.root) == nil)
        #expect(applicant(host, Caller(inProcess: 0, gid: 0, realUID: 4242)) == 4242)
        #expect(applicant(host, Caller(inProcess: 0, gid: 0, loginUID: 4343)) == 4343)
        #expect(applicant(host, Caller(inProcess: 0, gid: 0, realUID: 5001)) == nil)
        #expect(applicant(host, Self.root) == nil, "a system host at the seat: the owner's own tries")
    }
}
