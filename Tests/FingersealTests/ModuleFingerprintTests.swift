import FoundationEssentials
import Glibc
import FingersealCore
import SystemKit
import Testing

/// pam_fingerseal.so's fingerprint step (through the fingerseal-scan helper) in a real PAM
/// stack: pamtester under pam_wrapper, fingerseal first, then pam_matrix as the password
/// module, and libfprint's virtual_device as the reader. Each test has its own environment.
@Suite(.disabled("moves to the broker (issue 10)")) struct ModuleFingerprintTests {
    static let pin = "4826"

    struct Rig {
        let temp: TempDirectory
        var environment: [String: String]
        var socket: String { temp.file("sensor.sock") }

        init(moduleOptions: String = "pin") throws {
            temp = try TempDirectory()
            environment = ["XDG_STATE_HOME": temp.file("state"), "PATH": "/usr/bin:/bin", "NO_COLOR": "1",
                           "FP_DRIVERS_WHITELIST": "virtual_device", "FP_VIRTUAL_DEVICE": temp.file("sensor.sock")]
            #expect(mkdir(temp.file("state"), 0o700) == 0 && mkdir(temp.file("pam.d"), 0o755) == 0)
            // Enroll with the CLI, as a user would.
            let cliEnvironment = environment, socket = temp.file("sensor.sock")
            let cli = { (arguments: [String], commands: [String]) throws -> Child.Result in
                let child = try Child(Paths.cli, arguments, environment: cliEnvironment,
                                      fd3: Array((ModuleFingerprintTests.pin + "\n").utf8))
                for command in commands { try VirtualSensor.send(command, to: socket) }
                return child.finish()
            }
            #expect(try cli(["pin", "set", "--pin-fd", "3"], []).status == 0)
            #expect(try cli(["enroll", "--pin-fd", "3"], Array(repeating: "SCAN finger-a", count: 5)).status == 0)
            let user = String(cString: getpwuid(geteuid()).pointee.pw_name)
            writeFile(temp.file("passdb"), Array("\(user):secret:fingerseal-scan-test\n".utf8))
            writeFile(temp.file("pam.d/fingerseal-scan-test"), Array("""
                auth [success=done default=ignore] \(Paths.module) store=\(temp.file("state"))/fingerseal helper=\(Paths.buildDirectory)/fingerseal-scan \(moduleOptions)
                auth required \(PamtesterTests.matrix) passdb=\(temp.file("passdb"))

                """.utf8), mode: 0o644)
            environment["LD_PRELOAD"] = PamtesterTests.wrapper
            environment["PAM_WRAPPER"] = "1"
            environment["PAM_WRAPPER_SERVICE_DIR"] = temp.file("pam.d")
        }

        func start(answers: [String]) throws -> Child {
            let user = String(cString: getpwuid(geteuid()).pointee.pw_name)
            return try Child("/usr/bin/pamtester", ["fingerseal-scan-test", user, "authenticate"], environment: environment,
                             stdin: Array(answers.map { $0 + "\n" }.joined().utf8))
        }

        func authenticate(answers: [String], sensor commands: [String]) throws -> Child.Result {
            let child = try start(answers: answers)
            for command in commands { try VirtualSensor.send(command, to: socket) }
            return child.finish()
        }

        /// Failed matches recorded in the user's vault.
        func failedScans() throws -> Int {
            guard let account = try UserAccount.current() else { throw TestFailure("no account") }
            let store = VaultStore(location: VaultLocation(directory: temp.file("state/fingerseal"), account: account))
            return try LockoutLedger(store: store, policy: LockoutPolicy()).current().fingerFailures
        }

        /// `misses` non-matching scans, each sent only after the previous one was counted: the
        /// virtual driver may drop a command queued while an action is ending.
        func authenticate(answers: [String], misses: Int) throws -> Child.Result {
            let child = try start(answers: answers)
            let before = try failedScans()
            for miss in 1...misses {
                try VirtualSensor.send("SCAN stranger", to: socket)
                let deadline = VirtualSensor.now() + 20
                while try failedScans() < before + miss && VirtualSensor.now() < deadline {
                    var pause = timespec(tv_sec: 0, tv_nsec: 5_000_000)
                    nanosleep(&pause, nil)
                }
            }
            return child.finish()
        }

        func status() throws -> String {
            var env = environment
            env["LD_PRELOAD"] = nil
            return try Child.run(Paths.cli, ["status"], environment: env).stdout
        }
    }

    static var available: Bool { PamtesterTests.available }

    @Test(.enabled(if: available)) func aMatchNeedsNeitherPINNorPassword() throws {
        let rig = try Rig()
        let result = try rig.authenticate(answers: [], sensor: ["SCAN finger-a"])
        #expect(result.status == 0, "\(result.all)")
        #expect(result.all.contains("Swipe your finger across the reader, or press Ctrl-C to use your password."))
        #expect(!result.stderr.contains("PIN: ") && !result.stderr.contains("Password: "))
    }

    @Test(.enabled(if: available)) func failedMatchesFallBackToPINThenPassword() throws {
        let rig = try Rig()
        let result = try rig.authenticate(answers: ["", "secret"], misses: 3)
        #expect(result.status == 0, "\(result.all)")
        #expect(result.all.contains("The fingerprint did not match."))
        #expect(result.stderr.contains("PIN: Password: "))
        #expect(try rig.status().contains("failed scans in a row: 3"))
    }

    @Test(.enabled(if: available)) func ctrlCGoesToTheFallbackWithoutCounting() throws {
        let rig = try Rig()
        // libfprint creates the sensor socket when the helper opens the reader, which is after
        // the module set up its signalfd: once the socket is back, Ctrl-C goes to the module.
        // (pamtester's own output is block-buffered on a pipe, so its text cannot say when.)
        unlink(rig.socket)
        let child = try rig.start(answers: ["", "secret"])
        let deadline = VirtualSensor.now() + 20
        while access(rig.socket, F_OK) != 0 && VirtualSensor.now() < deadline {
            var pause = timespec(tv_sec: 0, tv_nsec: 5_000_000)
            nanosleep(&pause, nil)
        }
        #expect(access(rig.socket, F_OK) == 0, "the helper never opened the reader")
        child.signal(SIGINT)
        let result = child.finish()
        #expect(result.status == 0, "\(result.all)")
        #expect(result.all.contains("Swipe your finger across the reader, or press Ctrl-C to use your password."))
        #expect(result.stderr.contains("PIN: Password: "))
        #expect(try rig.status().contains("failed scans in a row: 0"))
    }

    @Test(.enabled(if: available)) func noReaderGoesStraightToTheFallback() throws {
        var rig = try Rig()
        rig.environment["FP_VIRTUAL_DEVICE"] = nil
        let start = VirtualSensor.now()
        let result = try rig.authenticate(answers: [ModuleFingerprintTests.pin], sensor: [])
        #expect(result.status == 0, "\(result.all)")
        #expect(!result.all.contains("Swipe your finger"))
        #expect(VirtualSensor.now() - start < 3)
    }

    @Test(.enabled(if: available)) func timeoutAndUnplugFallBack() throws {
        let slow = try Rig(moduleOptions: "pin timeout=1")
        let timedOut = try slow.authenticate(answers: ["", "secret"], sensor: ["SLEEP 5000"])
        #expect(timedOut.status == 0, "\(timedOut.all)")
        #expect(timedOut.all.contains("No finger was scanned in time."))
        let unplugged = try Rig().authenticate(answers: ["", "secret"], sensor: ["UNPLUG"])
        #expect(unplugged.status == 0, "\(unplugged.all)")
        #expect(unplugged.stderr.contains("PIN: Password: "))
    }

    /// Many authentications that each start the helper (no reader here, then the PIN): the
    /// host process keeps its threads, descriptors, signal state and environment.
    @Test(.enabled(if: available)) func helperCyclesLeaveTheHostAsFound() throws {
        var rig = try Rig()
        rig.environment["FP_VIRTUAL_DEVICE"] = nil
        rig.environment["LD_PRELOAD"] = nil
        // pam-cycles uses pam_start_confdir itself: point it at the rig's service directory.
        let user = String(cString: getpwuid(geteuid()).pointee.pw_name)
        let run = try Child.run(Paths.buildDirectory + "/pam-cycles",
                                [rig.temp.file("pam.d"), "fingerseal-scan-test", user, "30", ModuleFingerprintTests.pin],
                                environment: rig.environment)
        #expect(run.status == 0, "\(run.all)")
        for line in run.stdout.split(separator: "\n").map({ $0.split(separator: " ").map(String.init) })
        where line.first == "threads" || line.first == "fds" {
            #expect(line.count == 3 && line[1] == line[2], "\(line.joined(separator: " "))")
        }
        #expect(run.stdout.contains("signals same") && run.stdout.contains("environment same"), "\(run.stdout)")
        #expect(run.stdout.contains("codes 0:30"), "\(run.stdout)")
    }

    /// What the module sends to syslog (LOG_AUTHPRIV, through pam_syslog): one line per
    /// decision with outcome, user and service, and one for a bad option.
    @Test(.enabled(if: available && SyslogCapture.availableAnywhere)) func decisionsAreLogged() throws {
        func logged(_ rig: Rig, answers: [String], sensor: [String]) throws -> (Child.Result, String) {
            // A capture socket of its own for each run (one path cannot be bound twice).
            let directory = try TempDirectory()
            let capture = try SyslogCapture(directory: directory.path)
            let user = String(cString: getpwuid(geteuid()).pointee.pw_name)
            let (path, arguments) = capture.wrap(["/usr/bin/pamtester", "fingerseal-scan-test", user, "authenticate"])
            var environment = rig.environment
            environment["PAM_WRAPPER_USE_SYSLOG"] = "1" // pam_wrapper's pam_syslog goes to syslog, not stderr
            let child = try Child(path, arguments, environment: environment,
                                  stdin: Array(answers.map { $0 + "\n" }.joined().utf8))
            for command in sensor { try VirtualSensor.send(command, to: rig.socket) }
            let result = child.finish()
            return (result, capture.messages().joined(separator: "\n"))
        }
        let rig = try Rig()
        let (matched, matchLog) = try logged(rig, answers: [], sensor: ["SCAN finger-a"])
        #expect(matched.status == 0, "\(matched.all)")
        #expect(matchLog.contains("authentication success for user="), "\(matchLog)")
        #expect(matchLog.contains("service=fingerseal-scan-test"))

        let vault = rig.temp.file("state/fingerseal/vault")
        var bytes = try #require(readFile(vault))
        bytes[bytes.count / 2] ^= 0x04
        writeFile(vault, bytes)
        let (damaged, damagedLog) = try logged(rig, answers: ["secret"], sensor: [])
        #expect(damaged.status == 0, "the password still works: \(damaged.all)")
        #expect(damagedLog.contains("authentication vaultUnusable"), "\(damagedLog)")
        #expect(readFile(vault) == bytes, "the damaged vault is left as it was")

        // Out of range (a longer line would be cut by libpam before the module sees it).
        var hostile = try Rig(moduleOptions: "timeout=99999")
        hostile.environment["FP_VIRTUAL_DEVICE"] = nil
        let (_, hostileLog) = try logged(hostile, answers: ["secret"], sensor: [])
        #expect(hostileLog.contains("configuration:"), "\(hostileLog)")
        #expect(!matchLog.contains(ModuleFingerprintTests.pin) && !damagedLog.contains("secret"))
    }

    @Test(.enabled(if: available)) func lockoutAfterMaxFailsAndResetByPIN() throws {
        let rig = try Rig(moduleOptions: "pin max_tries=1 max_fails=2")
        for _ in 0..<2 {
            #expect(try rig.authenticate(answers: ["", "secret"], sensor: ["SCAN stranger"]).status == 0)
        }
        // Locked: no scan is offered, the PIN is.
        let locked = try rig.authenticate(answers: [ModuleFingerprintTests.pin], sensor: [])
        #expect(locked.status == 0, "\(locked.all)")
        #expect(locked.all.contains("Fingerprint unlock is locked"))
        #expect(!locked.all.contains("Swipe your finger"))
        // The PIN success cleared the lock: the finger works again.
        #expect(try rig.authenticate(answers: [], sensor: ["SCAN finger-a"]).status == 0)
    }
}

/// The return-code table of design §2, row by row, with pam_fingerseal.so alone in the
/// stack; pamtester reports the code through pam_strerror's text.
@Suite(.disabled("moves to the broker (issue 10)")) struct ReturnCodeTableTests {
    static let texts: [Int32: String] = [
        0: "successfully authenticated",
        7: "Authentication failure",
        9: "Authentication service cannot retrieve authentication info",
        10: "User not known to the underlying authentication module",
        11: "Have exhausted maximum number of retries for service",
        3: "Error in service module",
    ]

    func rig(_ options: String) throws -> ModuleFingerprintTests.Rig {
        var rig = try ModuleFingerprintTests.Rig(moduleOptions: options)
        // fingerseal alone: drop the password module line.
        let path = rig.temp.file("pam.d/fingerseal-scan-test")
        let first = String(decoding: readFile(path) ?? [], as: UTF8.self).split(separator: "\n")[0]
        writeFile(path, Array((first.replacingOccurrences(of: "[success=done default=ignore]", with: "required") + "\n").utf8), mode: 0o644)
        rig.environment["NO_COLOR"] = "1"
        return rig
    }

    func expect(_ result: Child.Result, _ code: Int32, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.all.contains(ReturnCodeTableTests.texts[code] ?? "?"), "\(result.all)", sourceLocation: sourceLocation)
    }

    @Test(.enabled(if: PamtesterTests.available)) func everyRow() throws {
        // success: a match
        expect(try rig("").authenticate(answers: [], sensor: ["SCAN finger-a"]), 0)
        // tries used up → PAM_MAXTRIES
        expect(try rig("max_tries=2").authenticate(answers: [], misses: 2), 11)
        // a single failed match (max_tries=1) → PAM_AUTH_ERR
        expect(try rig("max_tries=1").authenticate(answers: [], sensor: ["SCAN x"]), 7)
        // timeout → PAM_AUTHINFO_UNAVAIL
        expect(try rig("timeout=1").authenticate(answers: [], sensor: ["SLEEP 5000"]), 9)
        // no reader → PAM_AUTHINFO_UNAVAIL
        var noReader = try rig("")
        noReader.environment["FP_VIRTUAL_DEVICE"] = nil
        expect(try noReader.authenticate(answers: [], sensor: []), 9)
        // locked → PAM_AUTH_ERR (no scan offered)
        let locked = try rig("max_tries=1 max_fails=1")
        expect(try locked.authenticate(answers: [], sensor: ["SCAN x"]), 7)
        let stillLocked = try locked.authenticate(answers: [], sensor: [])
        expect(stillLocked, 7)
        #expect(stillLocked.all.contains("locked"))
        // bad configuration → PAM_SERVICE_ERR
        expect(try rig("timeout=0").authenticate(answers: [], sensor: []), 3)
        // wrong PIN → PAM_AUTH_ERR; skipped PIN after cancel/no reader → PAM_AUTHINFO_UNAVAIL
        var pinOnly = try rig("pin")
        pinOnly.environment["FP_VIRTUAL_DEVICE"] = nil
        expect(try pinOnly.authenticate(answers: ["0000"], sensor: []), 7)
        expect(try pinOnly.authenticate(answers: [""], sensor: []), 9)
    }
}
