@testable import Broker
import CPAM
import FoundationEssentials
import Glibc
import FingersealCore
import PAMKit
import SystemKit
import Testing
@testable import TestSupport

/// Provisioning (issue 22 §2) through a real PAM stack: pamtester under pam_wrapper on a
/// terminal, pam_fingerseal.so with `provision=idp` against a broker of the test's own
/// (virtual_device reader), the local IdP's device flow approved through its own pages. The
/// accounts are real (useradd by the broker); every test removes what it made.
@Suite(.enabled(if: LocalIdP.available && Pamtester.available && SyslogCapture.availableAnywhere), .serialized)
struct ProvisioningTests {
    static let pin = "4826"
    static let service = "fingerseal-provision-test"
    static let group = "peer-mentors"

    final class Rig {
        let idp: LocalIdP
        let rig: ReaderBroker
        let environment: [String: String]
        /// Names this rig may have made (removed at the end, whatever happened).
        var names: [String] = []
        /// The conversation's lines `userCode` read (which `finish` no longer returns).
        var seen: [String] = []
        /// The broker's syslog (where the audit trail logs what no vault records).
        let logs: TempDirectory
        let capture: SyslogCapture
        private var logged: [String] = []

        /// `storage`: libfprint's virtual_device_storage, a reader that identifies (touch to
        /// sign in); else virtual_device.
        /// `config`: top-level lines; `provision`: more lines of the [provision] section.
        init(config extra: String = "", provision: String = "", perHour: Int = 5, expireDays: Int = 30, groups: String = "users",
             moduleOptions: String = "provision=idp", storage: Bool = false) throws {
            idp = try LocalIdP()
            let config = Rig.config(extra, provision, issuer: idp.issuer, perHour: perHour, expireDays: expireDays, groups: groups)
            logs = try TempDirectory()
            capture = try SyslogCapture(directory: logs.path)
            rig = storage ? try ReaderBroker(driver: "virtual_device_storage", variable: "FP_VIRTUAL_DEVICE_STORAGE", config: config,
                                             wrap: capture.wrap)
                : try ReaderBroker(config: config, wrap: capture.wrap)
            #expect(mkdir(rig.files.file("pam.d"), 0o755) == 0)
            environment = Pamtester.environment(rig.files.file("pam.d"))
            let module = "\(Paths.module) socket=\(rig.broker.socketPath) \(moduleOptions)"
            writeFile(rig.files.file("pam.d") + "/" + ProvisioningTests.service, Array("auth required \(module)\n".utf8), mode: 0o644)
        }

        static func config(_ extra: String, _ provision: String, issuer: String, perHour: Int = 5, expireDays: Int = 30,
                           groups: String = "users") -> String {
            """
            user_claim=preferred_username
            \(extra)
            [provision]
            issuer=\(issuer)
            client_id=fingerseal-device
            require=groups:\(ProvisioningTests.group)
            groups=\(groups)
            per_hour=\(perHour)
            expire_days=\(expireDays)
            \(provision)

            """
        }

        /// A new configuration file for the running broker (it reads a changed file again).
        func reconfigure(config extra: String = "", provision: String = "") {
            writeFile(rig.broker.config, Array(Rig.config(extra, provision, issuer: idp.issuer).utf8), mode: 0o644)
        }

        deinit {
            for name in names where getpwnam(name) != nil {
                _ = Child.runQuietly("/usr/sbin/userdel", ["--remove", name])
            }
        }

        /// A fresh name nobody has here (and the IdP user of that name, in `groups`, with the
        /// address NAME@`domain`).
        func newPerson(groups: [String] = [ProvisioningTests.group], domain: String = "example.test") throws -> String {
            let name = "fsp" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
            names.append(name)
            try idp.hook("/test/add-user", [("username", name), ("groups", groups.joined(separator: ",")), ("email", "\(name)@\(domain)")])
            return name
        }

        /// pamtester authenticating `user`, its output line-buffered; `answers` on stdin.
        /// `openInput`: stdin stays open (a person who has not answered yet).
        func start(_ user: String, answers: [String], openInput: Bool = false) throws -> Child {
            drain()
            let stdin = Array(answers.map { $0 + "\n" }.joined().utf8)
            return try Child("/usr/bin/stdbuf", ["-oL", "/usr/bin/pamtester", "-I", "tty=/dev/pts/0", ProvisioningTests.service, user,
                                                 "authenticate"],
                             environment: environment, stdin: stdin, openInput: openInput, terminal: .leader)
        }

        /// Reads the conversation up to the device sign-in's sentence; returns the user code.
        func userCode(_ child: Child) -> String? {
            while let line = child.readLine(timeout: 30) {
                seen.append(line)
                if let range = line.range(of: "enter the code ") {
                    return String(line[range.upperBound...].prefix { $0 != "." && $0 != " " })
                }
            }
            return nil
        }

        /// The person approves the code at the provider as `idpUser`.
        func approve(_ code: String, as idpUser: String) throws {
            drain()
            try idp.hook("/test/approve-device", [("user_code", code), ("username", idpUser)])
        }

        /// The whole first sign-in of `name` (as the IdP user `idpUser`), the PIN typed twice,
        /// five scans of `print`.
        func provision(_ name: String, as idpUser: String? = nil, print: String = "finger-a") throws -> Child.Result {
            let child = try start(name, answers: [ProvisioningTests.pin, ProvisioningTests.pin])
            guard let code = userCode(child) else { return child.finish() }
            try approve(code, as: idpUser ?? name)
            #expect(child.waitForLine(containing: "Now enroll a finger"), "no enrollment")
            drain()
            for _ in 0..<5 { try VirtualSensor.send("SCAN \(print)", to: rig.sensor) }
            return child.finish()
        }

        /// Nothing of `name` is left: no account, no record, no vault directory beyond `before`.
        func nothingLeft(_ name: String, vaults before: Set<String>) -> Bool {
            drain()
            return getpwnam(name) == nil && getgrnam(name) == nil
                && access(rig.broker.state + "/provisioned/\(name).json", F_OK) != 0
                && vaults == before
        }

        /// The store's vault directories (one per uid; the registry of provisioned accounts
        /// beside them is not one).
        var vaults: Set<String> { Set(directoryNames(rig.broker.state).filter { $0 != "provisioned" }) }

        /// Takes what reached the log socket: its queue holds only 10 datagrams
        /// (net.unix.max_dgram_qlen), and a full one blocks whoever logs next (the broker,
        /// useradd, userdel). Every step of the rig drains it first.
        func drain() { logged += capture.messages() }

        /// Whether the broker logged the audit sentence of `event` for `name` (LOG_AUTHPRIV,
        /// LOG_NOTICE: <85>).
        func audited(_ name: String, _ event: ProvisioningEvent, _ reason: String) -> Bool {
            drain()
            let sentence = "audit: user \(name): " + Messages.auditProvisioning(event, reason)
            return logged.contains { $0.hasPrefix("<85>") && $0.contains(sentence) }
        }

        func cli(_ arguments: [String], as user: String? = nil) throws -> Child.Result {
            drain()
            return try rig.cli(arguments, as: user)
        }
    }

    /// The account exists afterwards with a vault, a PIN and a finger; its second login with
    /// its user name and that finger works; `account list` shows it, `remove` takes it away.
    /// The per-hour limit then refuses a second new account (per_hour=1).
    @Test func aFirstSignInMakesTheAccountAndTheFingerSignsInNext() throws {
        let rig = try Rig(perHour: 1)
        let name = try rig.newPerson()
        let result = try rig.provision(name)
        #expect(result.status == 0, "\(result.all)")
        #expect(rig.seen.contains { $0.hasPrefix("To sign in, open \(rig.idp.origin)/o/device/ on any device and enter the code ") },
                "\(rig.seen)")
        #expect(rig.seen.contains(Messages.provisionStart(name)), "\(rig.seen)")
        // By default the code is typed (no QR code of a link that opens by itself), the
        // sentence names this computer, and the provider is asked for a fresh sign-in.
        #expect(!result.stdout.contains(Messages.orScanQR), "\(result.stdout)")
        #expect(result.stdout.contains(Messages.provisionThisComputer(Provisioning.deviceName(Options()))), "\(result.stdout)")
        let asked = try #require(try rig.idp.deviceAuthorizations().last)
        #expect(asked["max_age"] == ["0"] && asked["prompt"] == ["login"], "\(asked)")
        #expect(result.stdout.contains("Scan 2 of 5 done."), "\(result.stdout)")
        #expect(result.stdout.contains("The account \(name) is ready."), "\(result.stdout)")
        #expect(result.stderr.contains("New PIN") || result.all.contains("new PIN"), "\(result.all)")
        let entry = try #require(getpwnam(name))
        // A locked password, the configured group, no home until a session makes one.
        #expect(access(String(cString: entry.pointee.pw_dir), F_OK) != 0)
        #expect(try Child.run("/usr/bin/id", ["-nG", name]).stdout.split(separator: " ").map { $0.trimmingCharacters() }.contains("users"))
        let shadow = try Child.run("/usr/bin/passwd", ["--status", name]).stdout
        #expect(shadow.split(separator: " ").dropFirst().first == "L", "\(shadow)")

        let status = try rig.cli(["status", "--user", name, "--json"])
        #expect(status.status == 0, "\(status.all)")
        #expect(status.stdout.contains("\"pin_set\" : true"), "\(status.stdout)")
        #expect(status.stdout.contains("\"right-index-finger\""), "\(status.stdout)")
        #expect(status.stdout.contains("\"sign_in\" : \"active\""), "\(status.stdout)")
        #expect(status.stdout.contains("\"signed_in_as\" : \"\(name)@example.test\""), "\(status.stdout)")

        // The second login: the user name and the finger, nothing typed.
        let again = try rig.start(name, answers: [])
        try VirtualSensor.send("SCAN finger-a", to: rig.rig.sensor)
        let second = again.finish()
        #expect(second.status == 0, "\(second.all)")
        #expect(!second.all.contains("enter the code"), "\(second.all)")

        #expect(try rig.idp.familyAlive(name), "the sealed sign-in is alive: \((try? rig.idp.family(name)) ?? "?")")
        let trail = try rig.cli(["audit", "--user", name])
        #expect(trail.stdout.contains(Messages.auditProvisioned(rig.idp.issuer)), "\(trail.all)")

        let list = try rig.cli(["account", "list", "--json"])
        #expect(list.status == 0 && list.stdout.contains("\"name\" : \"\(name)\""), "\(list.all)")
        #expect(list.stdout.contains("\"state\" : \"active\""), "\(list.stdout)")
        TestUsers.ensure(TestUsers.alice)
        let notRoot = try rig.cli(["account", "list"], as: TestUsers.alice)
        #expect(notRoot.status == 13, "\(notRoot.all)")

        // The limit: one new account an hour, so the next name is refused before any sign-in.
        let other = try rig.newPerson()
        let limited = try rig.start(other, answers: []).finish()
        #expect(limited.status != 0, "\(limited.all)")
        #expect(limited.all.contains(Messages.provisionRateLimited), "\(limited.all)")
        #expect(!limited.all.contains("enter the code"), "\(limited.all)")
        #expect(getpwnam(other) == nil)

        let uid = entry.pointee.pw_uid
        let removed = try rig.cli(["account", "remove", name])
        #expect(removed.status == 0, "\(removed.all)")
        #expect(getpwnam(name) == nil)
        #expect(access(rig.rig.broker.state + "/\(uid)", F_OK) != 0, "the vault went with it")
        #expect(rig.audited(name, .removed, "administrator"))
        #expect(rig.audited(other, .refused, "rateLimited"))
        #expect(try rig.cli(["account", "list"]).stdout.contains(Messages.accountNoneProvisioned))
        // Only accounts fingerseal made.
        let refused = try rig.cli(["account", "remove", TestUsers.alice])
        #expect(refused.status == 2 && getpwnam(TestUsers.alice) != nil, "\(refused.all)")
    }

    /// Ctrl-C while the code is shown: nothing is made. With the administrator's opt-in, the
    /// QR code is shown, and the computer's name is said and sent to the provider under the
    /// parameter named.
    @Test func cancelAtTheCodeLeavesNothing() throws {
        let rig = try Rig(provision: "qr=yes\ndevice_name=desk-7\ndevice_name_parameter=kiosk_name\nreauthenticate=no")
        let before = rig.vaults
        let name = try rig.newPerson()
        let child = try rig.start(name, answers: [])
        #expect(rig.userCode(child) != nil)
        #expect(child.waitForLine(containing: "Waiting for you to finish signing in"))
        #expect(ReaderBroker.waitUntil { interruptIsBlocked(child.pid) }, "the module never waited for the broker")
        child.signal(SIGINT)
        let result = child.finish()
        let shown = (rig.seen + [result.all]).joined(separator: "\n")
        #expect(shown.contains(Messages.orScanQR) && shown.contains(Messages.provisionThisComputer("desk-7")), "\(shown)")
        let asked = try #require(try rig.idp.deviceAuthorizations().last)
        #expect(asked["kiosk_name"] == ["desk-7"] && asked["max_age"] == nil && asked["prompt"] == nil, "\(asked)")
        #expect(result.status != 0, "\(result.all)")
        #expect(rig.nothingLeft(name, vaults: before))
        #expect(rig.audited(name, .cancelled, "cancelled"))
    }

    /// The PIN is never given (the conversation ends at its question): the account made for
    /// it is removed again.
    @Test func cancelAtThePINLeavesNothing() throws {
        let rig = try Rig()
        let before = rig.vaults
        let name = try rig.newPerson()
        let child = try rig.start(name, answers: [])
        let code = try #require(rig.userCode(child))
        try rig.approve(code, as: name)
        let result = child.finish()
        #expect(result.status != 0, "\(result.all)")
        #expect(result.all.contains("The account \(name) was made."), "the account was made before the PIN: \(result.all)")
        #expect(rig.nothingLeft(name, vaults: before), "\(result.all)")
        #expect(rig.audited(name, .cancelled, "cancelled"))
        #expect(!(try rig.idp.familyAlive(name)), "the sign-in was ended at the provider: \((try? rig.idp.family(name)) ?? "?")")
    }

    /// Ctrl-C after two of five scans: no half-enrolled finger, no vault, no account.
    @Test func cancelDuringEnrollmentLeavesNothing() throws {
        let rig = try Rig()
        let before = rig.vaults
        let name = try rig.newPerson()
        let child = try rig.start(name, answers: [Self.pin, Self.pin])
        let code = try #require(rig.userCode(child))
        try rig.approve(code, as: name)
        #expect(child.waitForLine(containing: "Now enroll a finger"))
        try VirtualSensor.send("SCAN finger-a", to: rig.rig.sensor)
        try VirtualSensor.send("SCAN finger-a", to: rig.rig.sensor)
        #expect(child.waitForLine(containing: "Scan 2 of 5 done."))
        #expect(ReaderBroker.waitUntil { interruptIsBlocked(child.pid) }, "the module never waited for the broker")
        child.signal(SIGINT)
        let result = child.finish()
        #expect(result.status != 0, "\(result.all)")
        #expect(rig.nothingLeft(name, vaults: before), "\(result.all)")
    }

    /// The kiosk of issue 22: one stack with `identify` and `provision=idp`, a reader that
    /// identifies. A newcomer turns from the touch prompt to the user name, types it, signs in once with the organisation's account, chooses a PIN and enrolls a finger,
    /// all in one PAM conversation started with no user name; the account is in
    /// `identify_group` and opted in, and the next login is a touch alone.
    @Test func aNewcomerAtTheKioskSignsInOnceThenByTouch() throws {
        let group = "fsp-touch"
        if getgrnam(group) == nil { #expect(Child.runQuietly("/usr/sbin/groupadd", [group]) == 0) }
        let rig = try Rig(config: "identify_group=\(group)", moduleOptions: "provision=idp identify max_tries=1", storage: true)
        let name = try rig.newPerson()
        let services = rig.rig.files.file("pam.d")
        func login(first: Bool) throws -> (status: Int32, user: String?, shown: [PAMClient.Message]) {
            var shown: [PAMClient.Message] = []
            var touched = false, scanned = false
            let client = try PAMClient.start(service: ProvisioningTests.service, user: nil, configDirectory: services) { message in
                shown.append(message)
                switch message {
                case let .textInfo(text) where !touched && text.contains("to sign in"):
                    // The identify prompt. The first time the newcomer turns to the user name
                    // (the gallery is empty: a touch would be taken by nobody); after, the touch.
                    touched = true
                    if first { return .abort }
                    _ = try? VirtualSensor.send("SCAN id-\(name)", to: rig.rig.sensor)
                case let .textInfo(text) where text.contains("enter the code "):
                    if let range = text.range(of: "enter the code ") {
                        try? rig.approve(String(text[range.upperBound...].prefix { $0 != "." && $0 != " " }), as: name)
                    }
                case let .textInfo(text) where !scanned && (text.hasPrefix("Place your finger") || text.hasPrefix("Swipe your finger")):
                    scanned = true
                    for _ in 0..<5 { _ = try? VirtualSensor.send("SCAN id-\(name)", to: rig.rig.sensor) }
                case .promptEchoOn:
                    return .text(name)
                case let .promptEchoOff(text) where text.contains("PIN"):
                    return .text(ProvisioningTests.pin)
                default:
                    break
                }
                return .none
            }
            #expect(client.setItem(.tty, "/dev/pts/0") == PAM_SUCCESS)
            rig.drain()
            return (client.authenticate(), client.user(), shown)
        }
        let first = try login(first: true)
        #expect(first.status == PAM_SUCCESS, "\(first.shown)")
        #expect(first.user == name, "\(first.shown)")
        #expect(first.shown.contains { if case .promptEchoOn = $0 { return true } else { return false } }, "\(first.shown)")
        #expect(first.shown.contains(.textInfo(Messages.provisionDoneTouch(name))), "\(first.shown)")
        #expect(try Child.run("/usr/bin/id", ["-nG", name]).stdout.contains(group))
        let status = try rig.cli(["status", "--user", name])
        #expect(status.stdout.contains(Messages.statusIdentifyOn), "\(status.all)")

        let second = try login(first: false)
        #expect(second.status == PAM_SUCCESS, "\(second.shown)")
        #expect(second.user == name, "the finger alone named the account: \(second.shown)")
        #expect(!second.shown.contains { if case .promptEchoOn = $0 { return true } else { return false } }, "\(second.shown)")
        #expect(!second.shown.contains { if case let .textInfo(text) = $0 { return text.contains("enter the code") } else { return false } })
    }

    /// The code expires before anyone approves it, and later no finger comes while the reader
    /// waits (timeout=1): each ends with a sentence and nothing made.
    @Test func timeoutsLeaveNothing() throws {
        let rig = try Rig(moduleOptions: "provision=idp timeout=1")
        let before = rig.vaults
        let name = try rig.newPerson()
        let child = try rig.start(name, answers: [])
        let code = try #require(rig.userCode(child))
        try rig.idp.hook("/test/expire-device", [("user_code", code)])
        let expired = child.finish()
        #expect(expired.status != 0 && expired.stderr.contains(Messages.provisionCodeExpired), "\(expired.all)")
        #expect(rig.nothingLeft(name, vaults: before))
        #expect(rig.audited(name, .cancelled, "timedOut"))

        let second = try rig.newPerson()
        let enrolling = try rig.start(second, answers: [Self.pin, Self.pin])
        try rig.approve(try #require(rig.userCode(enrolling)), as: second)
        let result = enrolling.finish()
        #expect(result.status != 0, "\(result.all)")
        #expect(result.all.contains("Now enroll a finger") && result.all.contains(Messages.provisionUndone), "\(result.all)")
        #expect(rig.nothingLeft(second, vaults: before), "\(result.all)")
    }

    /// useradd fails (a group in provision_groups does not exist): said, and nothing made.
    @Test func aFailingUseraddLeavesNothing() throws {
        let rig = try Rig(config: "", groups: "users,fingerseal-no-such-group")
        let before = rig.vaults
        let name = try rig.newPerson()
        let child = try rig.start(name, answers: [Self.pin, Self.pin])
        try rig.approve(try #require(rig.userCode(child)), as: name)
        let result = child.finish()
        #expect(result.status != 0, "\(result.all)")
        #expect(result.stderr.contains(Messages.provisionFailed(Messages.systemFailure(.finishRequest))), "\(result.all)")
        #expect(!result.all.contains("New PIN"), "\(result.all)")
        #expect(rig.nothingLeft(name, vaults: before))
        #expect(rig.audited(name, .cancelled, "systemError"))
    }

    /// An identity without the required group is refused with a sentence; nothing is made.
    @Test func anIdentityWithoutTheRequiredClaimIsRefused() throws {
        let rig = try Rig()
        let before = rig.vaults
        let name = try rig.newPerson(groups: ["visitors"])
        let child = try rig.start(name, answers: [])
        let code = try #require(rig.userCode(child))
        try rig.approve(code, as: name)
        let result = child.finish()
        #expect(result.status != 0, "\(result.all)")
        #expect(result.stderr.contains(Messages.provisionNotAllowed("\(name)@example.test")), "\(result.all)")
        #expect(rig.nothingLeft(name, vaults: before))
        #expect(rig.audited(name, .refused, "requirement"))
        #expect(!(try rig.idp.familyAlive(name)), "the sign-in was ended at the provider: \((try? rig.idp.family(name)) ?? "?")")
    }

    /// Device-code phishing (issue 31 §2): a code approved with a session the approving
    /// device already had (the ID token's auth_time an hour before the code), or whose ID
    /// token does not say when the person signed in, makes nothing.
    @Test func aSignInThatIsNotFreshIsRefused() throws {
        let rig = try Rig()
        let before = rig.vaults
        for (authTime, sentence, reason) in [("old", Messages.provisionNotFresh, "authNotFresh"),
                                             ("absent", Messages.provisionNoAuthTime, "authTimeMissing")] {
            try rig.idp.authTime(authTime)
            let name = try rig.newPerson()
            let child = try rig.start(name, answers: [Self.pin, Self.pin])
            try rig.approve(try #require(rig.userCode(child)), as: name)
            let result = child.finish()
            #expect(result.status != 0, "\(result.all)")
            #expect(result.stderr.contains(sentence), "\(authTime): \(result.all)")
            #expect(!result.all.contains("New PIN") && !result.all.contains("The account \(name) was made."), "\(result.all)")
            #expect(rig.nothingLeft(name, vaults: before), "\(authTime)")
            #expect(rig.audited(name, .refused, reason), "\(authTime)")
            #expect(!(try rig.idp.familyAlive(name)), "the sign-in was ended at the provider: \((try? rig.idp.family(name)) ?? "?")")
        }
    }

    /// One account per identity (issuer and subject) by default: the same person at the
    /// provider, named otherwise there now, gets no second account, until the administrator
    /// allows one (provision_per_subject=2).
    @Test func oneAccountPerIdentityUnlessAllowed() throws {
        let rig = try Rig()
        let first = try rig.newPerson()
        #expect(try rig.provision(first).status == 0)
        let second = try rig.newPerson()
        // The claims (preferred_username, email) become the second name's; sub stays first's.
        try rig.idp.claimIdentity(of: second)
        let child = try rig.start(second, answers: [Self.pin, Self.pin])
        try rig.approve(try #require(rig.userCode(child)), as: first)
        let refused = child.finish()
        #expect(refused.status != 0, "\(refused.all)")
        #expect(refused.stderr.contains(Messages.provisionHasAccount("\(second)@example.test")), "\(refused.all)")
        #expect(getpwnam(second) == nil && getpwnam(first) != nil)
        #expect(rig.audited(second, .refused, "subjectProvisioned"))

        rig.reconfigure(provision: "per_subject=2")
        let allowed = try rig.provision(second, as: first)
        #expect(allowed.status == 0, "\(allowed.all)")
        #expect(getpwnam(second) != nil)
    }

    /// Reserved names (issue 31 §5): admin (which Ubuntu's sudoers grants as a group, and
    /// which useradd would make as the account's own group) and a name the administrator
    /// adds are refused before anyone signs in, and nothing is made.
    @Test func aReservedNameIsRefused() throws {
        let rig = try Rig(provision: "reserved=fspkept")
        let before = rig.vaults
        for name in ["admin", "fspkept"] {
            let existed = getpwnam(name) != nil
            let result = try rig.start(name, answers: []).finish()
            #expect(result.status != 0, "\(result.all)")
            #expect(result.stderr.contains(Messages.provisionReservedName(name)), "\(result.all)")
            #expect(!result.all.contains("enter the code"), "known before anyone signs in: \(result.all)")
            #expect((getpwnam(name) != nil) == existed)
            #expect(rig.audited(name, .refused, "reservedName"))
        }
        #expect(rig.vaults == before)
    }

    /// user_claim=email_local (issue 31 §5): without provision_email_domain no account is named
    /// after an address; with it, an address the provider has not verified, or one in
    /// another domain, makes nothing.
    @Test func emailLocalNeedsAVerifiedAddressInTheDomain() throws {
        let rig = try Rig(config: "user_claim=email_local")
        let before = rig.vaults
        let anyone = try rig.newPerson()
        let unset = try rig.start(anyone, answers: []).finish()
        #expect(unset.stderr.contains(Messages.provisionEmailDomainMissing) && !unset.all.contains("enter the code"), "\(unset.all)")
        #expect(rig.audited(anyone, .refused, "emailDomainMissing"))

        rig.reconfigure(config: "user_claim=email_local", provision: "email_domain=example.test")
        try rig.idp.setSwitch("email-verified", "false")
        let unverified = try rig.newPerson()
        let elsewhere = try rig.newPerson(domain: "elsewhere.test")
        for (name, sentence, reason) in [(unverified, Messages.provisionEmailUnverified("\(unverified)@example.test"), "emailUnverified"),
                                         (elsewhere, Messages.provisionEmailOtherDomain("\(elsewhere)@elsewhere.test"), "emailDomain")] {
            let child = try rig.start(name, answers: [Self.pin, Self.pin])
            try rig.approve(try #require(rig.userCode(child)), as: name)
            let result = child.finish()
            #expect(result.status != 0, "\(result.all)")
            #expect(result.stderr.contains(sentence), "\(result.all)")
            #expect(rig.nothingLeft(name, vaults: before), "\(name)")
            #expect(rig.audited(name, .refused, reason))
            try rig.idp.setSwitch("email-verified", "true")
        }
    }

    /// The undo removes only an account its own request made (issue 31 §5). useradd fails
    /// while the name becomes another account's (the test holds the password files' lock,
    /// waits until useradd queues for it, writes that account in, and makes useradd give
    /// up): that account stays. Then a pending record of a broker that stopped before its
    /// useradd ran names it too: the next start leaves it alone.
    @Test func anAccountTheBrokerDidNotMakeIsNeverRemoved() throws {
        let rig = try Rig()
        let name = try rig.newPerson()
        var uid: UInt32 = 61000
        while getpwuid(uid) != nil { uid += 1 }
        let lock = open("/etc/.pwd.lock", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        var region = flock()
        region.l_type = Int16(F_WRLCK)
        region.l_whence = Int16(SEEK_SET)
        #expect(lock >= 0 && fcntl(lock, F_SETLKW, &region) == 0)
        let child = try rig.start(name, answers: [Self.pin, Self.pin])
        try rig.approve(try #require(rig.userCode(child)), as: name)
        var useradd: pid_t? = nil
        #expect(ReaderBroker.waitUntil(20) {
            useradd = ProvisioningTests.waitingForPasswordLock(command: name)
            return useradd != nil
        }, "useradd never queued for the lock")
        appendToFile("/etc/passwd", Array("\(name):x:\(uid):100:someone else:/nonexistent:/usr/sbin/nologin\n".utf8))
        appendToFile("/etc/shadow", Array("\(name):!:19000::::::\n".utf8), mode: 0o640)
        if let useradd { kill(useradd, SIGALRM) } // its lckpwdf gives up: "cannot lock /etc/passwd"
        #expect(ReaderBroker.waitUntil(20) { useradd.map { kill($0, 0) != 0 } ?? true })
        close(lock)
        let result = child.finish()
        #expect(result.status != 0, "\(result.all)")
        #expect(result.stderr.contains(Messages.provisionFailed(Messages.systemFailure(.finishRequest))), "\(result.all)")
        #expect(getpwnam(name).map { String(cString: $0.pointee.pw_gecos) } == "someone else", "the other account is gone")
        #expect(access(rig.rig.broker.state + "/provisioned/\(name).json", F_OK) != 0)
        #expect(rig.audited(name, .cancelled, "systemError"))

        rig.rig.broker.stop()
        let registry = try ProvisionRegistry(stateDirectory: rig.rig.broker.state)
        try registry.write(ProvisionRecord(name: name, uid: nil, state: .pending, issuer: rig.idp.issuer, subject: "1",
                                           createdAt: 1_800_000_000, lastUsed: 1_800_000_000, marker: "0123456789abcdef"))
        try rig.rig.broker.start()
        #expect(getpwnam(name).map { String(cString: $0.pointee.pw_gecos) } == "someone else", "the next start removed it")
        #expect(try registry.record(name) == nil)
    }

    /// Who queues for the password files' lock (/etc/.pwd.lock, lckpwdf) in /proc/locks: a
    /// useradd of `name`.
    static func waitingForPasswordLock(command name: String) -> pid_t? {
        let locks = String(decoding: readFile("/proc/locks") ?? [], as: UTF8.self)
        for line in locks.split(separator: "\n") where line.contains("->") {
            let fields = line.split(separator: " ")
            guard let arrow = fields.firstIndex(of: "->"), fields.count > arrow + 4, let pid = pid_t(fields[arrow + 4]) else { continue }
            let command = (readFile("/proc/\(pid)/cmdline") ?? []).split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            if command.first?.hasSuffix("useradd") == true && command.last == name { return pid }
        }
        return nil
    }

    /// Groups come from the configuration file's top level only (issue 31 §5): an
    /// identify_group in a [service NAME] section is where that stack identifies, and puts
    /// no new account in it (nor says the next login is a touch).
    @Test func aServiceSectionsIdentifyGroupIsNotGivenToNewAccounts() throws {
        let group = "fsp-section"
        if getgrnam(group) == nil { #expect(Child.runQuietly("/usr/sbin/groupadd", [group]) == 0) }
        defer { _ = Child.runQuietly("/usr/sbin/groupdel", [group]) }
        let rig = try Rig(provision: "[service \(Self.service)]\nidentify_group=\(group)", moduleOptions: "provision=idp identify")
        let name = try rig.newPerson()
        let result = try rig.provision(name)
        #expect(result.status == 0, "\(result.all)")
        let groups = try Child.run("/usr/bin/id", ["-nG", name]).stdout.split(separator: " ").map { $0.trimmingCharacters() }
        #expect(groups.contains("users") && !groups.contains(group), "\(groups)")
        #expect(result.stdout.contains(Messages.provisionDone(name)), "\(result.all)")
    }

    /// The provider's name for the person is an account that exists here (typed another
    /// name), or a group has the name typed: refused with a sentence, nothing made.
    @Test func aNameClashIsRefused() throws {
        let rig = try Rig()
        let before = rig.vaults
        #expect(TestUsers.ensure(TestUsers.alice))
        try rig.idp.hook("/test/add-user", [("username", TestUsers.alice), ("groups", Self.group)])
        let typed = try rig.newPerson()
        let child = try rig.start(typed, answers: [])
        let code = try #require(rig.userCode(child))
        try rig.approve(code, as: TestUsers.alice)
        let result = child.finish()
        #expect(result.status != 0, "\(result.all)")
        #expect(result.stderr.contains(Messages.provisionClash(TestUsers.alice)), "\(result.all)")
        #expect(rig.nothingLeft(typed, vaults: before))
        #expect(getpwnam(TestUsers.alice) != nil)

        // A group of the name typed (useradd would need that name for the account's group).
        let grouped = try rig.newPerson()
        #expect(Child.runQuietly("/usr/sbin/groupadd", [grouped]) == 0)
        defer { _ = Child.runQuietly("/usr/sbin/groupdel", [grouped]) }
        let clash = try rig.start(grouped, answers: []).finish()
        #expect(clash.stderr.contains(Messages.provisionClash(grouped)), "\(clash.all)")
        #expect(!clash.all.contains("enter the code"), "known before anyone signs in: \(clash.all)")
        #expect(getpwnam(grouped) == nil)

        // The provider names another new account than the one typed.
        let other = try rig.newPerson()
        let typedElse = "fspx" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
        rig.names.append(typedElse)
        let third = try rig.start(typedElse, answers: [])
        let thirdCode = try #require(rig.userCode(third))
        try rig.approve(thirdCode, as: other)
        let mismatch = third.finish()
        #expect(mismatch.stderr.contains(Messages.provisionOtherName("\(other)@example.test", other, typedElse)), "\(mismatch.all)")
        #expect(getpwnam(typedElse) == nil && getpwnam(other) == nil)
        #expect(rig.vaults == before)
    }

    /// Accounts unused for provision_expire_days go with their vaults; sooner, they stay.
    @Test func expiryRemovesTheAccount() throws {
        let rig = try Rig(expireDays: 30)
        let before = rig.vaults
        let name = try rig.newPerson()
        let made = try rig.provision(name)
        #expect(made.status == 0, "\(made.all)")
        let early = try rig.cli(["account", "expire", "--days-ahead", "29", "--json"])
        #expect(early.status == 0 && !early.stdout.contains(name), "\(early.all)")
        #expect(getpwnam(name) != nil)
        let late = try rig.cli(["account", "expire", "--days-ahead", "31"])
        #expect(late.status == 0, "\(late.all)")
        #expect(late.stdout.contains(Messages.accountExpired(name, 30)), "\(late.all)")
        #expect(rig.nothingLeft(name, vaults: before))
        #expect(rig.audited(name, .expired, "30"))
    }

    /// greetd (no VT, so no PAM_TTY: `interactive_services=greetd`) given a name it does not
    /// know by its greeter over its IPC (greetd_greeter.py): the sentences reach the greeter
    /// as info messages, the PIN questions as secret ones, and the account is made.
    @Test(.enabled(if: getuid() == 0 && access(HostsWithoutTerminalTests.greetd, X_OK) == 0))
    func greetdProvisionsTheNameItWasGiven() throws {
        let rig = try Rig(config: "interactive_services=greetd")
        let name = try rig.newPerson()
        let work = try TempDirectory()
        #expect(chmod(work.path, 0o755) == 0)
        let stack = """
            auth required \(Paths.module) socket=\(rig.rig.broker.socketPath) provision=idp
            account required pam_permit.so
            session required pam_permit.so

            """
        writeFile(work.file("greetd"), Array(stack.utf8), mode: 0o644)
        writeFile(work.file("other"), Array("auth required pam_deny.so\naccount required pam_deny.so\n".utf8), mode: 0o644)
        let steps = work.file("steps.json"), log = work.file("greeter.log")
        writeFile(steps, Array(#"[["answer", "\#(Self.pin)"], ["answer", "\#(Self.pin)"]]"#.utf8), mode: 0o600)
        let greetd = try HostsWithoutTerminalTests.startGreetd(work, greeter: "\(name) \(steps) \(log)")
        func logged(_ text: String) -> String? {
            String(decoding: readFile(log) ?? [], as: UTF8.self).split(separator: "\n").first { $0.contains(text) }.map(String.init)
        }
        #expect(ReaderBroker.waitUntil(30) { logged("enter the code ") != nil }, "no code reached the greeter")
        let line = try #require(logged("enter the code "))
        let code = try #require(line.range(of: "enter the code ").map { String(line[$0.upperBound...].prefix { $0 != "." && $0 != " " }) })
        try rig.approve(code, as: name)
        #expect(ReaderBroker.waitUntil(30) { logged("Now enroll a finger") != nil }, "no enrollment")
        for _ in 0..<5 { try VirtualSensor.send("SCAN finger-g", to: rig.rig.sensor) }
        let run = greetd.finish()
        let transcript = try #require(run.stdout.split(separator: "\n").first { $0.hasPrefix("{\"messages\"") })
        #expect(transcript.contains(#""result": "success""#), "\(transcript)")
        #expect(transcript.contains(#""type": "info", "text": "\#(Messages.provisionStart(name))""#), "\(transcript)")
        #expect(transcript.contains(#""type": "secret""#), "the PIN was asked as a secret: \(transcript)")
        #expect(!transcript.contains("Ctrl-C"), "greetd's greeter has no Ctrl-C: \(transcript)")
        #expect(getpwnam(name) != nil)
        let status = try rig.cli(["status", "--user", name, "--json"])
        #expect(status.stdout.contains("\"right-index-finger\""), "\(status.all)")
    }

    /// The broker dies while the account waits for its PIN: the next start removes the
    /// half-made account (its record said pending).
    @Test func aBrokerThatDiesMidWayLeavesNoUsableAccount() throws {
        let rig = try Rig()
        let before = rig.vaults
        let name = try rig.newPerson()
        let child = try rig.start(name, answers: [], openInput: true)
        let code = try #require(rig.userCode(child))
        try rig.approve(code, as: name)
        // The PIN is asked (and not answered: stdin stays open) once the account exists.
        #expect(child.waitForLine(containing: "The account \(name) was made."))
        rig.rig.broker.stop() // SIGKILL: no clean-up of its own
        child.closeInput()
        _ = child.finish()
        #expect(getpwnam(name) != nil, "the half-made account is there until the broker starts again")
        try rig.rig.broker.start()
        #expect(ReaderBroker.waitUntil { rig.nothingLeft(name, vaults: before) }, "the next start removed it")
        #expect(ReaderBroker.waitUntil { rig.audited(name, .cancelled, "brokerStopped") })
    }
}

/// Where systemd runs the machine, the account tools run outside the broker's sandbox, as a
/// transient unit whose exit status systemd-run returns; elsewhere, as they are.
@Test func theAccountToolsRunThroughSystemdRunUnderSystemd() {
    let direct = ["/usr/sbin/useradd", "--", "fsp1"]
    #expect(SystemAccounts.command(direct, underSystemd: false) == direct)
    let wrapped = SystemAccounts.command(direct, underSystemd: true)
    #expect(Array(wrapped.prefix(2)) == [SystemAccounts.systemdRun, "--wait"] && Array(wrapped.suffix(4)) == ["--"] + direct)
    #expect(wrapped.contains("--property=RuntimeMaxSec=30") && wrapped.contains("--collect"))
}

/// auth_time against the code's issue time (issue 31 §2): at or after it, or within the skew
/// before it, is fresh; earlier is stale; none is missing.
@Test func freshnessIsTheAuthTimeAgainstTheCode() {
    let issued: Int64 = 1_800_000_000
    #expect(Provisioning.freshness(authTime: issued + 5, codeIssuedAt: issued) == .fresh)
    #expect(Provisioning.freshness(authTime: issued - Provisioning.authTimeSkew, codeIssuedAt: issued) == .fresh)
    #expect(Provisioning.freshness(authTime: issued - Provisioning.authTimeSkew - 1, codeIssuedAt: issued) == .stale)
    #expect(Provisioning.freshness(authTime: nil, codeIssuedAt: issued) == .missing)
}

private extension Substring {
    func trimmingCharacters() -> String { String(filter { !$0.isWhitespace }) }
}
