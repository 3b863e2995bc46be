import Localization
import SharedMessages

/// Step-up confirmations and sealed data. The sentences only the broker says are in the broker
/// (Sources/Broker/Messages/StepUpMessages.swift).
extension Messages {
    // Step-up and sealed data
    public static var badContext: String { tr("A context name is 1 to 64 letters, digits, dots, dashes or underscores.") }
    public static var notSealedFile: String { tr("This is not a file sealed by fingerseal, or it is damaged.") }
    public static var sealedByAnotherVault: String { tr("This file was sealed with another fingerseal vault; this vault cannot open it.") }
    public static var sealedTampered: String { tr("This sealed file was changed after it was sealed, or its context was altered. Nothing was revealed.") }
    public static func sealedFor(_ context: String) -> String { tr("Sealed for the context %1$s.", context) }
    public static func tooLargeToSeal(_ limit: Int) -> String { SharedMessages.tooLargeToSeal(limitMiB: limit / (1024 * 1024)) }
    public static func cannotRead(_ path: String) -> String { SharedMessages.cannotRead(path) }
    public static func cannotWrite(_ path: String, _ why: String) -> String { SharedMessages.cannotWrite(path, why) }
    public static func cannotRun(_ command: String, _ why: String) -> String { SharedMessages.cannotRun(command, why) }
}
