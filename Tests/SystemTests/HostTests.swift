import CPAM
@testable import FingersealCore
import FingersealWire
import FoundationEssentials
import Glibc
import PAMKit
import SystemKit
import Testing
@testable import TestSupport

/// The hosts of design §2 and issue 11: the example stacks in pam/examples run through a
/// real PAM stack, services that skip, hosts that ask nothing or one combined prompt, a host
/// that ends the conversation, and a session opened for another user than the one who
/// authenticated.
@Suite struct HostTests {
    static let examples = Paths.packageRoot + "/pam/examples"
    /// Modules the Debian host packages bring that this machine need not have (all optional).
    static let hostModules = ["pam_gnome_keyring.so", "pam_kwallet5.so"]
    static var canCapture: Bool { getuid() == 0 && SyslogCapture.availableAnywhere && Pamtester.available }

    static func exampleNames() -> [String] {
        guard let directory = opendir(examples) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if !name.hasPrefix(".") { names.append(name) }
        }
        return names.sorted()
    }

    /// A service directory holding one example (pam_fingerseal.so pointed at `socket`, with
    /// `debug` so the broker logs every decision), and common-* files: `commonAuth` first,
    /// then pam_matrix standing in for pam_unix (password "secret" for fs-alice; pam_matrix
    /// reads one line per user, so one service per directory).
    static func services(_ examples: [String: String], socket: String, commonAuth: String = "") throws -> TempDirectory {
        let temp = try TempDirectory()
        chmod(temp.path, 0o755)
        let passdb = temp.file("passdb")
        writeFile(passdb, Array(examples.keys.map { "\(TestUsers.alice):secret:\($0)\n" }.joined().utf8), mode: 0o644)
        let module = "\(Paths.module) socket=\(socket) debug"
        for (name, text) in examples {
            writeFile(temp.file(name), Array(text.replacing("pam_fingerseal.so", with: module).utf8), mode: 0o644)
        }
        writeFile(temp.file("common-auth"), Array("""
            \(commonAuth.replacing("pam_fingerseal.so", with: module))
            auth [success=1 default=ignore] \(PamtesterTests.matrix) passdb=\(passdb)
            auth requisite pam_deny.so
            auth required pam_permit.so

            """.utf8), mode: 0o644)
        writeFile(temp.file("other"), Array("auth required pam_deny.so\naccount required pam_deny.so\n".utf8), mode: 0o644)
        for common in ["common-account", "common-session", "common-session-noninteractive", "common-password"] {
            let type = common.split(separator: "-")[1]
            writeFile(temp.file(common), Array("\(type == "session" ? "session" : type) required pam_permit.so\n".utf8), mode: 0o644)
        }
        return temp
    }

    /// pamtester SERVICE fs-alice authenticate, its syslog (libpam's, the module's) captured,
    /// in a mount namespace where `services` is /etc/pam.d: `@include` reads from there (under
    /// pam_wrapper it would read the machine's own common-auth).
    static func authenticate(_ service: String, in services: TempDirectory, capture: SyslogCapture) throws -> Child.Result {
        let (path, arguments) = capture.wrap(["/bin/sh", "-c", #"mount --bind "$0" /etc/pam.d && exec "$@""#, services.path,
                                              "/usr/bin/pamtester", "-I", "tty=/dev/pts/0", service, TestUsers.alice, "authenticate"])
        return try Child.run(path, arguments, environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"],
                             stdin: Array("secret\nsecret\n".utf8))
    }

    /// What libpam says about a file it cannot parse or a module it cannot load, and what the
    /// broker says about an argument it does not know or cannot take.
    static func complaints(_ lines: [String]) -> [String] {
        lines.filter { line in
            if line.contains("fingersealed:") { return !line.contains(" noVault for user=\(TestUsers.alice) service=") }
            let parse = ["illegal", "no control flag", "no module name", "expecting", "bad jump", "configuration:"]
            if parse.contains(where: line.contains) { return true }
            if line.contains("dlopen") || line.contains("faulty module") {
                return !hostModules.contains(where: line.contains)
            }
            return false
        }
    }

    /// Every example parses and runs its auth stack against a broker: the services that
    /// scan reach the broker with arguments it takes, gdm-password never does, the password
    /// works after fingerseal (fs-alice has no vault), and nothing is logged as wrong. A
    /// broken file proves the check sees a mistyped argument and a mistyped line.
    @Test(.enabled(if: canCapture)) func everyExampleParsesAndRunsAgainstABroker() throws {
        try #require(TestUsers.ensure(TestUsers.alice))
        let names = Self.exampleNames()
        #expect(Set(names).isSuperset(of: ["gdm-fingerprint", "gdm-password", "sddm", "lightdm", "kde", "polkit-1", "swaylock",
                                           "i3lock", "sudo", "login"]), "\(names)")
        let logs = try TempDirectory()
        chmod(logs.path, 0o755)
        let capture = try SyslogCapture(directory: logs.path)
        let broker = try TestBroker(wrap: capture.wrap)
        // The captured syslog, read after each run (a datagram socket queues only a few), and
        // what pamtester says on standard error.
        var lines: [String] = []
        for name in names {
            let text = String(decoding: try #require(readFile(Self.examples + "/" + name)), as: UTF8.self)
            let services = try Self.services([name: text], socket: broker.socketPath)
            let result = try Self.authenticate(name, in: services, capture: capture)
            // gdm-fingerprint is finger only: without a vault it fails, and gdm-password goes on.
            #expect((result.status == 0) == (name != "gdm-fingerprint"), "\(name): \(result.all)")
            #expect(!result.all.contains("PIN"), "\(name): nothing but the password is asked without a vault")
            lines += capture.messages() + result.stderr.split(separator: "\n").map(String.init)
        }
        for name in names {
            let asked = lines.contains { $0.contains("pam.authenticate") && $0.contains("service=\(name) ") }
            #expect(asked == (name != "gdm-password"), "\(name) \(asked ? "asked" : "never asked") the broker")
        }
        #expect(Self.complaints(lines).isEmpty, "\(Self.complaints(lines))")
        // The check sees a mistyped argument and a mistyped line.
        let broken = try Self.services(["broken": "auth [success=done default=ignore] pam_fingerseal.so promt=none\n"
                                                  + "sesion optional pam_fingerseal.so\n@include common-auth\n"],
                                       socket: broker.socketPath)
        let brokenRun = try Self.authenticate("broken", in: broken, capture: capture)
        lines = capture.messages() + brokenRun.stderr.split(separator: "\n").map(String.init)
        #expect(Self.complaints(lines).contains { $0.contains("promt") }, "\(lines)")
        #expect(Self.complaints(lines).contains { $0.contains("sesion") }, "\(lines)")
    }

    /// gdm-password beside gdm-fingerprint, with fingerseal in common-auth (the profile):
    /// skip_services in the configuration makes the module answer PAM_IGNORE at once; the
    /// stack goes on to the password, and nothing is asked.
    @Test(.enabled(if: canCapture)) func aSkippedServiceGoesStraightToThePassword() throws {
        try #require(TestUsers.ensure(TestUsers.alice))
        let logs = try TempDirectory()
        chmod(logs.path, 0o755)
        let capture = try SyslogCapture(directory: logs.path)
        let broker = try TestBroker(config: "skip_services=gdm-password,kde\n", wrap: capture.wrap)
        let text = String(decoding: try #require(readFile(Self.examples + "/gdm-password")), as: UTF8.self)
        let services = try Self.services(["gdm-password": text], socket: broker.socketPath,
                                         commonAuth: "auth [success=2 default=ignore] pam_fingerseal.so pin")
        let result = try Self.authenticate("gdm-password", in: services, capture: capture)
        #expect(result.status == 0, "\(result.all)")
        #expect(!result.all.contains("PIN") && !result.all.contains("finger"), "\(result.all)")
        #expect(result.seconds < 3, "\(result.seconds) s")
        #expect(capture.messages().contains { $0.contains("notApplicable") && $0.contains("service=gdm-password") })
    }

    /// skip_services as a module argument: from a root host, and from a host running as the
    /// user (a lock screen), which may send it because skipping only lets the stack go on.
    @Test func skipServicesAsAnArgumentFromAnyHost() throws {
        let stack = try ModuleAuthenticationTests.Stack()
        stack.service("""
            auth [success=done ignore=ignore default=die] \(Paths.module) socket=\(stack.socket) pin skip_services=other,fingerseal-test
            auth required pam_debug.so auth=cred_insufficient
            """)
        #expect(try stack.authenticate(answer: ModuleAuthenticationTests.pin) == PAM_CRED_INSUFFICIENT)
        #expect(stack.messages == [.textInfo("auth=cred_insufficient")], "only pam_debug speaks")
        if getuid() == 0, TestUsers.ensure(TestUsers.alice) {
            let host = try stack.rig.broker.wire(["pam.authenticate", "pam.user=\(TestUsers.alice)", "pam.service=kde",
                                                  "option=skip_services=kde"], as: TestUsers.alice)
            #expect(host.stdout.contains("result: notApplicable"), "\(host.all)")
        }
    }

    /// prompt=none (swaylock, i3lock, sddm): a host that answers every prompt with the typed
    /// password is asked nothing, whatever `pin` says, so no password is counted as a wrong
    /// PIN. Without it, the same host would have the password counted.
    @Test func promptNoneNeverCountsAPasswordAsAWrongPIN() throws {
        for options in ["pin prompt=none", "pin"] {
            let stack = try ModuleAuthenticationTests.Stack(options: options)
            #expect(try stack.authenticate(answer: "correct horse") != PAM_SUCCESS)
            let counted = try stack.pinFailures()
            if options == "pin" {
                #expect(counted == 1, "the contrast: a PIN prompt answered with the password counts")
            } else {
                #expect(counted == 0)
                #expect(!stack.messages.contains { if case .promptEchoOff = $0 { return true }; return false }, "\(stack.messages)")
            }
        }
    }

    /// `[service swaylock] prompt=none` (issue 23 §3): the profile's one module line (`pin`)
    /// for every service, and the lock screen's section in the broker's configuration. Through
    /// a real PAM stack, swaylock's host is asked nothing (the password it would type is never
    /// counted as a wrong PIN), while another service on the same line still gets the PIN
    /// prompt, and its PIN unlocks.
    @Test func aServiceSectionChangesWhatOnlyThatServiceIsShown() throws {
        let stack = try ModuleAuthenticationTests.Stack(options: "pin", config: "[service swaylock]\nprompt = none\ntimeout = 2\n")
        writeFile(stack.services + "/swaylock", Array("auth required \(Paths.module) socket=\(stack.socket) pin\n".utf8), mode: 0o644)
        var seen: [PAMClient.Message] = []
        let lock = try PAMClient(service: "swaylock", user: stack.user.name, configDirectory: stack.services) { message in
            seen.append(message)
            if case .promptEchoOff = message { return "correct horse" }
            return nil
        }
        #expect(lock.setItem(.tty, "/dev/pts/0") == PAM_SUCCESS)
        #expect(lock.authenticate() != PAM_SUCCESS)
        #expect(!seen.contains { if case .promptEchoOff = $0 { return true }; return false }, "\(seen)")
        #expect(try stack.pinFailures() == 0)
        #expect(try stack.authenticate(answer: ModuleAuthenticationTests.pin) == PAM_SUCCESS)
        #expect(stack.prompted, "fingerseal-test has no section: the PIN prompt, as the line says")
    }

    /// A host running as the user names its PAM service itself, so from a section it gets the
    /// presentation settings (here skip_services=) and not its policy (here
    /// unattended_services=), which a root host of that service does get.
    @Test(.enabled(if: getuid() == 0)) func aHostRunningAsTheUserGetsOnlyASectionsPresentation() throws {
        try #require(TestUsers.ensure(TestUsers.alice))
        let broker = try TestBroker(config: "[service kde]\nskip_services = kde\n[service xlock]\nunattended_services = xlock\n")
        let ask = { (service: String, user: String?) in
            try broker.wire(["pam.authenticate", "pam.user=\(TestUsers.alice)", "pam.service=\(service)", "pam.tty=/dev/pts/0"], as: user)
        }
        for user in [nil, TestUsers.alice] {
            let skipped = try ask("kde", user)
            #expect(skipped.stdout.contains("result: notApplicable"), "\(user ?? "root"): \(skipped.all)")
        }
        let root = try ask("xlock", nil)
        #expect(root.stdout.contains("result: unavailable"), "\(root.all)")
        let asUser = try ask("xlock", TestUsers.alice)
        #expect(!asUser.stdout.contains("result: unavailable") && asUser.stdout.contains("result: "), "\(asUser.all)")
    }

    /// prompt=combined: one PIN prompt, asked while the reader waits, whose text says the
    /// finger works too; the PIN typed there unlocks, and so does a finger touched while the
    /// host waits for Enter.
    @Test func promptCombinedAsksOnePromptThatMentionsTheFinger() throws {
        let rig = try ModuleFingerprintTests.Rig(moduleOptions: "pin prompt=combined", alone: true)
        let pin = try PAMClient(service: ModuleFingerprintTests.service, user: rig.user, configDirectory: rig.services) { message in
            if case .promptEchoOff(Messages.fingerOrPINPrompt(swipe: true)) = message { return ModuleFingerprintTests.pin }
            return nil
        }
        #expect(pin.setItem(.tty, "/dev/pts/0") == PAM_SUCCESS)
        #expect(pin.authenticate() == PAM_SUCCESS)
        // The finger, while the prompt is up; then Enter alone.
        let sensor = rig.socket
        let finger = try PAMClient(service: ModuleFingerprintTests.service, user: rig.user, configDirectory: rig.services) { message in
            guard case .promptEchoOff(Messages.fingerOrPINPrompt(swipe: true)) = message else { return nil }
            _ = try? VirtualSensor.send("SCAN finger-a", to: sensor)
            var pause = timespec(tv_sec: 1, tv_nsec: 0)
            nanosleep(&pause, nil)
            return ""
        }
        #expect(finger.setItem(.tty, "/dev/pts/0") == PAM_SUCCESS)
        #expect(finger.authenticate() == PAM_SUCCESS)
        #expect(try rig.rig.lockout().pinFailures == 0)
    }

    // MARK: the terminal's foreground group (issue 32)

    /// What pty_session.py prints.
    struct TerminalSession: Decodable {
        let ok: Bool
        let transcript: String
        let status: Int32
        let echo: Bool
    }

    /// `host` (pamtester, or a copy of it) run by a bash script on a terminal of its own, as a
    /// script runs sudo: bash leads the terminal's foreground process group, and the host is
    /// in that group without leading it. `steps` as pty_session.py plays them; the script
    /// says "script went on" with the host's status once the host is done.
    static func fromAScript(_ rig: ModuleFingerprintTests.Rig, host: String, _ steps: [[String]]) throws -> TerminalSession {
        let script = Paths.packageRoot + "/Tests/TestSupport/pty_session.py"
        let stepsJSON = String(decoding: try JSONEncoder().encode(steps), as: UTF8.self)
        var environment = rig.environment
        environment["TERM"] = "dumb"
        let result = try Child.run("/usr/bin/python3", [
            script, stepsJSON, "--", "/bin/bash", "-c", #""$@"; echo "script went on: $?""#, "bash",
            host, "-I", "tty=/dev/pts/0", ModuleFingerprintTests.service, rig.user, "authenticate",
        ], environment: environment)
        #expect(result.status == 0, "\(result.all)")
        return try JSONDecoder().decode(TerminalSession.self, from: Data(result.stdout.utf8))
    }

    /// sudo called from a script (issue 32): Ctrl-C typed on the terminal reaches every process
    /// of its foreground group, the host included, which need not lead it. The host is told
    /// so in one sentence, with no question after it; Ctrl-C goes on to the password at once,
    /// nothing counted, and the script goes on after its sudo. (bash waits for its command
    /// after a Ctrl-C; dash, Debian's sh, ends at once, and its script with it.)
    @Test(.enabled(if: ModuleFingerprintTests.available)) func aScriptsSudoIsOfferedCtrlC() throws {
        let rig = try ModuleFingerprintTests.Rig(moduleOptions: "timeout=30")
        let prompt = "Swipe your finger across the reader, or press Ctrl-C to use your password."
        let started = VirtualSensor.now()
        let session = try Self.fromAScript(rig, host: "/usr/bin/pamtester", [
            [prompt, "@interrupt pamtester"], ["Password: ", "@noecho secret\n"], ["script went on: ", ""],
        ])
        #expect(session.ok, "\(session.transcript)")
        #expect(VirtualSensor.now() - started < 20, "Ctrl-C took until the scan's timeout")
        #expect(session.transcript.components(separatedBy: "Swipe your finger").count == 2, "one sentence: \(session.transcript)")
        #expect(!session.transcript.contains("press Enter"), "\(session.transcript)")
        #expect(session.transcript.contains("successfully authenticated"), "\(session.transcript)")
        #expect(session.transcript.contains("script went on: 0"), "\(session.transcript)")
        #expect(session.echo)
        #expect(try rig.status().contains("failed scans in a row: 0"))
    }

    /// polkit's agent helper is in its agent's foreground group too (pkexec's text agent),
    /// where Ctrl-C would end the agent: it is told apart by its program, as the kernel names
    /// it, and asked one question while the reader waits, the only sentence of its prompt.
    /// Enter alone goes on to the password. Here a copy of pamtester named
    /// polkit-agent-helper-1, run by a script that leads the group as pkexec does.
    @Test(.enabled(if: ModuleFingerprintTests.available)) func polkitsAgentHelperInTheForegroundIsAskedTheQuestion() throws {
        let rig = try ModuleFingerprintTests.Rig(moduleOptions: "timeout=30")
        let helper = rig.temp.file("polkit-agent-helper-1")
        let copied = try Child.run("/bin/cp", ["/usr/bin/pamtester", helper])
        try #require(copied.status == 0, "\(copied.all)")
        let question = Messages.fingerThenEnterPrompt(swipe: true)
        let started = VirtualSensor.now()
        let session = try Self.fromAScript(rig, host: helper, [
            [question, "@noecho \n"], ["Password: ", "@noecho secret\n"], ["script went on: ", ""],
        ])
        #expect(session.ok, "\(session.transcript)")
        #expect(VirtualSensor.now() - started < 20, "Enter alone took until the scan's timeout")
        #expect(session.transcript.components(separatedBy: "Swipe your finger").count == 2, "one sentence: \(session.transcript)")
        #expect(!session.transcript.contains("Ctrl-C"), "\(session.transcript)")
        #expect(session.transcript.contains("successfully authenticated"), "\(session.transcript)")
        #expect(try rig.status().contains("failed scans in a row: 0"))
    }

    /// A graphical host that ends the conversation halfway (gdm when the person turns to the
    /// password: its conversation fails): a cancel, never a failure. Nothing is counted or
    /// audited as a failure, the answer comes at once, and no sentence mentions Ctrl-C.
    @Test func aHostThatEndsTheConversationCancels() throws {
        let rig = try ModuleFingerprintTests.Rig(moduleOptions: "pin", alone: true)
        let before = try rig.rig.lockout()
        var shown: [PAMClient.Message] = []
        var infos = 0
        let client = try PAMClient.start(service: ModuleFingerprintTests.service, user: rig.user,
                                         configDirectory: rig.services) { message in
            shown.append(message)
            if case .textInfo = message { infos += 1 }
            return infos >= 1 ? .abort : .none
        }
        #expect(client.setItem(.xdisplay, ":0") == PAM_SUCCESS)
        let started = VirtualSensor.now()
        #expect(client.authenticate() == Outcome.cancelled.pamReturn.rawValue)
        #expect(VirtualSensor.now() - started < 3)
        #expect(infos == 1, "\(shown)")
        let after = try rig.rig.lockout()
        #expect(after.fingerFailures == before.fingerFailures && after.pinFailures == before.pinFailures)
        let directory = try rig.store.location.directory
        let audit = String(decoding: (readFile(directory + "/audit.jsonl") ?? []) + (readFile(directory + "/attempts.jsonl") ?? []),
                           as: UTF8.self)
        #expect(!audit.contains("\"failure\""), "\(audit)")
        for message in shown {
            #expect(!"\(message)".contains("Ctrl-C"), "\(message)")
        }
    }

    /// sudo changes PAM_USER to the target (root) before the session opens, su the other way:
    /// the session opened for another user gets nothing. The host here runs in the test
    /// runner's session, which is root's, not alice's: her confirmation is not kept there
    /// either (a grant counts only in a session of its own account; StepUpAttackTests has the
    /// grant kept in her own session).
    @Test(.enabled(if: getuid() == 0)) func aSessionOpenedForAnotherUserGetsNothing() throws {
        try #require(TestUsers.ensure(TestUsers.alice) && TestUsers.ensure(TestUsers.bob))
        for target in ["root", TestUsers.bob] {
            let stack = try ModuleAuthenticationTests.Stack(vault: true)
            let alice = try #require(try UserAccount.named(TestUsers.alice))
            let store = VaultStore(location: .broker(stateDirectory: stack.rig.broker.state, account: alice))
            _ = try Vault.create(store, pin: PINKeyslot(pin: secret(ModuleAuthenticationTests.pin), cost: .fastForTests))
            let line = "\(Paths.module) socket=\(stack.socket) pin stepup=contacts"
            stack.service("""
                auth required \(line)
                session [success=done ignore=ignore default=die] \(line)
                session required pam_debug.so open_session=cred_insufficient close_session=cred_insufficient
                """)
            let client = try PAMClient(service: "fingerseal-test", user: TestUsers.alice, configDirectory: stack.services) { message in
                if case .promptEchoOff = message { return ModuleAuthenticationTests.pin }
                return nil
            }
            #expect(client.setItem(.tty, "/dev/pts/0") == PAM_SUCCESS)
            #expect(client.authenticate() == PAM_SUCCESS)
            let check = { (user: String?) throws -> Int32 in
                try stack.rig.cli(["step-up", "contacts", "--check"], as: user, inTestSession: true).status
            }
            #expect(try check(TestUsers.alice) != 0, "no grant for alice in root's session")
            #expect(client.setItem(.user, target) == PAM_SUCCESS)
            // Nothing to hand on to the target's session: no opinion.
            #expect(client.openSession() == PAM_CRED_INSUFFICIENT, "\(target)")
            #expect(try check(target == "root" ? nil : target) != 0, "\(target) got no grant")
            #expect(client.closeSession() == PAM_CRED_INSUFFICIENT, "\(target) had nothing to drop")
            #expect(try check(TestUsers.alice) != 0, "still none for alice")
        }
    }
}

/// The pam-auth-update profiles, installed and enabled by Debian's own pam-auth-update in a
/// private mount namespace: temp copies of /etc/pam.d, /usr/share/pam-configs, /var/lib/pam
/// and debconf's database are bound over the real ones, so nothing outside changes.
@Suite struct ProfileTests {
    static let script = """
        set -e
        T="$1"; shift
        mount --make-rprivate /
        mount --bind "$T/pam.d" /etc/pam.d
        mount --bind "$T/pam-configs" /usr/share/pam-configs
        mount --bind "$T/var-lib-pam" /var/lib/pam
        mount --bind "$T/debconf" /var/cache/debconf
        export DEBIAN_FRONTEND=noninteractive
        for step in "$@"; do pam-auth-update $step --force; done
        """
    static let outside = ["/etc/pam.d/common-auth", "/etc/pam.d/common-account", "/etc/pam.d/common-session",
                          "/etc/pam.d/common-session-noninteractive", "/etc/pam.d/common-password",
                          "/var/cache/debconf/config.dat", "/var/lib/pam/seen", "/var/lib/pam/auth"]

    /// Whether a mount namespace can be had here; the reason when not.
    static let namespace: String? = {
        guard getuid() == 0, access("/usr/sbin/pam-auth-update", X_OK) == 0 else { return "needs root and pam-auth-update" }
        guard let probe = try? Child.run("/usr/bin/unshare", ["--mount", "--", "/bin/true"]), probe.status == 0 else {
            return "unshare --mount is not permitted here"
        }
        return nil
    }()

    /// The module lines of a generated file, in order.
    static func modules(_ path: String) -> [String] {
        String(decoding: readFile(path) ?? [], as: UTF8.self).split(separator: "\n")
            .filter { !$0.hasPrefix("#") }
            .compactMap { line in line.split(whereSeparator: { $0 == " " || $0 == "\t" }).first { $0.hasSuffix(".so") }.map(String.init) }
    }

    /// Runs pam-auth-update once per step in the namespace over copies in `temp`.
    static func run(_ temp: TempDirectory, _ steps: [String]) throws -> Child.Result {
        for (from, to) in [("/etc/pam.d", "pam.d"), ("/usr/share/pam-configs", "pam-configs"), ("/var/lib/pam", "var-lib-pam"),
                           ("/var/cache/debconf", "debconf")] where access(temp.file(to), F_OK) != 0 {
            let copied = try Child.run("/bin/cp", ["-a", from, temp.file(to)])
            guard copied.status == 0 else { throw TestFailure("cp \(from): \(copied.all)") }
        }
        for (profile, name) in [("fingerseal.pam-config", "fingerseal"), ("fingerseal-session.pam-config", "fingerseal-session")] {
            writeFile(temp.file("pam-configs/" + name), try #require(readFile(Paths.packageRoot + "/pam/" + profile)), mode: 0o644)
        }
        writeFile(temp.file("update.sh"), Array(script.utf8), mode: 0o644)
        return try Child.run("/usr/bin/unshare", ["--mount", "--", "/bin/sh", temp.file("update.sh"), temp.path] + steps,
                             environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"])
    }

    @Test(.enabled(if: namespace == nil)) func enablingPutsFingersealBeforeTheUnixPasswordAndAfterPamSystemd() throws {
        let before = Self.outside.map { readFile($0) }
        let temp = try TempDirectory()
        // fprintd enabled first: fingerseal's Conflicts turns it off.
        let result = try Self.run(temp, ["--enable fprintd", "--enable fingerseal fingerseal-session"])
        #expect(result.status == 0, "\(result.all)")
        let auth = Self.modules(temp.file("pam.d/common-auth"))
        let fingerseal = try #require(auth.firstIndex(of: "pam_fingerseal.so"), "\(auth)")
        let unix = try #require(auth.firstIndex(of: "pam_unix.so"), "\(auth)")
        #expect(fingerseal < unix, "\(auth)")
        #expect(!auth.contains("pam_fprintd.so"), "\(auth)")
        let authText = String(decoding: readFile(temp.file("pam.d/common-auth")) ?? [], as: UTF8.self)
        #expect(!authText.contains("pam_fingerseal.so pin"), "pin is not on by default")
        let session = Self.modules(temp.file("pam.d/common-session"))
        let token = try #require(session.firstIndex(of: "pam_fingerseal.so"), "\(session)")
        let systemd = try #require(session.firstIndex(of: "pam_systemd.so"), "\(session)")
        #expect(systemd < token, "\(session)")
        #expect(!Self.modules(temp.file("pam.d/common-session-noninteractive")).contains("pam_fingerseal.so"))
        // Back to fprintd: disable fingerseal, enable fprintd.
        let back = try Self.run(temp, ["--disable fingerseal fingerseal-session --enable fprintd"])
        #expect(back.status == 0, "\(back.all)")
        let restored = Self.modules(temp.file("pam.d/common-auth"))
        #expect(restored.contains("pam_fprintd.so") && !restored.contains("pam_fingerseal.so"), "\(restored)")
        #expect(!Self.modules(temp.file("pam.d/common-session")).contains("pam_fingerseal.so"))
        // Nothing outside the namespace changed.
        #expect(Self.outside.map { readFile($0) } == before)
    }
}
