import FingersealCore
import Localization

/// The PIN: its prompts, its checks and lockout, setting, changing and resetting it. Only the
/// broker says these; those the core, the flows or the tests say too are public in FingersealCore
/// (Support/Messages/PINMessages.swift).
extension Messages {
    // PIN
    static var enterPIN: String { tr("PIN: ") }
    static var enterOldPIN: String { tr("Current PIN: ") }
    static var enterNewPIN: String { tr("New PIN: ") }
    static var repeatNewPIN: String { tr("Repeat the new PIN: ") }
    static var pinMismatch: String { tr("The two PINs are not the same. Nothing was changed.") }
    static var pinEmptyInput: String { tr("No PIN was given.") }
    static var pinSet: String { tr("The PIN is set. Fingerseal is ready.") }
    static var pinChanged: String { tr("The PIN is changed.") }

    // pin reset (a forgotten PIN)
    static var pinResetDone: String { tr("The new PIN is set. Your enrolled fingers and sign-in are kept.") }
    static var pinResetNoDevice: String { tr("The vault cannot be opened without the PIN: its device key is missing or does not match the enrolled fingers. To start again, delete the vault with: fingerseal reset") }
}
