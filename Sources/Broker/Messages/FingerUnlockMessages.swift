import FingersealCore
import Localization

/// Fingerprint unlock, the person's own switch (fingerseal on / off). Only the broker says these;
/// those the core, the flows or the tests say too are public in FingersealCore
/// (Support/Messages/FingerUnlockMessages.swift).
extension Messages {
    // Fingerprint unlock, the person's own switch (fingerseal on / off)
    /// `fingerUnlockTurnedOff` for an application's switch, which turns it back on itself (no
    /// command to name).
    static var fingerUnlockSwitchedOff: String { tr("Fingerprint unlock is off. Your vault and enrolled fingers are kept.") }
    static var fingerUnlockAlreadyOn: String { tr("Fingerprint unlock is already on.") }
    static var fingerUnlockAlreadyOff: String { tr("Fingerprint unlock is already off.") }
    static var statusFingerUnlockOn: String { tr("Fingerprint unlock is on.") }
    /// `statusFingerUnlockOff` on an application's settings page, whose switch turns it on (no
    /// command to name).
    static var settingFingerUnlockOff: String { tr("Fingerprint unlock is off, by your choice.") }
}
