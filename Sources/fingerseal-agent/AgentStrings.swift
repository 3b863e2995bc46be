import Localization
import SharedMessages

/// Every sentence the agent itself says (the broker's come through the request, already in
/// the person's language): the dialog's words, the answers to mistaken calls. Looked up in
/// the catalogs (po/), in the language of the agent's session.
enum AgentStrings {
    // The dialog: its title names what it does and for which program, so the window list and
    // a screen reader's first words say who asks.
    static func unlockTitle(_ application: String) -> String { tr("Unlock %1$s", application) }
    static func stepUpTitle(_ application: String) -> String { tr("%1$s: confirm it is you", application) }
    static func revealTitle(_ application: String, label: String?) -> String {
        label.map { tr("%1$s: show %2$s", application, $0) } ?? tr("%1$s: show protected data", application)
    }
    /// An application's own name for itself, with what the system vouches for (its Flatpak
    /// app id or its executable's path) beside it: "Meander (/usr/bin/meander)".
    static func claimedBeside(_ claimed: String, vouched: String) -> String { tr("%1$s (%2$s)", claimed, vouched) }
    static func setEnabledTitle(_ application: String, on: Bool) -> String {
        on ? tr("%1$s: turn on fingerprint unlock", application) : tr("%1$s: turn off fingerprint unlock", application)
    }
    static func setEnabledHeading(_ application: String, on: Bool) -> String {
        on ? tr("%1$s wants to turn fingerprint unlock on. Confirm it is you first.", application)
            : tr("%1$s wants to turn fingerprint unlock off. Confirm it is you first.", application)
    }
    static var notSetUp: String { tr("Fingerprint unlock is not set up for your account.") }
    static func unlockHeading(_ application: String) -> String {
        tr("%1$s wants to unlock with your fingerprint.", application)
    }
    static func stepUpHeading(_ application: String) -> String { tr("%1$s wants to confirm it is you.", application) }
    static func revealHeading(_ application: String, label: String?) -> String {
        label.map { tr("%1$s wants to show %2$s. Confirm it is you first.", application, $0) }
            ?? tr("%1$s wants to show protected data. Confirm it is you first.", application)
    }
    /// Button labels: an underscore marks the Alt key of each, a different letter for each.
    static var cancel: String { tr("_Cancel") }
    static var usePassword: String { tr("_Use password instead") }
    static var usePIN: String { tr("Use _PIN instead") }
    static var submit: String { tr("C_ontinue") }
    static var pinLabel: String { tr("PIN") }
    /// The fingerprint icon's accessible name.
    static var fingerprintIcon: String { tr("Fingerprint reader") }
    static var passwordLabel: String { tr("Password") }
    static var enterPIN: String { tr("Enter your PIN.") }
    static var enterPassword: String { tr("Enter your account password.") }
    static var checking: String { tr("Checking.") }

    // The outcomes the agent says itself
    static var cancelled: String { tr("Cancelled. Nothing was counted.") }
    static var brokerUnreachable: String { tr("The fingerseal service is not running, so fingerprint unlock is not available.") }
    static var brokerEnded: String { SharedMessages.serviceEnded }

    // Mistaken calls (D-Bus errors)
    static var noDisplay: String {
        tr("There is no display to show the dialog on. Ask with the option prompt set to app, and show the status yourself.")
    }
    static var otherUser: String { tr("The fingerseal agent answers only programs of its own user.") }
    static var unknownCaller: String { tr("The fingerseal agent could not tell which program is asking.") }
    static var badContext: String {
        tr("A context is 1 to 64 letters, digits, dots, dashes or underscores, not starting with a dot.")
    }
    static func badOption(_ name: String) -> String { tr("The option %1$s has a value of the wrong kind.", name) }
    static var badMethods: String { tr("The option methods names only finger, pin and password.") }
    static var notYourRequest: String { tr("This request belongs to another program.") }
    static var noQuestion: String { tr("The request is not waiting for an answer.") }
    static var noOtherWay: String { tr("The request does not offer that way now.") }
    static var nothingToTake: String { tr("The request has nothing to take: it did not succeed, or it was taken already.") }
    static var badSecret: String { tr("The answer could not be read from the descriptor, or it is longer than 1024 bytes.") }
    static var badSealedFile: String { tr("The sealed file could not be read from the descriptor, or it is too large.") }
    static var tooManyRequests: String { tr("This program has too many requests open. Wait for one to end.") }
}
