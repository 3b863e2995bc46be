import Glibc
import Testing
import FingersealCore
import SystemKit
@testable import TestSupport

/// Suspend, resume and a reader that comes and goes (issue 23 §2): logind is python3-dbusmock's
/// template on a private system bus, sending PrepareForSleep as logind does; the reader is
/// libfprint's virtual_device in the broker, or fprintd's (FprintdBackendTests).
@Suite(.serialized) struct SleepResumeTests {
    static let pin = "2580"

    /// A private system bus, with the logind mock unless `logind` is false, and a broker on it
    /// whose reader is libfprint's virtual_device, root's right index finger enrolled (scan
    /// id "finger-a"); the broker keeps the reader open after the enrollment.
    final class Rig {
        let bus: PrivateSystemBus
        let rig: ReaderBroker

        init(logind: Bool = true) throws {
            bus = try PrivateSystemBus(fprintd: false)
            if logind { try bus.startLogindMock(lidClosed: false) }
            rig = try ReaderBroker(config: "reader=libfprint\n", pin: SleepResumeTests.pin,
                                   extraEnvironment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
            let enrolled = try rig.enroll("finger-a", pin: SleepResumeTests.pin)
            guard enrolled.status == 0 else { throw TestFailure("enroll failed: \(enrolled.all)") }
        }

        deinit { bus.stop() }

        /// `fingerseal verify` stopped by sleep while it waits for the finger.
        func verifyInterruptedBySleep() throws -> Child.Result {
            let child = try rig.startCLI(["verify", "--events-fd", "1"])
            guard child.readLine() == #"{"event":"finger-needed"}"# else {
                throw TestFailure("the scan did not start: \(child.finish().all)")
            }
            try bus.prepareForSleep(true)
            return child.finish(limit: 15)
        }

        /// The reader is open: the broker's libfprint thread runs exactly while it is (closing
        /// joins it; the virtual device's socket file stays behind, so it cannot tell).
        var readerOpen: Bool { SleepResumeTests.readerOpen(rig) }

        /// Waits (bounded) until the broker closed the reader.
        func readerClosed() -> Bool { ReaderBroker.waitUntil(10) { !readerOpen } }

        func verifiesAtOnce(sourceLocation: SourceLocation = #_sourceLocation) throws {
            try SleepResumeTests.verifiesAtOnce(rig, sourceLocation: sourceLocation)
        }
    }

    static var skip: String? { PrivateSystemBus.missing }

    /// `fingerseal verify` once the reader asks for the finger (a command that reaches the
    /// virtual device while it opens is dropped), `command` sent then.
    static func verify(_ rig: ReaderBroker, _ command: String) throws -> Child.Result {
        let child = try rig.startCLI(["verify", "--json", "--events-fd", "2"])
        guard child.waitForLine(containing: "finger-needed", errors: true) else {
            throw TestFailure("the scan did not start: \(child.finish().all)")
        }
        try VirtualSensor.send(command, to: rig.sensor)
        return child.finish(limit: 15)
    }

    /// One scan, one match: the reader works at the first try.
    static func verifiesAtOnce(_ rig: ReaderBroker, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let match = try verify(rig, "SCAN finger-a")
        #expect(match.status == 0, "\(match.all)", sourceLocation: sourceLocation)
        #expect(match.stdout.contains("\"result\" : \"match\""), "\(match.stdout)", sourceLocation: sourceLocation)
    }

    static func readerOpen(_ rig: ReaderBroker) -> Bool {
        guard let pid = rig.broker.process?.pid else { return false }
        return directoryNames("/proc/\(pid)/task").contains { task in
            String(decoding: readFile("/proc/\(pid)/task/\(task)/comm") ?? [], as: UTF8.self) == "fs-libfprint\n"
        }
    }

    /// Before sleep the scan ends as a cancel, said, with nothing counted, and the reader is
    /// closed; after waking the next verify matches at its first scan.
    @Test(.enabled(if: skip == nil)) func sleepDuringAScanEndsItUncounted() throws {
        let rig = try Rig()
        let stopped = try rig.verifyInterruptedBySleep()
        #expect(stopped.status == 8, "\(stopped.all)")
        #expect(stopped.stderr.contains(Messages.scanStoppedForSleep), "\(stopped.stderr)")
        #expect(rig.readerClosed(), "the reader stayed open for the sleep")
        #expect(try rig.rig.lockout().fingerFailures == 0)
        #expect(try rig.rig.status().contains("failed scans in a row: 0"))
        try rig.bus.prepareForSleep(false)
        try rig.verifiesAtOnce()
        #expect(try rig.rig.lockout().fingerFailures == 0)
    }

    /// A PAM host waiting for the finger when the computer goes to sleep (issue 32): sudo at a
    /// console, whose way to the password is Ctrl-C, and a graphical host, which shows the
    /// password beside the scan; each pamtester under pam_wrapper on a terminal it leads. The
    /// scan ends with the one sentence that says why, then the stack goes on to the password
    /// (pam_matrix), nothing counted; after waking the next scan matches at once.
    @Test(.enabled(if: skip == nil && Pamtester.available)) func sleepDuringAPAMHostsScanSaysWhyBeforeThePassword() throws {
        let rig = try Rig()
        let services = rig.rig.files.file("pam.d")
        #expect(mkdir(services, 0o755) == 0)
        let service = "fingerseal-sleep-test"
        let passdb = rig.rig.files.file("passdb")
        writeFile(passdb, Array("root:secret:\(service)\n".utf8), mode: 0o644)
        writeFile(services + "/" + service, Array("""
            auth [success=done default=ignore] \(Paths.module) socket=\(rig.rig.broker.socketPath) timeout=30
            auth required \(Pamtester.matrix) passdb=\(passdb)

            """.utf8), mode: 0o644)
        // A display's host names it as its PAM_TTY (pamtester sets no PAM_XDISPLAY).
        for (host, tty, prompt) in [("a console", "/dev/pts/0", "Swipe your finger across the reader, or press Ctrl-C to use your password."),
                                    ("a display", ":0", "Swipe your finger across the reader, or use your password.")] {
            // stdbuf: the conversation's sentences reach the test as they are shown.
            let pamtester = try Child("/usr/bin/stdbuf", ["-oL", "/usr/bin/pamtester", "-I", "tty=\(tty)", service, "root", "authenticate"],
                                      environment: Pamtester.environment(services), stdin: Array("secret\n".utf8),
                                      terminal: .leader)
            // The computer sleeps once the reader waits for the finger.
            #expect(pamtester.waitForLine(containing: "Swipe your finger"), "\(host)")
            try rig.bus.prepareForSleep(true)
            let result = pamtester.finish(limit: 20)
            #expect(result.status == 0, "\(host): \(result.all)")
            #expect(result.stdout.contains(prompt), "\(host): \(result.all)")
            #expect(result.stdout.components(separatedBy: Messages.scanStoppedForSleep).count == 2,
                    "\(host): said once: \(result.all)")
            #expect(result.stderr.contains("Password: ") && result.all.contains("successfully authenticated"), "\(host): \(result.all)")
            #expect(rig.readerClosed(), "\(host): the reader stayed open for the sleep")
            #expect(try rig.rig.lockout().fingerFailures == 0, "\(host)")
            try rig.bus.prepareForSleep(false)
        }
        try rig.verifiesAtOnce()
    }

    /// An idle reader the broker keeps open is closed before sleep, and opened afresh by the
    /// first request after waking.
    @Test(.enabled(if: skip == nil)) func sleepWhileIdleClosesTheHeldReader() throws {
        let rig = try Rig()
        #expect(rig.readerOpen, "the broker does not keep the reader open after enrolling")
        try rig.bus.prepareForSleep(true)
        #expect(rig.readerClosed(), "the held reader stayed open for the sleep")
        try rig.bus.prepareForSleep(false)
        try rig.verifiesAtOnce()
        #expect(try rig.rig.lockout().fingerFailures == 0)
    }

    /// Waking alone (a sleep signal missed) still has the held reader opened afresh.
    @Test(.enabled(if: skip == nil)) func wakingReopensTheHeldReader() throws {
        let rig = try Rig()
        #expect(rig.readerOpen)
        try rig.bus.prepareForSleep(false)
        #expect(rig.readerClosed(), "the reader held across the sleep was kept")
        try rig.verifiesAtOnce()
    }

    /// Without logind on the bus the broker works as before; a logind that comes later is
    /// heard (the match names logind, not its connection).
    @Test(.enabled(if: skip == nil)) func aLogindThatComesLaterIsHeard() throws {
        let rig = try Rig(logind: false)
        try rig.verifiesAtOnce()
        try rig.bus.startLogindMock(lidClosed: false)
        let stopped = try rig.verifyInterruptedBySleep()
        #expect(stopped.status == 8 && stopped.stderr.contains(Messages.scanStoppedForSleep), "\(stopped.all)")
        #expect(try rig.rig.lockout().fingerFailures == 0)
    }

    /// No system bus at all (a container): the broker starts and scans as before.
    @Test func withoutASystemBusNothingChanges() throws {
        let rig = try ReaderBroker(config: "reader=libfprint\n", pin: SleepResumeTests.pin,
                                   extraEnvironment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/system_bus_socket"])
        let enrolled = try rig.enroll("finger-a", pin: SleepResumeTests.pin)
        #expect(enrolled.status == 0, "\(enrolled.all)")
        let match = try rig.scan(["verify"], ["SCAN finger-a"])
        #expect(match.status == 0, "\(match.all)")
    }

    // MARK: a reader that comes and goes

    /// A reader unplugged while the broker keeps it open (undocked) is not used again: the
    /// next request finds what is connected then (here, virtual_device again, as when the
    /// dock comes back) and matches at its first scan, without a restart.
    @Test func aReaderUnpluggedWhileIdleIsFoundAgainAtTheNextRequest() throws {
        let rig = try ReaderBroker(pin: SleepResumeTests.pin)
        #expect(try rig.enroll("finger-a", pin: SleepResumeTests.pin).status == 0)
        #expect(SleepResumeTests.readerOpen(rig), "the broker does not keep the reader open after enrolling")
        try VirtualSensor.send("UNPLUG", to: rig.sensor)
        try SleepResumeTests.verifiesAtOnce(rig)
        #expect(try rig.lockout().fingerFailures == 0)
    }

    /// A reader pulled out during a scan: said at once, nothing counted (the PIN follows in
    /// PAM: ModuleFingerprintTests.timeoutAndUnplugFallBack); the next request enumerates
    /// again and uses the reader that is there, without a restart.
    @Test func aReaderUnpluggedDuringAScanIsFoundAgain() throws {
        let rig = try ReaderBroker(pin: SleepResumeTests.pin)
        #expect(try rig.enroll("finger-a", pin: SleepResumeTests.pin).status == 0)
        let unplugged = try SleepResumeTests.verify(rig, "UNPLUG")
        #expect(unplugged.status == 8, "\(unplugged.all)")
        #expect(unplugged.stderr.contains(Messages.readerRemoved), "\(unplugged.all)")
        #expect(try rig.lockout().fingerFailures == 0)
        try SleepResumeTests.verifiesAtOnce(rig)
    }
}
