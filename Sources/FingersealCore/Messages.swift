/// Every sentence a person sees, in one table: plain sentences a screen reader can speak,
/// meaning never in colour or symbols alone. (Translation catalogs hook in here.)
public enum Messages {
    // Vault
    public static let noVault = "Fingerseal is not set up for this account. Run: fingerseal pin set"
    public static let vaultExists = "A PIN is already set. To change it, run: fingerseal pin change"
    public static let vaultReplaced = "The vault was replaced by another program while in use. Run the command again."
    public static func vaultDamaged(_ file: String, _ why: String) -> String {
        "The fingerseal file \(file) cannot be used: \(why). It was left unchanged."
    }
    public static func unsafeFile(_ why: String) -> String {
        "Fingerseal refused to use its files because \(why). Fix the ownership or permissions, or remove the file."
    }
    public static let vaultBusy = "Another fingerseal program is using the vault. Try again in a moment."
    public static func systemFailure(_ what: String) -> String { "Fingerseal could not \(what)." }
    public static let secureMemory = "Fingerseal could not allocate protected memory for secrets."

    // PIN
    public static let enterPIN = "PIN: "
    public static let enterOldPIN = "Current PIN: "
    public static let enterNewPIN = "New PIN: "
    public static let repeatNewPIN = "Repeat the new PIN: "
    public static let wrongPIN = "The PIN is not correct."
    public static let pinMismatch = "The two PINs are not the same. Nothing was changed."
    public static func pinTooShort(_ minimum: Int) -> String { "The PIN must have at least \(minimum) characters." }
    public static func pinTooLong(_ maximum: Int) -> String { "The PIN must have at most \(maximum) characters." }
    public static let pinEmptyInput = "No PIN was given."
    public static func pinWait(_ seconds: Int64) -> String {
        "Too many wrong PINs. Wait \(seconds) seconds, then try again."
    }
    public static let pinLocked = "The PIN is locked after too many wrong tries. Sign in again with: fingerseal login"
    public static let pinSet = "The PIN is set. Fingerseal is ready."
    public static let pinChanged = "The PIN is changed."
    public static let noDeviceSlot = "The device key is missing or damaged; only the PIN can unlock the vault. Changing the PIN repairs it."
    public static let fingerLocked = "Fingerprint unlock is locked after too many failed scans. Use your PIN or password."

    // Reset
    public static let resetConfirm = "This deletes the fingerseal vault for this account, with its PIN, enrolled fingers and sign-in. Type yes to continue: "
    public static let resetDone = "The fingerseal vault is deleted."
    public static let resetNothing = "There is no fingerseal vault for this account. Nothing was deleted."
    public static let resetCancelled = "Nothing was deleted."

    // Input
    public static let cancelled = "Cancelled."
    public static let noTerminal = "No terminal to read from. Use --pin-fd to pass the PIN from a file descriptor."

    // Configuration
    public static func badOption(_ option: String, _ why: String) -> String { "The option \(option) is not valid: \(why)." }
    public static func unknownOption(_ option: String) -> String { "Unknown option \(option) was ignored." }
    public static let unknownUser = "That user does not exist."
}
