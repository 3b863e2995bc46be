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
