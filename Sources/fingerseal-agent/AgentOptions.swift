import FingersealWire
import FoundationEssentials
import SessionBusKit

/// A mistaken option, said as a sentence.
struct OptionProblem: Error {
    let sentence: String
}

/// The options an application passes (a{sv}), read and checked once, when the call comes.
struct ApplicationOptions {
    enum Prompt { case dialog, app }

    var prompt = Prompt.dialog
    /// The ways the application allows; empty: every way.
    var methods: [UnlockMethod] = []
    /// StepUp, Reveal: the oldest confirmation held that answers, in seconds.
    var maxAge: Int? = nil
    var fresh = false
    var parentWindow: String? = nil
    var appName: String? = nil
    var handleToken: String? = nil
    /// Words for people, in the person's language (the application translates them): what a
    /// request is for (`reason`, a sentence) and what a context is called (`label`, "contact
    /// assignments"). A context itself is an identifier and is never shown.
    var reason: String? = nil
    var label: String? = nil

    init(_ raw: BusValue?) throws {
        guard let raw else { return }
        guard case let .dictionary(entries) = raw.unboxed else { throw OptionProblem(sentence: AgentStrings.badOption("options")) }
        for (name, value) in entries {
            switch name {
            case "prompt":
                switch value.string {
                case "dialog"?: prompt = .dialog
                case "app"?: prompt = .app
                default: throw OptionProblem(sentence: AgentStrings.badOption(name))
                }
            case "methods":
                guard let names = value.stringArray else { throw OptionProblem(sentence: AgentStrings.badMethods) }
                methods = try names.map { name in
                    guard let method = UnlockMethod(rawValue: name) else { throw OptionProblem(sentence: AgentStrings.badMethods) }
                    return method
                }
            case "max_age":
                guard let seconds = value.integer, StepUpRules.maxAge.contains(Int(clamping: seconds)) else {
                    throw OptionProblem(sentence: AgentStrings.badOption(name))
                }
                maxAge = Int(seconds)
            case "fresh":
                guard let flag = value.bool else { throw OptionProblem(sentence: AgentStrings.badOption(name)) }
                fresh = flag
            case "parent_window", "app_name", "handle_token":
                guard let text = value.string, text.utf8.count <= 256 else { throw OptionProblem(sentence: AgentStrings.badOption(name)) }
                if name == "parent_window" { parentWindow = text }
                if name == "app_name" { appName = text }
                if name == "handle_token" { handleToken = text }
            case "reason", "label":
                // Shown as they are: plain text only (no line break, escape or bidi control).
                guard let text = value.string, let shown = AskingApplication.shownText(text) else {
                    throw OptionProblem(sentence: AgentStrings.badOption(name))
                }
                if name == "reason" { reason = shown } else { label = shown }
            default:
                // Unknown options are ignored, as xdg-desktop-portal does: a newer client still works.
                continue
            }
        }
    }

    func allows(_ method: UnlockMethod) -> Bool { methods.allow(method) }
}

/// GetCapabilities' answer, from the broker's `status --json` for the application channel.
struct Capabilities: Sendable {
    let values: [String: BusValue]

    init(_ ending: AgentExchange.Ending, display: Bool) {
        var values: [String: BusValue] = ["version": .uint32(AgentInterface.version), "display": .bool(display)]
        if let report = StatusReport(ending) {
            values["vault"] = .bool(report.vault)
            values["fingers"] = .strings(report.fprintdFingers ?? report.fingers ?? [])
            values["signed_in"] = .bool(report.signIn == "active")
            // A bound sign-in's tokens need MakeProof for each request (RFC 9449).
            values["bound"] = .bool(report.boundToComputer ?? false)
            values["tpm"] = .bool(report.keyslots?.contains { $0.sealedToTpm } ?? false)
            values["methods"] = .strings(report.capabilities?.methods ?? [])
            values["reader"] = .string(report.capabilities?.reader ?? "unknown")
            values["remote"] = .bool(report.capabilities?.remote ?? false)
        } else {
            // No vault, or no broker: nothing can unlock.
            values["vault"] = .bool(false)
            values["fingers"] = .strings([])
            values["signed_in"] = .bool(false)
            values["bound"] = .bool(false)
            values["tpm"] = .bool(false)
            values["methods"] = .strings([])
            values["reader"] = .string("unknown")
            values["remote"] = .bool(false)
        }
        self.values = values
    }
}

/// GetStatus' answer, from the broker's `status --json` for the application channel: what a
/// settings page shows (the switch, since when, when last verified, the fingers, when the
/// password is next needed), each fact also as a sentence in the person's language and zone.
struct SettingsStatus: Sendable {
    let values: [String: BusValue]

    init(_ ending: AgentExchange.Ending) {
        guard let report = StatusReport(ending), report.vault, let said = report.said else {
            // No vault (or no broker): nothing is on, nothing to show but that.
            values = ["vault": .bool(false), "enabled": .bool(false), "fingers": .strings([]),
                      "sentences": .dictionary(["enabled": .string(AgentStrings.notSetUp)])]
            return
        }
        var values: [String: BusValue] = ["vault": .bool(true), "enabled": .bool(report.fingerUnlock ?? false),
                                          "enabled_since": .int64(said.enabledSinceUnix), "fingers": .strings(said.fingerNames)]
        if let verified = said.lastVerifiedUnix { values["last_verified"] = .int64(verified) }
        var sentences: [String: BusValue] = ["enabled": .string(said.fingerUnlock), "enabled_since": .string(said.enabledSince),
                                             "last_verified": .string(said.lastVerified), "fingers": .string(said.fingers)]
        if let password = said.password { sentences["password"] = .string(password) }
        values["sentences"] = .dictionary(sentences)
        self.values = values
    }
}

extension StatusReport {
    /// The broker's `status --json`, from a request's ending; nil without one (no vault, no
    /// broker, or an answer this agent cannot read).
    init?(_ ending: AgentExchange.Ending) {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        guard case let .reply(_, _, output) = ending, let report = try? decoder.decode(StatusReport.self, from: Data(output.utf8)) else {
            return nil
        }
        self = report
    }
}
