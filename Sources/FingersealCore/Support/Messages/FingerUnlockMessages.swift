import Localization

/// Fingerprint unlock, the person's own switch (fingerseal on / off). The sentences only the broker
/// says are in the broker (Sources/Broker/Messages/FingerUnlockMessages.swift).
extension Messages {
    // Fingerprint unlock, the person's own switch (fingerseal on / off)
    public static var fingerUnlockOff: String { tr("Fingerprint unlock is off for your account, by your choice. Use your PIN or password; fingerseal on turns it back on.") }
    public static var fingerUnlockTurnedOff: String { tr("Fingerprint unlock is off. Your vault and enrolled fingers are kept; fingerseal on turns it back on.") }
    public static var fingerUnlockTurnedOn: String { tr("Fingerprint unlock is on again.") }
    public static var statusFingerUnlockOff: String { tr("Fingerprint unlock is off, by your choice. Run: fingerseal on") }
}
