import FoundationEssentials
import Glibc
import FingersealCore
import SystemKit
import Testing
@testable import TestSupport

/// pam_fingerseal.so's fingerprint step in a real PAM stack: pamtester under pam_wrapper,
/// fingerseal first, then pam_matrix as the password module. The module asks a broker of the
/// test's own (`socket=`), whose reader is libfprint's virtual_device (the broker's own
/// environment); the finger is enrolled with the CLI against that broker. pamtester names a
/// terminal (`-I tty=`), so a person can answer.
@Suite struct ModuleFingerprintTests {
    static let pin = "4826"
    static let service = "fingerseal-finger-test"

    struct Rig {
        let rig: ReaderBroker
        /// pamtester's environment (pam_wrapper, the private service directory).
        var environment: [String: String]
        var temp: TempDirectory { rig.files }
        var socket: String { rig.sensor }
        let user = String(cString: getpwuid(geteuid()).pointee.pw_name)
        var services: String { rig.files.file("pam.d") }
        /// Root's vault in the broker's store.
        var store: VaultStore { get throws { try rig.store() } }

        /// `alone`: the module alone in the stack (`required`), no password module after it.
        init(moduleOptions: String = "pin", alone: Bool = false, config: String = "",
             wrap: (([String]) -> (String, [String]))? = nil) throws {
            rig = try ReaderBroker(config: config, pin: ModuleFingerprintTests.pin, wrap: wrap)
            #expect(mkdir(rig.files.file("pam.d"), 0o755) == 0)
            // Enroll with the CLI, as a user would.
            let enrolled = try rig.enroll("finger-a", pin: ModuleFingerprintTests.pin)
            #expect(enrolled.status == 0, "\(enrolled.all)")
            environment = Pamtester.environment(rig.files.file("pam.d"))
            writeFile(rig.files.file("passdb"), Array("\(user):secret:\(ModuleFingerprintTests.service)\n".utf8))
            setOptions(moduleOptions, alone: alone)
        }

        /// The service's module line (and the password module after it unless `alone`).
        func setOptions(_ options: String, alone: Bool = false) {
            let module = "\(Paths.module) socket=\(rig.broker.socketPath) \(options)"
            let text = alone ? "auth required \(module)\n" : """
                auth [success=done default=ignore] \(module)
                auth required \(PamtesterTests.matrix) passdb=\(rig.files.file("passdb"))

                """
            writeFile(services + "/" + ModuleFingerprintTests.service, Array(text.utf8), mode: 0o644)
        }

        /// `lineBuffered`: pamtester's standard output (where the conversation's sentences go)
        /// is flushed at each line, so a test can read a prompt as it is shown.
        func start(answers: [String], user name: String? = nil, tty: String? = "/dev/pts/0",
                   items: [String] = [], lineBuffered: Bool = false) throws -> Child {
            var arguments: [String] = []
            if let tty { arguments += ["-I", "tty=\(tty)"] }
            for item in items { arguments += ["-I", item] }
            arguments += [ModuleFingerprintTests.service, name ?? user, "authenticate"]
            let stdin = Array(answers.map { $0 + "\n" }.joined().utf8)
            if lineBuffered {
                return try Child("/usr/bin/stdbuf", ["-oL", "/usr/bin/pamtester"] + arguments, environment: environment, stdin: stdin,
                                 terminal: tty.map { _ in .leader })
            }
            return try Child("/usr/bin/pamtester", arguments, environment: environment, stdin: stdin,
                             terminal: tty.map { _ in .leader })
        }

        func authenticate(answers: [String], sensor commands: [String], user name: String? = nil, tty: String? = "/dev/pts/0",
                          items: [String] = []) throws -> Child.Result {
            let child = try start(answers: answers, user: name, tty: tty, items: items)
            for command in commands { try VirtualSensor.send(command, to: socket) }
            return child.finish()
        }

        /// Failed matches recorded in root's vault, as the broker keeps them.
        func failedScans() throws -> Int { try rig.lockout().fingerFailures }

        /// `misses` non-matching scans, each sent only after the previous one was counted: the
        /// virtual driver may drop a command queued while an action is ending.
        func authenticate(answers: [String], misses: Int) throws -> Child.Result {
            let child = try start(answers: answers)
            let before = try failedScans()
            for miss in 1...misses {
                try VirtualSensor.send("SCAN stranger", to: socket)
                #expect(try ReaderBroker.waitUntil { try failedScans() >= before + miss }, "miss \(miss) was never counted")
            }
            return child.finish()
        }

        func status() throws -> String { try rig.status() }
    }

    static var available: Bool { PamtesterTests.available }

    /// One finger success through PAM reads the vault file once (issue 20): the status, the
    /// prints, the refresh and the audit trail all use that read. Counted with inotify on the
    /// broker's store; the `status` after it waits for the answer's bookkeeping and reads the
    /// vault once itself.
    @Test(.enabled(if: available)) func aFingerSuccessReadsTheVaultOnce() throws {
        let rig = try Rig()
        let opens = try FileOpens(watching: try rig.store.location.directory)
        let matched = try rig.authenticate(answers: [], sensor: ["SCAN finger-a"])
        #expect(matched.status == 0, "\(matched.all)")
        #expect(try rig.status().contains("Fingers enrolled"))
        let counted = opens.take()
        #expect(counted["vault", default: 0] == 2, "the vault was opened \(counted) (status included)")
    }

    @Test(.enabled(if: available)) func aMatchNeedsNeitherPINNorPassword() throws {
        let rig = try Rig()
        let result = try rig.authenticate(answers: [], sensor: ["SCAN finger-a"])
        #expect(result.status == 0, "\(result.all)")
        #expect(result.all.contains("Swipe your finger across the reader, or press Ctrl-C to use your password."))
        #expect(!result.stderr.contains("PIN: ") && !result.stderr.contains("Password: "))
    }

    /// The person's own switch (`fingerseal off`, `on`): while fingerprint unlock is off, the
    /// host is told so and goes on to the PIN, with no scan and the refusal audited; the vault
    /// and the finger are kept, and `on` (the PIN confirms it) brings the finger back.
    @Test(.enabled(if: available)) func fingerprintUnlockTurnedOffRefusesTheFinger() throws {
        let rig = try Rig()
        let pin = ModuleFingerprintTests.pin + "\n"
        let off = try rig.rig.cli(["off", "--pin-fd", "3"], fd3: pin)
        #expect(off.status == 0, "\(off.all)")
        #expect(off.stdout.contains(Messages.fingerUnlockTurnedOff), "\(off.all)")
        #expect(try rig.status().contains(Messages.statusFingerUnlockOff))
        let refused = try rig.authenticate(answers: [ModuleFingerprintTests.pin], sensor: [])
        #expect(refused.status == 0, "the PIN still works: \(refused.all)")
        #expect(refused.all.contains(Messages.fingerUnlockOff), "\(refused.all)")
        #expect(!refused.all.contains("Swipe your finger"), "no scan is offered: \(refused.all)")
        let trail = try rig.rig.cli(["audit"])
        #expect(trail.stdout.contains(Messages.auditFingerUnlockOff), "\(trail.all)")
        #expect(trail.stdout.contains(Messages.auditReason(.cause(.fingerUnlockOff))), "\(trail.all)")
        #expect(try rig.status().contains("Fingers enrolled: right index finger"), "the finger is kept")

        let on = try rig.rig.cli(["on", "--pin-fd", "3"], fd3: pin)
        #expect(on.status == 0, "\(on.all)")
        #expect(on.stdout.contains(Messages.fingerUnlockTurnedOn), "\(on.all)")
        let matched = try rig.authenticate(answers: [], sensor: ["SCAN finger-a"])
        #expect(matched.status == 0, "\(matched.all)")
        #expect(try rig.rig.cli(["audit"]).stdout.contains(Messages.auditFingerUnlockOn))
    }

    @Test(.enabled(if: available)) func failedMatchesFallBackToPINThenPassword() throws {
        let rig = try Rig()
        let result = try rig.authenticate(answers: ["", "secret"], misses: 3)
        #expect(result.status == 0, "\(result.all)")
        #expect(result.all.contains("The fingerprint did not match."))
        #expect(result.stderr.contains("PIN: Password: "))
        #expect(try rig.status().contains("failed scans in a row: 3"))
    }

    /// Ctrl-C goes to the password (no PIN: the person asked for the password), and a
    /// cancelled scan is never counted.
    @Test(.enabled(if: available)) func ctrlCGoesToThePasswordWithoutCounting() throws {
        let rig = try Rig()
        let child = try rig.start(answers: ["secret"], lineBuffered: true)
        // The prompt is shown; then the module watches Ctrl-C (SIGINT blocked, a signalfd)
        // exactly while it waits for the broker's next message, here the scan's end.
        var prompt: String? = nil
        while prompt == nil, let line = child.readLine() {
            if line.contains("Swipe your finger") { prompt = line }
        }
        #expect(prompt == "Swipe your finger across the reader, or press Ctrl-C to use your password.")
        #expect(ReaderBroker.waitUntil { interruptIsBlocked(child.pid) }, "the module never waited for the broker")
        child.signal(SIGINT)
        let result = child.finish()
        #expect(result.status == 0, "\(result.all)")
        #expect(result.stderr.contains("Password: ") && !result.stderr.contains("PIN: "), "\(result.stderr)")
        #expect(try rig.status().contains("failed scans in a row: 0"))
    }

    @Test(.enabled(if: available)) func noReaderGoesStraightToTheFallback() throws {
        let rig = try Rig()
        try rig.rig.unplugReader()
        let result = try rig.authenticate(answers: [ModuleFingerprintTests.pin], sensor: [])
        #expect(result.status == 0, "\(result.all)")
        #expect(!result.all.contains("Swipe your finger"))
        #expect(result.seconds < 3, "\(result.seconds) s")
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

    /// Many authentications in one host process (no reader here, then the PIN): the host
    /// keeps its threads, descriptors, signal state and environment. pam-cycles names no
    /// terminal: the broker's configuration names the service as one a person answers.
    @Test(.enabled(if: available)) func cyclesLeaveTheHostAsFound() throws {
        var rig = try Rig(config: "interactive_services=\(ModuleFingerprintTests.service)\n")
        try rig.rig.unplugReader()
        rig.environment["LD_PRELOAD"] = nil
        // pam-cycles uses pam_start_confdir itself: point it at the rig's service directory.
        let run = try Child.run(Paths.buildDirectory + "/pam-cycles",
                                [rig.services, ModuleFingerprintTests.service, rig.user, "30", ModuleFingerprintTests.pin],
                                environment: rig.environment)
        #expect(run.status == 0, "\(run.all)")
        for line in run.stdout.split(separator: "\n").map({ $0.split(separator: " ").map(String.init) })
        where line.first == "threads" || line.first == "fds" {
            #expect(line.count == 3 && line[1] == line[2], "\(line.joined(separator: " "))")
        }
        #expect(run.stdout.contains("signals same") && run.stdout.contains("environment same"), "\(run.stdout)")
        #expect(run.stdout.contains("codes 0:30"), "\(run.stdout)")
    }

    /// What goes to syslog (LOG_AUTHPRIV): the broker's one line per decision with outcome,
    /// user and service; the module's own line for an argument it cannot use; never a secret.
    @Test(.enabled(if: available && SyslogCapture.availableAnywhere)) func decisionsAreLogged() throws {
        let brokerLog = try TempDirectory()
        let brokerCapture = try SyslogCapture(directory: brokerLog.path)
        var rig = try Rig(wrap: brokerCapture.wrap)
        let matched = try rig.authenticate(answers: [], sensor: ["SCAN finger-a"])
        #expect(matched.status == 0, "\(matched.all)")
        // The broker answers first and records the match (and its log line) right after; a
        // request of the same user starts only once that is written, so both are read after it.
        #expect(try rig.status().contains("Fingers enrolled: right index finger"))
        let matchLog = brokerCapture.messages().joined(separator: "\n")
        #expect(matchLog.contains("pam.authenticate success for user=\(rig.user)"), "\(matchLog)")
        #expect(matchLog.contains("service=\(ModuleFingerprintTests.service)"))

        let vault = try rig.store.location.directory + "/vault"
        var bytes = try #require(readFile(vault))
        bytes[bytes.count / 2] ^= 0x04
        writeFile(vault, bytes)
        let damaged = try rig.authenticate(answers: ["secret"], sensor: [])
        #expect(damaged.status == 0, "the password still works: \(damaged.all)")
        // The person is told why the finger was not asked, once.
        let said = damaged.all.components(separatedBy: "cannot be used").count - 1
        #expect(said == 1, "\(damaged.all)")
        let damagedLog = brokerCapture.messages().joined(separator: "\n")
        #expect(damagedLog.contains("pam.authenticate vaultUnusable"), "\(damagedLog)")
        #expect(readFile(vault) == bytes, "the damaged vault is left as it was")

        // Out of range for the module itself (a longer line would be cut by libpam before the
        // module sees it): the module says so in the host's log and asks no broker.
        rig.setOptions("timeout=99999")
        let moduleLog = try TempDirectory()
        let moduleCapture = try SyslogCapture(directory: moduleLog.path)
        let (path, arguments) = moduleCapture.wrap(["/usr/bin/pamtester", "-I", "tty=/dev/pts/0", ModuleFingerprintTests.service,
                                                    rig.user, "authenticate"])
        rig.environment["PAM_WRAPPER_USE_SYSLOG"] = "1" // pam_wrapper's pam_syslog goes to syslog, not stderr
        let hostile = try Child.run(path, arguments, environment: rig.environment, stdin: Array("secret\n".utf8))
        #expect(hostile.status == 0, "\(hostile.all)")
        let hostileLog = moduleCapture.messages().joined(separator: "\n")
        #expect(hostileLog.contains("configuration:"), "\(hostileLog)")
        #expect(!brokerCapture.messages().joined().contains("pam.authenticate"), "the broker was not asked")
        #expect(!matchLog.contains(ModuleFingerprintTests.pin) && !damagedLog.contains("secret") && !hostileLog.contains("secret"))
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

/// The return-code table of design §3, row by row, with pam_fingerseal.so alone in the stack;
/// pamtester reports the code through pam_strerror's text.
@Suite struct ReturnCodeTableTests {
    static let texts: [Int32: String] = [
        0: "successfully authenticated",
        7: "Authentication failure",
        9: "Authentication service cannot retrieve authentication info",
        10: "User not known to the underlying authentication module",
        11: "Have exhausted maximum number of retries for service",
        3: "Error in service module",
    ]

    func expect(_ result: Child.Result, _ code: Int32, _ row: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.all.contains(ReturnCodeTableTests.texts[code] ?? "?"), "\(row): \(result.all)", sourceLocation: sourceLocation)
    }

    @Test(.enabled(if: PamtesterTests.available)) func everyRow() throws {
        let rig = try ModuleFingerprintTests.Rig(moduleOptions: "", alone: true)
        // success: a match
        expect(try rig.authenticate(answers: [], sensor: ["SCAN finger-a"]), 0, "match")
        // a single failed match (max_tries=1) → PAM_AUTH_ERR
        rig.setOptions("max_tries=1", alone: true)
        expect(try rig.authenticate(answers: [], sensor: ["SCAN x"]), 7, "no match")
        // tries used up → PAM_MAXTRIES
        rig.setOptions("max_tries=2", alone: true)
        expect(try rig.authenticate(answers: [], misses: 2), 11, "tries used up")
        // bad configuration → PAM_SERVICE_ERR (the module's own option, or the broker's)
        rig.setOptions("timeout=0", alone: true)
        expect(try rig.authenticate(answers: [], sensor: []), 3, "bad module option")
        rig.setOptions("max_fails=0", alone: true)
        expect(try rig.authenticate(answers: [], sensor: []), 3, "bad broker option")
        // unknown user → PAM_USER_UNKNOWN
        rig.setOptions("", alone: true)
        expect(try rig.authenticate(answers: [], sensor: [], user: "no-such-user-fingerseal"), 10, "unknown user")
        // remote → PAM_AUTHINFO_UNAVAIL (no scan offered)
        let remote = try rig.authenticate(answers: [], sensor: [], items: ["rhost=203.0.113.9"])
        expect(remote, 9, "remote")
        #expect(!remote.all.contains("Swipe your finger"))
        // nobody to answer (no terminal, no display, no login session) → PAM_AUTHINFO_UNAVAIL
        let unattended = try rig.authenticate(answers: [], sensor: [], tty: nil)
        expect(unattended, 9, "no person")
        #expect(!unattended.all.contains("Swipe your finger"))
        // broker unreachable → PAM_AUTHINFO_UNAVAIL
        writeFile(rig.services + "/" + ModuleFingerprintTests.service,
                  Array("auth required \(Paths.module) socket=\(rig.temp.file("no-broker"))\n".utf8), mode: 0o644)
        expect(try rig.authenticate(answers: [], sensor: []), 9, "no broker")
        // timeout → PAM_AUTHINFO_UNAVAIL
        rig.setOptions("timeout=1", alone: true)
        expect(try rig.authenticate(answers: [], sensor: ["SLEEP 5000"]), 9, "timeout")
        // no reader → PAM_AUTHINFO_UNAVAIL
        try rig.rig.unplugReader()
        rig.setOptions("", alone: true)
        expect(try rig.authenticate(answers: [], sensor: []), 9, "no reader")
        // wrong PIN → PAM_AUTH_ERR; skipped PIN after no reader → PAM_AUTHINFO_UNAVAIL
        rig.setOptions("pin", alone: true)
        expect(try rig.authenticate(answers: ["0000"], sensor: []), 7, "wrong PIN")
        expect(try rig.authenticate(answers: [""], sensor: []), 9, "skipped PIN")

        // locked → PAM_AUTH_ERR (no scan offered)
        let locked = try ModuleFingerprintTests.Rig(moduleOptions: "max_tries=1 max_fails=1", alone: true)
        expect(try locked.authenticate(answers: [], sensor: ["SCAN x"]), 7, "the locking miss")
        let stillLocked = try locked.authenticate(answers: [], sensor: [])
        expect(stillLocked, 7, "locked")
        #expect(stillLocked.all.contains("locked"))
    }
}

/// Counts the files opened in one directory, by name, from inotify's IN_OPEN events (whoever
/// opened them: here the broker).
final class FileOpens {
    private let fd: Int32

    init(watching directory: String) throws {
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0, inotify_add_watch(fd, directory, UInt32(IN_OPEN)) >= 0 else {
            throw TestFailure("inotify on \(directory): errno \(errno)")
        }
    }

    deinit { close(fd) }

    /// The opens seen since the last call, by file name.
    func take() -> [String: Int] {
        var counts: [String: Int] = [:]
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { return counts }
            var offset = 0
            let header = MemoryLayout<inotify_event>.size
            while offset + header <= count {
                let (length, name) = buffer.withUnsafeBytes { raw -> (Int, String) in
                    let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    let bytes = raw[(offset + header)..<(offset + header + Int(event.len))].prefix { $0 != 0 }
                    return (Int(event.len), String(decoding: bytes, as: UTF8.self))
                }
                counts[name, default: 0] += 1
                offset += header + length
            }
        }
    }
}
