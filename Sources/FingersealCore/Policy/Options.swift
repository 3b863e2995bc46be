import FingersealWire
/// Settings shared by the PAM module and the CLI. Order: defaults, then the system file
/// (/etc/fingerseal/fingerseal.conf, else /etc/security/fingerseal.conf), then the file's
/// `[service NAME]` section for the request's PAM service (`forService`), then module
/// arguments (which win, except over what the file lists in `fixed=`). Values are
/// range-checked; unknown options are reported as warnings, not errors.
public struct Options: Equatable, Sendable {
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
    /// `dpop=`: bind sign-ins to a key of this computer (RFC 9449) where the provider can
    /// (`auto`), always (`required`), or never (`off`); for the whole machine, and per issuer.
    public var dpop = DPoPSettings()
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
    // Settings per PAM service (issue 23 §3), set only by the parser (SettingsParser.swift).
    /// The file's top-level settings as written (`[provision]`'s with their prefix), in order:
    /// what `origins(service:)` reports as the file's.
    public internal(set) var fileSettings: [String] = []
    /// `[service NAME]` sections: each service's settings as written, in order, already
    /// checked by the parser when the file was read; `forService` applies them.
    public internal(set) var serviceSections: [String: [String]] = [:]

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
}
