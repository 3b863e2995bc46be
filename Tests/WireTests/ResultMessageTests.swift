@testable import FingersealWire
import Testing

/// The result message's outcome through the wire: every outcome comes back as itself, and a
/// name the wire does not know is refused. The module decodes it by a search of its own, not
/// `init(rawValue:)` (whose table leaked with the unloaded module: ValgrindTests).
@Suite struct ResultMessageTests {
    @Test(arguments: Outcome.allCases) func everyOutcomeRoundTrips(_ outcome: Outcome) throws {
        let packet = BrokerMessage.result(Reply(outcome, "said")).encoded()
        let decoded = try packet.withUnsafeBytes { bytes throws(WireError) in try BrokerMessage.decode(bytes) }
        guard case let .result(reply) = decoded else {
            Issue.record("not a result: \(decoded)")
            return
        }
        #expect(reply.outcome == outcome && reply.message == "said")
        #expect(Outcome(wireName: outcome.rawValue) == outcome)
    }

    @Test func anUnknownOutcomeIsRefused() {
        #expect(Outcome(wireName: "successful") == nil)
        #expect(Outcome(wireName: "") == nil)
        #expect(Outcome(wireName: "Success") == nil)
    }
}

/// A question through the wire keeps where a skip leads (the agent names its button by it);
/// an unknown way from a newer broker is no way, not a refusal.
@Suite struct AskMessageTests {
    @Test(arguments: [nil, Ask.Purpose.pin, .accountPassword]) func whereASkipLeadsRoundTrips(_ skipsTo: Ask.Purpose?) throws {
        let asked = Ask(.secret, .accountPassword, "Password: ", skipsTo: skipsTo)
        let decoded = try BrokerMessage.ask(asked).encoded().withUnsafeBytes { bytes throws(WireError) in try BrokerMessage.decode(bytes) }
        guard case let .ask(ask) = decoded else { Issue.record("not a question: \(decoded)"); return }
        #expect(ask == asked)
    }

    @Test func anUnknownWayIsNoWay() throws {
        var fields = WireFields()
        for (key, value) in [("kind", "secret"), ("purpose", "pin"), ("prompt", "PIN: "), ("skips-to", "face")] { fields.add(key, value) }
        let packet = Wire.encode(kind: PacketKind.ask.rawValue, fields)
        let decoded = try packet.withUnsafeBytes { bytes throws(WireError) in try BrokerMessage.decode(bytes) }
        guard case let .ask(ask) = decoded else { Issue.record("not a question: \(decoded)"); return }
        #expect(ask.skipsTo == nil && ask.purpose == .pin)
    }
}

/// The request's origin (issue 34 §2): one value on the wire, read back as it was sent, and a
/// request its client would never send refused as it is read.
@Suite struct RequestOriginTests {
    static func decoded(_ request: Request) throws -> Request? {
        try decode(ClientMessage.request(request).encoded())
    }

    static func decode(_ packet: [UInt8]) throws -> Request? {
        let message = try packet.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) throws(WireError) -> ClientMessage in
            try ClientMessage.decode(bytes)
        }
        guard case let .request(decoded) = message else { return nil }
        return decoded
    }

    static let items = PAMItems(user: "alice", service: "sudo", tty: "/dev/pts/1")
    static let application = Application(busName: ":1.42", name: "Meander", grantKey: Array(repeating: 7, count: 32), methods: [.pin])

    @Test func eachOriginComesBackAsItWasSent() throws {
        let origins: [(Command, Origin)] = [
            (.pamAuthenticate, .pamHost(Self.items, moduleArguments: ["pin", "timeout=9"])),
            (.pamAccount, .pamHost(PAMItems(), moduleArguments: [])),
            (.status, .commandLine),
            (.stepUp, .application(Self.application)),
        ]
        for (command, origin) in origins {
            let decoded = try #require(try Self.decoded(Request(command, from: origin)))
            #expect(decoded.command == command && decoded.origin == origin)
        }
    }

    /// A PAM command from the command line, PAM items on the command line's, an application
    /// asking for what the agent never asks: refused, naming the command.
    @Test func aCommandItsOriginNeverSendsIsRefused() {
        let refused: [(Command, Origin)] = [
            (.pamAuthenticate, .commandLine),
            (.pamAuthenticate, .application(Self.application)),
            (.status, .pamHost(Self.items, moduleArguments: [])),
            (.login, .application(Self.application)),
            (.accountRemove, .application(Self.application)),
        ]
        for (command, origin) in refused {
            #expect(throws: WireError.wrongSender(command: command.rawValue)) { try Self.decoded(Request(command, from: origin)) }
        }
    }

    /// Fields that would make two origins, or module arguments without a PAM host, are not a
    /// request.
    @Test func fieldsOfTwoOriginsAreNoRequest() {
        var both = WireFields()
        both.add("command", "unlock")
        both.add("pam", true)
        both.add("app", true)
        both.add("app.bus-name", ":1.9")
        var arguments = WireFields()
        arguments.add("command", "status")
        arguments.add("option", "pin")
        for (fields, field) in [(both, "app"), (arguments, "option")] {
            #expect(throws: WireError.badValue(field)) { try Self.decode(Wire.encode(kind: 1, fields)) }
        }
    }
}
