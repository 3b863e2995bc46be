import Localization

/// The PIN: its prompts, its checks and lockout, setting, changing and resetting it. The sentences
/// only the broker says are in the broker (Sources/Broker/Messages/PINMessages.swift).
extension Messages {
    // PIN
    public static var wrongPIN: String { tr("The PIN is not correct.") }
    public static func pinTooShort(_ minimum: Int) -> String { tr("The PIN must have at least %1$s characters.", minimum) }
    public static func pinTooLong(_ maximum: Int) -> String { tr("The PIN must have at most %1$s characters.", maximum) }
    public static var pinChecksBusy: String { tr("The service is checking too many PINs at once. Try again in a moment.") }
    public static func pinWait(_ seconds: Int64) -> String {
        trn("Too many wrong PINs. Wait %1$s second, then try again.", "Too many wrong PINs. Wait %1$s seconds, then try again.", Int(clamping: seconds), seconds)
    }
    public static var pinLocked: String { tr("The PIN is locked after too many wrong tries. Sign in again with: fingerseal login") }
    public static var noDeviceSlot: String { tr("The device key is missing or damaged; only the PIN can unlock the vault. Changing the PIN repairs it.") }
    public static var fingerLocked: String { tr("Fingerprint unlock is locked after too many failed scans. Use your PIN or password.") }
    public static var pinNeeded: String { tr("This change needs your PIN.") }
}
