import FoundationEssentials
import Glibc
import Testing
@testable import TestSupport

/// A copy of the system files `fingerseal doctor` reads (FINGERSEAL_DOCTOR_ROOT), healthy
/// until a test breaks one.
final class DoctorSystem {
    let temp: TempDirectory
    var root: String { temp.path }

    #if arch(x86_64)
    static let multiarch = "x86_64-linux-gnu"
    #else
    static let multiarch = "aarch64-linux-gnu"
    #endif

    static let auth = """
        # here are the per-package modules (the "Primary" block)
        auth\t[success=2 default=ignore]\tpam_fingerseal.so
        auth\t[success=1 default=ignore]\tpam_unix.so nullok
        auth\trequisite\t\t\tpam_deny.so
        auth\trequired\t\t\tpam_permit.so

        """
    static let session = """
        session\t[default=1]\t\t\tpam_permit.so
        session\trequisite\t\t\tpam_deny.so
        session\trequired\t\t\tpam_unix.so
        session\toptional\tpam_systemd.so
        session\toptional\t\t\tpam_fingerseal.so

        """

    init() throws {
        temp = try TempDirectory()
        chmod(temp.path, 0o755)
        for directory in ["etc/pam.d", "lib/\(DoctorSystem.multiarch)/security", "lib/udev/rules.d", "run/systemd/system",
                          "etc/systemd/system/sockets.target.wants", "lib/systemd/system", "dev"] {
            _ = Child.runQuietly("/bin/mkdir", ["-p", temp.file(directory)])
        }
        write("etc/pam.d/common-auth", DoctorSystem.auth)
        write("etc/pam.d/common-session", DoctorSystem.session)
        write("lib/\(DoctorSystem.multiarch)/security/pam_fingerseal.so", "")
        write("lib/udev/rules.d/70-fingerseal.rules", "")
        write("lib/systemd/system/fingerseal.socket", "")
        write("etc/group", "root:x:0:\nfingerseal-rig:x:990:\n")
        symlink("/lib/systemd/system/fingerseal.socket", temp.file("etc/systemd/system/sockets.target.wants/fingerseal.socket"))
    }

    func write(_ path: String, _ text: String) { writeFile(temp.file(path), Array(text.utf8), mode: 0o644) }
    func remove(_ path: String) { _ = Child.runQuietly("/bin/rm", ["-rf", temp.file(path)]) }

    var environment: [String: String] { ["FINGERSEAL_DOCTOR_ROOT": root] }
}

/// A run of `fingerseal doctor`, its lines by leading word.
struct DoctorRun {
    let result: Child.Result
    var lines: [String] { result.stdout.split(separator: "\n").map(String.init) }
    var problems: [String] { lines.filter { $0.hasPrefix("Problem: ") } }
    var warnings: [String] { lines.filter { $0.hasPrefix("Warning: ") } }

    /// The line that says `text`, which must lead with `word` and (unless OK) carry a fix.
    func line(_ word: String, _ text: String, fix: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        let found = lines.first { $0.contains(text) }
        #expect(found?.hasPrefix(word + ": ") == true, "\(word) \(text) in:\n\(result.all)", sourceLocation: sourceLocation)
        if let fix { #expect(found?.contains("Fix: ") == true && found?.contains(fix) == true, "\(fix) in \(found ?? "nothing")",
                             sourceLocation: sourceLocation) }
    }
}

@Suite struct DoctorTests {
    static let pin = "2580"

    static func doctor(_ run: ([String], [String: String]) throws -> Child.Result, _ system: DoctorSystem,
                       json: Bool = false, environment extra: [String: String] = [:]) throws -> DoctorRun {
        DoctorRun(result: try run(["doctor"] + (json ? ["--json"] : []), system.environment.merging(extra) { $1 }))
    }

    /// Every finding of a healthy setup is OK or a warning; then each check this side makes
    /// is broken in turn, named with its fix, and the exit status follows whether it blocks.
    @Test func aHealthySetupThenEachSystemCheckBroken() throws {
        let system = try DoctorSystem()
        let home = try CLIHome(reader: true)
        let idp = LocalIdP.available ? try LocalIdP() : nil
        if let idp {
            let login = try LocalIdP.passwordLogin(idp, home, pin: DoctorTests.pin)
            #expect(login.status == 0, "\(login.all)")
        } else {
            #expect(try home.run(["pin", "set", "--pin-fd", "3"], fd3: DoctorTests.pin + "\n").status == 0)
        }
        try home.enroll("finger-a", pin: DoctorTests.pin)
        let run = { (arguments: [String], extra: [String: String]) in try home.run(arguments, environment: extra) }

        let healthy = try DoctorTests.doctor(run, system)
        #expect(healthy.result.status == 0, "\(healthy.result.all)")
        #expect(healthy.problems.isEmpty, "\(healthy.result.all)")
        healthy.line("OK", "The fingerseal service answers at \(home.broker.socketPath).")
        healthy.line("OK", "fingerseal.socket is enabled")
        healthy.line("OK", "The PAM module is installed at /lib/\(DoctorSystem.multiarch)/security/pam_fingerseal.so.")
        healthy.line("OK", "The fingerseal profile is enabled in /etc/pam.d/common-auth, before pam_unix.")
        healthy.line("OK", "The fingerseal-session profile is enabled in /etc/pam.d/common-session, after pam_systemd.")
        healthy.line("OK", "The reader backend is libfprint")
        healthy.line("OK", "A fingerprint reader is connected: ")
        healthy.line("OK", "The PIN is set.")
        healthy.line("OK", "One finger is enrolled: right-index-finger.")
        healthy.line("OK", "Neither fingerprint unlock nor the PIN is locked.")
        healthy.line("OK", "The system clock is plausible")
        healthy.line("OK", "No TPM was found (/dev/tpmrm0)")
        // No TPM on the build machines: the device key on file permissions, a warning.
        healthy.line("Warning", "No usable TPM was found, so your device key is protected by file permissions only",
                     fix: "Turn the TPM on in the computer's firmware settings")
        healthy.line("OK", "The udev rules are installed at /lib/udev/rules.d/70-fingerseal.rules.")
        healthy.line("OK", "The group fingerseal-rig exists.")
        if let idp {
            healthy.line("OK", "Signed in as ")
            healthy.line("OK", "The identity provider \(idp.issuer) answers.")
            #expect(healthy.lines.last == "Nothing blocks fingerprint unlock, but 1 warning above is worth a look.",
                    "\(healthy.result.all)")
        } else {
            healthy.line("Warning", "You are not signed in to an identity provider", fix: "fingerseal login")
        }
        // JSON: the same findings, each with check, status, message and fix, and a summary.
        let json = try DoctorTests.doctor(run, system, json: true)
        #expect(json.result.status == 0)
        let report = try JSONDecoder().decode(Report.self, from: Data(json.result.stdout.utf8))
        #expect(report.summary.problems == 0 && !report.summary.blocksUnlock)
        #expect(report.findings.count == healthy.lines.count - 1)
        #expect(Set(report.findings.map(\.check)).isSuperset(of: ["service", "units", "pam-module", "pam-auth", "pam-session",
                                                                   "reader-backend", "reader", "vault", "pin", "tpm-sealing", "fingers",
                                                                   "sign-in", "clock", "tpm", "udev", "group"]))
        #expect(report.findings.allSatisfy { ["ok", "warning", "problem"].contains($0.status) })

        // common-auth: pam_unix first, then no pam_fingerseal at all.
        system.write("etc/pam.d/common-auth", "auth required pam_unix.so nullok\nauth [success=end default=ignore] pam_fingerseal.so\n")
        var broken = try DoctorTests.doctor(run, system)
        #expect(broken.result.status == 8, "\(broken.result.all)")
        broken.line("Problem", "In /etc/pam.d/common-auth, pam_fingerseal comes after pam_unix", fix: "pam-auth-update --enable fingerseal")
        #expect(broken.lines.last == "1 problem blocks fingerprint unlock; its fix is on its line.")
        let brokenJSON = try JSONDecoder().decode(Report.self, from: Data(try DoctorTests.doctor(run, system, json: true).result.stdout.utf8))
        #expect(brokenJSON.summary.problems == 1 && brokenJSON.summary.blocksUnlock)
        #expect(brokenJSON.findings.first { $0.check == "pam-auth" }.map { $0.status == "problem" && !$0.fix.isEmpty } == true)
        system.write("etc/pam.d/common-auth", "auth required pam_unix.so nullok\n")
        broken = try DoctorTests.doctor(run, system)
        #expect(broken.result.status == 8)
        broken.line("Problem", "The fingerseal profile is not enabled", fix: "pam-auth-update --enable fingerseal")
        system.write("etc/pam.d/common-auth", DoctorSystem.auth)

        // common-session out of order: a warning, nothing blocked.
        system.write("etc/pam.d/common-session", "session optional pam_fingerseal.so\nsession optional pam_systemd.so\n")
        broken = try DoctorTests.doctor(run, system)
        #expect(broken.result.status == 0, "\(broken.result.all)")
        broken.line("Warning", "pam_fingerseal comes before pam_systemd", fix: "pam-auth-update --enable fingerseal-session")
        system.write("etc/pam.d/common-session", DoctorSystem.session)

        // The module.
        system.remove("lib/\(DoctorSystem.multiarch)/security/pam_fingerseal.so")
        broken = try DoctorTests.doctor(run, system)
        #expect(broken.result.status == 8)
        broken.line("Problem", "The PAM module pam_fingerseal.so is not installed", fix: "make install")
        system.write("lib/\(DoctorSystem.multiarch)/security/pam_fingerseal.so", "")

        // The units: not enabled, then no systemd at all (warnings: the service answers).
        system.remove("etc/systemd/system/sockets.target.wants/fingerseal.socket")
        broken = try DoctorTests.doctor(run, system)
        #expect(broken.result.status == 0)
        broken.line("Warning", "fingerseal.socket is installed but not enabled", fix: "systemctl enable --now fingerseal.socket")
        system.remove("run/systemd")
        broken = try DoctorTests.doctor(run, system)
        broken.line("Warning", "systemd is not running here", fix: "fingersealed --socket")

        // The udev rules and the group: warnings (they guard the reader; unlock goes on).
        system.remove("lib/udev/rules.d/70-fingerseal.rules")
        system.write("etc/group", "root:x:0:\n")
        broken = try DoctorTests.doctor(run, system)
        #expect(broken.result.status == 0, "\(broken.result.all)")
        broken.line("Warning", "The udev rules 70-fingerseal.rules are not installed", fix: "make install")
        broken.line("Warning", "The group fingerseal-rig does not exist", fix: "groupadd --system fingerseal-rig")

        // A TPM is reported, present or not, as OK.
        system.write("dev/tpmrm0", "")
        try DoctorTests.doctor(run, system).line("OK", "A TPM is present (/dev/tpmrm0)")

        // The clock is not set back here: libfaketime's LD_PRELOAD loses a Swift program's
        // arguments (CommandLine.arguments comes back empty), so neither program would run.
        // DoctorClockTests gives both clock checks their times instead.
    }

    struct Report: Decodable {
        struct Item: Decodable {
            let check: String
            let status: String
            let message: String
            let fix: String
        }
        struct Summary: Decodable {
            let ok: Int
            let warnings: Int
            let problems: Int
            let blocksUnlock: Bool
            let message: String
            enum CodingKeys: String, CodingKey {
                case ok, warnings, problems, message
                case blocksUnlock = "blocks_unlock"
            }
        }
        let findings: [Item]
        let summary: Summary
    }

    /// No service: named, with the command that starts it (systemd here), exit 8.
    @Test func noBroker() throws {
        let system = try DoctorSystem()
        let temp = try TempDirectory()
        let result = try Child.run(Paths.cli, ["doctor"], environment: noBrokerEnvironment(temp).merging(system.environment) { $1 })
        let run = DoctorRun(result: result)
        #expect(result.status == 8, "\(result.all)")
        run.line("Problem", "The fingerseal service does not answer at \(temp.file("no-broker.socket")).",
                 fix: "systemctl enable --now fingerseal.socket")
        #expect(!result.all.contains("Fingerseal is not set up"), "nothing is claimed about what only the service sees")
        #expect(run.problems.count == 1, "\(result.all)")
    }

    /// `doctor --service NAME` (issue 23 §3): the settings in force for that PAM service that
    /// differ from the defaults, each with where it was set, in text and in JSON; another
    /// service shows the top level only; a name skip_services= would refuse is a usage error;
    /// without --service nothing of it is said.
    @Test func doctorShowsTheSettingsOfAService() throws {
        let system = try DoctorSystem()
        let broker = try ReaderBroker(driver: "none", reader: false, config: """
            timeout = 20
            prompt = combined
            [service swaylock]
            prompt = none
            max_fails = 3
            """)
        let run = { (arguments: [String], extra: [String: String]) in try broker.cli(arguments, environment: extra) }
        let swaylock = DoctorRun(result: try run(["doctor", "--service", "swaylock"], system.environment))
        swaylock.line("OK", "Settings for the PAM service swaylock that differ from the defaults")
        swaylock.line("OK", "timeout=20, from the configuration file.")
        swaylock.line("OK", "prompt=none, from the section [service swaylock].")
        swaylock.line("OK", "max_fails=3, from the section [service swaylock], for hosts running as root only")
        #expect(!swaylock.result.stdout.contains("prompt=combined"), "\(swaylock.result.all)")

        let sudo = DoctorRun(result: try run(["doctor", "--service", "sudo"], system.environment))
        sudo.line("OK", "prompt=combined, from the configuration file.")
        #expect(!sudo.result.stdout.contains("[service"), "\(sudo.result.all)")

        let json = try run(["doctor", "--service", "swaylock", "--json"], system.environment)
        let report = try JSONDecoder().decode(Report.self, from: Data(json.stdout.utf8))
        let settings = report.findings.filter { $0.check.hasPrefix("setting:") }
        #expect(settings.map(\.check) == ["setting:timeout", "setting:prompt", "setting:max_fails"], "\(json.all)")
        #expect(settings.map(\.status) == ["ok", "ok", "ok"])
        #expect(settings.first { $0.check == "setting:prompt" }?.message == "prompt=none, from the section [service swaylock].")
        #expect(report.findings.contains { $0.check == "pam-service" })

        let defaults = try ReaderBroker(driver: "none", reader: false)
        let plain = DoctorRun(result: try defaults.cli(["doctor", "--service", "gdm-password"], environment: system.environment))
        plain.line("OK", "Every setting for the PAM service gdm-password is its default")

        let bad = try run(["doctor", "--service", "a b"], system.environment)
        #expect(bad.status == 2, "\(bad.all)")
        #expect(bad.stderr.contains("a b is not a PAM service name"), "\(bad.all)")
        let without = try run(["doctor"], system.environment)
        #expect(!without.stdout.contains("PAM service") && !without.stdout.contains("from the configuration file"), "\(without.all)")
    }

    /// The service's checks, each broken: no vault, no finger, no reader.
    @Test func noVaultNoFingerNoReader() throws {
        let system = try DoctorSystem()
        let bare = try ReaderBroker()
        let run = { (arguments: [String], extra: [String: String]) in try bare.cli(arguments, environment: extra) }
        var found = try DoctorTests.doctor(run, system)
        #expect(found.result.status == 8, "\(found.result.all)")
        found.line("Problem", "Fingerseal is not set up for this account", fix: "fingerseal pin set")
        found.line("OK", "No identity provider is configured")

        #expect(try bare.cli(["pin", "set", "--pin-fd", "3"], fd3: DoctorTests.pin + "\n").status == 0)
        found = try DoctorTests.doctor(run, system)
        #expect(found.result.status == 8)
        found.line("OK", "The PIN is set.")
        found.line("Problem", "No finger is enrolled", fix: "fingerseal enroll")
        #expect(found.problems.count == 1, "\(found.result.all)")

        try bare.unplugReader()
        found = try DoctorTests.doctor(run, system)
        #expect(found.result.status == 8)
        found.line("Problem", "No fingerprint reader is connected.", fix: "fingerseal devices")
    }

    /// An identity provider that does not answer: a warning while unlock can go on offline, a
    /// problem where the administrator requires a token.
    @Test func identityProviderUnreachable() throws {
        let system = try DoctorSystem()
        let issuer = "http://127.0.0.1:9/realms/none"
        let broker = try ReaderBroker(config: "issuer = \(issuer)\nclient_id = fingerseal-test\nidp_timeout = 2\n", pin: DoctorTests.pin)
        #expect(try broker.enroll("finger-b", pin: DoctorTests.pin).status == 0)
        let run = { (arguments: [String], extra: [String: String]) in try broker.cli(arguments, environment: extra) }
        var found = try DoctorTests.doctor(run, system)
        #expect(found.result.status == 0, "\(found.result.all)")
        found.line("Warning", "The identity provider \(issuer) did not answer its discovery request: it cannot be reached.",
                   fix: "Check the network connection")
        found.line("Warning", "You are not signed in to an identity provider", fix: "fingerseal login")

        writeFile(broker.broker.config, Array("issuer = \(issuer)\nclient_id = fingerseal-test\nidp_timeout = 2\nrequire_token = yes\n".utf8),
                  mode: 0o644)
        found = try DoctorTests.doctor(run, system)
        #expect(found.result.status == 8, "\(found.result.all)")
        found.line("Problem", "did not answer its discovery request", fix: "Check the network connection")
        found.line("Problem", "You are not signed in to an identity provider", fix: "fingerseal login")
    }
}
