import FingersealWire
import Glibc
import Localization
import SharedMessages

/// A sentence of the command tree (a summary, a discussion, an option's help): marked for the
/// catalog where it is written, looked up where it is shown. The tree is built once, in no
/// language; `--help` shows each sentence in the language of the run (`localized`), while the
/// completion scripts, which must not depend on the locale, take the English (`msgid`).
struct HelpText: Sendable, Equatable {
    /// The English sentence: the catalog's message id.
    let msgid: String

    /// The sentence in the language of this run.
    var localized: String { Localization.text(msgid) }
}

/// Marks a sentence of the command tree for the catalog without looking it up (gettext's
/// `N_`, `gettext_noop`). Like `tr`, its argument must be one plain string literal, on one
/// line or multi-line (`"""`), without `\(` interpolation: scripts/update-po extracts it as
/// the msgid. It returns a `HelpText`, not a `String`, so a sentence of the tree cannot skip it.
func N_(_ msgid: String) -> HelpText { HelpText(msgid: msgid) }

/// One option a command accepts, what its value must look like, and whether it goes to the
/// broker or stays here. An option the broker gets is the wire's (`Option`): its name, its
/// value and its range are defined there, once, and checked there (`RequestOptions`).
struct OptionSpec: Sendable {
    enum Shape: Sendable {
        case flag
        case value(placeholder: String)
        /// A whole number in `range` (the wire's), sent in its canonical spelling.
        case number(placeholder: String, range: ClosedRange<Int>)
        case choice([String])
        /// A file descriptor of the caller's that must be open; never sent (the broker
        /// cannot use our descriptors).
        case descriptor
        /// Ends the options: every later argument is a positional (a command line to run,
        /// with options of its own).
        case rest(placeholder: String)
    }

    /// `broker`: sent in the request as the wire's option. `local`: used by the CLI itself
    /// and never sent (descriptors, paths the user can read and we stream, the socket).
    enum Route: Sendable { case broker(Option), local }

    let name: String
    let kind: Shape
    let help: HelpText
    var route: Route = .local

    /// The wire's flag or choice `option`.
    static func wire(_ option: Option, _ help: HelpText) -> OptionSpec { wire(option, "", help) }
    /// The wire's option, as its value says (`placeholder`: how help shows the value).
    static func wire(_ option: Option, _ placeholder: String, _ help: HelpText) -> OptionSpec {
        let kind: Shape
        switch option.value {
        case .flag: kind = .flag
        case .text: kind = .value(placeholder: placeholder)
        case let .number(range): kind = .number(placeholder: placeholder, range: range)
        case let .choice(choices): kind = .choice(choices)
        }
        return OptionSpec(name: option.name, kind: kind, help: help, route: .broker(option))
    }
    /// The wire's flag `option`, taking the rest of the command line (kept here).
    static func rest(_ option: Option, _ placeholder: String, _ help: HelpText) -> OptionSpec {
        OptionSpec(name: option.name, kind: .rest(placeholder: placeholder), help: help, route: .broker(option))
    }
    /// A flag the CLI keeps.
    static func flag(_ name: String, _ help: HelpText) -> OptionSpec { OptionSpec(name: name, kind: .flag, help: help) }
    /// An option the CLI keeps.
    static func local(_ name: String, _ placeholder: String, _ help: HelpText) -> OptionSpec {
        OptionSpec(name: name, kind: .value(placeholder: placeholder), help: help)
    }
    static func descriptor(_ name: String, _ help: HelpText) -> OptionSpec {
        OptionSpec(name: name, kind: .descriptor, help: help)
    }

    /// The same option, kept by the CLI.
    var local: OptionSpec {
        var copy = self
        copy.route = .local
        return copy
    }

    /// The wire's option, when the broker gets it.
    var wire: Option? {
        if case let .broker(option) = route { return option }
        return nil
    }

    var isRest: Bool {
        if case .rest = kind { return true }
        return false
    }

    var label: String {
        switch kind {
        case .flag: return name
        case let .value(placeholder), let .number(placeholder, _), let .rest(placeholder): return "\(name) \(placeholder)"
        case let .choice(choices): return "\(name) \(choices.joined(separator: "|"))"
        case .descriptor: return "\(name) N"
        }
    }
}

/// What the parser found on the command line for one command: the options by their specs
/// (descriptors checked open; what goes to the broker is checked by the wire, `RequestOptions`),
/// and the positionals.
struct ParsedArguments {
    /// In the order given, each once.
    var flags: [String] = []
    var values: [String: String] = [:]
    var positionals: [String] = []

    func has(_ option: OptionSpec) -> Bool { flags.contains(option.name) }

    func value(_ option: OptionSpec) -> String? { values[option.name] }

    /// A `.descriptor` option's value (checked when parsed).
    func descriptor(_ option: OptionSpec) -> Int32? { value(option).flatMap { Int32($0) } }

    /// What goes to the broker, as the wire carries it (still unchecked).
    func wireValues(_ options: [OptionSpec]) -> OptionValues {
        var values = OptionValues()
        for option in options {
            guard let wire = option.wire else { continue }
            if has(option) { values.set(field: wire.field, "1") }
            if let value = value(option) { values.set(field: wire.field, value) }
        }
        return values
    }
}

/// A node of the command tree (the shape of swift-argument-parser's, written by hand).
struct CommandSpec: Sendable {
    /// Lays out the request and the local side of one run from what was parsed: checks the
    /// positionals, reads what the CLI streams, decides what happens after success.
    typealias Shape = @Sendable (ParsedArguments, inout Invocation) throws(CLIError) -> Void

    let name: String
    let summary: HelpText
    var arguments: String = ""
    var options: [OptionSpec] = []
    var subcommands: [CommandSpec] = []
    var discussion: HelpText? = nil
    /// What the broker is asked for; nil for a group (`pin`), the root, or a command the CLI
    /// answers alone (`completion`).
    var command: Command? = nil
    var shape: Shape? = nil
    /// Runs the command here instead of one plain request: it may ask the broker itself
    /// (`doctor` checks this side first, then asks, then renders both) or not at all.
    typealias Run = @Sendable (ParsedArguments, Output) throws(CLIError) -> Int32
    var run: Run? = nil

    /// A command that runs: its options, then the ones every command has.
    init(name: String, summary: HelpText, arguments: String = "", options: [OptionSpec] = [], discussion: HelpText? = nil,
         command: Command, shape: Shape? = nil, run: Run? = nil) {
        self.name = name
        self.summary = summary
        self.arguments = arguments
        self.options = options + CommandSpec.everywhere
        self.discussion = discussion
        self.command = command
        self.shape = shape
        self.run = run
    }

    /// A command the CLI answers alone: no broker, so none of the options every broker
    /// command has.
    init(name: String, summary: HelpText, arguments: String = "", options: [OptionSpec] = [], discussion: HelpText? = nil,
         run: @escaping Run) {
        self.name = name
        self.summary = summary
        self.arguments = arguments
        self.options = options
        self.discussion = discussion
        self.run = run
    }

    /// A group of commands.
    init(name: String, summary: HelpText, options: [OptionSpec] = [], subcommands: [CommandSpec], discussion: HelpText? = nil) {
        self.name = name
        self.summary = summary
        self.options = options
        self.subcommands = subcommands
        self.discussion = discussion
    }

    static let help = OptionSpec.flag("--help", N_("Show this help."))
    static let socket = OptionSpec.local(
        "--socket", "PATH", N_("Use the fingerseal service at PATH (default: $FINGERSEAL_SOCKET, else /run/fingerseal/socket)."))

    /// On every command that runs.
    static let everywhere: [OptionSpec] = [
        socket,
        .wire(.user, "NAME", N_("Act on the account NAME instead of your own (root only).")),
    ]

    /// `--help`, in the language of this run: every sentence from the catalog; command and
    /// option names and metavariables (PATH, NAME, SECONDS) as typed.
    func helpText(path: [String]) -> String {
        let full = path.joined(separator: " ")
        let synopsis = full + (subcommands.isEmpty ? "" : " COMMAND") + (options.isEmpty ? "" : " [OPTIONS]")
            + (arguments.isEmpty ? "" : " \(arguments)")
        var lines = [tr("Usage: %1$s", synopsis), "", summary.localized]
        if let discussion { lines += ["", discussion.localized] }
        if !subcommands.isEmpty {
            lines += ["", tr("Commands:")]
            let width = subcommands.map(\.name.count).max() ?? 0
            for command in subcommands {
                lines.append("  " + command.name.padding(width) + "  " + command.summary.localized)
            }
            lines += ["", tr("Run \"%1$s COMMAND --help\" for help on a command.", full)]
        }
        let all = options + [CommandSpec.help]
        lines += ["", tr("Options:")]
        let width = all.map(\.label.count).max() ?? 0
        for option in all {
            lines.append("  " + option.label.padding(width) + "  " + option.help.localized)
        }
        return lines.joined(separator: "\n")
    }

    /// Parses `arguments` for this command, checking every value against its spec.
    func parse(_ arguments: [String]) throws(CLIError) -> ParsedArguments {
        var parsed = ParsedArguments()
        var index = 0
        parsing: while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                parsed.positionals += arguments[index...]
                break
            }
            guard argument.hasPrefix("-"), argument != "-" else {
                parsed.positionals.append(argument)
                continue
            }
            let parts = argument.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            guard let option = options.first(where: { $0.name == name }) else {
                throw CLIError(.usage, OptionError.unknown(name).message)
            }
            switch option.kind {
            case .rest:
                guard parts.count == 1 else { throw CLIError(.usage, Strings.takesTheRest(name)) }
                if !parsed.has(option) { parsed.flags.append(name) }
                parsed.positionals += arguments[index...]
                break parsing
            case .flag:
                guard parts.count == 1 else { throw CLIError(.usage, OptionError.takesNoValue(name).message) }
                if !parsed.has(option) { parsed.flags.append(name) }
            case .value, .number, .choice, .descriptor:
                let value: String
                if parts.count == 2 {
                    value = String(parts[1])
                } else if index < arguments.count {
                    value = arguments[index]
                    index += 1
                } else {
                    throw CLIError(.usage, OptionError.needsValue(name).message)
                }
                parsed.values[name] = try option.checked(value)
            }
        }
        return parsed
    }
}

extension OptionSpec {
    /// `value` as this option takes it, or why not. The wire checks what it defines
    /// (numbers, choices) when the request is built, the same way the broker does.
    func checked(_ value: String) throws(CLIError) -> String {
        switch kind {
        case .flag, .rest, .value, .number, .choice:
            return value
        case .descriptor:
            guard let number = Int(value), number >= 0, number <= Int(Int32.max) else {
                throw CLIError(.usage, Strings.needsDescriptor(name))
            }
            guard fcntl(Int32(number), F_GETFD) != -1 else { throw CLIError(.usage, Strings.descriptorNotOpen(name, number)) }
            return String(number)
        }
    }
}

extension String {
    func padding(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
