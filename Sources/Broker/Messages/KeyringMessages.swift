import FingersealCore
import Localization

/// The keyring, unlocked by the finger (issue 23 §1). Only the broker says these; those the core,
/// the flows or the tests say too are public in FingersealCore
/// (Support/Messages/KeyringMessages.swift).
extension Messages {
    // The keyring, unlocked by the finger (issue 23 §1).
    static var keyringNoServices: String { tr("No sign-in service hands it on yet: your administrator lists them in keyring_services= in fingerseal.conf.") }
    static var keyringTurnedOff: String { tr("Your account password is no longer kept in your vault. Your keyring stays locked after a finger or PIN sign-in.") }
    static var keyringAlreadyOff: String { tr("Your account password is not kept in your vault.") }
    static var doctorKeyringNoServices: String { tr("Your account password is sealed for the keyring, but no sign-in service hands it on.") }
    static var doctorFixKeyringNoServices: String { tr("The administrator lists the services in keyring_services= in fingerseal.conf; or run: fingerseal keyring off") }
    static func doctorKeyring(_ services: [String]) -> String {
        tr("Your account password is sealed for the keyring and handed on at sign-in by: %1$s.", services.joined(separator: ", "))
    }
}
