import Localization
import FingersealWire

/// Finds the command, answers --help and --version, parses the options, runs the command
/// through the broker, and turns every failure into a message and an exit status
/// (`Outcome.exitCode`): the one place the CLI decides either.
enum CLI {
    static func run(_ arguments: [String]) -> Int32 {
        // Its own sentences in the language of its environment (LANGUAGE, LC_ALL, LC_MESSAGES,
        // LANG), and the broker's too: the request carries the same preference.
        Localization.bindInstalled()
        Localization.adopt(Localization.language(Invocation.languagePreference))
        let output = Output()
        var spec = Commands.root
        var path = [spec.name]
        var rest = arguments[...]
        while let next = rest.first, let sub = spec.subcommands.first(where: { $0.name == next }) {
            spec = sub
            path.append(sub.name)
            rest = rest.dropFirst()
        }
        do throws(CLIError) {
            // A word no command of this group has is a mistake, --help after it or not.
            if spec.command == nil, spec.run == nil, let unknown = rest.first, !unknown.hasPrefix("-") {
                throw CLIError(.usage, Strings.unknownCommand(String(unknown.prefix(64)), path.joined(separator: " ")))
            }
            // --help before the end of the options (a command after --exec or -- has its own).
            let own = rest.prefix { argument in !spec.options.contains { $0.name == argument && $0.isRest } && argument != "--" }
            if own.contains("--help") || own.contains("-h") {
                output.out(spec.helpText(path: path))
                return Outcome.success.exitCode
            }
            if path.count == 1 && rest.first == "--version" {
                output.out(Strings.version(Fingerseal.version))
                return Outcome.success.exitCode
            }
            if let run = spec.run { return try run(try spec.parse(Array(rest)), output) }
            guard let command = spec.command else {
                if let unknown = rest.first {
                    throw CLIError(.usage, Strings.unknownCommand(String(unknown.prefix(64)), path.joined(separator: " ")))
                }
                output.note(spec.helpText(path: path))
                return Outcome.usage.exitCode
            }
            let invocation = try Invocation(spec, command, try spec.parse(Array(rest)))
            do throws(CLIError) {
                return try Client.run(invocation, output)
            } catch {
                invocation.target.discard()
                throw error
            }
        } catch {
            if !error.message.isEmpty { output.error(error.message) }
            return error.outcome.exitCode
        }
    }
}
