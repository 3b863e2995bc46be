import CPAM
import Dispatch
import FoundationEssentials
import Glibc
import PAMKit
import Testing
@testable import FingersealCore
import SystemKit
@testable import TestSupport

/// The trust boundary of design §2 and §4, tried with real processes: what a caller controls
/// (its environment, files in its home, a PAM host's environment) decides nothing and reaches
/// neither the reader, nor libcurl, nor the store; a user cannot create or reset a vault
/// without the account password; the broker dying or restarting loses no vault, only what it
/// kept in memory; many callers at once are all answered.
@Suite(.serialized, .enabled(if: getuid() == 0)) struct TrustBoundaryTests {
    /// A broker without a reader whose root vault is signed in at `idp` (PIN fallback), and a
    /// PAM service `fingerseal-test` that requires a token from it.
    static func signedInRig(_ idp: LocalIdP, sourceLocation: SourceLocation = #_sourceLocation) throws -> ReaderBroker {
        let rig = try ReaderBroker(driver: "none", reader: false)
        let login = try rig.cli(["login", "--issuer", idp.issuer, "--client-id", "fingerseal-test", "--flow", "password",
                                 "--idp-user", "alice", "--password-fd", "3", "--pin-fd", "3"],
                                fd3: "wonderland-7\n\(TrustBoundaryTests.pin)\n")
        #expect(login.status == 0, "\(login.all)", sourceLocation: sourceLocation)
        #expect(mkdir(rig.files.file("pam.d"), 0o755) == 0, sourceLocation: sourceLocation)
        writeFile(rig.files.file("pam.d/fingerseal-test"),
                  Array("auth required \(Paths.module) socket=\(rig.broker.socketPath) pin require_token\n".utf8), mode: 0o644)
        return rig
    }

    static let pin = "2580"
    static let alicePIN = "3141"
    static let alicePassword = "correct horse"

    // MARK: what a caller's environment could point at

    /// A root-only directory (0700) holding a root-owned file, which libfprint would unlink
    /// and replace by its socket if FP_VIRTUAL_DEVICE reached it, and a TCP listener that a
    /// proxy variable would send a request to.
    final class Bait {
        let directory: TempDirectory
        let victim: String
        let original: [UInt8] = Array("root's own file\n".utf8)
        let inode: ino_t
        let listener: Int32
        let port: UInt16

        init() throws {
            directory = try TempDirectory()
            #expect(chmod(directory.path, 0o700) == 0)
            victim = directory.file("victim")
            writeFile(victim, original, mode: 0o600)
            var info = stat()
            guard stat(victim, &info) == 0 else { throw TestFailure("no victim file") }
            inode = info.st_ino
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &length) == 0
                }
            }
            guard fd >= 0, bound else { throw TestFailure("no listener") }
            listener = fd
            port = UInt16(bigEndian: address.sin_port)
        }

        deinit { close(listener) }

        var keylog: String { directory.file("keylog") }

        /// Everything a hostile caller might set, pointing at the bait.
        var environment: [String: String] {
            let proxy = "http://127.0.0.1:\(port)"
            return [
                "FP_VIRTUAL_DEVICE": victim, "FP_VIRTUAL_DEVICE_STORAGE": victim, "FP_VIRTUAL_IMAGE": victim,
                "FP_DRIVERS_WHITELIST": "virtual_device", "FP_TOD_DRIVERS_DIR": directory.path, "FP_DEVICE_EMULATION": "1",
                "https_proxy": proxy, "HTTPS_PROXY": proxy, "ALL_PROXY": proxy, "all_proxy": proxy, "http_proxy": proxy,
                "SSLKEYLOGFILE": keylog, "CURL_CA_BUNDLE": victim,
                "XDG_RUNTIME_DIR": directory.path, "XDG_SESSION_ID": "7", "XDG_STATE_HOME": directory.path,
            ]
        }

        /// The bait is as it was: the file the same file with the same bytes, no key log, no
        /// connection to the listener, nothing else in the directory.
        func expectUntouched(sourceLocation: SourceLocation = #_sourceLocation) {
            var info = stat()
            #expect(lstat(victim, &info) == 0 && info.st_mode & S_IFMT == S_IFREG && info.st_ino == inode,
                    "the root-only file was replaced", sourceLocation: sourceLocation)
            #expect(readFile(victim) == original, "the root-only file was changed", sourceLocation: sourceLocation)
            #expect(access(keylog, F_OK) != 0, "a TLS key log appeared", sourceLocation: sourceLocation)
            let accepted = accept(listener, nil, nil)
            if accepted >= 0 { close(accepted) }
            #expect(accepted < 0, "something connected to the proxy", sourceLocation: sourceLocation)
            let listing = (try? Child.run("/bin/ls", ["-A", directory.path]).stdout) ?? ""
            #expect(listing == "victim\n", "written into the root-only directory: \(listing)", sourceLocation: sourceLocation)
        }
    }

    /// A PAM service in /etc/pam.d for the system's own libpam (a setuid host ignores
    /// pam_wrapper's LD_PRELOAD), removed again when dropped. Never replaces an existing file.
    final class SystemService {
        let path: String
        private let created: Bool

        init(name: String, text: String, replace: Bool = true) throws {
            path = "/etc/pam.d/" + name
            if access(path, F_OK) == 0 {
                guard !replace else { throw TestFailure("\(path) exists; not touching it") }
                created = false
                return
            }
            writeFile(path, Array(text.utf8), mode: 0o644)
            created = true
        }

        deinit { if created { unlink(path) } }
    }

    /// A copy of pamtester that is setuid root, as sudo and su are: run by a user, it keeps the
    /// user's environment (glibc only drops LD_* and a few others) and the broker sees root.
    final class SetuidPamtester {
        let directory: TempDirectory
        var path: String { directory.file("pamtester") }

        init() throws {
            directory = try TempDirectory()
            #expect(chmod(directory.path, 0o755) == 0)
            guard let bytes = readFile("/usr/bin/pamtester") else { throw TestFailure("no pamtester") }
            writeFile(path, bytes, mode: 0o755)
            #expect(chown(path, 0, 0) == 0 && chmod(path, 0o4755) == 0)
        }

        /// Runs it as `user`: authenticate `user` through `service`, with a terminal named.
        func authenticate(as user: String, service: String, answers: [String],
                          environment: [String: String]) throws -> Child.Result {
            guard let entry = getpwnam(user) else { throw TestFailure("no user \(user)") }
            return try Child.run("/usr/bin/setpriv", ["--reuid=\(entry.pointee.pw_uid)", "--regid=\(entry.pointee.pw_gid)",
                                                      "--init-groups", "--", path, "-I", "tty=/dev/pts/0", service, user,
                                                      "authenticate"],
                                 environment: environment, stdin: Array(answers.map { $0 + "\n" }.joined().utf8))
        }
    }

    /// Exit status and standard output of each step, to compare runs with and without the
    /// hostile environment.
    struct Outcome: Equatable, CustomStringConvertible {
        var steps: [String] = []
        mutating func add(_ name: String, _ result: Child.Result) { steps.append("\(name): \(result.status) \(result.stdout)") }
        var description: String { steps.joined(separator: "\n") }
    }

    /// (1) The same requests from a setuid PAM host run by a user, and from the CLI as root and
    /// as the user, with and without every variable a caller might set: the same outcomes, and
    /// nothing the variables point at is touched.
    @Test(.enabled(if: Pamtester.available)) func aCallersEnvironmentReachesNothing() throws {
        #expect(TestUsers.ensure(TestUsers.alice))
        let rig = try ReaderBroker(pin: TrustBoundaryTests.pin)
        #expect(try rig.enroll("finger-a", pin: TrustBoundaryTests.pin).status == 0)
        let provisioned = try rig.cli(["pin", "set", "--user", TestUsers.alice, "--pin-fd", "3"], fd3: TrustBoundaryTests.alicePIN + "\n")
        #expect(provisioned.status == 0, "\(provisioned.all)")
        let service = "fingerseal-trust-\(getpid())"
        let installed = try SystemService(name: service, text: "auth required \(Paths.module) socket=\(rig.broker.socketPath) pin\n")
        let host = try SetuidPamtester()
        let bait = try Bait()

        func run(_ extra: [String: String]) throws -> Outcome {
            var outcome = Outcome()
            let base = rig.environment(["HOME": "/nonexistent"])
            let environment = base.merging(extra) { $1 }
            // The setuid host, run by alice, for alice: her PIN; a wrong one.
            outcome.add("host PIN", try host.authenticate(as: TestUsers.alice, service: service, answers: [TrustBoundaryTests.alicePIN],
                                                          environment: environment))
            outcome.add("host wrong PIN", try host.authenticate(as: TestUsers.alice, service: service, answers: ["0000"],
                                                                environment: environment))
            // The CLI as root: the broker's reader, a match on it, root's vault.
            outcome.add("devices", try rig.cli(["devices", "--json"], environment: extra))
            let verify = try rig.startCLI(["verify", "--json"], environment: extra)
            try VirtualSensor.send("SCAN finger-a", to: rig.sensor)
            var matched = verify.finish()
            // Only the result, not the milliseconds.
            matched = Child.Result(stdout: matched.stdout.split(separator: "\n").filter { !$0.contains("milliseconds") }
                                       .joined(separator: "\n"), stderr: matched.stderr, status: matched.status)
            outcome.add("verify", matched)
            // Not when it was last verified: each run verifies anew.
            func withoutLastVerified(_ status: Child.Result) -> Child.Result {
                Child.Result(stdout: status.stdout.split(separator: "\n").filter { !$0.contains("\"last_verified\"") }
                                 .joined(separator: "\n"), stderr: status.stderr, status: status.status)
            }
            outcome.add("status", withoutLastVerified(try rig.cli(["status", "--json"], environment: extra)))
            outcome.add("step-up", try rig.cli(["step-up", "--pin-fd", "3", "payroll"], fd3: TrustBoundaryTests.pin + "\n",
                                               environment: extra))
            // The CLI as alice.
            outcome.add("alice status", withoutLastVerified(try rig.cli(["status", "--json"], as: TestUsers.alice, environment: extra)))
            outcome.add("alice fingers", try rig.cli(["fingers"], as: TestUsers.alice, environment: extra))
            return outcome
        }
        let plain = try run([:])
        let hostile = try run(bait.environment)
        #expect(plain == hostile, "without the variables:\n\(plain)\nwith them:\n\(hostile)")
        #expect(plain.steps.first?.hasPrefix("host PIN: 0 ") == true, "\(plain)")
        #expect(plain.steps.dropFirst().first?.hasPrefix("host wrong PIN: 1 ") == true, "\(plain)")
        #expect(plain.steps.contains { $0.hasPrefix("verify: 0 ") && $0.contains("\"match\"") }, "\(plain)")
        #expect(plain.steps.contains { $0.hasPrefix("devices: 0 ") && $0.contains("virtual_device") }, "\(plain)")
        bait.expectUntouched()
        _ = installed
    }

    /// (1, the network) The same unlock through the CLI and through PAM, refreshing at the
    /// local IdP, with every proxy and TLS variable pointing at the bait: each request goes to
    /// the IdP as the broker's own configuration says; nothing reaches the proxy.
    @Test(.enabled(if: LocalIdP.available && Pamtester.available)) func aCallersProxyAndTLSVariablesReachNothing() throws {
        let idp = try LocalIdP()
        let rig = try Self.signedInRig(idp)
        let bait = try Bait()
        for extra in [[:], bait.environment] {
            let unlock = try rig.cli(["unlock", "--pin-fd", "3", "--json"], fd3: TrustBoundaryTests.pin + "\n", environment: extra)
            #expect(unlock.status == 0 && unlock.stdout.contains("\"token\" : \"refreshed\""), "\(unlock.all)")
            let pam = try Pamtester.run(services: rig.files.file("pam.d"), service: "fingerseal-test",
                                        user: String(cString: getpwuid(0).pointee.pw_name), answers: [TrustBoundaryTests.pin],
                                        environment: extra)
            #expect(pam.status == 0, "\(pam.all)")
        }
        let family = try idp.family("alice")
        #expect(family.contains("\"rotations\": 4"), "\(family)")
        #expect(try idp.familyAlive("alice"))
        bait.expectUntouched()
    }

    // MARK: files in a home

    /// (2) What a user puts in their home (an old-style vault in ~/.local/state/fingerseal, a
    /// symlink there into the store, its removal) changes nothing the broker says, and the
    /// store stays out of the user's reach.
    @Test func filesInAHomeChangeNothing() throws {
        try #require(TestUsers.ensure(TestUsers.alice))
        let alice = try #require(getpwnam(TestUsers.alice)?.pointee)
        let home = String(cString: alice.pw_dir)
        let rig = try ReaderBroker(driver: "none", reader: false)
        #expect(try rig.cli(["pin", "set", "--user", TestUsers.alice, "--pin-fd", "3"], fd3: TrustBoundaryTests.alicePIN + "\n").status == 0)
        let state = home + "/.local/state"
        let legacy = state + "/fingerseal"
        try #require(access(legacy, F_OK) != 0, "\(legacy) exists; not touching it")
        // Whatever of ~/.local/state/fingerseal this test makes goes again.
        let local: String = home + "/.local"
        let candidates: [String] = [local, state, legacy]
        let outermost = candidates.first { (path: String) -> Bool in access(path, F_OK) != 0 }
        defer { if let outermost { _ = Child.runQuietly("/bin/rm", ["-rf", outermost]) } }
        let environment = ["HOME": home]
        func status() throws -> Child.Result { try rig.cli(["status"], as: TestUsers.alice, environment: environment) }
        let before = try status()
        #expect(before.status == 0 && before.stdout.contains("Vault: \(rig.broker.vaultDirectory(uid: alice.pw_uid))"), "\(before.all)")

        // As alice: a vault of her own making where fingerseal once kept it.
        let other = try ReaderBroker(driver: "none", reader: false, pin: "9999")
        let mkdir = try Child.run("/usr/bin/setpriv", ["--reuid=\(alice.pw_uid)", "--regid=\(alice.pw_gid)", "--init-groups", "--",
                                                       "/bin/mkdir", "-p", legacy])
        #expect(mkdir.status == 0, "\(mkdir.all)")
        let files = try Child.run("/bin/ls", [other.broker.vaultDirectory()]).stdout.split(separator: "\n").map(String.init)
        #expect(files.contains("vault"), "\(files)")
        for name in files {
            let bytes = try #require(readFile(other.broker.vaultDirectory() + "/" + name))
            writeFile(legacy + "/" + name, bytes)
            #expect(chown(legacy + "/" + name, alice.pw_uid, alice.pw_gid) == 0)
        }
        #expect(try status().stdout == before.stdout, "a vault in the home is not read")
        #expect(try status().stdout == (try rig.cli(["status"], as: TestUsers.alice,
                                                      environment: ["HOME": home, "XDG_STATE_HOME": state])).stdout)
        // Replaced by a symlink into the store (hers) and to root's own files.
        _ = Child.runQuietly("/bin/rm", ["-rf", legacy])
        #expect(symlink(rig.broker.vaultDirectory(uid: alice.pw_uid), legacy) == 0)
        #expect(lchown(legacy, alice.pw_uid, alice.pw_gid) == 0)
        #expect(try status().stdout == before.stdout)
        unlink(legacy)
        #expect(symlink(rig.broker.vaultDirectory(), legacy) == 0)
        #expect(try status().stdout == before.stdout)
        // Removed: still the broker's view; her PIN still the one root set.
        unlink(legacy)
        #expect(try status().stdout == before.stdout)
        let stepUp = try rig.cli(["step-up", "--pin-fd", "3", "payroll"], fd3: TrustBoundaryTests.alicePIN + "\n", as: TestUsers.alice,
                                 environment: environment)
        #expect(stepUp.status == 0, "\(stepUp.all)")
        // The store is out of her reach.
        let read = try Child.run("/usr/bin/setpriv", ["--reuid=\(alice.pw_uid)", "--regid=\(alice.pw_gid)", "--init-groups", "--",
                                                      "/bin/cat", rig.broker.vaultDirectory(uid: alice.pw_uid) + "/vault"])
        #expect(read.status != 0 && read.stdout.isEmpty, "\(read.all)")
    }

    // MARK: the account password

    /// (3) A user creates a vault, and sets a new PIN for a forgotten one, only with the
    /// account password, which the broker checks with PAM (its own fingerseal-verify service).
    @Test func aUserNeedsTheAccountPasswordToCreateOrResetAVault() throws {
        try #require(TestUsers.ensure(TestUsers.alice, password: TrustBoundaryTests.alicePassword))
        // The broker reads pam/fingerseal-verify from its own directory (TestBroker, --pam-dir).
        let rig = try ReaderBroker(driver: "none", reader: false)
        let aliceUID = try #require(TestUsers.uid(TestUsers.alice))
        let vault = rig.broker.vaultDirectory(uid: aliceUID) + "/vault"
        func asAlice(_ arguments: [String], _ lines: [String]) throws -> Child.Result {
            try rig.cli(arguments, fd3: lines.map { $0 + "\n" }.joined(), as: TestUsers.alice, environment: ["HOME": "/nonexistent"])
        }

        let refused = try asAlice(["pin", "set", "--password-fd", "3", "--pin-fd", "3"], ["not her password", "1357"])
        #expect(refused.status == 1 && refused.stderr.contains("not accepted"), "\(refused.all)")
        #expect(access(vault, F_OK) != 0, "no vault was created")
        // The store keeps only the count of wrong account passwords (issue 19 §10).
        let kept = (try? Child.run("/bin/ls", ["-A", rig.broker.vaultDirectory(uid: aliceUID)]).stdout) ?? ""
        #expect(kept.split(separator: "\n").sorted() == ["lock", "lockout"], "nothing else was created in the store: \(kept)")
        let created = try asAlice(["pin", "set", "--password-fd", "3", "--pin-fd", "3"], [TrustBoundaryTests.alicePassword, "1357"])
        #expect(created.status == 0, "\(created.all)")
        var info = stat()
        #expect(stat(vault, &info) == 0 && info.st_uid == 0 && info.st_mode & 0o777 == 0o600, "the vault is the broker's")
        let status = try asAlice(["status", "--json"], [])

        let notReset = try asAlice(["pin", "reset", "--password-fd", "3", "--pin-fd", "3"], ["not her password", "8642"])
        #expect(notReset.status == 1 && notReset.stderr.contains("not accepted"), "\(notReset.all)")
        #expect(try asAlice(["status", "--json"], []).stdout == status.stdout, "the vault is as it was")
        #expect(try asAlice(["audit"], []).stdout.contains("PIN reset did not succeed"), "the refusal is audited")
        #expect(try asAlice(["step-up", "--fresh", "--pin-fd", "3", "x"], ["1357"]).status == 0, "the old PIN still works")
        let reset = try asAlice(["pin", "reset", "--password-fd", "3", "--pin-fd", "3"], [TrustBoundaryTests.alicePassword, "8642"])
        #expect(reset.status == 0, "\(reset.all)")
        #expect(try asAlice(["step-up", "--fresh", "--pin-fd", "3", "x"], ["1357"]).status == 1, "the old PIN is gone")
        #expect(try asAlice(["step-up", "--fresh", "--pin-fd", "3", "x"], ["8642"]).status == 0, "the new PIN works")
    }

    // MARK: the broker's own life

    /// (4) The broker killed while an unlock waits for a finger: the PAM host hears at once
    /// (never success), and the next broker finds the vault as it was.
    @Test(.enabled(if: Pamtester.available)) func killingTheBrokerMidScanFailsSafeAndLosesNothing() throws {
        let rig = try ModuleFingerprintTests.Rig(moduleOptions: "pin", alone: true)
        let before = try rig.rig.cli(["status", "--json"])
        let child = try rig.start(answers: [ModuleFingerprintTests.pin], lineBuffered: true)
        var prompt: String? = nil
        while prompt == nil, let line = child.readLine() {
            if line.contains("Swipe your finger") { prompt = line }
        }
        #expect(prompt != nil)
        #expect(ReaderBroker.waitUntil { interruptIsBlocked(child.pid) }, "the module never waited for the scan")
        let pid = try #require(rig.rig.broker.process?.pid)
        let killed = VirtualSensor.now()
        #expect(kill(pid, SIGKILL) == 0)
        let result = child.finish(limit: 20)
        #expect(VirtualSensor.now() - killed < 3, "the host waited \(VirtualSensor.now() - killed) s")
        #expect(result.status != 0, "\(result.all)")
        #expect(result.all.contains("Authentication service cannot retrieve authentication info"), "\(result.all)")
        try rig.rig.broker.restart()
        let after = try rig.rig.cli(["status", "--json"])
        #expect(after.status == 0 && after.stdout == before.stdout, "before:\n\(before.all)\nafter:\n\(after.all)")
        let audit = try rig.rig.cli(["audit", "--verify"])
        #expect(audit.status == 0, "\(audit.all)")
        let matched = try rig.authenticate(answers: [], sensor: ["SCAN finger-a"])
        #expect(matched.status == 0, "\(matched.all)")
    }

    /// (5) A restart keeps every vault and forgets what lived in memory: a held step-up.
    @Test func aRestartKeepsTheVaultAndForgetsGrants() throws {
        let home = try StepUpHome()
        #expect(try home.run(["step-up", "--pin-fd", "3", "payroll"], pin: StepUpHome.pin).status == 0)
        #expect(try home.run(["step-up", "payroll", "--check"]).status == 0)
        let before = try home.run(["status", "--json"])
        try home.rig.broker.restart()
        #expect(try home.run(["step-up", "payroll", "--check"]).status == 1, "the grant is gone")
        let after = try home.run(["status", "--json"])
        #expect(after.status == 0 && after.stdout == before.stdout, "\(after.all)")
        #expect(try home.run(["step-up", "--pin-fd", "3", "payroll"], pin: StepUpHome.pin).status == 0, "the PIN still opens it")
    }

    /// (6) A hundred requests at once from two users (root and a user, fifty each): every one
    /// gets a result (some may be told the broker is busy: at most 16 connections per user),
    /// and the broker serves on afterwards.
    @Test func aHundredCallersAtOnceAreAllAnswered() throws {
        try #require(TestUsers.ensure(TestUsers.alice))
        let rig = try ReaderBroker(driver: "none", reader: false, pin: TrustBoundaryTests.pin)
        #expect(try rig.cli(["pin", "set", "--user", TestUsers.alice, "--pin-fd", "3"], fd3: TrustBoundaryTests.alicePIN + "\n").status == 0)
        let root = String(cString: getpwuid(0).pointee.pw_name)
        func requests(_ user: String) -> [[String]] {
            [["status"], ["fingers"], ["pam.account", "pam.user=\(user)"], ["audit"], ["verify"]]
        }
        var children: [(String, [String], Child)] = []
        for index in 0..<100 {
            let alice = index % 2 == 1
            let request = requests(alice ? TestUsers.alice : root)[(index / 2) % 5]
            let arguments = [rig.broker.socketPath] + (alice ? ["--as", TestUsers.alice] : []) + request
            children.append((alice ? "alice" : "root", request, try Child(Paths.buildDirectory + "/wire-client", arguments)))
        }
        var outcomes: [String: Int] = [:]
        for (user, request, child) in children {
            let result = child.finish(limit: 60)
            let line = result.stdout.split(separator: "\n").first { $0.hasPrefix("result: ") }
            #expect(result.status == 0 && line != nil, "\(user) \(request): \(result.all)")
            if let line { outcomes[String(line.split(separator: " ")[1]), default: 0] += 1 }
        }
        #expect(outcomes.values.reduce(0, +) == 100, "\(outcomes)")
        let pid = try #require(rig.broker.process?.pid)
        #expect(kill(pid, 0) == 0, "the broker is still running")
        let after = try rig.cli(["status"])
        #expect(after.status == 0 && after.stdout.contains("PIN: set"), "\(after.all)")
        let aliceAfter = try rig.cli(["step-up", "--pin-fd", "3", "x"], fd3: TrustBoundaryTests.alicePIN + "\n", as: TestUsers.alice,
                                     environment: ["HOME": "/nonexistent"])
        #expect(aliceAfter.status == 0, "\(aliceAfter.all)")
    }

    /// (7) A caller's text carries no control character in (issue 31 §7): a PAM service name
    /// with a line break from a host running as the user (with `debug`, the broker logs the
    /// service: the line break would forge a line of its log), an option value or an argument
    /// with an escape from the CLI, are refused with a sentence, and nothing of them is
    /// logged. A root PAM host (sshd passes on a user name off the network) is answered as
    /// ever, and its text is logged escaped.
    @Test(.enabled(if: SyslogCapture.availableAnywhere)) func controlCharactersInACallersTextAreRefusedOrLoggedEscaped() throws {
        try #require(TestUsers.ensure(TestUsers.alice))
        let logs = try TempDirectory()
        chmod(logs.path, 0o755)
        let capture = try SyslogCapture(directory: logs.path)
        let rig = try ReaderBroker(driver: "none", reader: false, wrap: capture.wrap)
        let forged = "sudo\nfingersealed: forged"
        let refused = try rig.broker.wire(["pam.authenticate", "pam.user=\(TestUsers.alice)", "pam.service=\(forged)", "option=debug"],
                                          as: TestUsers.alice)
        #expect(refused.stdout.contains("result: usage \(Messages.controlCharacters("pam.service"))"), "\(refused.all)")
        let device = try rig.cli(["verify", "--device", "virtual\u{1b}[2J"], as: TestUsers.alice)
        #expect(device.status == 2 && device.stderr.contains(Messages.controlCharacters("opt.device")), "\(device.all)")
        let argument = try rig.cli(["forget", "left-thumb\u{9b}2J", "--pin-fd", "3"], fd3: "0000\n", as: TestUsers.alice)
        #expect(argument.status == 2 && argument.stderr.contains(Messages.controlCharacters("arg")), "\(argument.all)")
        // A root host, no vault for root here: the stack goes on as before, and the line the
        // broker logs of it (debug) stays one line.
        let root = String(cString: getpwuid(0).pointee.pw_name)
        let fromRoot = try rig.broker.wire(["pam.authenticate", "pam.user=\(root)", "pam.service=\(forged)", "option=debug"])
        #expect(fromRoot.stdout.contains("result: noVault"), "\(fromRoot.all)")
        let lines = capture.messages()
        let mentions = lines.filter { $0.contains("forged") }
        #expect(mentions.count == 1 && mentions.allSatisfy { $0.contains("user=\(root) service=sudo\\x0afingersealed: forged") },
                "\(lines)")
        #expect(!lines.contains { $0.contains("\n") || $0.contains("\u{1b}") || $0.contains("\u{9b}") || $0.contains(TestUsers.alice) },
                "\(lines)")

        // The module's own lines (debug), in a root host, escape what the host passed on: a
        // PAM user with a line break (sshd takes it off the network).
        guard Pamtester.available else { return }
        let services = try TempDirectory()
        chmod(services.path, 0o755)
        writeFile(services.file("fs-escape"), Array("auth required \(Paths.module) socket=\(rig.broker.socketPath) debug\n".utf8), mode: 0o644)
        let (path, arguments) = capture.wrap(["/usr/bin/pamtester", "-I", "tty=/dev/pts/0", "fs-escape", "ghost\nforged-by-module", "authenticate"])
        // pam_wrapper's pam_syslog goes to syslog, not stderr.
        let environment = Pamtester.environment(services.path).merging(["PAM_WRAPPER_USE_SYSLOG": "1"]) { $1 }
        let host = try Child.run(path, arguments, environment: environment)
        #expect(host.status != 0, "\(host.all)")
        let moduleLines = capture.messages().filter { $0.contains("forged-by-module") }
        #expect(!moduleLines.isEmpty && moduleLines.allSatisfy { $0.contains("ghost\\x0aforged-by-module") }, "\(moduleLines)")
    }

    /// The reader serves one request at a time: a second verify waits (and says so) while the
    /// first holds it, then gets its own turn.
    @Test func theReaderServesOneRequestAtATime() throws {
        let rig = try ReaderBroker(pin: TrustBoundaryTests.pin)
        #expect(try rig.enroll("finger-a", pin: TrustBoundaryTests.pin).status == 0)
        let first = try rig.startCLI(["verify", "--events-fd", "1"])
        #expect(first.readLine() == #"{"event":"finger-needed"}"#)
        // The second's sentences and events on one stream, to see it wait.
        let second = try Child("/bin/sh", ["-c", #"exec "$0" verify --events-fd 1 2>&1"#, Paths.cli], environment: rig.environment())
        var told = false
        while !told, let line = second.readLine() { told = line.contains("busy") }
        #expect(told, "the second request was not told the reader is busy")
        try VirtualSensor.send("SCAN finger-a", to: rig.sensor)
        let one = first.finish()
        #expect(one.status == 0, "\(one.all)")
        var armed = false
        while !armed, let line = second.readLine() { armed = line == #"{"event":"finger-needed"}"# }
        #expect(armed, "the second request never got the reader")
        try VirtualSensor.send("SCAN finger-a", to: rig.sensor)
        let two = second.finish()
        #expect(two.status == 0, "\(two.all)")
    }

    /// Many unlocks at once (the CLI as root, and PAM hosts), all refreshing the one sealed
    /// sign-in in the one broker: each refresh token is used once, the chain stays alive.
    @Test(.enabled(if: LocalIdP.available && Pamtester.available)) func concurrentRefreshesNeverReuseAToken() throws {
        let idp = try LocalIdP()
        let rig = try Self.signedInRig(idp)
        let root = String(cString: getpwuid(0).pointee.pw_name)
        var children: [Child] = []
        for index in 0..<8 {
            children.append(index % 4 == 3
                ? try Pamtester.start(services: rig.files.file("pam.d"), service: "fingerseal-test", user: root,
                                      answers: [TrustBoundaryTests.pin])
                : try rig.startCLI(["unlock", "--pin-fd", "3"], fd3: TrustBoundaryTests.pin + "\n"))
        }
        for child in children {
            let result = child.finish()
            #expect(result.status == 0, "\(result.all)")
        }
        let family = try idp.family("alice")
        #expect(family.contains("\"rotations\": 8") && family.contains("\"reuse_attempts\": 0"), "\(family)")
        #expect(try idp.familyAlive("alice"))
    }
}
