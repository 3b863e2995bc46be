import FingersealWire
import Glibc

/// One option a command accepts, what its value must look like, and whether it goes to the
/// broker or stays here.
struct OptionSpec: Sendable {
    enum Kind: Sendable {
        case flag
        case value(placeholder: String)
        /// A whole number in `range`, checked here and sent in its canonical spelling.
        case number(placeholder: String, range: ClosedRange<Int>)
        case choice([String])
        /// A file descriptor of the caller's that must be open; never sent (the broker
        /// cannot use our descriptors).
        case descriptor
        /// Ends the options: every later argument is a positional (a command line to run,
        /// with options of its own).
        case rest(placeholder: String)
    }

    /// `broker`: sent in the request (a flag in `flags`, a value in `values`). `local`: used
    /// by the CLI itself and never sent (descriptors, paths the user can read and we stream,
    /// the socket).
    enum Route: Sendable { case broker, local }

    let name: String
    let kind: Kind
    let help: String
    var route: Route = .broker

    static func flag(_ name: String, _ help: String) -> OptionSpec { OptionSpec(name: name, kind: .flag, help: help) }
    static func value(_ name: String, _ placeholder: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, kind: .value(placeholder: placeholder), help: help)
    }
    static func number(_ name: String, _ placeholder: String, _ range: ClosedRange<Int>, _ help: String) -> OptionSpec {
        OptionSpec(name: name, kind: .number(placeholder: placeholder, range: range), help: help)
    }
    static func choice(_ name: String, _ choices: [String], _ help: String) -> OptionSpec {
        OptionSpec(name: name, kind: .choice(choices), help: help)
    }
    static func descriptor(_ name: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, kind: .descriptor, help: help, route: .local)
    }
    static func rest(_ name: String, _ placeholder: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, kind: .rest(placeholder: placeholder), help: help)
    }

    /// The same option, kept by the CLI.
    var local: OptionSpec {
        var copy = self
        copy.route = .local
        return copy
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

/// What the parser found on the command line for one command, already checked against the
/// option specs (numbers in range, descriptors open, choices known).
struct ParsedArguments {
    /// In the order given, each once.
    var flags: [String] = []
    var values: [String: String] = [:]
    var positionals: [String] = []

    func has(_ flag: String) -> Bool { flags.contains(flag) }

    /// A `.number` or `.descriptor` option's value (checked when parsed).
    func number(_ name: String) -> Int? { values[name].flatMap { Int($0) } }

    func descriptor(_ name: String) -> Int32? { number(name).map { Int32($0) } }
}

/// A node of the command tree (the shape of swift-argument-parser's, written by hand).
struct CommandSpec: Sendable {
    /// Lays out the request and the local side of one run from what was parsed: checks the
    /// positionals, reads what the CLI streams, decides what happens after success.
    typealias Shape = @Sendable (ParsedArguments, inout Invocation) throws(CLIError) -> Void

    let name: String
    let summary: String
    var arguments: String = ""
    var options: [OptionSpec] = []
    var subcommands: [CommandSpec] = []
    var discussion: String = ""
    /// What the broker is asked for; nil for a group (`pin`), the root, or a command the CLI
    /// answers alone (`completion`).
    var command: Command? = nil
    var shape: Shape? = nil
    /// Runs the command here instead of one plain request: it may ask the broker itself
    /// (`doctor` checks this side first, then asks, then renders both) or not at all.
    typealias Run = @Sendable (ParsedArguments, Output) throws(CLIError) -> Int32
    var run: Run? = nil

    /// A command that runs: its options, then the ones every command has.
    init(name: String, summary: String, arguments: String = "", options: [OptionSpec] = [], discussion: String = "",
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
    init(name: String, summary: String, arguments: String = "", options: [OptionSpec] = [], discussion: String = "",
         run: @escaping Run) {
        self.name = name
        self.summary = summary
        self.arguments = arguments
        self.options = options
        self.discussion = discussion
        self.run = run
    }

    /// A group of commands.
    init(name: String, summary: String, options: [OptionSpec] = [], subcommands: [CommandSpec], discussion: String = "") {
        self.name = name
        self.summary = summary
        self.options = options
        self.subcommands = subcommands
        self.discussion = discussion
    }

    static let help = OptionSpec.flag("--help", "Show this help.")

    /// On every command that runs.
    static let everywhere: [OptionSpec] = [
        OptionSpec.value("--socket", "PATH",
                         "Use the fingerseal service at PATH (default: $FINGERSEAL_SOCKET, else /run/fingerseal/socket).").local,
        .value("--user", "NAME", "Act on the account NAME instead of your own (root only)."),
    ]

    func helpText(path: [String]) -> String {
        let full = path.joined(separator: " ")
        var lines = ["Usage: \(full)" + (subcommands.isEmpty ? "" : " COMMAND") + (options.isEmpty ? "" : " [OPTIONS]")
                     + (arguments.isEmpty ? "" : " \(arguments)"), "", summary]
        if !discussion.isEmpty { lines += ["", discussion] }
        if !subcommands.isEmpty {
            lines += ["", "Commands:"]
            let width = subcommands.map(\.name.count).max() ?? 0
            for command in subcommands {
                lines.append("  " + command.name.padding(width) + "  " + command.summary)
            }
            lines += ["", "Run \"\(full) COMMAND --help\" for help on a command."]
        }
        let all = options + [CommandSpec.help]
        lines += ["", "Options:"]
        let width = all.map(\.label.count).max() ?? 0
        for option in all {
            lines.append("  " + option.label.padding(width) + "  " + option.help)
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
                throw CLIError(.usage, Strings.unknownOption(String(name.prefix(64))))
            }
            switch option.kind {
            case .rest:
                guard parts.count == 1 else { throw CLIError(.usage, Strings.takesTheRest(name)) }
                if !parsed.has(name) { parsed.flags.append(name) }
                parsed.positionals += arguments[index...]
                break parsing
            case .flag:
                guard parts.count == 1 else { throw CLIError(.usage, Strings.takesNoValue(name)) }
                if !parsed.has(name) { parsed.flags.append(name) }
            case .value, .number, .choice, .descriptor:
                let value: String
                if parts.count == 2 {
                    value = String(parts[1])
                } else if index < arguments.count {
                    value = arguments[index]
                    index += 1
                } else {
                    throw CLIError(.usage, Strings.needsValue(name))
                }
                parsed.values[name] = try option.checked(value)
            }
        }
        return parsed
    }
}

extension OptionSpec {
    /// `value` as this option takes it (a number in canonical form), or why not.
    func checked(_ value: String) throws(CLIError) -> String {
        switch kind {
        case .flag, .rest, .value:
            return value
        case let .number(_, range):
            guard let number = Int(value), range.contains(number) else { throw CLIError(.usage, Strings.needsNumber(name, range)) }
            return String(number)
        case let .choice(choices):
            guard choices.contains(value) else { throw CLIError(.usage, Strings.needsChoice(name, choices)) }
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
