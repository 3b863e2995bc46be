/// Step-up contexts and how long a confirmation may last. The confirmations themselves live
/// in the broker's memory, per user and login session (design §3).
public enum StepUp {
    public static let defaultTTL = 300
    public static let maxTTL = 24 * 3600

    /// Context names: 1 to 64 of a-z A-Z 0-9 . - _, not starting with a dot.
    public static func isValidContext(_ context: String) -> Bool {
        (1...64).contains(context.utf8.count) && context.utf8.allSatisfy(isNameByte) && !context.hasPrefix(".")
    }
}

func isNameByte(_ byte: UInt8) -> Bool {
    (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x30 && byte <= 0x39)
        || byte == 0x2e || byte == 0x2d || byte == 0x5f
}
