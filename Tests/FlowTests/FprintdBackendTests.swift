import CPAM
import Glibc
import Testing
import FingersealCore
import PAMKit
@testable import TestSupport

/// The broker through fprintd (issue 11 §1, §5): fprintd on a private system bus (dbusmock
/// polkit, virtual_device), the broker with `reader=auto`. The broker's own libfprint would
/// create its sensor socket if it ever opened a device; every test checks it never did.
@Suite(.serialized) struct FprintdBackendTests {
    static let pin = "2580"
    static let user = "root"

    /// fprintd with root's right index finger enrolled (scan id "finger-a"), and a broker whose
    /// vault for root was made after that, so `pin set` bound fprintd's set.
    final class Rig {
        let bus: PrivateSystemBus
        let broker: ReaderBroker
        let services: TempDirectory

        init(config: String = "", enrolled: Bool = true) throws {
            bus = try PrivateSystemBus()
            if enrolled { try bus.enrollWithFprintdEnroll(user: FprintdBackendTests.user, scanID: "finger-a") }
            broker = try ReaderBroker(config: "reader=auto\nfprintd_storage=\(bus.stateDirectory)\n" + config,
                                      pin: FprintdBackendTests.pin,
                                      extraEnvironment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
            services = try TempDirectory()
            writeFile(services.file("fs"), Array("auth required \(Paths.module) socket=\(broker.broker.socketPath)\n".utf8), mode: 0o644)
            writeFile(services.file("fs-pin"), Array("auth required \(Paths.module) socket=\(broker.broker.socketPath) pin\n".utf8),
                      mode: 0o644)
            writeFile(services.file("fp"), Array("auth required /lib/\(Pamtester.multiarch)/security/pam_fprintd.so\n".utf8), mode: 0o644)
        }

        deinit { bus.stop() }

        /// The CLI while the fprintd sensor scans `scans`, one command each, sent once the CLI
        /// asked for the finger: the claim has opened the device by then. A scan sent earlier
        /// can reach the device while fprintd still closes it after an earlier claim, and the
        /// virtual device drops a scan that comes during its open or close.
        func cli(_ arguments: [String], scans: [String] = [], fd3: String? = nil) throws -> Child.Result {
            let child = try broker.startCLI(arguments, fd3: fd3)
            if !scans.isEmpty { child.waitForLine(containing: "finger", errors: true) }
            for scan in scans { try bus.sensor(scan) }
            return child.finish()
        }

        /// pamtester SERVICE root authenticate, the sensor scanning `scans`; with `afterPrompt`
        /// only once the prompt was printed (pam_fprintd takes a scan that comes before its
        /// VerifyStart returned as unexpected), pamtester's stdout line-buffered for that.
        func pam(_ service: String, scans: [String] = [], answers: [String] = [], afterPrompt: Bool = false) throws -> Child.Result {
            let environment = Pamtester.environment(services.path).merging(["DBUS_SYSTEM_BUS_ADDRESS": bus.address]) { $1 }
            let child = try Child("/usr/bin/stdbuf", ["-oL", "/usr/bin/pamtester", "-I", "tty=/dev/pts/0", service,
                                                      FprintdBackendTests.user, "authenticate"],
                                  environment: environment, stdin: Array(answers.map { $0 + "\n" }.joined().utf8), newSession: true,
                                  terminal: .leader)
            if afterPrompt { child.waitForLine(containing: "finger") }
            for scan in scans { try bus.sensor(scan) }
            return child.finish(limit: 30)
        }

        func fprintdList() throws -> String {
            try Child("/usr/bin/fprintd-list", [FprintdBackendTests.user], environment: bus.environment).finish(limit: 15).stdout
        }

        /// Never both: the broker never opened a USB reader of its own.
        func brokerOpenedNoDevice(sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(access(broker.sensor, F_OK) != 0, "the broker opened libfprint's device itself", sourceLocation: sourceLocation)
        }
    }

    static var skip: String? { PrivateSystemBus.missing ?? (Pamtester.available ? nil : "pamtester is missing") }

    @Test(.enabled(if: skip == nil)) func fingerEnrolledWithFprintdUnlocksTheCLIAndPAM() throws {
        let rig = try Rig()
        let status = try rig.cli(["status"])
        #expect(status.stdout.contains("Fingers enrolled in fprintd: right index finger"), "\(status.all)")
        #expect(!status.stdout.contains(Messages.fingersChanged))
        let match = try rig.cli(["verify", "--json"], scans: ["SCAN finger-a"])
        #expect(match.status == 0, "\(match.all)")
        #expect(match.stdout.contains("\"result\" : \"match\"") && match.stdout.contains("right-index-finger"), "\(match.stdout)")
        let impostor = try rig.cli(["verify", "--json"], scans: ["SCAN finger-b"])
        #expect(impostor.status == 1 && impostor.stdout.contains("\"result\" : \"no-match\""), "\(impostor.all)")
        let pam = try rig.pam("fs", scans: ["SCAN finger-a"])
        #expect(pam.status == 0 && pam.all.contains("successfully authenticated"), "\(pam.all)")
        #expect(pam.all.contains("your finger"), "\(pam.all)")
        // The claim ends with each request: anyone may claim now.
        #expect(try rig.bus.claimFromAnotherClient() == "claimed")
        rig.brokerOpenedNoDevice()
    }

    @Test(.enabled(if: skip == nil)) func enrollGoesThroughFprintdAndForgetDeletesOnlyItsOwn() throws {
        let rig = try Rig()
        let enroll = try rig.cli(["enroll", "--finger", "left-index-finger", "--pin-fd", "3"],
                                 scans: Array(repeating: "SCAN finger-c", count: 5), fd3: FprintdBackendTests.pin + "\n")
        #expect(enroll.status == 0 && enroll.stdout.contains("Enrolled left index finger."), "\(enroll.all)")
        #expect(enroll.stderr.contains("Scan 3 of 5 done."), "\(enroll.stderr)")
        let listed = try rig.fprintdList()
        #expect(listed.contains("left-index-finger") && listed.contains("right-index-finger"), "\(listed)")
        // The finger still unlocks: the enrollment's PIN confirmed the new set. (On a reader
        // that cannot identify, fprintd's "any" verifies its first enrolled finger only, as
        // for pam_fprintd.)
        let afterEnroll = try rig.cli(["verify"], scans: ["SCAN finger-a"])
        #expect(afterEnroll.status == 0, "\(afterEnroll.all)")
        // A finger another program enrolled is not fingerseal's to delete.
        let refused = try rig.cli(["forget", "right-index-finger", "--pin-fd", "3"], fd3: FprintdBackendTests.pin + "\n")
        #expect(refused.status == 2 && refused.stderr.contains(Messages.notEnrolledHere("right-index-finger")), "\(refused.all)")
        #expect(try rig.fprintdList().contains("right-index-finger"))
        let forgot = try rig.cli(["forget", "--all", "--pin-fd", "3"], fd3: FprintdBackendTests.pin + "\n")
        #expect(forgot.status == 0 && forgot.stdout.contains("Forgot left index finger."), "\(forgot.all)")
        let after = try rig.fprintdList()
        #expect(!after.contains("left-index-finger") && after.contains("right-index-finger"), "\(after)")
        // What is left still unlocks: forgetting re-bound the set with the PIN.
        #expect(try rig.cli(["verify"], scans: ["SCAN finger-a"]).status == 0)
        rig.brokerOpenedNoDevice()
    }

    /// `--timeout` is how long a person has for each touch, not for the whole enrollment:
    /// five touches that each come within it, but together take longer than twice it, enroll.
    /// (fprintd may not know its stage count before the claim, which once made the whole
    /// enrollment share two timeouts.) The device's SLEEP holds each scan back: 4.5 s of 8
    /// leaves room for a loaded machine, and four of them (18 s) outlast two timeouts (16 s).
    @Test(.enabled(if: skip == nil)) func anEnrollmentGivesEachTouchTheWholeWait() throws {
        let rig = try Rig()
        let pace = ["SLEEP 4500", "SCAN finger-c"]
        let enroll = try rig.cli(["enroll", "--finger", "left-index-finger", "--timeout", "8", "--pin-fd", "3"],
                                 scans: ["SCAN finger-c"] + Array(Array(repeating: pace, count: 4).joined()),
                                 fd3: FprintdBackendTests.pin + "\n")
        #expect(enroll.status == 0 && enroll.stdout.contains("Enrolled left index finger."), "\(enroll.all)")
        #expect(try rig.fprintdList().contains("left-index-finger"))
        rig.brokerOpenedNoDevice()
    }

    @Test(.enabled(if: skip == nil)) func aChangedEnrolledSetNeedsThePIN() throws {
        let rig = try Rig()
        // Someone adds a finger outside fingerseal (fprintd-enroll, the desktop's settings).
        try rig.bus.enrollWithFprintdEnroll(user: FprintdBackendTests.user, finger: "left-index-finger", scanID: "finger-d")
        let refused = try rig.cli(["verify"])
        #expect(refused.status == 6 && refused.stderr.contains(Messages.fingersChanged), "\(refused.all)")
        #expect(try rig.cli(["status"]).stdout.contains(Messages.fingersChanged))
        // A PAM stack without the PIN: said, nothing counted, on to the password.
        let noPIN = try rig.pam("fs")
        #expect(noPIN.status != 0 && noPIN.all.contains(Messages.fingersChanged), "\(noPIN.all)")
        #expect(try rig.broker.lockout().fingerFailures == 0)
        // With the PIN: the PIN confirms the new set, and the finger unlocks again.
        let confirmed = try rig.pam("fs-pin", answers: [FprintdBackendTests.pin])
        #expect(confirmed.status == 0 && confirmed.all.contains(Messages.fingersConfirmed), "\(confirmed.all)")
        let afterPIN = try rig.cli(["verify"], scans: ["SCAN finger-a"])
        #expect(afterPIN.status == 0, "\(afterPIN.all)")
        #expect(!(try rig.cli(["status"]).stdout.contains(Messages.fingersChanged)))
        #expect(try rig.cli(["audit"]).stdout.contains("The PIN confirmed the 2 fingers now enrolled in fprintd."))
        rig.brokerOpenedNoDevice()
    }

    @Test(.enabled(if: skip == nil)) func pamFprintdAndPamFingersealTakeTurns() throws {
        let rig = try Rig()
        for service in ["fp", "fs", "fp", "fs"] {
            // Each scan only once its module has armed the reader and prompted: one sent
            // earlier can reach fprintd while the other module's claim is still ending.
            let result = try rig.pam(service, scans: ["SCAN finger-a"], afterPrompt: true)
            #expect(result.status == 0 && result.all.contains("successfully authenticated"), "\(service): \(result.all)")
        }
        #expect(try rig.bus.claimFromAnotherClient() == "claimed")
        rig.brokerOpenedNoDevice()
    }

    @Test(.enabled(if: skip == nil)) func aClosedLidSkipsTheBuiltInReaderAtOnce() throws {
        let rig = try Rig(config: "reader_location=builtin\n")
        try rig.bus.startLogindMock(lidClosed: true)
        let started = VirtualSensor.now()
        let skipped = try rig.cli(["verify"])
        #expect(skipped.status == 8 && skipped.stderr.contains(Messages.lidClosed), "\(skipped.all)")
        #expect(VirtualSensor.now() - started < 5)
        let pam = try rig.pam("fs")
        #expect(pam.status != 0 && !pam.all.contains("your finger"), "\(pam.all)")
        #expect(try rig.broker.lockout().fingerFailures == 0)
        // An external reader is still used with the lid closed.
        writeFile(rig.broker.broker.config, Array("reader=auto\nfprintd_storage=\(rig.bus.stateDirectory)\nreader_location=external\n".utf8),
                  mode: 0o644)
        #expect(try rig.cli(["verify"], scans: ["SCAN finger-a"]).status == 0)
        rig.brokerOpenedNoDevice()
    }

    /// Sleep during a scan through fprintd (issue 23 §2): fprintd suspends its device and
    /// ends the scan itself; the broker only says why, counts nothing, and opens nothing of its
    /// own before or after waking. The claim is released only once the computer woke (issue
    /// 32): fprintd 1.94 cannot close a suspended device, and a Release then left it open for
    /// good, so every claim after failed ("already been opened") until fprintd restarted.
    @Test(.enabled(if: skip == nil)) func sleepEndsTheScanAndTheFirstScanAfterWakingWorks() throws {
        let rig = try Rig()
        try rig.bus.startLogindMock(lidClosed: false)
        let child = try rig.broker.startCLI(["verify"])
        #expect(child.waitForLine(containing: "finger", errors: true))
        try rig.bus.prepareForSleep(true)
        // fprintd has suspended the device once it ended the scan for it.
        #expect(ReaderBroker.waitUntil(15) { rig.bus.daemonLog.contains("while suspended") }, "\(rig.bus.daemonLog)")
        try rig.bus.prepareForSleep(false)
        let stopped = child.finish(limit: 15)
        #expect(stopped.status == 8 && stopped.stderr.contains(Messages.scanStoppedForSleep), "\(stopped.all)")
        #expect(try rig.broker.lockout().fingerFailures == 0)
        let next = try rig.cli(["verify"], scans: ["SCAN finger-a"])
        #expect(next.status == 0, "the first scan after waking: \(next.all)\n\(rig.bus.daemonLog)")
        #expect(try rig.cli(["status"]).stdout.contains("failed scans in a row: 0"))
        rig.brokerOpenedNoDevice()
    }

    /// Parity with the libfprint backend: the same sentences and exit codes for a retry, a
    /// timeout and a reader another program holds.
    @Test(.enabled(if: skip == nil)) func hintsTimeoutsAndABusyReaderAsWithLibfprint() throws {
        let rig = try Rig()
        let hinted = try rig.cli(["verify"], scans: ["RETRY 2", "SCAN finger-a"]) // not centred: a hint, and the scan goes on
        #expect(hinted.status == 0 && hinted.stderr.contains("Your finger was not centred on the reader."), "\(hinted.all)")
        let timedOut = try rig.cli(["verify", "--timeout", "1"])
        #expect(timedOut.status == 4, "\(timedOut.all)")
        #expect(try rig.broker.lockout().fingerFailures == 0)
        // pam_fprintd (or GNOME) holds the reader: said plainly, the same exit code as a busy device.
        let holder = try Child(PrivateSystemBus.python, ["-c", """
            import dbus, sys, time
            bus = dbus.bus.BusConnection(sys.argv[1])
            device = dbus.Interface(bus.get_object('net.reactivated.Fprint', '/net/reactivated/Fprint/Device/0'), 'net.reactivated.Fprint.Device')
            device.Claim('root')
            print('held', flush=True)
            time.sleep(60)
            """, rig.bus.address], environment: rig.bus.environment)
        #expect(holder.readLine() == "held")
        let busy = try rig.cli(["verify"])
        #expect(busy.status == 8 && busy.stderr.contains(Messages.readerBusy), "\(busy.all)")
        holder.signal(SIGTERM)
        _ = holder.finish(limit: 10)
        rig.brokerOpenedNoDevice()
    }

    /// reader=fprintd where fprintd is not on the bus, or there is no bus: said at once, and
    /// nothing here opens a reader instead.
    @Test(.enabled(if: skip == nil)) func fprintdRequiredButAbsent() throws {
        let bus = try PrivateSystemBus(fprintd: false)
        defer { bus.stop() }
        for address in [bus.address, "unix:path=/nonexistent/system_bus_socket"] {
            let broker = try ReaderBroker(config: "reader=fprintd\n", pin: FprintdBackendTests.pin,
                                          extraEnvironment: ["DBUS_SYSTEM_BUS_ADDRESS": address])
            let started = VirtualSensor.now()
            let result = try broker.cli(["verify"])
            #expect(result.status == 8 && result.stderr.contains(Messages.fprintdUnavailable), "\(address): \(result.all)")
            #expect(VirtualSensor.now() - started < 5)
            #expect(access(broker.sensor, F_OK) != 0)
        }
    }

    /// Touch to sign in through fprintd: fprintd offers no identify to other programs, so the
    /// person is told so and the user name is asked; the broker opens no reader of its own.
    @Test(.enabled(if: skip == nil)) func identifyThroughFprintdSaysItIsUnavailable() throws {
        let rig = try Rig()
        writeFile(rig.services.file("fs-identify"),
                  Array("auth required \(Paths.module) socket=\(rig.broker.broker.socketPath) identify identify_group=root\n".utf8),
                  mode: 0o644)
        var shown: [PAMClient.Message] = []
        let client = try PAMClient.start(service: "fs-identify", user: nil, configDirectory: rig.services.path) { message in
            shown.append(message)
            if case .promptEchoOn = message { return .abort }
            return .none
        }
        #expect(client.setItem(.tty, "/dev/pts/0") == PAM_SUCCESS)
        #expect(client.authenticate() != PAM_SUCCESS)
        #expect(client.user() == nil)
        #expect(shown.first == .textInfo(Messages.identifyNotWithFprintd), "\(shown)")
        #expect(shown.contains { if case .promptEchoOn = $0 { return true } else { return false } }, "\(shown)")
        rig.brokerOpenedNoDevice()
    }
}
