import FingersealWire

/// Every sentence the CLI itself says, in one table: the command line's mistakes, and what
/// goes wrong on this side of the socket. Everything else a person reads comes from the
/// broker. Whole sentences, never glued from fragments (translation catalogs hook in here).
enum Strings {
    static func version(_ version: String) -> String { "fingerseal \(version)" }

    // The command line.
    static func unknownCommand(_ name: String, _ path: String) -> String {
        "Unknown command \(name). Run \(path) --help to see the commands."
    }
    static func unknownOption(_ name: String) -> String { "Unknown option \(name). Run with --help to see the options." }
    static func unexpectedArgument(_ argument: String) -> String { "Unexpected argument \(argument). Run with --help for usage." }
    static func takesNoValue(_ name: String) -> String { "The option \(name) takes no value." }
    static func takesTheRest(_ name: String) -> String { "The option \(name) takes the rest of the line." }
    static func needsValue(_ name: String) -> String { "The option \(name) needs a value." }
    static func needsNumber(_ name: String, _ range: ClosedRange<Int>) -> String {
        "The option \(name) takes a whole number from \(range.lowerBound) to \(range.upperBound)."
    }
    static func needsChoice(_ name: String, _ choices: [String]) -> String {
        // "device, password or browser": the sentence the command line has always said.
        let listed = choices.count > 1 ? choices.dropLast().joined(separator: ", ") + " or " + (choices.last ?? "")
                                       : choices.joined()
        return "The option \(name) takes \(listed)."
    }
    static func needsDescriptor(_ name: String) -> String { "The option \(name) takes the number of an open file descriptor." }
    static func descriptorNotOpen(_ name: String, _ number: Int) -> String {
        "The option \(name) names file descriptor \(number), which is not open. Open it for fingerseal (for example \(number)>FILE) or name another."
    }

    // Command by command.
    static let execNeedsCommand = "Say which command to run after --exec."
    static let unlockTakesNoArguments = "The unlock command takes no arguments. To run a command, put it after --exec."
    static let execAlone = "Use --exec on its own, without --print-token or --json."
    static let stepUpNeedsContext = "Say which context to confirm, for example: fingerseal step-up payroll"
    static let checkOrEndAlone = "Use --check or --end on their own, with only the context."
    static let sealNeedsContext = "Say which context to seal for with --context CONTEXT."
    static let sealOneFile = "Give at most one file to seal."
    static let revealNeedsFile = "Say which sealed file to reveal."
    static let forgetOneOrAll = "Name one finger to forget, or use --all."
    static let captureNeedsOut = "Say where to write the image with --out FILE."
    static let commandTooLong = "The command line is too long to send to the fingerseal service."

    // Files and descriptors of the person running the command.
    static func cannotRead(_ path: String) -> String { "Cannot read \(path)." }
    static func cannotWrite(_ path: String, _ why: String) -> String { "Cannot write \(path): \(why)." }
    static func tooLargeToSeal(_ limitMiB: Int) -> String { "This is too large to seal; the limit is \(limitMiB) MiB." }
    static func tooLargeToBeSealed(_ path: String) -> String { "\(path) is too large to be a sealed file." }
    static func cannotReadClientSecret(_ path: String) -> String { "Cannot read the client secret file \(path)." }
    static let standardInput = "standard input"
    static let standardOutput = "standard output"

    // Answering the broker's questions.
    static let noTerminal = "No terminal to read from. Use --pin-fd to pass the PIN from a file descriptor."
    static func answerTooLong(_ maximum: Int) -> String { "The answer is too long; at most \(maximum) characters are accepted." }
    static let cancelled = "Cancelled."

    // The broker.
    static let serviceNotRunning = "The fingerseal service is not running. Start it with: systemctl start fingerseal.socket"
    static func serviceRefused(_ path: String) -> String {
        "You may not use the fingerseal service at \(path): permission denied."
    }
    static let serviceEnded = "The fingerseal service ended the request without an answer. Try again; the system log may say why."
    static func serviceSilent(_ seconds: Int) -> String {
        "The fingerseal service sent nothing for \(seconds) seconds, so fingerseal gave up."
    }
    static let serviceGarbled = "The fingerseal service sent a message this fingerseal cannot read. Install matching versions of both."
    static let noToken = "The fingerseal service gave no access token, so there is nothing to print or hand over."

    // Running a command.
    static func cannotRun(_ command: String, _ why: String) -> String { "Cannot run \(command): \(why)." }
    static let cannotHandOverToken = "Fingerseal could not hand the access token over to the command."
    static func cannotWait(_ command: String) -> String { "Fingerseal could not wait for \(command) to end." }
    static let secureMemory = "Fingerseal could not allocate protected memory for secrets."
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
