import FingersealWire
import Localization

/// A sentence from the catalog in the language of this run (see FingersealCore's `tr` and
/// po/README: every `tr("…")` literal is a msgid, extracted by scripts/update-po).
func tr(_ message: String, _ arguments: any CustomStringConvertible...) -> String {
    Localization.text(message, arguments.map(\.description))
}

/// Every sentence the CLI itself says, in one table: the command line's mistakes, and what
/// goes wrong on this side of the socket. Everything else a person reads comes from the
/// broker. Whole sentences, never glued from fragments (each looked up in the message catalog).
enum Strings {
    static func version(_ version: String) -> String { "fingerseal \(version)" }

    // The command line.
    static func unknownCommand(_ name: String, _ path: String) -> String {
        tr("Unknown command %1$s. Run %2$s --help to see the commands.", name, path)
    }
    static func unknownOption(_ name: String) -> String { tr("Unknown option %1$s. Run with --help to see the options.", name) }
    static func unexpectedArgument(_ argument: String) -> String { tr("Unexpected argument %1$s. Run with --help for usage.", argument) }
    static func takesNoValue(_ name: String) -> String { tr("The option %1$s takes no value.", name) }
    static func takesTheRest(_ name: String) -> String { tr("The option %1$s takes the rest of the line.", name) }
    static func needsValue(_ name: String) -> String { tr("The option %1$s needs a value.", name) }
    static func needsNumber(_ name: String, _ range: ClosedRange<Int>) -> String {
        tr("The option %1$s takes a whole number from %2$s to %3$s.", name, range.lowerBound, range.upperBound)
    }
    static func needsChoice(_ name: String, _ choices: [String]) -> String {
        // "device, password or browser": the sentence the command line has always said.
        let listed = choices.count > 1 ? tr("%1$s or %2$s", choices.dropLast().joined(separator: ", "), choices.last ?? "")
                                       : choices.joined()
        return tr("The option %1$s takes %2$s.", name, listed)
    }
    static func needsDescriptor(_ name: String) -> String { tr("The option %1$s takes the number of an open file descriptor.", name) }
    static func descriptorNotOpen(_ name: String, _ number: Int) -> String {
        tr("The option %1$s names file descriptor %2$s, which is not open. Open it for fingerseal (for example %2$s>FILE) or name another.", name, number)
    }

    // Command by command.
    static var execNeedsCommand: String { tr("Say which command to run after --exec.") }
    static var unlockTakesNoArguments: String { tr("The unlock command takes no arguments. To run a command, put it after --exec.") }
    static var execAlone: String { tr("Use --exec on its own, without --print-token or --json.") }
    static var stepUpNeedsContext: String { tr("Say which context to confirm, for example: fingerseal step-up payroll") }
    static var checkOrEndAlone: String { tr("Use --check or --end on their own, with only the context.") }
    static var sealNeedsContext: String { tr("Say which context to seal for with --context CONTEXT.") }
    static var sealOneFile: String { tr("Give at most one file to seal.") }
    static var revealNeedsFile: String { tr("Say which sealed file to reveal.") }
    static var forgetOneOrAll: String { tr("Name one finger to forget, or use --all.") }
    static var captureNeedsOut: String { tr("Say where to write the image with --out FILE.") }
    static var commandTooLong: String { tr("The command line is too long to send to the fingerseal service.") }

    // Files and descriptors of the person running the command.
    static func cannotRead(_ path: String) -> String { tr("Cannot read %1$s.", path) }
    static func cannotWrite(_ path: String, _ why: String) -> String { tr("Cannot write %1$s: %2$s.", path, why) }
    static func tooLargeToSeal(_ limitMiB: Int) -> String { tr("This is too large to seal; the limit is %1$s MiB.", limitMiB) }
    static func tooLargeToBeSealed(_ path: String) -> String { tr("%1$s is too large to be a sealed file.", path) }
    static func cannotReadClientSecret(_ path: String) -> String { tr("Cannot read the client secret file %1$s.", path) }
    static var standardInput: String { tr("standard input") }
    static var standardOutput: String { tr("standard output") }

    // Answering the broker's questions.
    static var noTerminal: String { tr("No terminal to read from. Use --pin-fd to pass the PIN from a file descriptor.") }
    static func answerTooLong(_ maximum: Int) -> String { tr("The answer is too long; at most %1$s characters are accepted.", maximum) }
    static var cancelled: String { tr("Cancelled.") }

    // The broker.
    static var serviceNotRunning: String { tr("The fingerseal service is not running. Start it with: systemctl start fingerseal.socket") }
    static func serviceRefused(_ path: String) -> String {
        tr("You may not use the fingerseal service at %1$s: permission denied.", path)
    }
    static var serviceEnded: String { tr("The fingerseal service ended the request without an answer. Try again; the system log may say why.") }
    static func serviceSilent(_ seconds: Int) -> String {
        tr("The fingerseal service sent nothing for %1$s seconds, so fingerseal gave up.", seconds)
    }
    static var serviceGarbled: String { tr("The fingerseal service sent a message this fingerseal cannot read. Install matching versions of both.") }
    static var noToken: String { tr("The fingerseal service gave no access token, so there is nothing to print or hand over.") }

    // Running a command.
    static func cannotRun(_ command: String, _ why: String) -> String { tr("Cannot run %1$s: %2$s.", command, why) }
    static var cannotHandOverToken: String { tr("Fingerseal could not hand the access token over to the command.") }
    static func cannotWait(_ command: String) -> String { tr("Fingerseal could not wait for %1$s to end.", command) }
    static var secureMemory: String { tr("Fingerseal could not allocate protected memory for secrets.") }
}

/// What ends a command on this side of the socket: an outcome (so the exit status comes from
/// the one table, `Outcome.exitCode`) and a sentence (empty: nothing more to say).
struct CLIError: Error {
    let outcome: Outcome
    let message: String

    init(_ outcome: Outcome, _ message: String) {
        self.outcome = outcome
        self.message = message
    }
}
