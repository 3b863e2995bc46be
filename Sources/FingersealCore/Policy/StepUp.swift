/// Step-up contexts and how long a confirmation may last. The confirmations themselves live
/// in the broker's memory, per user and login session (design §3).
public enum StepUp {
    public static let defaultTTL = 300
    public static let maxTTL = 24 * 3600

    /// Context names: `StepUpRules.isValidContext`, the rule every client checks too.
    public static func isValidContext(_ context: String) -> Bool { StepUpRules.isValidContext(context) }
}
