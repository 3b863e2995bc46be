import CPAM
@testable import FingersealCore
import FingersealWire
import Testing
@testable import TestSupport

@Suite struct OptionsTests {
    /// Each option flipped away from its default, one at a time (pam-u2f tests/cfg.c style):
    /// the named field changes, and every other field keeps its default.
    @Test func eachOptionChangesOnlyItself() throws {
        let fields = Self.table
        let defaults = Options()
        for (setting, key, expected) in fields {
            var options = Options()
            #expect(try options.apply([setting], source: "test").isEmpty)
            #expect("\(options[keyPath: key])" == expected, "\(setting)")
            #expect("\(defaults[keyPath: key])" != expected, "\(setting): the default must differ")
            for (_, other, _) in fields where other != key {
                #expect("\(options[keyPath: other])" == "\(defaults[keyPath: other])", "\(setting) changed \(other)")
            }
        }
    }

    /// Every option flipped from its default, the field it sets, and the field's value then.
    static var table: [(String, PartialKeyPath<Options>, String)] { [
        ("debug", \Options.debug, "true"),
        ("timeout=30", \Options.timeout, "30"),
        ("max_tries=7", \Options.maxTries, "7"),
        ("max_fails=9", \Options.maxFails, "9"),
        ("pin", \Options.pin, "true"),
        ("allow_remote", \Options.allowRemote, "true"),
        ("require_token", \Options.requireToken, "true"),
        ("offline_grace=60", \Options.offlineGrace, "60"),
        ("interactive_services=vpn,smtp", \Options.interactiveServices, "[\"vpn\", \"smtp\"]"),
        ("unattended_services=imap", \Options.unattendedServices, "[\"imap\"]"),
        ("only_group=fingerprint", \Options.onlyGroup, "Optional(\"fingerprint\")"),
        ("identify", \Options.identify, "true"),
        ("identify_group=kiosk", \Options.identifyGroup, "Optional(\"kiosk\")"),
        ("connect_timeout=9", \Options.connectTimeout, "9"),
        ("idp_timeout=20", \Options.idpTimeout, "20"),
        ("stepup=sudo", \Options.stepUp, "Optional(\"sudo\")"),
        ("ttl=60", \Options.stepUpTTL, "60"),
        ("reader=fprintd", \Options.reader, "fprintd"),
        ("fprintd_storage=/srv/fprint", \Options.fprintdStorage, "/srv/fprint"),
        ("reader_location=external", \Options.readerLocation, "external"),
        ("skip_services=gdm-password", \Options.skipServices, "[\"gdm-password\"]"),
        ("prompt=none", \Options.prompt, "none"),
        ("user_claim=email_local", \Options.userClaim, "Optional(FingersealCore.UserClaim.emailLocalPart)"),
        ("user_map=/srv/users.map", \Options.userMap, "/srv/users.map"),
        ("redirect_port=8765", \Options.redirectPort, "Optional(8765)"),
        ("issuer=https://idp.example.org/realms/staff", \Options.issuer, "Optional(\"https://idp.example.org/realms/staff\")"),
        ("client_id=fleet", \Options.clientID, "Optional(\"fleet\")"),
        ("client_secret_file=/etc/fingerseal/secret", \Options.clientSecretFile, "Optional(\"/etc/fingerseal/secret\")"),
        ("scope=openid  email", \Options.scope, "openid email"),
        ("flow=browser", \Options.flow, "browser"),
        ("fixed=issuer", \Options.fixed, "[\"issuer\"]"),
        ("tpm=require", \Options.tpm, "require"),
        ("dpop=required", \Options.dpop, "required"),
        ("tpm_tcti=swtpm:host=127.0.0.1,port=2321", \Options.tpmTCTI, "swtpm:host=127.0.0.1,port=2321"),
        ("tpm_pcrs=7, 14,7", \Options.tpmPCRs, "[7, 14]"),
        ("stepup_max_ttl=60", \Options.stepUpMaxTTL, "60"),
        ("provision=idp", \Options.provision, "Optional(FingersealCore.ProvisionMode.idp)"),
        ("provision_issuer=https://idp.example.org/k", \Options.provisionIssuer, "Optional(\"https://idp.example.org/k\")"),
        ("provision_client_id=kiosk", \Options.provisionClientID, "Optional(\"kiosk\")"),
        ("provision_require=groups:peer-mentors", \Options.provisionRequire,
         "Optional(FingersealCore.ClaimRequirement(claim: \"groups\", value: \"peer-mentors\"))"),
        ("provision_groups=users, video", \Options.provisionGroups, "[\"users\", \"video\"]"),
        ("provision_per_hour=2", \Options.provisionPerHour, "2"),
        ("provision_expire_days=90", \Options.provisionExpireDays, "90"),
        ("provision_code_lifetime=120", \Options.provisionCodeLifetime, "120"),
        ("provision_device_name=desk 7", \Options.provisionDeviceName, "Optional(\"desk 7\")"),
        ("provision_device_name_parameter=kiosk_name", \Options.provisionDeviceNameParameter, "Optional(\"kiosk_name\")"),
        ("provision_qr=yes", \Options.provisionQR, "true"),
        ("provision_reauthenticate=no", \Options.provisionReauthenticate, "false"),
        ("provision_per_subject=3", \Options.provisionPerSubject, "3"),
        ("provision_email_domain=Example.org, staff.example.org", \Options.provisionEmailDomains, "[\"example.org\", \"staff.example.org\"]"),
        ("provision_reserved=kiosk, guest", \Options.provisionReserved, "[\"kiosk\", \"guest\"]"),
        ("password_after_boot=yes", \Options.passwordAfterBoot, "true"),
        ("password_after=48h", \Options.passwordAfter, "Optional(172800)"),
        ("keyring_services=gdm-password,login", \Options.keyringServices, "[\"gdm-password\", \"login\"]"),
        ("identify_pause_after=3", \Options.identifyPauseAfter, "3"),
        ("identify_pause=300", \Options.identifyPause, "300"),
        ("identify_lock_after=25", \Options.identifyLockAfter, "25"),
        ("identify_daily_max=100", \Options.identifyDailyMax, "100"),
        ("keyring_without_tpm=yes", \Options.keyringWithoutTPM, "true"),
    ] }

    /// The table of settings is the one list: each entry that sets a field is flipped above,
    /// the manual describes each, and the scopes are the ones the broker has always applied.
    @Test func everySettingIsTestedDocumentedAndScoped() throws {
        let checkedOnly: Set<String> = ["socket", "backstop", "password_used"]
        #expect(Set(Self.table.map { Self.name($0.0) }) == Set(SiteSetting.all.map(\.name)).subtracting(checkedOnly))
        #expect(SiteSetting.all.count == Set(SiteSetting.all.map(\.name)).count, "each name once")
        let manuals = try ["fingerseal.conf.5", "pam_fingerseal.8"].map { page in
            String(decoding: try #require(readFile(Paths.packageRoot + "/man/" + page)), as: UTF8.self).replacing("\\-", with: "-")
        }.joined()
        /// The name in bold (`.B name`, `.BR name`) or given a value (`name=`), not inside a longer name.
        func described(_ name: String) -> Bool {
            [".B \(name)\n", ".B \(name) ", ".BR \(name) ", ".BR \(name)\n"].contains { manuals.contains($0) }
                || manuals.ranges(of: name + "=").contains { range in
                    range.lowerBound == manuals.startIndex
                        || !(manuals[manuals.index(before: range.lowerBound)].isLetter || manuals[manuals.index(before: range.lowerBound)] == "_")
                }
        }
        for setting in SiteSetting.all {
            #expect(described(setting.name), "\(setting.name) is not described in fingerseal.conf(5) or pam_fingerseal(8)")
        }
        #expect(SiteSetting.forUserHosts == ["debug", "timeout", "max_tries", "pin", "stepup", "ttl", "socket", "skip_services", "prompt"])
        #expect(SiteSetting.fileOnly.contains("fixed") && SiteSetting.fileOnly.contains("tpm") && !SiteSetting.fileOnly.contains("provision"))
    }

    @Test func defaults() {
        let options = Options()
        #expect(options.timeout == 15 && options.maxTries == 3 && options.maxFails == 5)
        #expect(!options.debug && !options.pin && !options.allowRemote && !options.requireToken)
        #expect(options.offlineGrace == 7 * 24 * 3600 && options.interactiveServices.isEmpty && options.onlyGroup == nil)
    }

    @Test(arguments: Self.garbage)
    func outOfRangeOrGarbageIsAnError(setting: String) {
        var options = Options()
        #expect(throws: FingersealError.self) { try options.apply([setting], source: "test") }
    }

    static let garbage = ["timeout=0", "timeout=301", "timeout=-1", "timeout=", "timeout", "max_tries=0", "max_tries=21",
                      "max_fails=0", "max_fails=101", "offline_grace=99999999999", "debug=maybe", "only_group=", "only_group=a:b", "timeout=1e3", "timeout= 5", "socket=relative", "socket=/run/../tmp/x", "interactive_services=a b",
                      "reader=both", "reader=", "fprintd_storage=relative", "fprintd_storage=/var/../etc", "reader_location=lid",
                      "prompt=", "prompt", "prompt=quiet", "skip_services=",
                      "user_claim=name", "user_claim=", "user_map=relative",
                      // The password rule and the keyring.
                      "password_after_boot=maybe", "password_after", "password_after=", "password_after=59m", "password_after=366d",
                      "password_after=2w", "password_after=-1h", "password_after=h", "password_after=99999999999999d",
                      "keyring_services=", "keyring_services=a b",
                      "keyring_without_tpm=maybe", "keyring_without_tpm=",
                      // Fleet configuration.
                      "issuer", "issuer=", "issuer=http://idp.example.org", "issuer=ftp://idp.example.org", "issuer=https://",
                      "issuer=https://idp.example.org/o?x=1", "issuer=https://idp.example.org/#f", "issuer=https://me@idp.example.org",
                      "issuer=http://127.0.0.1.example.org/o", "issuer=https://idp.example.org/a b", "client_id", "client_id=",
                      "client_id=a\u{7}b", "client_id=é", "client_id=" + String(repeating: "c", count: 257),
                      "client_secret_file=", "client_secret_file=relative", "client_secret_file=/etc/../shadow",
                      "client_secret_file=/etc/fingerseal/", "scope", "scope=", "scope=openid \"email\"", "scope=openid\temail",
                      "flow", "flow=", "flow=implicit", "fixed", "fixed=", "fixed=frobnicate", "fixed=issuer,,client_id",
                      "fixed=fixed",
                      // The TPM.
                      "tpm", "tpm=", "tpm=yes", "tpm_tcti", "tpm_tcti=", "tpm_tcti=nocolon", "tpm_tcti=device:/dev/tpm rm0",
                      "tpm_pcrs=24", "tpm_pcrs=-1", "tpm_pcrs=7,,8", "tpm_pcrs=seven",
                      // Step-up.
                      "stepup_max_ttl", "stepup_max_ttl=0", "stepup_max_ttl=86401", "ttl=0", "ttl=86401",
                      // Provisioning.
                      "provision", "provision=", "provision=yes", "provision_issuer=http://idp.example.org", "provision_client_id=",
                      "provision_require", "provision_require=groups", "provision_require=:x", "provision_require=Groups:x",
                      "provision_require=groups:", "provision_require=groups:a\tb", "provision_groups=", "provision_groups=Users",
                      "provision_groups=a b", "provision_groups=a:b", "provision_per_hour=0", "provision_per_hour=1001",
                      "provision_expire_days=-1", "provision_expire_days=36501",
                      "provision_code_lifetime=29", "provision_code_lifetime=1801", "provision_device_name=",
                      "provision_device_name=a\u{7}b", "provision_device_name=" + String(repeating: "d", count: 65),
                      "provision_device_name_parameter=scope", "provision_device_name_parameter=kiosk-name",
                      "provision_device_name_parameter=", "provision_qr=maybe", "provision_reauthenticate=maybe",
                      "provision_per_subject=0", "provision_per_subject=101", "provision_email_domain=",
                      "provision_email_domain=@example.org", "provision_email_domain=exa mple.org", "provision_email_domain=-x.org",
                      "provision_email_domain=example..org", "provision_reserved=", "provision_reserved=Admin", "provision_reserved=a:b",
                      // Touch to sign in's budget (issue 31 §4).
                      "identify_pause_after=0", "identify_pause=9", "identify_lock_after=1001", "identify_daily_max=0",
                      "identify_daily_max=many"]

    @Test func theTPMSettingsAreTheConfigurationFilesAlone() throws {
        var options = Options()
        #expect(options.tpm == .auto && options.tpmTCTI == "device:/dev/tpmrm0" && options.tpmPCRs.isEmpty)
        try options.applyConfigFile("tpm=require\ntpm_pcrs=none\n")
        #expect(options.tpmPolicy == TPMPolicy(mode: .require))
        // A PAM stack's arguments (even a root host's) never lower or redirect them.
        let warnings = try options.applyArguments(["tpm=off", "tpm_tcti=swtpm:port=1", "tpm_pcrs=7", "timeout=9"], source: "module arguments")
        #expect(options.tpmPolicy == TPMPolicy(mode: .require) && options.timeout == 9)
        #expect(warnings == ["tpm", "tpm_tcti", "tpm_pcrs"].map { Messages.fileOnlyOption($0, "module arguments") })
    }

    /// The ceiling of step-up grants is the site's: no module argument (a root stack's, or a
    /// lock screen's) raises it.
    @Test func theStepUpCeilingIsTheConfigurationFilesAlone() throws {
        var options = Options()
        #expect(options.stepUpMaxTTL == 900)
        try options.applyConfigFile("stepup_max_ttl=120\n")
        let warnings = try options.applyArguments(["stepup_max_ttl=86400", "ttl=600"], source: "module arguments")
        #expect(options.stepUpMaxTTL == 120 && options.stepUpTTL == 600)
        #expect(warnings == [Messages.fileOnlyOption("stepup_max_ttl", "module arguments")])
    }

    /// Whether the keyring's copy of the password may sit in a vault a stolen disk opens is
    /// the machine's: no PAM stack says so for it, and no `[service NAME]` section (the table
    /// tests check the section).
    @Test func keyringWithoutTPMIsTheConfigurationFilesAlone() throws {
        var options = Options()
        #expect(!options.keyringWithoutTPM)
        let warnings = try options.applyArguments(["keyring_without_tpm=yes"], source: "module arguments")
        #expect(!options.keyringWithoutTPM)
        #expect(warnings == [Messages.fileOnlyOption("keyring_without_tpm", "module arguments")])
        try options.applyConfigFile("keyring_without_tpm=yes\n")
        #expect(options.keyringWithoutTPM)
    }

    /// `[provision]`: its names are provisioning's; another section is a warning and its
    /// settings apply nowhere. The provision_* settings are the file's alone; `provision=idp`
    /// is a stack's to give.
    @Test func theProvisionSection() throws {
        var options = Options()
        let warnings = try options.applyConfigFile("""
            timeout = 20
            [provision]
            require = groups:staff
            provision_per_hour = 3
            expire_days = 7
            [elsewhere]
            timeout = 99
            """)
        #expect(options.timeout == 20 && options.provisionRequire == ClaimRequirement(parsing: "groups:staff"))
        #expect(options.provisionPerHour == 3 && options.provisionExpireDays == 7 && options.provision == nil)
        #expect(warnings == [Messages.unknownSection("elsewhere")])
        let refused = try options.applyArguments(["provision=idp", "provision_require=groups:anyone", "provision_per_hour=1000"],
                                                 source: "module arguments")
        #expect(options.provision == .idp && options.provisionRequire?.value == "staff" && options.provisionPerHour == 3)
        #expect(refused == ["provision_require", "provision_per_hour"].map { Messages.fileOnlyOption($0, "module arguments") })
        // The provider: the section's, else the main issuer and client.
        #expect(options.provisionProvider == nil)
        try options.applyConfigFile("issuer=https://idp.example.org/a\nclient_id=main\n[provision]\nclient_id=kiosk\n")
        #expect(options.provisionProvider?.issuer == "https://idp.example.org/a" && options.provisionProvider?.clientID == "kiosk")
    }

    // MARK: settings per service (issue 23 §3)

    /// The name of a table row's option.
    static func name(_ setting: String) -> String { String(setting.prefix { $0 != "=" }) }

    /// Each option a section may set, flipped in `[service sudo]` alone: sudo gets it, every
    /// other field of sudo's stays the top level's, and another service (and a command, with
    /// no service) keeps the top level. The top level sets something of its own too, which
    /// the section leaves alone.
    @Test func eachOptionInAServiceSectionChangesOnlyThatService() throws {
        let defaults = Options()
        let perService = Self.table.filter { !SiteSetting.fileOnly.contains(Self.name($0.0)) }
        #expect(perService.count == Self.table.count - SiteSetting.fileOnly.count, "every file-only option is in the table")
        for (setting, key, expected) in perService {
            let top = setting.hasPrefix("reader_location") ? "reader=libfprint" : "reader_location=builtin"
            var options = Options()
            #expect(try options.applyConfigFile("\(top)\n[service sudo]\n\(setting)\n").isEmpty, "\(setting)")
            let sudo = try options.forService("sudo")
            #expect("\(sudo[keyPath: key])" == expected, "\(setting)")
            for (_, other, _) in Self.table where other != key {
                #expect("\(sudo[keyPath: other])" == "\(options[keyPath: other])", "\(setting) changed \(other) for sudo")
            }
            for elsewhere in [try options.forService("login"), try options.forService(nil)] {
                #expect("\(elsewhere[keyPath: key])" == "\(defaults[keyPath: key])", "\(setting) leaked to another service")
                #expect(elsewhere == options)
            }
            #expect(sudo.readerLocation == (top == "reader_location=builtin" ? .builtin : .external), "\(setting): the top level stays")

            // A module argument wins over the section; unless the top level fixed the option.
            guard let argument = Self.anotherValue[Self.name(setting)] else {
                #expect(Self.name(setting) == "provision", "\(setting) needs another value to give as an argument")
                continue
            }
            var alone = Options()
            try alone.apply([argument], source: "test")
            let argued = "\(alone[keyPath: key])"
            #expect(argued != expected, "\(argument)")
            var withArgument = sudo
            #expect(try withArgument.applyArguments([argument], source: "module arguments").isEmpty)
            #expect("\(withArgument[keyPath: key])" == argued, "\(argument) over [service sudo] \(setting)")
            var fixed = Options()
            try fixed.applyConfigFile("fixed=\(Self.name(setting))\n[service sudo]\n\(setting)\n")
            var fixedSudo = try fixed.forService("sudo")
            #expect(try fixedSudo.applyArguments([argument], source: "module arguments")
                    == [Messages.fixedOptionIgnored(Self.name(setting), "module arguments")])
            #expect("\(fixedSudo[keyPath: key])" == expected, "fixed: \(setting) stays the section's")
        }
    }

    /// For each option a section may set, a value other than the table's and the default's:
    /// what a module argument gives over the section. (`provision` has one value only.)
    static let anotherValue: [String: String] = [
        "debug": "debug=no", "timeout": "timeout=16", "max_tries": "max_tries=4", "max_fails": "max_fails=6", "pin": "pin=no",
        "allow_remote": "allow_remote=no", "require_token": "require_token=no", "offline_grace": "offline_grace=61",
        "interactive_services": "interactive_services=other", "unattended_services": "unattended_services=other",
        "only_group": "only_group=other", "identify": "identify=no", "identify_group": "identify_group=other",
        "connect_timeout": "connect_timeout=10", "idp_timeout": "idp_timeout=21", "stepup": "stepup=other", "ttl": "ttl=61",
        "reader": "reader=libfprint", "fprintd_storage": "fprintd_storage=/other", "reader_location": "reader_location=builtin",
        "skip_services": "skip_services=other", "prompt": "prompt=combined", "user_claim": "user_claim=sub",
        "user_map": "user_map=/other", "redirect_port": "redirect_port=8766", "issuer": "issuer=https://other.example.org",
        "client_id": "client_id=other", "client_secret_file": "client_secret_file=/other", "scope": "scope=openid",
        "flow": "flow=password", "password_after_boot": "password_after_boot=no", "password_after": "password_after=2h",
    ]

    /// The section over the top level, the module arguments over the section, and `fixed=`
    /// over the module arguments (not over the section: both are the administrator's file).
    @Test func theOrderDefaultsFileSectionArgumentsAndFixed() throws {
        var options = Options()
        try options.applyConfigFile("""
            timeout = 20
            prompt = combined
            max_fails = 8
            fixed = max_fails, pin
            [service swaylock]
            prompt = none
            timeout = 30
            max_fails = 3
            pin
            """)
        #expect(options.prompt == .combined && options.timeout == 20 && options.maxFails == 8 && !options.pin)
        var swaylock = try options.forService("swaylock")
        #expect(swaylock.prompt == .none && swaylock.timeout == 30 && swaylock.maxFails == 3 && swaylock.pin)
        let warnings = try swaylock.applyArguments(["timeout=9", "prompt=normal", "max_fails=50", "pin=no"], source: "module arguments")
        #expect(swaylock.timeout == 9 && swaylock.prompt == .normal, "module arguments win over the section")
        #expect(swaylock.maxFails == 3 && swaylock.pin, "fixed names keep the section's value")
        #expect(warnings == ["max_fails", "pin"].map { Messages.fixedOptionIgnored($0, "module arguments") })
        let sudo = try options.forService("sudo")
        #expect(sudo.prompt == .combined && sudo.timeout == 20 && sudo.maxFails == 8)
        // A section repeated adds up, later lines winning; `only` applies just the names given.
        try options.applyConfigFile("[service swaylock]\ntimeout=40\n")
        #expect(try options.forService("swaylock").timeout == 40 && options.forService("swaylock").prompt == .none)
        let presentation = try options.forService("swaylock", only: ["prompt"])
        #expect(presentation.prompt == .none && presentation.timeout == 20 && presentation.maxFails == 8 && !presentation.pin)
    }

    /// A bad value in a section is the error it is at the top level (and a fine one fine): one
    /// parser for both.
    @Test(arguments: Self.garbage + Self.table.map(\.0))
    func aSectionValueIsCheckedAsAtTheTopLevel(setting: String) throws {
        var inSection = Options()
        if SiteSetting.fileOnly.contains(Self.name(setting)) {
            // Never applied there: only ever a warning, whatever the value.
            let warnings = try inSection.applyConfigFile("[service sudo]\n\(setting)\n")
            #expect(warnings == [Messages.fileOnlyInServiceSection(Self.name(setting), "sudo")])
            #expect(try inSection.forService("sudo") == inSection)
            return
        }
        var topLevel = Options()
        let topMessage: String?
        do { try topLevel.applyConfigFile(setting + "\n"); topMessage = nil } catch let error as FingersealError { topMessage = error.message }
        let sectionMessage: String?
        do {
            try inSection.applyConfigFile("[service sudo]\n\(setting)\n")
            sectionMessage = nil
        } catch let error as FingersealError {
            sectionMessage = error.message
        }
        #expect(sectionMessage == topMessage, "\(setting)")
    }

    /// Unknown names are warnings in a section as at the top level; the whole machine's
    /// settings (the TPM, the step-up ceiling, provisioning, fixed=) are refused there with a
    /// warning of their own and never applied; a service name is checked as skip_services=
    /// checks one.
    @Test func unknownAndFileOnlyNamesInASection() throws {
        var options = Options()
        let warnings = try options.applyConfigFile("""
            [service sudo]
            nullok
            frobnicate = 3
            tpm = off
            stepup_max_ttl = 86400
            fixed = prompt
            provision_per_hour = 1000
            prompt = none
            """)
        #expect(warnings == ["tpm", "stepup_max_ttl", "fixed", "provision_per_hour"].map { Messages.fileOnlyInServiceSection($0, "sudo") }
                + [Messages.unknownOption("nullok"), Messages.unknownOption("frobnicate")], "\(warnings)")
        let sudo = try options.forService("sudo")
        #expect(sudo.prompt == .none && sudo.tpm == .auto && sudo.stepUpMaxTTL == 900 && sudo.fixed.isEmpty && sudo.provisionPerHour == 5)
        var top = Options()
        #expect(try top.applyConfigFile("nullok\nfrobnicate = 3\n") == [Messages.unknownOption("nullok"), Messages.unknownOption("frobnicate")])
        // Service names: what skip_services= takes, one at a time.
        for name in ["sudo", "gdm-password", "kde-fingerprint", "polkit-1", "x.y_z"] {
            var fine = Options()
            #expect(try fine.applyConfigFile("[service \(name)]\ntimeout=9\n").isEmpty, "\(name)")
            #expect(try fine.forService(name).timeout == 9)
            #expect(try fine.apply(["skip_services=\(name)"], source: "test").isEmpty)
        }
        for header in ["[service]", "[service ]", "[service a,b]", "[service a b]", "[service \(String(repeating: "s", count: 1025))]"] {
            var bad = Options()
            #expect(throws: FingersealError.self, "\(header)") { try bad.applyConfigFile(header + "\ntimeout=9\n") }
        }
        #expect(!Options.isServiceName("a b") && !Options.isServiceName("a,b") && !Options.isServiceName(""))
        var other = Options()
        #expect(try other.applyConfigFile("[services sudo]\ntimeout=9\n") == [Messages.unknownSection("services sudo")])
        #expect(other.timeout == 15 && other.serviceSections.isEmpty)
    }

    /// What `doctor --service` reports: each setting that differs from the defaults, once, as
    /// last written, and whether the section wrote it.
    @Test func originsOfTheSettingsForAService() throws {
        var options = Options()
        try options.applyConfigFile("""
            timeout = 20
            timeout = 25
            prompt = combined
            pin
            [provision]
            per_hour = 2
            [service swaylock]
            prompt = none
            pin = no
            max_fails = 3
            frobnicate
            """)
        let swaylock = options.origins(service: "swaylock").map { "\($0.setting) \($0.fromSection)" }
        #expect(swaylock == ["timeout=25 false", "provision_per_hour=2 false", "prompt=none true",
                             "max_fails=3 true"], "\(swaylock)")
        let sudo = options.origins(service: "sudo").map { "\($0.setting) \($0.fromSection)" }
        #expect(sudo == ["timeout=25 false", "prompt=combined false", "pin false", "provision_per_hour=2 false"], "\(sudo)")
        #expect(Options().origins(service: "sudo").isEmpty)
    }

    @Test func accountNames() {
        for name in ["fsp1", "_svc", "a.b-c_9", String(repeating: "a", count: 32)] { #expect(AccountName.isValid(name), "\(name)") }
        for name in ["", "Root", "1abc", "-x", "a/b", "a b", "a:b", "é", ".x", String(repeating: "a", count: 33)] {
            #expect(!AccountName.isValid(name), "\(name)")
        }
    }

    /// `dpop=`: one general policy at most, each issuer once, an issuer URL before each `=`.
    @Test func dpopPerIssuer() throws {
        var options = Options()
        #expect(try options.apply(["dpop=required, https://a.example.org/r=off,https://b.example.org=auto"], source: "test").isEmpty)
        #expect(options.dpop.policy(for: "https://a.example.org/r/") == .off)
        #expect(options.dpop.policy(for: "https://b.example.org") == .auto)
        #expect(options.dpop.policy(for: "https://c.example.org") == .required)
        #expect("\(options.dpop)" == "required, https://a.example.org/r=off, https://b.example.org=auto")
        for bad in ["dpop=auto, off", "dpop=https://a.example.org=sometimes", "dpop=ftp://a.example.org=off",
                    "dpop=https://a.example.org=off, https://a.example.org/=auto", "dpop=", "dpop=https://a.example.org?x=off"] {
            var refused = Options()
            #expect(throws: (any Error).self, "\(bad)") { _ = try refused.apply([bad], source: "test") }
        }
    }

    @Test func hugeOptionIsRefused() {
        var options = Options()
        #expect(throws: FingersealError.self) {
            try options.apply(["only_group=" + String(repeating: "a", count: 100 * 1024)], source: "test")
        }
    }

    @Test func unknownOptionsAreWarningsNotErrors() throws {
        var options = Options()
        let warnings = try options.apply(["nullok", "frobnicate=3", "debug"], source: "test")
        #expect(warnings.count == 2)
        #expect(options.debug)
    }

    @Test func configFileThenArgumentsWin() throws {
        var options = Options()
        try options.applyConfigFile("""
            # fingerseal
            timeout = 20
            max_fails=8   # trailing comment

            pin
            """)
        #expect(options.timeout == 20 && options.maxFails == 8 && options.pin)
        try options.apply(["timeout=5", "pin=no"], source: "args")
        #expect(options.timeout == 5 && !options.pin && options.maxFails == 8)
    }

    @Test func crlfLineEndings() throws {
        var options = Options()
        try options.applyConfigFile("timeout=25\r\nmax_fails=7\r\npin\r\n")
        #expect(options.timeout == 25 && options.maxFails == 7 && options.pin)
    }

    @Test func fleetValuesThatAreFine() throws {
        var options = Options()
        try options.applyConfigFile("""
            issuer = http://127.0.0.1:8080/o
            client_id = fingerseal fleet
            fixed = issuer, client_id
            fixed = require_token,timeout   # fixed lines add up
            """)
        #expect(options.issuer == "http://127.0.0.1:8080/o" && options.clientID == "fingerseal fleet")
        #expect(options.fixed == ["issuer", "client_id", "require_token", "timeout"])
        for issuer in ["http://[::1]:9/o", "http://localhost/o", "https://idp.example.org", "https://idp.example.org:8443/o/"] {
            #expect(throws: Never.self) { try options.apply(["issuer=" + issuer], source: "test") }
        }
    }

    /// Module arguments over the file: a fixed option keeps the file's value, `fixed=` is the
    /// file's alone (it cannot fix, nor un-fix), and everything else still wins.
    @Test func argumentsCannotChangeWhatTheFileFixed() throws {
        var options = Options()
        try options.applyConfigFile("require_token\ntimeout=20\nfixed=require_token")
        let warnings = try options.applyArguments(["require_token=no", "fixed=timeout", "timeout=5", "frobnicate"], source: "module arguments")
        #expect(options.requireToken, "fixed: the file's value stays")
        #expect(options.timeout == 5, "not fixed: the argument wins")
        #expect(options.fixed == ["require_token"])
        #expect(warnings.count == 3, "\(warnings)")
        #expect(warnings.contains("The option require_token in module arguments was ignored: the administrator fixed it in the configuration file."))
        #expect(warnings.contains("The option fixed in module arguments was ignored: only the configuration file can fix options."))
    }

    @Test func missingConfigFileMeansDefaults() throws {
        let (options, warnings) = try Options.loadSystem(path: "/nonexistent-dir/fingerseal.conf")
        #expect(options == Options() && warnings.isEmpty)
    }
}

@Suite struct OutcomeTests {
    @Test func pamCodesMatchLibpam() {
        #expect(PAMReturn.success.rawValue == PAM_SUCCESS)
        #expect(PAMReturn.serviceError.rawValue == PAM_SERVICE_ERR)
        #expect(PAMReturn.authError.rawValue == PAM_AUTH_ERR)
        #expect(PAMReturn.authInfoUnavailable.rawValue == PAM_AUTHINFO_UNAVAIL)
        #expect(PAMReturn.userUnknown.rawValue == PAM_USER_UNKNOWN)
        #expect(PAMReturn.maxTries.rawValue == PAM_MAXTRIES)
        #expect(PAMReturn.incomplete.rawValue == PAM_INCOMPLETE)
        #expect(PAMReturn.ignore.rawValue == PAM_IGNORE)
    }

    @Test func onlySuccessSucceeds() {
        for outcome in Outcome.allCases where outcome != .success {
            #expect(outcome.pamReturn != .success, "\(outcome)")
            #expect(outcome.pamReturn != .ignore || outcome == .notApplicable, "\(outcome)")
            #expect(outcome.exitCode != 0, "\(outcome)")
        }
        #expect(Outcome.success.pamReturn == .success && Outcome.success.exitCode == 0)
    }

    @Test func designTable() {
        #expect(Outcome.triesExhausted.pamReturn == .maxTries)
        for outcome in [Outcome.noReader, .noPrints, .timedOut, .cancelled, .remoteSession, .notEnrolled, .noVault] {
            #expect(outcome.pamReturn == .authInfoUnavailable)
        }
        #expect(Outcome.unknownUser.pamReturn == .userUnknown)
        #expect(Outcome.badConfiguration.pamReturn == .serviceError)
        for outcome in [Outcome.lockedOut, .signInRequired, .wrongPIN, .noMatch] { #expect(outcome.pamReturn == .authError) }
        #expect(Outcome.conversationAgain.pamReturn == .incomplete)
    }
}

/// The phone's rule (issue 23 §1), judged by the broker's own record of the password, its
/// boot id and its clock (a test clock here: the times are given).
@Suite struct PasswordRuleTests {
    let boot = "0123456789abcdef0123456789abcdef"

    @Test func afterBootNeedsThePasswordOncePerBoot() {
        let rule = PasswordRule(afterBoot: true)
        #expect(rule.due(nil, boot: boot, now: 1000) == .afterBoot, "never seen")
        #expect(rule.due(PasswordSeen(boot: "another", at: 900), boot: boot, now: 1000) == .afterBoot, "seen in an earlier boot")
        #expect(rule.due(PasswordSeen(boot: boot, at: 10), boot: boot, now: 10_000_000) == nil, "seen in this boot, however long ago")
        #expect(rule.next(PasswordSeen(boot: boot, at: 10), boot: boot, now: 20) == .later(at: nil, afterRestart: true))
        #expect(PasswordRule().due(nil, boot: boot, now: 1000) == nil && PasswordRule().next(nil, boot: boot, now: 1) == nil,
                "no rule: never")
    }

    @Test func afterATimeWithoutIt() {
        let rule = PasswordRule(after: 48 * 3600)
        let seen = PasswordSeen(boot: "any", at: 1_000_000)
        #expect(rule.due(seen, boot: boot, now: 1_000_000 + 48 * 3600 - 1) == nil)
        #expect(rule.due(seen, boot: boot, now: 1_000_000 + 48 * 3600) == .afterTime)
        #expect(rule.due(nil, boot: boot, now: 5) == .afterTime, "never seen")
        // A clock set back does not keep the password away longer.
        #expect(rule.due(seen, boot: boot, now: 1_000_000 - 3600) == .afterTime)
        #expect(rule.next(seen, boot: boot, now: 1_000_100) == .later(at: 1_000_000 + 48 * 3600, afterRestart: false))
        let both = PasswordRule(afterBoot: true, after: 3600)
        #expect(both.due(PasswordSeen(boot: boot, at: 100), boot: boot, now: 3800) == .afterTime)
        #expect(both.next(PasswordSeen(boot: boot, at: 100), boot: boot, now: 200) == .later(at: 3700, afterRestart: true))
    }

    @Test func durationsAsTheFileWritesThem() throws {
        #expect(DurationSetting.seconds(parsing: "48h") == 172_800)
        #expect(DurationSetting.seconds(parsing: "7d") == 604_800)
        #expect(DurationSetting.seconds(parsing: "90m") == 5400)
        #expect(DurationSetting.seconds(parsing: "3600") == 3600)
        for bad in ["", "h", "1.5h", "-1h", "1 h", "12w", "999999999999999999d"] {
            #expect(DurationSetting.seconds(parsing: bad) == nil, "\(bad)")
        }
        var options = Options()
        try options.apply(["password_after=48h", "password_after=off"], source: "test")
        #expect(options.passwordAfter == nil, "off turns it off again (a service's section)")
    }
}
