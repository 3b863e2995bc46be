import Localization

/// The fingerprint readers: scan prompts and hints, the readers' errors, enrolled fingers, fprintd.
/// The sentences only the broker says are in the broker
/// (Sources/Broker/Messages/ReaderMessages.swift).
extension Messages {
    // Readers
    public static var noReader: String { tr("No fingerprint reader is connected.") }
    public static func noSuchReader(_ id: String) -> String { tr("There is no reader with the id %1$s. Run: fingerseal devices", id) }
    public static func placeFinger(swipe: Bool) -> String {
        swipe ? tr("Swipe your finger across the reader.") : tr("Place your finger on the reader.")
    }
    /// The scan prompt with how to get out of it, as one whole sentence per combination.
    public static func placeFinger(swipe: Bool, cancelHint: ScanHint) -> String {
        switch (swipe, cancelHint) {
        case (false, .none): return tr("Place your finger on the reader.")
        case (true, .none): return tr("Swipe your finger across the reader.")
        case (false, .pressCtrlC): return tr("Place your finger on the reader, or press Ctrl-C to cancel.")
        case (true, .pressCtrlC): return tr("Swipe your finger across the reader, or press Ctrl-C to cancel.")
        case (false, .pressCtrlCForPassword): return tr("Place your finger on the reader, or press Ctrl-C to use your password.")
        case (true, .pressCtrlCForPassword): return tr("Swipe your finger across the reader, or press Ctrl-C to use your password.")
        case (false, .orUsePassword): return tr("Place your finger on the reader, or use your password.")
        case (true, .orUsePassword): return tr("Swipe your finger across the reader, or use your password.")
        case (false, .fingerOrPIN):
            return tr("Place your finger on the reader, or type your PIN and press Enter. Enter alone goes straight to the PIN.")
        case (true, .fingerOrPIN):
            return tr("Swipe your finger across the reader, or type your PIN and press Enter. Enter alone goes straight to the PIN.")
        case (false, .orTypePIN): return tr("Place your finger on the reader, or type your PIN.")
        case (true, .orTypePIN): return tr("Swipe your finger across the reader, or type your PIN.")
        }
    }
    public static func enrollProgress(_ done: Int, _ total: Int, swipe: Bool) -> String {
        done >= total ? tr("Scan %1$s of %2$s done.", done, total)
            : swipe ? tr("Scan %1$s of %2$s done. Swipe your finger again.", done, total)
            : tr("Scan %1$s of %2$s done. Lift your finger and place it again.", done, total)
    }
    public static var hintGeneral: String { tr("The scan did not work. Try again.") }
    public static var hintTooShort: String { tr("The swipe was too short. Swipe your finger again.") }
    public static var hintCenter: String { tr("Your finger was not centred on the reader. Centre it and try again.") }
    public static var hintRemove: String { tr("Remove your finger from the reader, then try again.") }
    public static var noMatch: String { tr("The fingerprint did not match.") }
    public static var noMatchTryAgain: String { tr("The fingerprint did not match. Try again.") }
    public static var scanTimedOut: String { tr("No finger was scanned in time.") }
    public static var readerRemoved: String { tr("The fingerprint reader was disconnected.") }
    public static func readerFailed(_ detail: String) -> String { tr("The fingerprint reader reported an error: %1$s.", embedded(detail)) }
    public static var readerUnexpectedResult: String { tr("The fingerprint reader reported an error: unexpected result.") }
    public static func readerErrorCode(_ code: String) -> String { tr("The fingerprint reader reported an error: code %1$s.", code) }
    public static func readerDoesNotSupport(_ what: String) -> String { tr("The fingerprint reader reported an error: it does not support %1$s.", what) }
    public static var readerBusy: String { tr("The fingerprint reader is busy. Try again in a moment.") }
    public static var notEnrolled: String { tr("No finger is enrolled. Run: fingerseal enroll") }
    /// The question a PAM host is asked while the reader waits (prompt=combined with the PIN,
    /// or a host without Ctrl-C): the one sentence of its prompt, which says it all, the
    /// reader's way of taking the finger included (a host may show only prompts).
    public static func fingerOrPINPrompt(swipe: Bool) -> String {
        swipe ? tr("Swipe your finger across the reader and press Enter, or type your PIN: ")
            : tr("Place your finger on the reader and press Enter, or type your PIN: ")
    }
    /// The same with no PIN to type: Enter alone goes on to the password.
    public static func fingerThenEnterPrompt(swipe: Bool) -> String {
        swipe ? tr("Swipe your finger across the reader and press Enter, or press Enter alone for your password: ")
            : tr("Place your finger on the reader and press Enter, or press Enter alone for your password: ")
    }

    // fprintd holds the templates (reader=fprintd, or auto with fprintd on the system bus).
    public static var fingersChanged: String { tr("The fingers enrolled for you in fprintd changed since your PIN last confirmed them, so a finger unlocks again only after you enter your PIN once.") }
    public static var fingersConfirmed: String { tr("Your PIN confirmed the fingers now enrolled in fprintd; they unlock fingerseal again.") }
    public static var anyFprintdFinger: String { tr("a finger enrolled in fprintd") }
    public static func notEnrolledHere(_ finger: String) -> String {
        tr("The finger %1$s was enrolled with another program (your desktop's settings or fprintd-enroll), so fingerseal does not delete it. Remove it there; fingerseal then asks for your PIN once to confirm the change.", finger)
    }
    public static var fprintdUnavailable: String { tr("fprintd, which owns the fingerprint reader on this computer, cannot be reached.") }
    public static var lidClosed: String { tr("The lid is closed, so the built-in fingerprint reader is not used.") }
    public static var noCompatiblePrints: String { tr("None of your enrolled fingers were enrolled on this reader. Run: fingerseal enroll") }
    public static func alreadyEnrolled(_ finger: String) -> String {
        tr("The finger %1$s is already enrolled. To enroll it again, first run: fingerseal forget %1$s", finger)
    }
    public static var duplicateFinger: String { tr("The reader already holds this finger, stored by another program (fprintd, another operating system or another user). Enroll a different finger, or remove that print with the program that stored it.") }
    public static var readerStorageFull: String { tr("The reader's storage is full. fingerseal never deletes other programs' prints to make room: remove prints you no longer need with the program that stored them, then enroll again.") }
    public static func notEnrolledFinger(_ finger: String) -> String { tr("The finger %1$s is not enrolled.", finger) }
    public static var onDeviceTemplateLeft: String { tr("The reader is not connected, so its stored copy of the print could not be deleted. Run fingerseal forget again with the reader connected to delete it.") }
}
