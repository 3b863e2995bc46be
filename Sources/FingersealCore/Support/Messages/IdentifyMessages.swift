import Localization

/// Touch to sign in (identify). The sentences only the broker says are in the broker
/// (Sources/Broker/Messages/IdentifyMessages.swift).
extension Messages {
    // Touch to sign in (identify)
    /// The identify scan's prompt, one whole sentence per reader and host.
    public static func identifyPrompt(swipe: Bool, cancelHint: ScanHint) -> String {
        let ctrlC = cancelHint == .pressCtrlC || cancelHint == .pressCtrlCForPassword
        switch (swipe, ctrlC) {
        case (false, false): return tr("Touch the fingerprint reader to sign in.")
        case (true, false): return tr("Swipe your finger across the reader to sign in.")
        case (false, true): return tr("Touch the fingerprint reader to sign in, or press Ctrl-C to type your user name.")
        case (true, true): return tr("Swipe your finger across the reader to sign in, or press Ctrl-C to type your user name.")
        }
    }
    public static var identifyNoMatch: String { tr("No account was found for this finger. Type your user name to sign in.") }
    public static var identifyAmbiguous: String { tr("This finger matches more than one account, so nobody was signed in. Type your user name to sign in.") }
    public static func identifyPaused(minutes: Int) -> String {
        trn("Touch to sign in is paused for %1$s minute after several unknown fingers. Type your user name to sign in.",
            "Touch to sign in is paused for %1$s minutes after several unknown fingers. Type your user name to sign in.", minutes, minutes)
    }
    public static var identifyLocked: String {
        tr("Touch to sign in is off after too many unknown fingers, until someone signs in with their user name. Type your user name to sign in.")
    }
    public static var identifyDailyLimit: String {
        tr("Touch to sign in is off for the rest of the day after too many unknown fingers. Type your user name to sign in.")
    }
    public static var identifyNotWithFprintd: String { tr("Touch to sign in is not available when fprintd runs the reader. Type your user name to sign in.") }
    public static var identifyOnlyForSystemHosts: String { tr("Touch to sign in is only for the system's own login screens.") }
    public static var identifyTurnedOn: String { tr("Touch to sign in is on for your account: where a login screen offers it, touching the reader signs you in without your user name.") }
    public static var statusIdentifyOn: String { tr("Touch to sign in is on for your account.") }
    public static var identifyTurnedOff: String { tr("Touch to sign in is off for your account.") }
    public static var identifyNeedsFinger: String { tr("Touch to sign in needs an enrolled finger. Run: fingerseal enroll") }
}
