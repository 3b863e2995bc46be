import Localization

/// Settings shared by the PAM module and the CLI. Order: defaults, then the system file
/// (/etc/fingerseal/fingerseal.conf, else /etc/security/fingerseal.conf), then the file's
/// `[service NAME]` section for the request's PAM service (`forService`), then module
/// arguments (which win, except over what the file lists in `fixed=`). Values are
/// range-checked; unknown options are reported as warnings, not errors.
public struct Options: Equatable, Sendable {
    static func isGroupName(_ name: String) -> Bool {
        name.utf8.count <= 256 && !name.contains(where: { $0 == ":" || $0 == "\n" })
    }

    /// One PAM service name as `skip_services=` and its kind take them (one item of their
    /// comma-separated list), and as `[service NAME]` names it.
    public static func isServiceName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 1024 && !name.contains(where: { $0 == "\n" || $0 == " " || $0 == "," })
    }

    /// A parameter of the device authorization request the administrator names: a plain
    /// name, never one the request already carries (which would then be sent twice).
    static func isExtraParameterName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count)
            && name.unicodeScalars.allSatisfy { ($0.value >= 0x61 && $0.value <= 0x7a) || ($0.value >= 0x41 && $0.value <= 0x5a)
                || ($0.value >= 0x30 && $0.value <= 0x39) || $0 == "_" }
            && !["client_id", "client_secret", "scope", "max_age", "prompt"].contains(name)
    }

    /// A DNS name as an e-mail address ends with it: labels of letters, digits and -, joined by
    /// dots (lower case once read).
    static func isDomainName(_ name: String) -> Bool {
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        return name.utf8.count <= 253 && labels.count >= 1 && labels.allSatisfy { label in
            (1...63).contains(label.utf8.count) && !label.hasPrefix("-") && !label.hasSuffix("-")
                && label.unicodeScalars.allSatisfy { ($0.value >= 0x61 && $0.value <= 0x7a) || ($0.value >= 0x30 && $0.value <= 0x39) || $0 == "-" }
        }
    }

    /// A name from the file or a caller as a sentence quotes it: at most 64 characters.
    public static func shown(_ name: String) -> String { name.count > 64 ? String(name.prefix(64)) + "…" : name }

    public var debug = false
    /// Seconds to wait for a finger.
    public var timeout = 15
    /// Scans per attempt.
    public var maxTries = 3
    /// Consecutive failed matches before fingerprint unlock locks.
    public var maxFails = 5
    /// Offer the PIN fallback in the PAM module.
    public var pin = false
    public var allowRemote = false
    public var onlyGroup: String? = nil
    /// `identify` (a stack's choice): a login that starts with no user name identifies the
    /// finger among `identify_group`'s members who opted in.
    public var identify = false
    /// `identify_group=`: the accounts touch to sign in may find; none, nobody.
    public var identifyGroup: String? = nil
    /// What touch to sign in allows fingers nobody matched, machine-wide (issue 31 §4; the
    /// README has the false-match arithmetic): `identify_pause_after=` in a row pause it for
    /// `identify_pause=` seconds; `identify_lock_after=` since the last sign-in with a user
    /// name lock it until the next one; `identify_daily_max=` in 24 hours stop it for the day.
    public var identifyPauseAfter = 5
    public var identifyPause = 60
    public var identifyLockAfter = 10
    public var identifyDailyMax = 30
    public var requireToken = false
    /// Seconds after the last successful refresh during which an unreachable IdP is tolerated.
    public var offlineGrace = 7 * 24 * 3600
    /// Seconds to connect to the identity provider (TLS included).
    public var connectTimeout = 5
    /// Seconds for a whole request to the identity provider.
    public var idpTimeout = 10
    /// `stepup=CONTEXT`: the module answers a step-up for CONTEXT; a confirmation held for it
    /// in the login session means no prompt, and a success records one for `ttl` seconds.
    public var stepUp: String? = nil
    public var stepUpTTL = 300
    /// `stepup_max_ttl=`: the longest a confirmation asked for by anyone but root lasts (the
    /// CLI's --ttl, a command's run, a PAM host the user runs): the site's ceiling.
    public var stepUpMaxTTL = 900
    /// PAM services a person always answers, or never does (a mail or VPN server using
    /// common-auth): the broker's interactivity guess is overridden for them.
    public var interactiveServices: [String] = []
    public var unattendedServices: [String] = []
    // The reader (issue 11 §1, §5).
    /// Which reader backend the broker uses: fprintd when it is on the system bus (or can
    /// be activated), else libfprint directly (`auto`), or one of them always.
    public var reader: ReaderBackendChoice = .auto
    /// Where fprintd keeps its prints (read only, to notice a finger re-enrolled under the
    /// same name).
    public var fprintdStorage = "/var/lib/fprint"
    /// Whether the reader is built into the lid (skipped while the lid is closed): `auto`
    /// looks at the USB port (`removable`); `builtin` and `external` say so.
    public var readerLocation: ReaderLocation = .auto
    /// Hosts (display managers, lock screens, polkit). `skip_services=`: services with a
    /// fingerprint conversation of their own (gdm-password beside gdm-fingerprint), where the
    /// module answers PAM_IGNORE at once: no scan, no question.
    public var skipServices: [String] = []
    /// `prompt=`: what the module may ask in a PAM conversation (see `PromptStyle`).
    public var prompt: PromptStyle = .normal
    // The IdP account bound to the Linux account (issue 12 §2).
    /// `user_claim=`: the claim that must equal the Linux user name; nil: nothing enforced.
    public var userClaim: UserClaim? = nil
    /// `user_map=`: the subject-to-user map `user_claim=sub` reads.
    public var userMap = UserMap.defaultPath
    /// `redirect_port=`: the loopback port of the browser sign-in, for providers that match
    /// redirect URIs exactly (`--redirect-port` wins; none: a free port each time).
    public var redirectPort: Int? = nil
    // Fleet configuration (issue 12 §1): the sign-in `fingerseal login` uses without
    // arguments, and which settings arguments may not change. Set in the system file.
    /// `issuer=`: the identity provider's OIDC issuer URL (https; http only on loopback).
    public var issuer: String? = nil
    /// `client_id=`: the OAuth client fingerseal signs in as.
    public var clientID: String? = nil
    /// `client_secret_file=`: a confidential client's secret, read by the broker (root's,
    /// mode 0600), never by a caller and never sent to another issuer or client.
    public var clientSecretFile: String? = nil
    /// `scope=`: the scopes asked for, space-separated.
    public var scope = "openid offline_access"
    /// `flow=`: how `fingerseal login` signs in when no --flow is given.
    public var flow: SignInFlow = .device
    /// `fixed=NAME,NAME`: options the administrator fixed: `login` arguments that would change
    /// them are refused, module arguments naming them are ignored (with a warning). Only the
    /// system file can fix an option (`applyArguments`), and nothing un-fixes one.
    public var fixed: Set<String> = []
    // The TPM (issue 14): the machine's, so only the configuration file sets these
    // (`SiteSetting.Scope.file`); no module argument or caller lowers them.
    /// `tpm=`: seal the keyslots to the TPM when one is usable (`auto`), always and refuse
    /// without one (`require`), or not for new slots (`off`; a sealed slot stays sealed).
    public var tpm: TPMMode = .auto
    /// `tpm_tcti=`: how the broker reaches the TPM (the kernel's resource manager by default).
    public var tpmTCTI = TPMPolicy.defaultTCTI
    /// `tpm_pcrs=`: PCRs of the SHA-256 bank the device keyslot is bound to (none by default).
    public var tpmPCRs: [Int] = []
    // Provisioning (issue 22 §2): a user name this machine does not know starts a device
    // sign-in in the PAM conversation and, for someone the administrator's rule admits, a
    // new local account. `provision=idp` in the stack turns it on; the rest is the
    // configuration file's `[provision]` section (`provision_*`, file only).
    /// `provision=idp`: this stack provisions unknown user names (nil: off, the default).
    public var provision: ProvisionMode? = nil
    /// `provision_issuer=`, `provision_client_id=`: whom new accounts sign in with (default:
    /// the configuration's `issuer=` and `client_id=`).
    public var provisionIssuer: String? = nil
    public var provisionClientID: String? = nil
    /// `provision_require=CLAIM:VALUE`: the claim value every new account's identity must
    /// carry (a string claim equal to it, or an array claim containing it). Required.
    public var provisionRequire: ClaimRequirement? = nil
    /// `provision_groups=`: supplementary groups of new accounts.
    public var provisionGroups: [String] = []
    /// `provision_per_hour=`: new accounts in any hour, at most.
    public var provisionPerHour = 5
    /// `provision_expire_days=`: provisioned accounts unused this many days are removed with
    /// their vaults (0: never).
    public var provisionExpireDays = 0
    // Against device-code phishing (issue 31 §2: RFC 8628 §5.4, the cross-device flows BCP):
    // a stranger at the kiosk who relays the code to a member must not end up with the
    // member's account.
    /// `provision_code_lifetime=`: seconds the kiosk waits for the code's approval, at most
    /// (the provider's own `expires_in` when shorter): a code relayed to someone far away has
    /// little time to be approved.
    public var provisionCodeLifetime = 300
    /// `provision_device_name=`: this computer's name in the kiosk's sentence and, with
    /// `provision_device_name_parameter`, sent to the provider; nil: the host name.
    public var provisionDeviceName: String? = nil
    /// `provision_device_name_parameter=`: the device authorization request's parameter that
    /// carries `provision_device_name` (RFC 8628 has none; a provider's own); nil: not sent.
    public var provisionDeviceNameParameter: String? = nil
    /// `provision_qr=`: a QR code of the address with the code in it, beside the address and
    /// the code to type. Off: a link that opens by itself is easier to relay.
    public var provisionQR = false
    /// `provision_reauthenticate=`: ask the provider for a fresh sign-in (`max_age=0`,
    /// `prompt=login`) on the device authorization request. The ID token's `auth_time` is
    /// checked against the code's issue time whatever this says.
    public var provisionReauthenticate = true
    /// `provision_per_subject=`: accounts one identity (issuer and subject) may have had made
    /// on this computer at once.
    public var provisionPerSubject = 1
    // Names (issue 31 §5).
    /// `provision_email_domain=`: with `user_claim=email_local`, the domains whose verified
    /// addresses name new accounts; none: email_local makes no account.
    public var provisionEmailDomains: [String] = []
    /// `provision_reserved=`: names no new account gets, beyond `ReservedNames`'.
    public var provisionReserved: [String] = []
    // The password's place in the day (issue 23 §1): the phone's rule, per account, kept by
    // the broker (`PasswordRule`); the finger and the PIN wait until the password was given.
    /// `password_after_boot=`: the first sign-in of each account after a restart needs the
    /// account password.
    public var passwordAfterBoot = false
    /// `password_after=`: seconds without the account password after which it is needed
    /// again (`48h`, `2d`, `90m`); nil (`off`): never.
    public var passwordAfter: Int? = nil
    /// `keyring_services=`: the PAM services (a root host's) to which a finger or PIN match
    /// hands the login password an account sealed (`fingerseal keyring on`) as PAM_AUTHTOK,
    /// for pam_gnome_keyring or pam_kwallet5 further down the stack. None by default.
    public var keyringServices: [String] = []
    /// `keyring_without_tpm=`: `fingerseal keyring on` seals the password in a vault that is
    /// not sealed to the TPM, where a stolen disk gives it up, without each person saying so
    /// with `--without-tpm`: the administrator accepts that for the machine. Off by default.
    public var keyringWithoutTPM = false
    // Settings per PAM service (issue 23 §3).
    /// The file's top-level settings as written (`[provision]`'s with their prefix), in order:
    /// what `origins(service:)` reports as the file's.
    public private(set) var fileSettings: [String] = []
    /// `[service NAME]` sections: each service's settings as written, in order, already
    /// checked by the parser when the file was read; `forService` applies them.
    public private(set) var serviceSections: [String: [String]] = [:]

    public init() {}

    /// The issuer and client new accounts sign in with.
    public var provisionProvider: (issuer: String, clientID: String)? {
        guard let issuer = provisionIssuer ?? self.issuer, let client = provisionClientID ?? clientID else { return nil }
        return (issuer, client)
    }

    /// A `[service NAME]` section sets a password rule (`password_after_boot`,
    /// `password_after`): the broker learns of passwords whichever service saw them.
    public var setsPasswordRuleInSections: Bool {
        serviceSections.values.contains { $0.contains { ModuleArgument($0).name.hasPrefix("password_after") } }
    }

    /// The TPM settings in force.
    public var tpmPolicy: TPMPolicy { TPMPolicy(mode: tpm, tcti: tpmTCTI, pcrs: tpmPCRs) }

    /// The configuration file (a fleet drops it in place).
    public static let configPath = "/etc/fingerseal/fingerseal.conf"
    /// Where it used to be; read only when `configPath` does not exist.
    public static let legacyConfigPath = "/etc/security/fingerseal.conf"
    static let maxOptionLength = 4096
    static let maxConfigSize = 64 * 1024

    /// Applies `name[=value]` settings in order. Throws on the first invalid value; unknown
    /// names are returned as warnings.
    @discardableResult
    public mutating func apply(_ settings: [String], source: String) throws -> [String] {
        var warnings: [String] = []
        for setting in settings {
            guard setting.utf8.count <= Options.maxOptionLength else {
                throw FingersealError(.badConfiguration, Messages.badOption(String(setting.prefix(32)) + "…", tr("it is too long")),
                                      detail: source)
            }
            let argument = ModuleArgument(setting)
            let name = argument.name
            if try !applyOne(name: name, value: argument.value) {
                warnings.append(Messages.unknownOption(Options.shown(name)))
            }
        }
        return warnings
    }

    /// Parses the text of a configuration file: one `name` or `name=value` per line, `#`
    /// comments, blank lines ignored, whitespace around names and values trimmed. Sections:
    /// `[provision]` (provisioning's settings) and `[service NAME]` (one PAM service's), each
    /// running to the next section or the end.
    @discardableResult
    public mutating func applyConfigFile(_ text: String, source: String = Options.configPath) throws -> [String] {
        guard text.utf8.count <= Options.maxConfigSize else {
            throw FingersealError(.badConfiguration, Messages.badOption(source, tr("the file is too large")))
        }
        var settings: [String] = []
        var warnings: [String] = []
        // `[provision]`: the names below it are provisioning's (`require=` is
        // `provision_require=`); a name already spelled `provision_…` is the same one.
        enum Section: Equatable { case top, provision, service(String), unknown }
        var section = Section.top
        var sections: [(service: String, settings: [String])] = []
        // isNewline: "\r\n" is a single Character in Swift and would not match "\n".
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
            let trimmed = line.trimmingSpaces
            if trimmed.hasPrefix("[") && trimmed.hasSuffix("]") {
                let name = trimmed.dropFirst().dropLast().trimmingSpaces
                let words = name.split(maxSplits: 1, whereSeparator: { $0 == " " || $0 == "\t" })
                if name == "provision" {
                    section = .provision
                } else if words.first == "service" {
                    // A name the parser would refuse in skip_services= is an error, as a bad
                    // value is: its settings would otherwise silently apply to nothing.
                    let service = words.count > 1 ? words[1].trimmingSpaces : ""
                    guard Options.isServiceName(service) else {
                        throw FingersealError(.badConfiguration, Messages.badServiceSection(Options.shown(service)), detail: source)
                    }
                    section = .service(service)
                    sections.append((service, []))
                } else {
                    warnings.append(Messages.unknownSection(Options.shown(name)))
                    section = .unknown
                }
                continue
            }
            let parts = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            var name = parts[0].trimmingSpaces
            if name.isEmpty { continue }
            switch section {
            // The settings of a section nobody knows are not applied as the main section's.
            case .unknown: continue
            case .provision: if !name.hasPrefix("provision_") { name = "provision_" + name }
            case .top, .service: break
            }
            let setting = parts.count > 1 ? "\(name)=\(parts[1].trimmingSpaces)" : name
            if case .service = section { sections[sections.count - 1].settings.append(setting) } else { settings.append(setting) }
        }
        warnings += try apply(settings, source: source)
        fileSettings += settings
        for (service, written) in sections { warnings += try addServiceSection(service, written, source: source) }
        return warnings
    }

    /// Checks a `[service NAME]` section with the one parser, over the top level, and keeps
    /// it: a bad value is an error and an unknown name a warning, exactly as at the top level.
    /// Refused here, with a warning: what only the file's top level sets (`SiteSetting.Scope.file`:
    /// `fixed=`, the TPM, the step-up ceiling, provisioning's rule), since those are the
    /// machine's, not a service's: a host names its own PAM service (one running as the user
    /// names any it likes), so a per-service TPM mode, ceiling or provisioning rule would be
    /// the host's to choose. What of a section reaches a host running as the user is decided
    /// in the broker (`Dispatcher.effectiveOptions`).
    private mutating func addServiceSection(_ service: String, _ written: [String], source: String) throws -> [String] {
        var warnings: [String] = []
        var kept: [String] = []
        for setting in written {
            let name = ModuleArgument(setting).name
            if SiteSetting.fileOnly.contains(name) {
                warnings.append(Messages.fileOnlyInServiceSection(Options.shown(name), service))
            } else {
                kept.append(setting)
            }
        }
        var checked = self
        warnings += try checked.apply(kept, source: "\(source) [service \(service)]")
        serviceSections[service, default: []] += kept
        return warnings
    }

    /// The settings in force for PAM service `service` (nil: a command, not a PAM host):
    /// these, with the service's `[service NAME]` section applied over them. `only`: apply
    /// just the section's settings with these names.
    public func forService(_ service: String?, only allowed: Set<String>? = nil) throws -> Options {
        guard let service, let section = serviceSections[service] else { return self }
        var options = self
        let settings = allowed.map { names in section.filter { names.contains(ModuleArgument($0).name) } } ?? section
        // Checked when the file was read; unknown names were reported then.
        try options.apply(settings, source: "[service \(service)]")
        return options
    }

    /// Where the settings in force for `service` that differ from the defaults came from:
    /// each option once, as last written (`name=value`), and whether its section wrote it.
    /// Options the file sets back to their default, and names the parser does not know, are
    /// left out.
    public func origins(service: String?) -> [(setting: String, name: String, fromSection: Bool)] {
        var latest: [(setting: String, name: String, fromSection: Bool)] = []
        let section = service.flatMap { serviceSections[$0] } ?? []
        for (setting, fromSection) in fileSettings.map({ ($0, false) }) + section.map({ ($0, true) }) {
            let name = ModuleArgument(setting).name
            var alone = Options()
            guard (try? alone.apply([setting], source: "")) != nil, alone != Options() else {
                latest.removeAll { $0.name == name } // set back to its default
                continue
            }
            latest.removeAll { $0.name == name }
            latest.append((setting, name, fromSection))
        }
        return latest
    }

    /// Reads one setting through its entry in `SiteSetting.all`; false for an unknown name.
    private mutating func applyOne(name: String, value: String?) throws -> Bool {
        guard let setting = SiteSetting.named(name) else { return false }
        try setting.read(&self, SettingValue(name: name, value: value))
        return true
    }
}

/// `provision=`: how unknown user names become accounts.
public enum ProvisionMode: String, Sendable {
    /// A device sign-in at the configured identity provider.
    case idp
}

/// `provision_require=CLAIM:VALUE`: a claim the identity must carry with this value.
public struct ClaimRequirement: Equatable, Sendable {
    public let claim: String
    public let value: String

    public init?(parsing text: String) {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let claim = String(text[..<colon]), value = String(text[text.index(after: colon)...])
        guard !claim.isEmpty, !value.isEmpty, claim.utf8.count <= 64, value.utf8.count <= 256,
              claim.unicodeScalars.allSatisfy({ ($0.value >= 0x61 && $0.value <= 0x7a) || $0 == "_" || ($0.value >= 0x30 && $0.value <= 0x39) }),
              value.unicodeScalars.allSatisfy({ (0x20...0x7e).contains($0.value) }) else { return nil }
        self.claim = claim
        self.value = value
    }

    public var description: String { "\(claim):\(value)" }
}

/// A POSIX account (or group) name as useradd takes it: a letter or _ first, then letters,
/// digits, _ . - (no leading -), at most 32 bytes; lower case only, so no two accounts
/// differ by case.
public enum AccountName {
    public static func isValid(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= 32 else { return false }
        func lower(_ byte: UInt8) -> Bool { byte >= 0x61 && byte <= 0x7a }
        guard lower(first) || first == 0x5f else { return false }
        return bytes.dropFirst().allSatisfy { lower($0) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5f || $0 == 0x2e || $0 == 0x2d }
    }
}

public enum ReaderBackendChoice: String, Sendable {
    case auto, fprintd, libfprint
}

public enum ReaderLocation: String, Sendable {
    case auto, builtin, external
}

/// How a PAM host's conversation is used, for hosts that show less than a terminal does.
public enum PromptStyle: String, Sendable {
    /// Sentences as info messages, the PIN (with `pin`) as its own prompt after the finger.
    case normal
    /// One PIN prompt, asked while the reader waits, whose own text says the finger works
    /// too: for hosts that show prompts but drop info messages.
    case combined
    /// Nothing is ever asked, whatever `pin` says: the finger only. For hosts that answer
    /// every prompt with the typed password (swaylock, i3lock), where a password would be
    /// taken for a wrong PIN.
    case none
}

extension Substring {
    var trimmingSpaces: String {
        String(drop(while: { $0 == " " || $0 == "\t" || $0 == "\r" }).reversed()
            .drop(while: { $0 == " " || $0 == "\t" || $0 == "\r" }).reversed())
    }
}
