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

    // doctor: what this side checks (whatever any user can see), each finding one sentence
    // and each fix another. The service's findings come from the service.
    static let doctorOK = "OK"
    static let doctorWarning = "Warning"
    static let doctorProblem = "Problem"
    static func doctorLine(_ label: String, _ message: String) -> String { "\(label): \(message)" }
    static func doctorLine(_ label: String, _ message: String, fix: String) -> String { "\(label): \(message) Fix: \(fix)" }
    static func doctorServiceAnswers(_ path: String) -> String { "The fingerseal service answers at \(path)." }
    static func doctorServiceSilent(_ path: String) -> String { "The fingerseal service does not answer at \(path)." }
    static let doctorFixService = "Start it, and at every boot: systemctl enable --now fingerseal.socket"
    static func doctorFixServiceWithoutSystemd(_ path: String) -> String {
        "Start it yourself: fingersealed --socket \(path) --state /var/lib/fingerseal"
    }
    static func doctorServiceRefused(_ path: String) -> String {
        "The fingerseal service at \(path) does not let you connect: permission denied."
    }
    static let doctorFixServiceRefused = "Make the socket mode 0666 again: systemctl restart fingerseal.socket"
    static func doctorServiceFailed(_ message: String) -> String { "The fingerseal service could not finish its checks: \(message)" }
    static let doctorFixServiceFailed = "The system log may say why: journalctl -u fingerseal"
    static let doctorNoSystemd = "systemd is not running here, so nothing starts the fingerseal service when it is asked for."
    static let doctorUnitsEnabled = "fingerseal.socket is enabled, so systemd starts the service when it is asked for."
    static let doctorUnitsDisabled = "fingerseal.socket is installed but not enabled, so the service does not start at boot."
    static let doctorUnitsMissing = "fingerseal.socket is not installed, so systemd cannot start the service."
    static let doctorFixInstall = "Install fingerseal with make install, or install its package."
    static func doctorModuleInstalled(_ path: String) -> String { "The PAM module is installed at \(path)." }
    static func doctorModuleMissing(_ directory: String) -> String {
        "The PAM module pam_fingerseal.so is not installed in \(directory)."
    }
    static func doctorAuthEnabled(_ file: String) -> String { "The fingerseal profile is enabled in \(file), before pam_unix." }
    static func doctorAuthDisabled(_ file: String) -> String {
        "The fingerseal profile is not enabled: \(file) does not use pam_fingerseal, so no sign-in asks for a finger."
    }
    static let doctorFixAuthDisabled = "Enable it: pam-auth-update --enable fingerseal"
    static func doctorAuthOutOfOrder(_ file: String) -> String {
        "In \(file), pam_fingerseal comes after pam_unix, so the password is asked before a finger."
    }
    static func doctorFixAuthOrder(_ file: String) -> String {
        "Run pam-auth-update --enable fingerseal, which orders the stack, or move the pam_fingerseal line above pam_unix in \(file)."
    }
    static func doctorUnreadable(_ file: String) -> String { "\(file) cannot be read, so the PAM stack was not checked." }
    static func doctorSessionEnabled(_ file: String) -> String {
        "The fingerseal-session profile is enabled in \(file), after pam_systemd."
    }
    static func doctorSessionDisabled(_ file: String) -> String {
        "The fingerseal-session profile is not enabled in \(file); sessions get no access token from fingerseal, which is optional."
    }
    static func doctorSessionOutOfOrder(_ file: String) -> String {
        "In \(file), pam_fingerseal comes before pam_systemd, so the session's access token may not reach its runtime directory."
    }
    static func doctorFixSessionOrder(_ file: String) -> String {
        "Run pam-auth-update --enable fingerseal-session, which orders the stack, or move the pam_fingerseal line below pam_systemd in \(file)."
    }
    static let doctorTPMPresent = "A TPM is present (/dev/tpmrm0); fingerseal does not use it yet."
    static let doctorTPMAbsent = "No TPM was found (/dev/tpmrm0); fingerseal does not use one yet, so nothing is missing."
    static func doctorClockBeforeRelease(_ now: String, _ written: String) -> String {
        "The system clock says \(now), which is earlier than the release of this fingerseal (\(written))."
    }
    static let doctorClockAfterRelease = "The system clock is later than the release of this fingerseal."
    static let doctorFixClock = "Set the clock, for example with: timedatectl set-ntp true"
    static func doctorUdevInstalled(_ path: String) -> String { "The udev rules are installed at \(path)." }
    static let doctorUdevMissing =
        "The udev rules 70-fingerseal.rules are not installed, so fingerprint readers are not kept for root and fingerseal-rig."
    static func doctorGroupPresent(_ group: String) -> String { "The group \(group) exists." }
    static func doctorGroupMissing(_ group: String) -> String {
        "The group \(group) does not exist, so only root can use the rig commands and the udev rules name no group."
    }
    static func doctorFixGroup(_ group: String) -> String { "Create it: groupadd --system \(group)" }
    static let doctorAllWell = "Nothing blocks fingerprint unlock."
    static func doctorOnlyWarnings(_ warnings: Int) -> String {
        warnings == 1 ? "Nothing blocks fingerprint unlock, but 1 warning above is worth a look."
                      : "Nothing blocks fingerprint unlock, but \(warnings) warnings above are worth a look."
    }
    static func doctorBlocked(_ problems: Int) -> String {
        problems == 1 ? "1 problem blocks fingerprint unlock; its fix is on its line."
                      : "\(problems) problems block fingerprint unlock; each fix is on its line."
    }

    // completion
    static let completionNeedsShell = "Say which shell: fingerseal completion bash, or fingerseal completion zsh."
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
