import FingersealCore
import Localization

/// `fingerseal reset`: deleting the vault. Only the broker says these.
extension Messages {
    // Reset
    static var pinForReset: String { tr("Deleting the vault needs its PIN. If the PIN is forgotten, set a new one with: fingerseal pin reset") }
    static var resetConfirm: String { tr("This deletes the fingerseal vault for this account, with its PIN, enrolled fingers and sign-in. Type yes to continue: ") }
    static var resetDone: String { tr("The fingerseal vault is deleted.") }
    static var resetNothing: String { tr("There is no fingerseal vault for this account. Nothing was deleted.") }
    static var resetCancelled: String { tr("Nothing was deleted.") }
    /// What `reset` asks the person to type; the English word is always accepted too.
    static var confirmWord: String { tr("yes") }
}
