import FingersealCore
import Localization

/// Who may run a command, and the command lines the service checks. Only the broker says these;
/// those the core, the flows or the tests say too are public in FingersealCore
/// (Support/Messages/CommandMessages.swift).
extension Messages {
    static var onlyRootNamesUser: String { tr("Only root can act for another user.") }
    static var notYourAccount: String { tr("You can act only for your own account.") }
    static func rigOnly(_ group: String) -> String {
        tr("Only root and members of the group %1$s can use this command, because it reads biometric data or changes the reader.", group)
    }

    // Command lines the service checks.
    static var noFingerEnrolled: String { tr("No finger is enrolled.") }
    static var everyFingerEnrolled: String { tr("Every finger is already enrolled. To enroll one again, first run: fingerseal forget FINGER") }
    static func verifyMatch(_ finger: String, _ milliseconds: Double) -> String {
        tr("Match: %1$s, in %2$s milliseconds.", finger, milliseconds)
    }
    static func commandAfterDashes(_ context: String) -> String {
        tr("Put the command to run after --, for example: fingerseal step-up %1$s -- COMMAND", context)
    }
    static var noClientSecret: String { tr("No client secret was given.") }
}
