import FoundationEssentials
@testable import FingersealWire
import Testing

/// Reader events travel typed (issue 34 §3): each comes back as itself, one the wire does
/// not know is refused, and a rig's `--events-fd` line stays the JSON it always was.
@Suite struct ReaderSignalTests {
    static let all: [ReaderSignal] = [.fingerNeeded, .enrollProgress(completed: 3, total: 5), .noMatch, .fingerLocked,
                                      .needsPIN, .needsPassword, .waitingForSignIn] + ReaderSignal.Hint.allCases.map { .hint($0) }

    @Test(arguments: all) func everySignalRoundTrips(_ signal: ReaderSignal) throws {
        let decoded = try BrokerMessage.event(signal).encoded().withUnsafeBytes { bytes throws(WireError) in try BrokerMessage.decode(bytes) }
        guard case let .event(back) = decoded else { Issue.record("not an event: \(decoded)"); return }
        #expect(back == signal)
    }

    @Test(arguments: [[("event", "scan")], [("event", "hint"), ("hint", "wet-finger")], [("event", "enroll-progress"), ("completed", "1")],
                      [("event", "enroll-progress"), ("completed", "-1"), ("total", "5")], [("json", #"{"event":"finger-needed"}"#)]])
    func anEventTheWireDoesNotKnowIsRefused(_ pairs: [(String, String)]) {
        var fields = WireFields()
        for (key, value) in pairs { fields.add(key, value) }
        let packet = Wire.encode(kind: PacketKind.event.rawValue, fields)
        #expect(throws: WireError.self) { try packet.withUnsafeBytes { bytes throws(WireError) in try BrokerMessage.decode(bytes) } }
    }

    /// What rigs parse: the same lines as before the events were typed.
    @Test func aRigReadsTheSameLines() {
        #expect(ReaderSignal.fingerNeeded.jsonLine == #"{"event":"finger-needed"}"#)
        #expect(ReaderSignal.enrollProgress(completed: 2, total: 5).jsonLine == #"{"event":"enroll-progress","completed":2,"total":5}"#)
        #expect(ReaderSignal.hint(.centerFinger).jsonLine == #"{"event":"hint","hint":"center-finger"}"#)
        #expect(ReaderSignal.noMatch.jsonLine == #"{"event":"no-match"}"#)
        #expect(ReaderSignal.needsPassword.jsonLine == #"{"event":"needs-password"}"#)
    }

    /// Every line is JSON a parser reads back to its name.
    @Test(arguments: all) func everyLineIsJSON(_ signal: ReaderSignal) throws {
        struct Line: Decodable { let event: String }
        #expect(try JSONDecoder().decode(Line.self, from: Data(signal.jsonLine.utf8)).event == signal.name)
    }
}

/// `status --json` is one type at both ends (issue 34 §3): what the broker writes, the agent reads
/// back whole, in the keys scripts know.
@Suite struct StatusReportTests {
    @Test func whatTheBrokerWritesTheAgentReads() throws {
        var report = StatusReport(vault: true, directory: "/var/lib/fingerseal/u")
        report.keyslots = [.init(kind: "device", protection: "tpm2", sealedToTpm: true, usable: true, state: "usable", description: "d")]
        report.capabilities = .init(methods: ["finger", "password"], reader: "present", remote: false)
        report.said = .init(fingerUnlock: "On.", enabledSince: "Since today.", enabledSinceUnix: 1_700_000_000, lastVerified: "Never.",
                            lastVerifiedUnix: nil, fingers: "One finger.", fingerNames: ["right index finger"], password: nil)
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        let json = try encoder.encode(report)
        let text = String(decoding: json, as: UTF8.self)
        #expect(text.contains(#""sealed_to_tpm":true"#) && text.contains(#""enabled_since_unix":1700000000"#))
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let back = try decoder.decode(StatusReport.self, from: json)
        #expect(back.keyslots?.first?.sealedToTpm == true && back.capabilities?.methods == ["finger", "password"])
        #expect(back.said?.fingerNames == ["right index finger"] && back.said?.lastVerifiedUnix == nil && back.vault)
    }
}
