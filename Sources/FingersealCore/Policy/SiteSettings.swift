import FingersealWire
import Localization

/// One site setting: a name fingerseal.conf, a `[service NAME]` section or a PAM module
/// argument may give, who may give it, and how its value is read into `Options`.
/// `SiteSetting.all` is the one table. The parser (`Options.apply`), the scopes (file only,
/// hosts the user runs), `fixed=`, `doctor`'s origins, the manual's check and the tests all
/// read it, so a new setting is one entry.
public struct SiteSetting: Sendable {
    /// Who may give it.
    public enum Scope: Sendable {
        /// The machine's alone: the file's top level. A module argument or a `[service NAME]`
        /// section naming it is ignored with a warning: a host names its own PAM service (one
        /// running as the user names any it likes), so a per-service TPM mode, ceiling or
        /// provisioning rule would be the host's to choose.
        case file
        /// The file, a section, or a module argument of a host running as root.
        case stack
        /// Also a host running as the user (its module arguments, its section): presentation
        /// and skipping, which only let the stack go on; never policy.
        case userHosts
    }

    public let name: String
    public let scope: Scope
    /// Reads the value into the options; throws `.badConfiguration` with a sentence that
    /// says what the value needs.
    let read: @Sendable (inout Options, SettingValue) throws -> Void
    /// The value as `login`'s arguments compare it (the sign-in settings), nil for the others.
    let written: (@Sendable (Options) -> String?)?

    init(_ name: String, _ scope: Scope, written: (@Sendable (Options) -> String?)? = nil,
         _ read: @escaping @Sendable (inout Options, SettingValue) throws -> Void) {
        self.name = name
        self.scope = scope
        self.written = written
        self.read = read
    }

    /// The setting called `name`; nil for a name fingerseal does not know.
    public static func named(_ name: String) -> SiteSetting? { byName[name] }

    /// The names only the configuration file's top level sets.
    public static let fileOnly: Set<String> = Set(all.filter { $0.scope == .file }.map(\.name))

    /// The names a PAM host running as the user may set.
    public static let forUserHosts: Set<String> = Set(all.filter { $0.scope == .userHosts }.map(\.name))

    private static let byName: [String: SiteSetting] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })
}

/// A setting's value as written (nil: the bare name), with the readers the table shares.
struct SettingValue {
    let name: String
    let value: String?

    func refused(_ why: String) -> FingersealError {
        FingersealError(.badConfiguration, Messages.badOption(name, why))
    }

    func flag() throws -> Bool {
        guard let flag = ModuleArgument(name: name, value: value).flag else { throw refused(tr("use yes or no")) }
        return flag
    }

    func integer(_ range: ClosedRange<Int>) throws -> Int {
        guard let number = ModuleArgument(name: name, value: value).integer(range) else {
            throw refused(tr("it needs a whole number from %1$s to %2$s", range.lowerBound, range.upperBound))
        }
        return number
    }

    func text(_ check: (String) -> Bool, _ why: @autoclosure () -> String) throws -> String {
        guard let value, !value.isEmpty, check(value) else { throw refused(why()) }
        return value
    }

    /// One of a fixed set of words (an enum's raw values).
    func choice<Choice: RawRepresentable>(_ why: @autoclosure () -> String) throws -> Choice where Choice.RawValue == String {
        guard let choice = value.flatMap(Choice.init(rawValue:)) else { throw refused(why()) }
        return choice
    }

    /// An absolute path, without `..`.
    func path() throws -> String {
        try text({ $0.hasPrefix("/") && !$0.contains("..") && $0.utf8.count <= 1024 }, tr("it needs an absolute path"))
    }

    /// A comma-separated list, blanks around its items ignored, each item one `valid` takes.
    func list(_ valid: (String) -> Bool, _ why: @autoclosure () -> String, limit: Int = 1024) throws -> [String] {
        let items = try text({ $0.utf8.count <= limit }, why()).split(separator: ",").map(\.trimmingSpaces).filter { !$0.isEmpty }
        guard items.allSatisfy(valid) else { throw refused(why()) }
        return items
    }

    /// PAM service names separated by commas.
    func services() throws -> [String] {
        try text({ $0.utf8.count <= 1024 && $0.split(separator: ",").allSatisfy { Options.isServiceName(String($0)) } },
                 tr("it needs service names separated by commas")).split(separator: ",").map(String.init)
    }

    /// A URL an issuer may have.
    func issuer() throws -> String {
        try text(ProviderURL.isValidIssuer, tr("it needs an https URL (plain http only on loopback), without ? or #"))
    }

    /// An OAuth client id: printable ASCII.
    func clientID() throws -> String {
        try text({ $0.utf8.count <= 256 && $0.unicodeScalars.allSatisfy { (0x20...0x7e).contains($0.value) } },
                 tr("it needs a client id of printable characters"))
    }
}

extension SiteSetting {
    /// Every site setting, grouped as fingerseal.conf(5) describes them.
    public static let all: [SiteSetting] = [
        // The module and the reader.
        SiteSetting("debug", .userHosts) { $0.debug = try $1.flag() },
        SiteSetting("timeout", .userHosts) { $0.timeout = try $1.integer(ModuleOptions.timeoutRange) },
        SiteSetting("max_tries", .userHosts) { $0.maxTries = try $1.integer(1...20) },
        SiteSetting("max_fails", .stack) { $0.maxFails = try $1.integer(1...100) },
        SiteSetting("pin", .userHosts) { $0.pin = try $1.flag() },
        SiteSetting("allow_remote", .stack) { $0.allowRemote = try $1.flag() },
        SiteSetting("only_group", .stack) { $0.onlyGroup = try $1.text(Options.isGroupName, tr("it needs a group name")) },
        SiteSetting("require_token", .stack) { $0.requireToken = try $1.flag() },
        SiteSetting("offline_grace", .stack) { $0.offlineGrace = try $1.integer(0...(365 * 24 * 3600)) },
        SiteSetting("connect_timeout", .stack) { $0.connectTimeout = try $1.integer(1...60) },
        SiteSetting("idp_timeout", .stack) { $0.idpTimeout = try $1.integer(1...120) },
        SiteSetting("stepup", .userHosts) {
            $0.stepUp = try $1.text(StepUpRules.isValidContext, tr("it needs a context name (letters, digits, . - _)"))
        },
        SiteSetting("ttl", .userHosts) { $0.stepUpTTL = try $1.integer(1...StepUp.maxTTL) },
        SiteSetting("stepup_max_ttl", .file) { $0.stepUpMaxTTL = try $1.integer(1...StepUp.maxTTL) },
        SiteSetting("reader", .stack) { $0.reader = try $1.choice(tr("use auto, fprintd or libfprint")) },
        SiteSetting("fprintd_storage", .stack) { $0.fprintdStorage = try $1.path() },
        SiteSetting("reader_location", .stack) { $0.readerLocation = try $1.choice(tr("use auto, builtin or external")) },
        SiteSetting("interactive_services", .stack) { $0.interactiveServices = try $1.services() },
        SiteSetting("unattended_services", .stack) { $0.unattendedServices = try $1.services() },
        SiteSetting("skip_services", .userHosts) { $0.skipServices = try $1.services() },
        SiteSetting("prompt", .userHosts) { $0.prompt = try $1.choice(tr("use normal, combined or none")) },
        // The module's own (ModuleOptions reads them; here they are only checked).
        SiteSetting("socket", .userHosts) { _ = try $1.text(ModuleOptions.isSocketPath, tr("it needs an absolute path")) },
        SiteSetting("backstop", .stack) { _ = try $1.integer(ModuleOptions.backstopRange) },
        SiteSetting("password_used", .stack) { _ = try $1.flag() },
        // Touch to sign in (issue 31 §4).
        SiteSetting("identify", .stack) { $0.identify = try $1.flag() },
        SiteSetting("identify_group", .stack) { $0.identifyGroup = try $1.text(Options.isGroupName, tr("it needs a group name")) },
        SiteSetting("identify_pause_after", .file) { $0.identifyPauseAfter = try $1.integer(1...100) },
        SiteSetting("identify_pause", .file) { $0.identifyPause = try $1.integer(10...86_400) },
        SiteSetting("identify_lock_after", .file) { $0.identifyLockAfter = try $1.integer(1...1000) },
        SiteSetting("identify_daily_max", .file) { $0.identifyDailyMax = try $1.integer(1...10_000) },
        // The IdP account bound to the Linux account.
        SiteSetting("user_claim", .stack) { $0.userClaim = try $1.choice(tr("use preferred_username, email, email_local or sub")) },
        SiteSetting("user_map", .stack) { $0.userMap = try $1.path() },
        SiteSetting("redirect_port", .stack) { $0.redirectPort = try $1.integer(1024...65535) },
        // The fleet's sign-in (`login` without arguments), and what arguments may not change.
        SiteSetting("issuer", .stack, written: { $0.issuer }) { $0.issuer = try $1.issuer() },
        SiteSetting("client_id", .stack, written: { $0.clientID }) { $0.clientID = try $1.clientID() },
        SiteSetting("client_secret_file", .stack, written: { $0.clientSecretFile }) {
            $0.clientSecretFile = try $1.text({ $0.hasPrefix("/") && !$0.hasSuffix("/") && !$0.contains("..") && $0.utf8.count <= 1024 },
                                              tr("it needs an absolute path"))
        },
        SiteSetting("scope", .stack, written: { $0.scope }) {
            let why = tr("it needs scope names separated by spaces")
            let tokens = try $1.text({ $0.utf8.count <= 1024 }, why).split(separator: " ")
            guard !tokens.isEmpty, tokens.allSatisfy({ $0.unicodeScalars.allSatisfy {
                (0x21...0x7e).contains($0.value) && $0 != "\"" && $0 != "\\" } }) else { throw $1.refused(why) }
            $0.scope = tokens.joined(separator: " ")
        },
        SiteSetting("flow", .stack, written: { $0.flow.rawValue }) { $0.flow = try $1.choice(tr("use device, password or browser")) },
        SiteSetting("fixed", .file) { options, given in
            let names = try given.text({ $0.utf8.count <= 1024 }, tr("it needs option names separated by commas"))
                .split(separator: ",", omittingEmptySubsequences: false).map(\.trimmingSpaces)
            // Known names only (whatever the table has, so settings added later can be fixed too).
            for name in names where name.isEmpty || name == "fixed" || SiteSetting.named(name) == nil {
                throw given.refused(tr("%1$s is not an option name", name.prefix(64)))
            }
            options.fixed.formUnion(names)
        },
        // Tokens bound to this computer (RFC 9449): the machine's, like the TPM that holds the key.
        SiteSetting("dpop", .file) { options, given in
            let why = tr("use auto, required or off, then ISSUER=POLICY for any provider of its own, separated by commas")
            let text = try given.text({ $0.utf8.count <= 8192 }, why)
            guard let parsed = DPoPSettings(parsing: text, isIssuer: ProviderURL.isValidIssuer) else { throw given.refused(why) }
            options.dpop = parsed
        },
        // The TPM: the machine's.
        SiteSetting("tpm", .file) { options, given in
            guard let mode = given.value.flatMap(TPMMode.init(rawValue:)) else { throw FingersealError(.badConfiguration, Messages.badTPMMode) }
            options.tpm = mode
        },
        SiteSetting("tpm_tcti", .file) { options, given in
            guard let value = given.value, TPMPolicy.isValidTCTI(value) else { throw FingersealError(.badConfiguration, Messages.badTPMTCTI) }
            options.tpmTCTI = value
        },
        SiteSetting("tpm_pcrs", .file) { options, given in
            guard let pcrs = given.value.flatMap(TPMPolicy.pcrs(parsing:)) else { throw FingersealError(.badConfiguration, Messages.badTPMPCRs) }
            options.tpmPCRs = pcrs
        },
        // Provisioning: `provision=idp` in a stack; the rest is the file's `[provision]`.
        SiteSetting("provision", .stack) { $0.provision = try $1.choice(tr("use idp")) },
        SiteSetting("provision_issuer", .file) { $0.provisionIssuer = try $1.issuer() },
        SiteSetting("provision_client_id", .file) { $0.provisionClientID = try $1.clientID() },
        SiteSetting("provision_require", .file) { options, given in
            guard let requirement = given.value.flatMap(ClaimRequirement.init(parsing:)) else {
                throw given.refused(tr("it needs CLAIM:VALUE, for example groups:staff"))
            }
            options.provisionRequire = requirement
        },
        SiteSetting("provision_groups", .file) {
            $0.provisionGroups = try $1.list(AccountName.isValid, tr("it needs group names separated by commas"))
        },
        SiteSetting("provision_per_hour", .file) { $0.provisionPerHour = try $1.integer(1...1000) },
        SiteSetting("provision_expire_days", .file) { $0.provisionExpireDays = try $1.integer(0...36500) },
        SiteSetting("provision_code_lifetime", .file) { $0.provisionCodeLifetime = try $1.integer(30...1800) },
        SiteSetting("provision_device_name", .file) {
            $0.provisionDeviceName = try $1.text({ $0.utf8.count <= 64 && $0.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7f } },
                                                 tr("it needs a name of at most 64 printable characters"))
        },
        SiteSetting("provision_device_name_parameter", .file) {
            $0.provisionDeviceNameParameter = try $1.text(Options.isExtraParameterName,
                                                          tr("it needs a parameter name of letters, digits and _, not one OAuth already uses"))
        },
        SiteSetting("provision_qr", .file) { $0.provisionQR = try $1.flag() },
        SiteSetting("provision_reauthenticate", .file) { $0.provisionReauthenticate = try $1.flag() },
        SiteSetting("provision_per_subject", .file) { $0.provisionPerSubject = try $1.integer(1...100) },
        SiteSetting("provision_email_domain", .file) {
            $0.provisionEmailDomains = try $1.list({ Options.isDomainName($0.lowercased()) }, tr("it needs domain names separated by commas"))
                .map { $0.lowercased() }
        },
        SiteSetting("provision_reserved", .file) {
            $0.provisionReserved = try $1.list(AccountName.isValid, tr("it needs user names separated by commas"), limit: 4096)
        },
        // The password's place in the day, and the keyring.
        SiteSetting("password_after_boot", .stack) { $0.passwordAfterBoot = try $1.flag() },
        SiteSetting("password_after", .stack) { options, given in
            guard let value = given.value else { throw given.refused(tr("it needs a duration such as 48h, 7d or 90m, or off")) }
            if value == "off" || value == "no" {
                options.passwordAfter = nil
                return
            }
            guard let seconds = DurationSetting.seconds(parsing: value), PasswordRule.afterRange.contains(seconds) else {
                throw given.refused(tr("it needs a duration from 1 hour to 365 days, such as 48h, 7d or 90m, or off"))
            }
            options.passwordAfter = seconds
        },
        SiteSetting("keyring_services", .file) { $0.keyringServices = try $1.services() },
        SiteSetting("keyring_without_tpm", .file) { $0.keyringWithoutTPM = try $1.flag() },
    ]
}
