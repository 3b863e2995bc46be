/// What every program checks of a step-up the same way (the broker, the CLI's options, the
/// agent's arguments), so that a mistake is answered before anyone is asked anything and no
/// client takes what the broker refuses.
public enum StepUpRules {
    /// A context's name: 1 to 64 of a-z A-Z 0-9 . - _, not starting with a dot.
    public static func isValidContext(_ context: String) -> Bool {
        (1...64).contains(context.utf8.count) && !context.hasPrefix(".") && context.utf8.allSatisfy { byte in
            (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x30 && byte <= 0x39)
                || byte == 0x2e || byte == 0x2d || byte == 0x5f
        }
    }

    /// The oldest confirmation held that may still answer, in seconds (max-age, max_age).
    public static let maxAge: ClosedRange<Int> = 1...86_400
}
