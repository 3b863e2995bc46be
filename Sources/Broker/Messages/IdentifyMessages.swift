import FingersealCore
import Localization

/// Touch to sign in (identify). Only the broker says these; those the core, the flows or the tests
/// say too are public in FingersealCore (Support/Messages/IdentifyMessages.swift).
extension Messages {
    // Touch to sign in (identify)
    static var identifyNotOnThisReader: String { tr("This fingerprint reader cannot tell whose finger it is. Type your user name to sign in.") }
    static var identifyAlreadyOn: String { tr("Touch to sign in is already on for your account.") }
    static var identifyAlreadyOff: String { tr("Touch to sign in is already off for your account.") }
}
