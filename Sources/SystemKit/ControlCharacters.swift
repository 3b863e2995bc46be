/// The control characters: C0 (U+0000–U+001F), DEL (U+007F) and C1 (U+0080–U+009F). In a
/// caller's text a line break forges a second line of a log, and an escape (or C1's CSI)
/// drives the terminal of whoever reads the log, the audit trail or a sentence quoting it.
/// One definition for every place that keeps them out: the wire refuses them in a request
/// (`Request.fieldWithControlCharacters`), syslog lines escape them (`Syslog.log`), the audit
/// trail blanks them. Also built into the PAM module (scripts/build-module), Embedded Swift.
public enum ControlCharacters {
    public static func contains(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7f...0x9f).contains(scalar.value)
    }

    /// The bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069):
    /// not controls, but in a caller's text they reorder what follows it on the screen (a
    /// name could make the words after it read backwards), so text shown beside others'
    /// leaves them out too.
    public static func isBidiControl(_ scalar: Unicode.Scalar) -> Bool {
        (0x202a...0x202e).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value)
    }

    /// Whether `text` holds one.
    public static func found(in text: String) -> Bool { text.unicodeScalars.contains(where: contains) }

    /// `text` with each one written as `\xHH` (its code point in hex), so that a line stays
    /// one line and shows what was there. A backslash is written so too, so that a caller's
    /// literal "\x0a" never reads as an escaped line break; other text is returned as it is.
    public static func escaped(_ text: String) -> String {
        let escapes = { (scalar: Unicode.Scalar) in contains(scalar) || scalar == "\\" }
        guard text.unicodeScalars.contains(where: escapes) else { return text }
        let digits = Array("0123456789abcdef".unicodeScalars)
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            guard escapes(scalar) else {
                out.append(scalar)
                continue
            }
            out.append(contentsOf: ["\\", "x", digits[Int(scalar.value >> 4)], digits[Int(scalar.value & 0xf)]])
        }
        return String(out)
    }
}
