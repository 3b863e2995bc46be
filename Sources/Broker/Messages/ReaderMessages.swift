import FingersealCore
import Localization

/// The fingerprint readers: scan prompts and hints, the readers' errors, enrolled fingers, fprintd.
/// Only the broker says these; those the core, the flows or the tests say too are public in
/// FingersealCore (Support/Messages/ReaderMessages.swift).
extension Messages {
    // Readers
    static var readerOperationCancelled: String { tr("The fingerprint reader reported an error: the operation was cancelled.") }
    static var enrollGaveNoPrint: String { tr("The fingerprint reader reported an error: enrollment gave no print.") }

    // fprintd holds the templates (reader=fprintd, or auto with fprintd on the system bus).
    static var fingersBound: String { tr("The fingers enrolled for you in fprintd now unlock fingerseal.") }
    static var nothingForgottenAtFprintd: String { tr("fingerseal enrolled no finger in fprintd, so none was deleted. Fingers enrolled with other programs are removed there.") }
    static var needsDirectReader: String { tr("fprintd owns the fingerprint reader on this computer, so this command cannot drive it directly. Stop fprintd and set reader=libfprint in the configuration to use it.") }
    static func enrolled(_ finger: String) -> String { tr("Enrolled %1$s.", fingerName(finger)) }
    static func forgotten(_ fingers: [String]) -> String {
        fingers.isEmpty ? tr("No finger was enrolled.")
            : trn("Forgot %1$s.", "Forgot these fingers: %1$s.", fingers.count, fingers.map(fingerName).joined(separator: ", "))
    }
    /// A finger as a person says it, for fprintd's name of it ("right-index-finger"); a name
    /// that is none of the ten stays as it is. Command lines and --json keep fprintd's names.
    static func fingerName(_ name: String) -> String {
        switch name {
        case "left-thumb": return tr("left thumb")
        case "left-index-finger": return tr("left index finger")
        case "left-middle-finger": return tr("left middle finger")
        case "left-ring-finger": return tr("left ring finger")
        case "left-little-finger": return tr("left little finger")
        case "right-thumb": return tr("right thumb")
        case "right-index-finger": return tr("right index finger")
        case "right-middle-finger": return tr("right middle finger")
        case "right-ring-finger": return tr("right ring finger")
        case "right-little-finger": return tr("right little finger")
        default: return name
        }
    }
    static func unknownFinger(_ name: String) -> String {
        tr("Unknown finger %1$s. Use one of: left-thumb, left-index-finger, left-middle-finger, left-ring-finger, left-little-finger, right-thumb, right-index-finger, right-middle-finger, right-ring-finger, right-little-finger.", name)
    }
}
