import FingersealWire
import Localization
import SharedMessages

/// Every sentence the CLI itself says, in one table: the command line's mistakes, and what
/// goes wrong on this side of the socket (those the broker says too are written once, in
/// SharedMessages, and forwarded here). Everything else a person reads comes from the
/// broker. Whole sentences, never glued from fragments (each looked up in the message catalog).
enum Strings {
    static func version(_ version: String) -> String { "fingerseal \(version)" }

    // The command line (what the wire's options cannot say: `OptionError.message` words that).
    static func unknownCommand(_ name: String, _ path: String) -> String {
        tr("Unknown command %1$s. Run %2$s --help to see the commands.", name, path)
    }
    static func unexpectedArgument(_ argument: String) -> String { tr("Unexpected argument %1$s. Run with --help for usage.", argument) }
    static func takesTheRest(_ name: String) -> String { tr("The option %1$s takes the rest of the line.", name) }
    static func needsDescriptor(_ name: String) -> String { tr("The option %1$s takes the number of an open file descriptor.", name) }
    static func descriptorNotOpen(_ name: String, _ number: Int) -> String {
        tr("The option %1$s names file descriptor %2$s, which is not open. Open it for fingerseal (for example %2$s>FILE) or name another.", name, number)
    }

    // Command by command.
    static var execNeedsCommand: String { tr("Say which command to run after --exec.") }
    static var captureNeedsOut: String { tr("Say where to write the image with --out FILE.") }
    static var commandTooLong: String { tr("The command line is too long to send to the fingerseal service.") }

    // Files and descriptors of the person running the command.
    static func cannotRead(_ path: String) -> String { SharedMessages.cannotRead(path) }
    static func cannotWrite(_ path: String, _ why: String) -> String { SharedMessages.cannotWrite(path, why) }
    static func tooLargeToSeal(_ limitMiB: Int) -> String { SharedMessages.tooLargeToSeal(limitMiB: limitMiB) }
    static func tooLargeToBeSealed(_ path: String) -> String { tr("%1$s is too large to be a sealed file.", path) }
    static func cannotReadClientSecret(_ path: String) -> String { tr("Cannot read the client secret file %1$s.", path) }
    /// What starts the line that says why a command failed ("fingerseal: error: …").
    static var errorLabel: String { tr("error:") }
    static var standardInput: String { tr("standard input") }
    static var standardOutput: String { tr("standard output") }

    // Answering the broker's questions.
    static var noTerminal: String { SharedMessages.noTerminal }
    static func answerTooLong(_ maximum: Int) -> String { tr("The answer is too long; at most %1$s characters are accepted.", maximum) }
    static var cancelled: String { SharedMessages.cancelled }

    // The broker.
    static var serviceNotRunning: String { tr("The fingerseal service is not running. Start it with: systemctl start fingerseal.socket") }
    static func serviceRefused(_ path: String) -> String {
        tr("You may not use the fingerseal service at %1$s: permission denied.", path)
    }
    static var serviceEnded: String { SharedMessages.serviceEnded }
    static func serviceSilent(_ seconds: Int) -> String {
        tr("The fingerseal service sent nothing for %1$s seconds, so fingerseal gave up.", seconds)
    }
    static var serviceGarbled: String { tr("The fingerseal service sent a message this fingerseal cannot read. Install matching versions of both.") }
    static var noToken: String { tr("The fingerseal service gave no access token, so there is nothing to print or hand over.") }

    // Running a command.
    static func cannotRun(_ command: String, _ why: String) -> String { SharedMessages.cannotRun(command, why) }
    static var cannotHandOverToken: String { tr("Fingerseal could not hand the access token over to the command.") }
    static func cannotWait(_ command: String) -> String { tr("Fingerseal could not wait for %1$s to end.", command) }
    static var secureMemory: String { SharedMessages.secureMemory }

    // doctor: what this side checks (whatever any user can see), each finding one sentence
    // and each fix another. The service's findings come from the service.
    /// One line of the report: the status word, the finding, and its fix when there is one,
    /// as one whole line a translation may order as it needs.
    static func doctorLine(_ status: Finding.Status, _ message: String, fix: String) -> String {
        switch (status, fix.isEmpty) {
        case (.ok, true): tr("OK: %1$s", message)
        case (.ok, false): tr("OK: %1$s Fix: %2$s", message, fix)
        case (.warning, true): tr("Warning: %1$s", message)
        case (.warning, false): tr("Warning: %1$s Fix: %2$s", message, fix)
        case (.problem, true): tr("Problem: %1$s", message)
        case (.problem, false): tr("Problem: %1$s Fix: %2$s", message, fix)
        }
    }
    static func doctorServiceAnswers(_ path: String) -> String { tr("The fingerseal service answers at %1$s.", path) }
    static func doctorServiceSilent(_ path: String) -> String { tr("The fingerseal service does not answer at %1$s.", path) }
    static var doctorFixService: String { tr("Start it, and at every boot: systemctl enable --now fingerseal.socket") }
    static func doctorFixServiceWithoutSystemd(_ path: String) -> String {
        tr("Start it yourself: fingersealed --socket %1$s --state /var/lib/fingerseal", path)
    }
    static func doctorServiceRefused(_ path: String) -> String {
        tr("The fingerseal service at %1$s does not let you connect: permission denied.", path)
    }
    static var doctorFixServiceRefused: String { tr("Make the socket mode 0666 again: systemctl restart fingerseal.socket") }
    static func doctorServiceFailed(_ message: String) -> String { tr("The fingerseal service could not finish its checks: %1$s", message) }
    static var doctorFixServiceFailed: String { tr("The system log may say why: journalctl -u fingerseal") }
    static var doctorNoSystemd: String { tr("systemd is not running here, so nothing starts the fingerseal service when it is asked for.") }
    static var doctorUnitsEnabled: String { tr("fingerseal.socket is enabled, so systemd starts the service when it is asked for.") }
    static var doctorUnitsDisabled: String { tr("fingerseal.socket is installed but not enabled, so the service does not start at boot.") }
    static var doctorUnitsMissing: String { tr("fingerseal.socket is not installed, so systemd cannot start the service.") }
    static var doctorFixInstall: String { tr("Install fingerseal with make install, or install its package.") }
    static func doctorModuleInstalled(_ path: String) -> String { tr("The PAM module is installed at %1$s.", path) }
    static func doctorModuleMissing(_ directory: String) -> String {
        tr("The PAM module pam_fingerseal.so is not installed in %1$s.", directory)
    }
    static func doctorAuthEnabled(_ file: String) -> String { tr("The fingerseal profile is enabled in %1$s, before pam_unix.", file) }
    static func doctorAuthDisabled(_ file: String) -> String {
        tr("The fingerseal profile is not enabled: %1$s does not use pam_fingerseal, so no sign-in asks for a finger.", file)
    }
    static var doctorFixAuthDisabled: String { tr("Enable it: pam-auth-update --enable fingerseal") }
    static func doctorAuthOutOfOrder(_ file: String) -> String {
        tr("In %1$s, pam_fingerseal comes after pam_unix, so the password is asked before a finger.", file)
    }
    static func doctorFixAuthOrder(_ file: String) -> String {
        tr("Run pam-auth-update --enable fingerseal, which orders the stack, or move the pam_fingerseal line above pam_unix in %1$s.", file)
    }
    static func doctorUnreadable(_ file: String) -> String { tr("%1$s cannot be read, so the PAM stack was not checked.", file) }
    static func doctorSessionEnabled(_ file: String) -> String {
        tr("The fingerseal-session profile is enabled in %1$s, after pam_systemd.", file)
    }
    static func doctorSessionDisabled(_ file: String) -> String {
        tr("The fingerseal-session profile is not enabled in %1$s; sessions get no access token from fingerseal, which is optional.", file)
    }
    static func doctorSessionOutOfOrder(_ file: String) -> String {
        tr("In %1$s, pam_fingerseal comes before pam_systemd, so the session's access token may not reach its runtime directory.", file)
    }
    static func doctorFixSessionOrder(_ file: String) -> String {
        tr("Run pam-auth-update --enable fingerseal-session, which orders the stack, or move the pam_fingerseal line below pam_systemd in %1$s.", file)
    }
    static var doctorTPMPresent: String { tr("A TPM is present (/dev/tpmrm0).") }
    static var doctorTPMAbsent: String { tr("No TPM was found (/dev/tpmrm0); without one, the device key is protected by file permissions only.") }
    static func doctorClockBeforeRelease(_ now: String, _ written: String) -> String {
        tr("The system clock says %1$s, which is earlier than the release of this fingerseal (%2$s).", now, written)
    }
    static var doctorClockAfterRelease: String { tr("The system clock is later than the release of this fingerseal.") }
    static var doctorFixClock: String { SharedMessages.fixClock }
    static func doctorUdevInstalled(_ path: String) -> String { tr("The udev rules are installed at %1$s.", path) }
    static var doctorUdevMissing: String {
        tr("The udev rules 70-fingerseal.rules are not installed, so fingerprint readers are not kept for root and fingerseal-rig.")
    }
    static func doctorGroupPresent(_ group: String) -> String { tr("The group %1$s exists.", group) }
    static func doctorGroupMissing(_ group: String) -> String {
        tr("The group %1$s does not exist, so only root can use the rig commands and the udev rules name no group.", group)
    }
    static func doctorFixGroup(_ group: String) -> String { tr("Create it: groupadd --system %1$s", group) }
    static var doctorAllWell: String { tr("Nothing blocks fingerprint unlock.") }
    static func doctorOnlyWarnings(_ warnings: Int) -> String {
        trn("Nothing blocks fingerprint unlock, but %1$s warning above is worth a look.",
            "Nothing blocks fingerprint unlock, but %1$s warnings above are worth a look.", warnings, warnings)
    }
    static func doctorBlocked(_ problems: Int) -> String {
        trn("%1$s problem blocks fingerprint unlock; its fix is on its line.",
            "%1$s problems block fingerprint unlock; each fix is on its line.", problems, problems)
    }

    // completion
    static var completionNeedsShell: String { tr("Say which shell: fingerseal completion bash, or fingerseal completion zsh.") }
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
