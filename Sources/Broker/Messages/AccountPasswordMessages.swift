import FingersealCore
import Localization

/// The account password: when its place in the day asks for it, and the service checking it with
/// PAM. Only the broker says these; those the core, the flows or the tests say too are public in
/// FingersealCore (Support/Messages/AccountPasswordMessages.swift).
extension Messages {
    // The account password (checked by the service with PAM, service fingerseal-verify).
    static var accountPasswordNeeded: String { tr("This needs your account password (the one you sign in to this computer with).") }
    static var resetWithAccountPassword: String { tr("To delete the vault without the PIN, give your account password.") }
    static var passwordEmptyInput: String { tr("No password was given.") }
}
