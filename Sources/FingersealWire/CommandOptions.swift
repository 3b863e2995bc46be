/// Each command's options as one typed value, defined once for both ends (the shape of
/// swift-argument-parser's `@OptionGroup`): the CLI parses its command line into it and sends
/// it, the broker decodes it when the request is built, and both check it here, so a value
/// out of range or options that exclude each other are refused with the same `OptionError`
/// (and so the same sentence) whichever end finds them.
///
/// On the wire every option is one field with an explicit name, `opt.FIELD`: a flag as "1",
/// a value as its text. Field names never change with the command line's spelling.

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

/// Why a command's options were refused. Words come from one place that both ends link
/// (`OptionError.message`, in SharedMessages): this target has no catalog.
public enum OptionError: Error, Equatable, Sendable {
    /// An option this command does not take (its name, or `--FIELD` from the wire).
    case unknown(String)
    case takesNoValue(String)
    case needsValue(String)
    case number(String, ClosedRange<Int>)
    case choice(String, [String])
    // Options that exclude each other, and the positional arguments.
    case execAlone
    case unlockTakesNoArguments
    case stepUpNeedsContext
    case checkOrEndAlone
    case sealNeedsContext
    case sealOneFile
    case revealNeedsFile
    case forgetOneOrAll
    case accountRemoveOne
    case accountPurgeOne
    case accountHookOne
}

/// The options of one request as the wire carries them, unchecked: each field once.
public struct OptionValues: Equatable, Sendable {
    public struct Pair: Equatable, Sendable {
        public let field: String
        public let value: String
    }

    static let prefix = "opt."
    public private(set) var pairs: [Pair] = []

    public init() {}

    /// Sets `field` (replacing an earlier value): a client may send anything here; the
    /// broker checks it when it decodes the request.
    public mutating func set(field: String, _ value: String) {
        pairs.removeAll { $0.field == field }
        pairs.append(Pair(field: field, value: value))
    }

    public func value(field: String) -> String? {
        for pair in pairs where pair.field == field { return pair.value }
        return nil
    }

    func encode(into fields: inout WireFields) {
        for pair in pairs { fields.add(OptionValues.prefix + pair.field, pair.value) }
    }

    /// Every `opt.` field of a packet; one repeated is a malformed packet.
    static func decode(_ fields: WireFields) throws(WireError) -> OptionValues {
        var values = OptionValues()
        for pair in fields.pairs where pair.key.hasPrefix(prefix) {
            let field = String(pair.key.dropFirst(prefix.count))
            if values.value(field: field) != nil { throw .repeatedField(pair.key) }
            values.pairs.append(Pair(field: field, value: try Wire.text(pair.value, pair.key)))
        }
        return values
    }
}

/// Reads, writes or lists the options of a group: each group names every option it has once
/// (`OptionGroup.code`), and that one list is its decoder, its encoder and its option table.
public struct OptionCoder {
    enum Mode { case reading, writing, listing }
    let mode: Mode
    public private(set) var values: OptionValues
    public private(set) var accepted: [Option] = []

    init(_ mode: Mode, _ values: OptionValues = OptionValues()) {
        self.mode = mode
        self.values = values
    }

    public mutating func flag(_ value: inout Bool, _ option: Option) throws(OptionError) {
        accepted.append(option)
        switch mode {
        case .reading:
            guard let text = values.value(field: option.field) else { return }
            guard text == "1" else { throw .takesNoValue(option.name) }
            value = true
        case .writing:
            if value { values.set(field: option.field, "1") }
        case .listing:
            break
        }
    }

    public mutating func text(_ value: inout String?, _ option: Option) {
        accepted.append(option)
        switch mode {
        case .reading: value = values.value(field: option.field)
        case .writing: if let value { values.set(field: option.field, value) }
        case .listing: break
        }
    }

    public mutating func number(_ value: inout Int?, _ option: Option) throws(OptionError) {
        accepted.append(option)
        switch mode {
        case .reading:
            guard let text = values.value(field: option.field) else { return }
            value = try option.number(text)
        case .writing:
            if let value { values.set(field: option.field, String(value)) }
        case .listing:
            break
        }
    }

    public mutating func choice<Choice: RawRepresentable>(_ value: inout Choice?, _ option: Option) throws(OptionError)
        where Choice.RawValue == String {
        accepted.append(option)
        switch mode {
        case .reading:
            guard let text = values.value(field: option.field) else { return }
            guard let chosen = Choice(rawValue: try option.choice(text)) else { throw .unknown(option.name) }
            value = chosen
        case .writing:
            if let value { values.set(field: option.field, value.rawValue) }
        case .listing:
            break
        }
    }

    /// Every field read must be one of the group's options.
    func checkAllAccepted() throws(OptionError) {
        for pair in values.pairs where !accepted.contains(where: { $0.field == pair.field }) {
            throw .unknown("--" + pair.field)
        }
    }
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

/// A group of options: a command's, or one several commands share.
public protocol OptionGroup: Equatable, Sendable {
    init()
    /// Every option of the group, once.
    mutating func code(_ coder: inout OptionCoder) throws(OptionError)
    /// What no single option can say: options that exclude each other, and the positional
    /// arguments (the CLI's, the request's).
    func validate(arguments: [String]) throws(OptionError)
}

extension OptionGroup {
    public func validate(arguments: [String]) throws(OptionError) {}

    /// Decodes `values`, refusing any field that is not one of the group's options.
    public init(decoding values: OptionValues) throws(OptionError) {
        self.init()
        var coder = OptionCoder(.reading, values)
        try code(&coder)
        try coder.checkAllAccepted()
    }

    /// The group as the wire carries it.
    public var values: OptionValues {
        var copy = self
        var coder = OptionCoder(.writing)
        do { try copy.code(&coder) } catch {}
        return coder.values
    }

    /// The group's options, in the order it names them.
    public static var accepted: [Option] {
        var group = Self()
        var coder = OptionCoder(.listing)
        do { try group.code(&coder) } catch {}
        return coder.accepted
    }
}

// MARK: groups several commands share

public struct NoOptions: OptionGroup {
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {}
}

/// `--json`.
public struct OutputOptions: OptionGroup {
    public var json = false
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) { try coder.flag(&json, .json) }
}

/// `--device`, `--timeout` (1 to 600 seconds).
public struct ScanOptions: OptionGroup {
    public var device: String? = nil
    public var timeout: Int? = nil
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        coder.text(&device, .device)
        try coder.number(&timeout, .scanTimeout)
    }
}

/// `--pin-fd`: answers come from a descriptor (a new PIN is asked once, the PIN without a
/// scan first).
public struct AnswerOptions: OptionGroup {
    public var pinFromDescriptor = false
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) { try coder.flag(&pinFromDescriptor, .pinFD) }
}

/// `--json` and the scan options (`verify`, `selftest`).
public struct ScanReportOptions: OptionGroup {
    public var output = OutputOptions()
    public var scan = ScanOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        try output.code(&coder)
        try scan.code(&coder)
    }
}

/// `--json` and `--pin-fd` (`logout`).
public struct OutputAnswerOptions: OptionGroup {
    public var output = OutputOptions()
    public var answers = AnswerOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        try output.code(&coder)
        try answers.code(&coder)
    }
}

// MARK: each command's own

public struct ResetOptions: OptionGroup {
    public var yes = false
    public var answers = AnswerOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        try coder.flag(&yes, .yes)
        try answers.code(&coder)
    }
}

public struct LoginOptions: OptionGroup {
    public enum Flow: String, Sendable { case device, password, browser }
    public var issuer: String? = nil
    public var clientID: String? = nil
    public var clientSecret = false
    public var scope: String? = nil
    public var flow: Flow? = nil
    public var idpUser: String? = nil
    public var noQR = false
    public var noBrowser = false
    /// Browser flow: seconds to wait for the browser.
    public var timeout: Int? = nil
    public var redirectPort: Int? = nil
    public var answers = AnswerOptions()
    public var output = OutputOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        coder.text(&issuer, .issuer)
        coder.text(&clientID, .clientID)
        try coder.flag(&clientSecret, .clientSecret)
        coder.text(&scope, .scope)
        try coder.choice(&flow, .flow)
        coder.text(&idpUser, .idpUser)
        try coder.flag(&noQR, .noQR)
        try coder.flag(&noBrowser, .noBrowser)
        try coder.number(&timeout, .browserTimeout)
        try coder.number(&redirectPort, .redirectPort)
        try answers.code(&coder)
        try output.code(&coder)
    }
}

public struct UnlockOptions: OptionGroup {
    public var printToken = false
    public var exec = false
    public var pin = false
    public var output = OutputOptions()
    public var answers = AnswerOptions()
    public var scan = ScanOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        try coder.flag(&printToken, .printToken)
        try coder.flag(&exec, .exec)
        try coder.flag(&pin, .pin)
        try output.code(&coder)
        try answers.code(&coder)
        try scan.code(&coder)
    }
    /// With --exec the command to run stays with the CLI, so there are no arguments either way.
    public func validate(arguments: [String]) throws(OptionError) {
        if exec && (printToken || output.json) { throw .execAlone }
        if !exec && !arguments.isEmpty { throw .unlockTakesNoArguments }
    }
}

public struct TokenOptions: OptionGroup {
    /// Unlock again if the token expires sooner than this.
    public var minValid: Int? = nil
    public var output = OutputOptions()
    public var answers = AnswerOptions()
    public var scan = ScanOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        try coder.number(&minValid, .minValid)
        try output.code(&coder)
        try answers.code(&coder)
        try scan.code(&coder)
    }
}

public struct StepUpOptions: OptionGroup {
    public var ttl: Int? = nil
    public var maxAge: Int? = nil
    public var fresh = false
    public var check = false
    public var end = false
    public var command = false
    public var output = OutputOptions()
    public var answers = AnswerOptions()
    public var scan = ScanOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        try coder.number(&ttl, .ttl)
        try coder.number(&maxAge, .maxAge)
        try coder.flag(&fresh, .fresh)
        try coder.flag(&check, .check)
        try coder.flag(&end, .end)
        try coder.flag(&command, .command)
        try output.code(&coder)
        try answers.code(&coder)
        try scan.code(&coder)
    }
    /// The arguments: the context, then (the CLI's, never sent) the command to run.
    public func validate(arguments: [String]) throws(OptionError) {
        guard !arguments.isEmpty else { throw .stepUpNeedsContext }
        if check || end {
            let modes = [check, end, fresh].filter { $0 }.count
            guard modes == 1, !command, arguments.count == 1 else { throw .checkOrEndAlone }
        }
    }
}

public struct SealOptions: OptionGroup {
    public var context: String? = nil
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) { coder.text(&context, .context) }
    /// The arguments: at most the file to seal (the CLI reads it and sends none).
    public func validate(arguments: [String]) throws(OptionError) {
        guard context != nil else { throw .sealNeedsContext }
        guard arguments.count <= 1 else { throw .sealOneFile }
    }
}

public struct RevealOptions: OptionGroup {
    public var noNotice = false
    public var ttl: Int? = nil
    public var maxAge: Int? = nil
    public var answers = AnswerOptions()
    public var scan = ScanOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        try coder.flag(&noNotice, .noNotice)
        try coder.number(&ttl, .ttl)
        try coder.number(&maxAge, .maxAge)
        try answers.code(&coder)
        try scan.code(&coder)
    }
    /// The arguments: at most the sealed file (the CLI reads it and sends none).
    public func validate(arguments: [String]) throws(OptionError) {
        guard arguments.count <= 1 else { throw .revealNeedsFile }
    }
}

public struct EnrollOptions: OptionGroup {
    public var finger: String? = nil
    public var scan = ScanOptions()
    public var answers = AnswerOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        coder.text(&finger, .finger)
        try scan.code(&coder)
        try answers.code(&coder)
    }
}

public struct ForgetOptions: OptionGroup {
    public var all = false
    public var answers = AnswerOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        try coder.flag(&all, .all)
        try answers.code(&coder)
    }
    /// The arguments: one finger, or none with --all.
    public func validate(arguments: [String]) throws(OptionError) {
        guard all != (arguments.count == 1), arguments.count <= 1 else { throw .forgetOneOrAll }
    }
}

/// `account remove USER`: one account.
public struct AccountRemoveOptions: OptionGroup {
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {}
    public func validate(arguments: [String]) throws(OptionError) {
        guard arguments.count == 1 else { throw .accountRemoveOne }
    }
}

/// `account purge ID`: one vault set aside.
public struct AccountPurgeOptions: OptionGroup {
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {}
    public func validate(arguments: [String]) throws(OptionError) {
        guard arguments.count == 1 else { throw .accountPurgeOne }
    }
}

/// `account useradd NAME`, `account userdel NAME`: the account the hook names.
public struct AccountHookOptions: OptionGroup {
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {}
    public func validate(arguments: [String]) throws(OptionError) {
        guard arguments.count == 1 else { throw .accountHookOne }
    }
}

/// `account expire`: `--days-ahead`, `--json`.
public struct AccountExpireOptions: OptionGroup {
    public var daysAhead: Int? = nil
    public var output = OutputOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        try coder.number(&daysAhead, .daysAhead)
        try output.code(&coder)
    }
}

public struct CaptureOptions: OptionGroup {
    public var out: String? = nil
    public var scan = ScanOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        coder.text(&out, .out)
        try scan.code(&coder)
    }
}

public struct AuditOptions: OptionGroup {
    public var output = OutputOptions()
    public var verify = false
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        try output.code(&coder)
        try coder.flag(&verify, .verify)
    }
}

/// `keyring on --without-tpm`.
public struct KeyringOnOptions: OptionGroup {
    public var withoutTPM = false
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) { try coder.flag(&withoutTPM, .withoutTPM) }
}

/// `doctor --service NAME`.
public struct DoctorOptions: OptionGroup {
    public var service: String? = nil
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) { coder.text(&service, .service) }
}

// MARK: one request's

/// The options of one command, typed: which group is decided by the command alone.
public enum CommandOptions: Equatable, Sendable {
    /// A PAM request (module arguments instead), or a command without options of its own.
    case none(NoOptions)
    case output(OutputOptions)
    case answers(AnswerOptions)
    case outputAnswers(OutputAnswerOptions)
    case scanReport(ScanReportOptions)
    case reset(ResetOptions)
    case login(LoginOptions)
    case unlock(UnlockOptions)
    case token(TokenOptions)
    case stepUp(StepUpOptions)
    case seal(SealOptions)
    case reveal(RevealOptions)
    case enroll(EnrollOptions)
    case forget(ForgetOptions)
    case capture(CaptureOptions)
    case audit(AuditOptions)
    case accountRemove(AccountRemoveOptions)
    case accountPurge(AccountPurgeOptions)
    case accountHook(AccountHookOptions)
    case accountExpire(AccountExpireOptions)
    case doctor(DoctorOptions)
    case keyringOn(KeyringOnOptions)

    /// `command`'s options from `values`, each checked (`validate(arguments:)` checks them
    /// together).
    public init(_ command: Command, decoding values: OptionValues) throws(OptionError) {
        switch command {
        case .pamAuthenticate, .pamIdentify, .pamAccount, .pamOpenSession, .pamCloseSession, .pamPasswordUsed, .pamChauthtok:
            self = .none(try NoOptions(decoding: values))
        case .keyringOn: self = .keyringOn(try KeyringOnOptions(decoding: values))
        case .doctor: self = .doctor(try DoctorOptions(decoding: values))
        case .status, .devices, .fingers, .accountList: self = .output(try OutputOptions(decoding: values))
        case .accountRemove: self = .accountRemove(try AccountRemoveOptions(decoding: values))
        case .accountPurge: self = .accountPurge(try AccountPurgeOptions(decoding: values))
        case .accountUseradd, .accountUserdel: self = .accountHook(try AccountHookOptions(decoding: values))
        case .accountExpire: self = .accountExpire(try AccountExpireOptions(decoding: values))
        case .pinSet, .pinChange, .pinReset, .identifyOn, .identifyOff, .fingerOn, .fingerOff, .keyringOff:
            self = .answers(try AnswerOptions(decoding: values))
        case .logout: self = .outputAnswers(try OutputAnswerOptions(decoding: values))
        case .verify, .selftest: self = .scanReport(try ScanReportOptions(decoding: values))
        case .reset: self = .reset(try ResetOptions(decoding: values))
        case .login: self = .login(try LoginOptions(decoding: values))
        case .unlock: self = .unlock(try UnlockOptions(decoding: values))
        case .token: self = .token(try TokenOptions(decoding: values))
        case .stepUp: self = .stepUp(try StepUpOptions(decoding: values))
        case .seal: self = .seal(try SealOptions(decoding: values))
        case .reveal: self = .reveal(try RevealOptions(decoding: values))
        case .enroll: self = .enroll(try EnrollOptions(decoding: values))
        case .forget: self = .forget(try ForgetOptions(decoding: values))
        case .capture: self = .capture(try CaptureOptions(decoding: values))
        case .audit: self = .audit(try AuditOptions(decoding: values))
        }
    }

    /// The options the command takes.
    public var accepted: [Option] { visit(Accepted()) }

    public func validate(arguments: [String]) throws(OptionError) {
        if let error = visit(Validation(arguments: arguments)) { throw error }
    }

    /// The command's options as the wire carries them.
    public var values: OptionValues { visit(Encoding()) }

    /// The group `G`, when it is this command's (what a command's handler reads).
    public func group<G: OptionGroup>(_: G.Type) -> G? { visit(Cast<G>()) }

    /// The shared groups, whichever command has them (their defaults where it has none).
    public var output: OutputOptions {
        switch self {
        case let .output(group): group
        case let .outputAnswers(group): group.output
        case let .scanReport(group): group.output
        case let .login(group): group.output
        case let .unlock(group): group.output
        case let .token(group): group.output
        case let .stepUp(group): group.output
        case let .audit(group): group.output
        case let .accountExpire(group): group.output
        case .none, .answers, .reset, .seal, .reveal, .enroll, .forget, .capture, .accountRemove, .accountPurge, .accountHook, .doctor,
             .keyringOn:
            OutputOptions()
        }
    }

    public var scan: ScanOptions {
        switch self {
        case let .scanReport(group): group.scan
        case let .unlock(group): group.scan
        case let .token(group): group.scan
        case let .stepUp(group): group.scan
        case let .reveal(group): group.scan
        case let .enroll(group): group.scan
        case let .capture(group): group.scan
        case .none, .output, .answers, .outputAnswers, .reset, .login, .seal, .forget, .audit, .accountRemove, .accountPurge,
             .accountHook, .accountExpire, .doctor, .keyringOn:
            ScanOptions()
        }
    }

    public var answers: AnswerOptions {
        switch self {
        case let .answers(group): group
        case let .outputAnswers(group): group.answers
        case let .reset(group): group.answers
        case let .login(group): group.answers
        case let .unlock(group): group.answers
        case let .token(group): group.answers
        case let .stepUp(group): group.answers
        case let .reveal(group): group.answers
        case let .enroll(group): group.answers
        case let .forget(group): group.answers
        case .none, .output, .scanReport, .seal, .capture, .audit, .accountRemove, .accountPurge, .accountHook, .accountExpire, .doctor,
             .keyringOn:
            AnswerOptions()
        }
    }

    /// The one switch over the groups: what every command's group does alike, whichever it
    /// is (Swift has no generic closures; a visitor is the static way).
    func visit<V: GroupVisitor>(_ visitor: V) -> V.Result {
        switch self {
        case let .none(group): visitor.visit(group)
        case let .output(group): visitor.visit(group)
        case let .answers(group): visitor.visit(group)
        case let .outputAnswers(group): visitor.visit(group)
        case let .scanReport(group): visitor.visit(group)
        case let .reset(group): visitor.visit(group)
        case let .login(group): visitor.visit(group)
        case let .unlock(group): visitor.visit(group)
        case let .token(group): visitor.visit(group)
        case let .stepUp(group): visitor.visit(group)
        case let .seal(group): visitor.visit(group)
        case let .reveal(group): visitor.visit(group)
        case let .enroll(group): visitor.visit(group)
        case let .forget(group): visitor.visit(group)
        case let .capture(group): visitor.visit(group)
        case let .audit(group): visitor.visit(group)
        case let .accountRemove(group): visitor.visit(group)
        case let .accountPurge(group): visitor.visit(group)
        case let .accountHook(group): visitor.visit(group)
        case let .accountExpire(group): visitor.visit(group)
        case let .doctor(group): visitor.visit(group)
        case let .keyringOn(group): visitor.visit(group)
        }
    }
}

protocol GroupVisitor {
    associatedtype Result
    func visit<G: OptionGroup>(_ group: G) -> Result
}

private struct Accepted: GroupVisitor {
    func visit<G: OptionGroup>(_ group: G) -> [Option] { G.accepted }
}

private struct Validation: GroupVisitor {
    let arguments: [String]
    func visit<G: OptionGroup>(_ group: G) -> OptionError? {
        do throws(OptionError) {
            try group.validate(arguments: arguments)
            return nil
        } catch {
            return error
        }
    }
}

private struct Encoding: GroupVisitor {
    func visit<G: OptionGroup>(_ group: G) -> OptionValues { group.values }
}

private struct Cast<Wanted: OptionGroup>: GroupVisitor {
    func visit<G: OptionGroup>(_ group: G) -> Wanted? { group as? Wanted }
}

/// `--user` (every command of the CLI; the broker's authorization table decides who may
/// name another account) and the command's own options: a request's options, decoded once.
public struct RequestOptions: Equatable, Sendable {
    public var user: String? = nil
    public var command: CommandOptions

    /// Decodes and checks `values` for `command`, with the positional `arguments`: `--user`
    /// where the CLI has it, the rest the command's.
    public init(_ command: Command, decoding values: OptionValues, arguments: [String]) throws(OptionError) {
        var rest = OptionValues()
        for pair in values.pairs {
            if pair.field == Option.user.field && !command.isPAM { user = pair.value } else { rest.set(field: pair.field, pair.value) }
        }
        self.command = try CommandOptions(command, decoding: rest)
        try self.command.validate(arguments: arguments)
    }

    public init(_ command: CommandOptions, user: String? = nil) {
        self.command = command
        self.user = user
    }

    public var values: OptionValues {
        var values = OptionValues()
        if let user { values.set(field: Option.user.field, user) }
        for pair in command.values.pairs { values.set(field: pair.field, pair.value) }
        return values
    }

    /// The group `G` of this request, or its defaults when the command has another.
    public func group<G: OptionGroup>(_ type: G.Type = G.self) -> G { command.group(type) ?? G() }
}

extension Command {
    /// Which client sends a command (one table): the module's commands come from PAM hosts
    /// only; the session agent asks these for applications; the command line sends every other.
    public enum Sender: Sendable {
        case pamModule, commandLine, commandLineOrAgent

        /// Whether a request from `origin` may carry a command this client sends.
        public func accepts(_ origin: Origin) -> Bool {
            switch (self, origin) {
            case (.pamModule, .pamHost), (.commandLine, .commandLine), (.commandLineOrAgent, .commandLine),
                 (.commandLineOrAgent, .application):
                return true
            default:
                return false
            }
        }
    }

    public var sender: Sender {
        switch self {
        case .pamAuthenticate, .pamIdentify, .pamAccount, .pamOpenSession, .pamCloseSession, .pamPasswordUsed, .pamChauthtok:
            return .pamModule
        case .unlock, .token, .stepUp, .reveal, .status, .fingerOn, .fingerOff:
            return .commandLineOrAgent
        default:
            return .commandLine
        }
    }

    public var isPAM: Bool { sender == .pamModule }
}
