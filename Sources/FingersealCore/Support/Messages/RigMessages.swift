import Localization

/// The rig commands: capture and the reader's self-test. The sentences only the broker says are in
/// the broker (Sources/Broker/Messages/RigMessages.swift).
extension Messages {
    // Rig commands
    /// The self-test's closing sentence when a step failed; `why` is that step's sentence.
    public static func selftestFailed(_ step: String, _ why: String) -> String {
        tr("The self-test failed at %1$s: %2$s.", selftestStepName(step), embedded(why))
    }
    /// A self-test step's name (the JSON keeps the English word).
    public static func selftestStepName(_ step: String) -> String {
        switch step {
        case "open": return tr("open")
        case "enroll": return tr("enroll")
        case "verify": return tr("verify")
        case "delete": return tr("delete")
        case "close": return tr("close")
        default: return step
        }
    }
    /// One line per self-test step as it finishes.
    public static func selftestStep(_ step: String, failure: String?, milliseconds: Double) -> String {
        guard let failure else { return tr("%1$s: passed (%2$s ms)", selftestStepName(step), milliseconds) }
        return tr("%1$s: failed: %2$s (%3$s ms)", selftestStepName(step), failure, milliseconds)
    }
}
