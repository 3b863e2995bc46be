import FingersealCore
import SystemKit

/// Finds the command, parses its options, runs it, and turns every error into a message
/// and an exit code (`Outcome.exitCode`): the one place the CLI decides either.
enum CLI {
    static func run(_ arguments: [String]) -> Int32 {
        Syslog.open() // audit events also go to syslog (LOG_AUTHPRIV)
        let context = Context()
        var command = Commands.root
        var path = [command.name]
        var rest = arguments[...]
        while let next = rest.first, let sub = command.subcommands.first(where: { $0.name == next }) {
            command = sub
            path.append(sub.name)
            rest = rest.dropFirst()
        }
        do {
            // --help before the end of the options (a command after --exec has its own).
            let ownArguments = rest.prefix { arg in !command.options.contains { $0.name == arg && $0.isRest } && arg != "--" }
            if ownArguments.contains("--help") || ownArguments.contains("-h") {
                context.output.out(command.helpText(path: path))
                return Outcome.success.exitCode
            }
            if path.count == 1 && rest.first == "--version" {
                context.output.out("fingerseal \(Fingerseal.version)")
                return Outcome.success.exitCode
            }
            guard let run = command.run else {
                if let unknown = rest.first {
                    throw FingersealError(.usage, "Unknown command \(unknown.prefix(64)). Run \(path.joined(separator: " ")) --help to see the commands.")
                }
                context.output.note(command.helpText(path: path))
                return Outcome.usage.exitCode
            }
            let parsed = try command.parse(Array(rest))
            if !parsed.positionals.isEmpty && command.arguments.isEmpty {
                throw FingersealError(.usage, "Unexpected argument \(parsed.positionals[0].prefix(64)). Run with --help for usage.")
            }
            try run(parsed, context)
            return Outcome.success.exitCode
        } catch let error as FingersealError {
            context.output.error(error.message)
            return error.outcome.exitCode
        } catch {
            context.output.error(Messages.systemFailure("finish the command"))
            return Outcome.systemError.exitCode
        }
    }
}
