import FingersealCore
import Localization

/// Applications that ask through the session agent. Only the broker says these.
extension Messages {
    // Applications (through the session agent)
    static var passwordInstead: String { tr("Enter your account password instead of a finger or the PIN.") }
    static var noReaderEnterPassword: String { tr("No fingerprint reader is connected. Enter your account password.") }
    static var passwordOnlyForApplications: String { tr("Only an application's dialog may use the account password in place of a finger or the PIN.") }
    static var badApplication: String { tr("The session agent sent a description of the application that fingerseal cannot use.") }
    static func notFromThisProgram(_ command: String) -> String { tr("This program cannot ask for %1$s.", command) }
}
