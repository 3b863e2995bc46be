/// Each command's options as one typed value, defined once for both ends (the shape of
/// swift-argument-parser's `@OptionGroup`): the CLI parses its command line into it and sends
/// it, the broker decodes it when the request is built, and both check it here, so a value
/// out of range or options that exclude each other are refused with the same `OptionError`
/// (and so the same sentence) whichever end finds them.

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
    case proof(ProofOptions)
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
        case .proof: self = .proof(try ProofOptions(decoding: values))
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
        case let .proof(group): group.output
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
        case .none, .output, .answers, .outputAnswers, .reset, .login, .proof, .seal, .forget, .audit, .accountRemove, .accountPurge,
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
        case .none, .output, .scanReport, .proof, .seal, .capture, .audit, .accountRemove, .accountPurge, .accountHook, .accountExpire,
             .doctor, .keyringOn:
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
        case let .proof(group): visitor.visit(group)
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
        case .unlock, .token, .proof, .stepUp, .reveal, .status, .fingerOn, .fingerOff:
            return .commandLineOrAgent
        default:
            return .commandLine
        }
    }

    public var isPAM: Bool { sender == .pamModule }
}
