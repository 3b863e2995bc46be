import FingersealWire
import FuzzInput
import Glibc
import PAMKit

/// One input: a transaction (which stack, which user, the PAM environment), then up to six
/// calls of the PAM functions, each with the conversation's answers and the broker's script
/// for its connection.
enum PAMInput {
    enum Call: CaseIterable { case authenticate, account, openSession, closeSession, changeAuthtok }

    static let users: [String?] = [nil, "fs-alice", "root", "nobody", "fs-bob"]
    static let texts = ["Place your finger on the reader.", "PIN:", "", "fs-alice", "2580", "x\u{7f}y", "a:b", "ünïcødé"]

    static func run(_ input: FuzzInput, directory: String, broker: PlayedBroker) {
        var input = input
        let header = input.byte()
        let service = header & 1 == 0 ? "fuzz" : "fuzz-identify"
        let user = users[Int(header >> 1) % users.count]
        var answers = Answers()
        var calls: [(Call, Answers.Mode, [String])] = []
        var scripts: [PlayedBroker.Script] = []
        for _ in 0..<6 where !input.isEmpty {
            let call = input.pick(Call.allCases)
            let mode = input.pick(Answers.Mode.allCases)
            let given = (0..<Int(input.byte() % 3)).map { _ in input.textOrPick(texts) }
            calls.append((call, mode, given))
            scripts.append(script(&input))
        }
        broker.load(scripts)
        let converse: PAMClient.Converser = { message in answers.respond(message) }
        guard let pam = try? PAMClient.start(service: service, user: user, configDirectory: directory, converse: converse) else {
            fatalError("fuzz-pam: pam_start_confdir failed")
        }
        if header & 0x10 != 0 { _ = pam.setEnvironment("FUZZ_AUTHTOK", "correct horse") }
        if header & 0x20 != 0 { _ = pam.setEnvironment("LANGUAGE", "nb") }
        if header & 0x40 != 0 { _ = pam.setEnvironment("TZ", "Europe/Oslo") }
        for (call, mode, given) in calls {
            answers.mode = mode
            answers.given = given
            let before = broker.servedSoFar().count
            let rc: Int32
            switch call {
            case .authenticate: rc = pam.authenticate()
            case .account: rc = pam.accountManagement()
            case .openSession: rc = pam.openSession()
            case .closeSession: rc = pam.closeSession()
            case .changeAuthtok: rc = pam.changeAuthtok(flags: 0)
            }
            let served = broker.servedSoFar().dropFirst(before)
            // Success only after a result that said so, on a connection of this call.
            if rc == 0 /* PAM_SUCCESS */ && !served.contains(where: { $0.succeeds && $0.command != .pamPasswordUsed && $0.command != .pamChauthtok }) {
                fatalError("fuzz-pam: \(call) returned PAM_SUCCESS without the broker's success (served: \(Array(served)))")
            }
        }
        withExtendedLifetime(pam) {}
        _ = broker.finish()
    }

    /// The broker's packets for one connection, most of them well formed (so the module gets
    /// past the first), some mutated or raw.
    static func script(_ input: inout FuzzInput) -> PlayedBroker.Script {
        var script = PlayedBroker.Script()
        for _ in 0..<Int(input.byte() % 8) {
            var packet: [UInt8]
            switch input.byte() % 12 {
            case 0: packet = BrokerMessage.info(input.textOrPick(texts)).encoded()
            case 1: packet = BrokerMessage.error(input.textOrPick(texts)).encoded()
            case 2, 3:
                let echo: Ask.Echo = input.flag() ? .secret : .visible
                let purpose = input.pick([Ask.Purpose.pin, .newPIN, .accountPassword, .idpPassword, .clientSecret, .confirm, .other])
                let skipsTo = input.flag() ? input.pick([Ask.Purpose.pin, .accountPassword, .other]) : nil
                packet = BrokerMessage.ask(Ask(echo, purpose, input.textOrPick(texts), whileScanning: input.flag(), skipsTo: skipsTo)).encoded()
            case 4, 5, 6:
                var reply = Reply(input.pick(Outcome.allCases), input.textOrPick(texts))
                let fields = input.byte()
                if fields & 1 != 0 { reply.ticket = input.textOrPick(["t-1", ""]) }
                if fields & 2 != 0 { reply.user = input.textOrPick(["fs-alice", "fs-bob", "", "a:b", String(repeating: "u", count: 300)]) }
                if fields & 4 != 0 { reply.authtok = input.bytes(below: 64) }
                if fields & 8 != 0 { reply.token = input.bytes(below: 64) }
                if fields & 16 != 0 { reply.method = "finger" }
                packet = BrokerMessage.result(reply).encoded()
            case 7: packet = BrokerMessage.output(input.text(below: 64)).encoded()
            case 8:
                let signals: [ReaderSignal] = [.fingerNeeded, .noMatch, .hint(.centerFinger), .needsPIN, .waitingForSignIn,
                                               .enrollProgress(completed: Int(input.byte()), total: Int(input.byte()))]
                packet = BrokerMessage.event(signals[Int(input.byte()) % signals.count]).encoded()
            case 9: packet = BrokerMessage.data(input.bytes(below: 64), end: input.flag()).encoded()
            case 10: packet = BrokerMessage.finding(Finding("reader", .problem, input.text(below: 32))).encoded()
            default: packet = input.bytes(below: 256)
            }
            // A field no encoder writes, or one byte changed: what a broken or hostile broker sends.
            switch input.byte() % 8 {
            case 0: appendField(&packet, key: Array(input.textOrPick(["outcome", "message", "ticket", "user", "authtok", "x"]).utf8),
                                value: input.bytes(below: 32))
            case 1 where !packet.isEmpty:
                let at = Int(input.byte()) % packet.count
                packet[at] = input.byte()
            default: break
            }
            script.packets.append(packet)
        }
        return script
    }
}

/// The conversation: each prompt answered with the next of the input's answers (then the
/// mode decides), or the host ending it.
final class Answers: @unchecked Sendable {
    enum Mode: CaseIterable { case answer, answerEmpty, fail, noAnswer }
    var mode = Mode.answer
    var given: [String] = []

    func respond(_ message: PAMClient.Message) -> PAMClient.Response {
        switch message {
        case .errorMessage, .textInfo:
            return mode == .fail ? .abort : .none
        case .promptEchoOff, .promptEchoOn:
            if !given.isEmpty { return .text(given.removeFirst()) }
            switch mode {
            case .answer: return .text("2580")
            case .answerEmpty: return .text("")
            case .fail: return .abort
            case .noAnswer: return .none
            }
        }
    }
}
