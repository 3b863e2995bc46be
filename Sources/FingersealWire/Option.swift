/// One option as both ends know it: its name on the command line, its field on the wire, and
/// what its value must be.
public struct Option: Equatable, Sendable {
    public enum Value: Equatable, Sendable {
        case flag
        case text
        /// A whole number in the range, sent in its canonical spelling.
        case number(ClosedRange<Int>)
        case choice([String])
    }

    public let name: String
    /// The wire field, without its `opt.` prefix.
    public let field: String
    public let value: Value

    init(_ name: String, field: String, _ value: Value) {
        self.name = name
        self.field = field
        self.value = value
    }

    var key: String { OptionValues.prefix + field }
}

extension Option {
    // Every command of the CLI.
    public static let user = Option("--user", field: "user", .text)
    // Output.
    public static let json = Option("--json", field: "json", .flag)
    // Scanning: which reader, how long to wait for a finger.
    public static let device = Option("--device", field: "device", .text)
    public static let scanTimeout = Option("--timeout", field: "timeout", .number(1...600))
    // Answers: the broker knows only that they come from a descriptor, never which.
    public static let pinFD = Option("--pin-fd", field: "pin-fd", .flag)
    // reset
    public static let yes = Option("--yes", field: "yes", .flag)
    // login
    public static let issuer = Option("--issuer", field: "issuer", .text)
    public static let clientID = Option("--client-id", field: "client-id", .text)
    /// The CLI read a client secret from `--client-secret-file` and answers the broker's ask.
    public static let clientSecret = Option("--client-secret-file", field: "client-secret", .flag)
    public static let scope = Option("--scope", field: "scope", .text)
    public static let flow = Option("--flow", field: "flow", .choice(["device", "password", "browser"]))
    public static let idpUser = Option("--idp-user", field: "idp-user", .text)
    public static let noQR = Option("--no-qr", field: "no-qr", .flag)
    public static let noBrowser = Option("--no-browser", field: "no-browser", .flag)
    public static let browserTimeout = Option("--timeout", field: "timeout", .number(1...86_400))
    public static let redirectPort = Option("--redirect-port", field: "redirect-port", .number(1024...65_535))
    // unlock
    public static let printToken = Option("--print-token", field: "print-token", .flag)
    public static let exec = Option("--exec", field: "exec", .flag)
    public static let pin = Option("--pin", field: "pin", .flag)
    // token
    public static let minValid = Option("--min-valid", field: "min-valid", .number(0...86_400))
    // proof
    /// A resource server's `DPoP-Nonce` (RFC 9449 §9), for the proof to carry.
    public static let nonce = Option("--nonce", field: "nonce", .text)
    // step-up, reveal
    public static let ttl = Option("--ttl", field: "ttl", .number(1...86_400))
    /// The oldest confirmation held that still answers, in seconds (iOS's allowable reuse
    /// duration); an older one, or none, asks again.
    public static let maxAge = Option("--max-age", field: "max-age", .number(StepUpRules.maxAge))
    public static let fresh = Option("--fresh", field: "fresh", .flag)
    public static let check = Option("--check", field: "check", .flag)
    public static let end = Option("--end", field: "end", .flag)
    /// `step-up CONTEXT -- COMMAND`: the CLI runs COMMAND while the connection lasts.
    public static let command = Option("--command", field: "command", .flag)
    public static let noNotice = Option("--no-notice", field: "no-notice", .flag)
    // seal
    public static let context = Option("--context", field: "context", .text)
    // the reader
    public static let finger = Option("--finger", field: "finger", .text)
    public static let all = Option("--all", field: "all", .flag)
    /// capture: only for the broker's sentence ("Saved … to FILE"); it never opens it.
    public static let out = Option("--out", field: "out", .text)
    // audit
    public static let verify = Option("--verify", field: "verify", .flag)
    /// `account expire`: judge as if this many days had passed (what a test or an
    /// administrator checking the rule asks).
    public static let daysAhead = Option("--days-ahead", field: "days-ahead", .number(0...36_500))
    // keyring on
    /// Seal the password even though the vault is not sealed to the TPM (a stolen disk then
    /// gives it up): the person's own say-so, as `keyring_without_tpm=` is the administrator's.
    public static let withoutTPM = Option("--without-tpm", field: "without-tpm", .flag)
    // doctor
    /// The PAM service whose settings in force the broker reports (the broker checks the name).
    public static let service = Option("--service", field: "service", .text)
}

extension Option {
    /// `text` as this option's number, or why not.
    public func number(_ text: String) throws(OptionError) -> Int {
        guard case let .number(range) = value else { throw .takesNoValue(name) }
        guard text.utf8.count <= 20, let number = Int(text), range.contains(number) else { throw .number(name, range) }
        return number
    }

    /// `text` as one of this option's choices, or why not.
    public func choice(_ text: String) throws(OptionError) -> String {
        guard case let .choice(choices) = value else { throw .takesNoValue(name) }
        guard choices.contains(text) else { throw .choice(name, choices) }
        return text
    }
}
