import FingersealCore

/// One option a command accepts.
struct OptionSpec: Sendable {
    /// `rest`: this option ends the options; every later argument is a positional (a command
    /// line to run, with options of its own).
    enum Kind: Sendable { case flag, value(placeholder: String), rest(placeholder: String) }
    let name: String
    let kind: Kind
    let help: String

    static func flag(_ name: String, _ help: String) -> OptionSpec { OptionSpec(name: name, kind: .flag, help: help) }
    static func value(_ name: String, _ placeholder: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, kind: .value(placeholder: placeholder), help: help)
    }
    var isRest: Bool {
        if case .rest = kind { return true }
        return false
    }

    static func rest(_ name: String, _ placeholder: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, kind: .rest(placeholder: placeholder), help: help)
    }
}

/// What the parser found on the command line for one command.
struct ParsedArguments {
    var flags: Set<String> = []
    var values: [String: String] = [:]
    var positionals: [String] = []

    func has(_ flag: String) -> Bool { flags.contains(flag) }

    func integer(_ name: String) throws -> Int? {
        guard let text = values[name] else { return nil }
        guard let number = Int(text), number >= 0 else {
            throw FingersealError(.usage, "The option \(name) needs a whole number.")
        }
        return number
    }
}

/// A node of the command tree (the shape of swift-argument-parser's, written by hand).
struct CommandSpec: Sendable {
    let name: String
    let summary: String
    var arguments: String = ""
    var options: [OptionSpec] = []
    var subcommands: [CommandSpec] = []
    var discussion: String = ""
    var run: (@Sendable (ParsedArguments, Context) throws -> Void)? = nil

    static let help = OptionSpec.flag("--help", "Show this help.")

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
        let labels = all.map { option -> String in
            switch option.kind {
            case let .value(placeholder), let .rest(placeholder): return "\(option.name) \(placeholder)"
            case .flag: return option.name
            }
        }
        let width = labels.map(\.count).max() ?? 0
        for (label, option) in zip(labels, all) {
            lines.append("  " + label.padding(width) + "  " + option.help)
        }
        return lines.joined(separator: "\n")
    }

    /// Parses `arguments` for this command. `--help` anywhere wins.
    func parse(_ arguments: [String]) throws -> ParsedArguments {
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
            let parts = argument.split(separator: "=", maxSplits: 1)
            let name = String(parts[0])
            guard let option = options.first(where: { $0.name == name }) else {
                throw FingersealError(.usage, "Unknown option \(name.prefix(64)). Run with --help to see the options.")
            }
            switch option.kind {
            case .rest:
                guard parts.count == 1 else { throw FingersealError(.usage, "The option \(name) takes the rest of the line.") }
                parsed.flags.insert(name)
                parsed.positionals += arguments[index...]
                break parsing
            case .flag:
                guard parts.count == 1 else { throw FingersealError(.usage, "The option \(name) takes no value.") }
                parsed.flags.insert(name)
            case .value:
                if parts.count == 2 {
                    parsed.values[name] = String(parts[1])
                } else if index < arguments.count {
                    parsed.values[name] = arguments[index]
                    index += 1
                } else {
                    throw FingersealError(.usage, "The option \(name) needs a value.")
                }
            }
        }
        return parsed
    }
}

extension String {
    func padding(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
