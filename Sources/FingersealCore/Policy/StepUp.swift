/// How long a step-up confirmation may last (the context rule is `StepUpRules`, which every
/// client checks too). The confirmations themselves live in the broker's memory, per user
/// and login session (design §3).
public enum StepUp {
    public static let defaultTTL = 300
    public static let maxTTL = 24 * 3600
}
