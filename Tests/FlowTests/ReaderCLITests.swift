import Glibc
import Testing
@testable import TestSupport

/// The `fingerseal` CLI against a broker of each test's own, whose reader is libfprint's
/// virtual_device (set in the broker's environment: the CLI's never reaches libfprint), and
/// replays of recorded real sensors under the broker.
@Suite struct ReaderCLITests {
    static let pin = "2580"

    /// A broker with a virtual reader and root's vault with a PIN.
    struct Rig {
        let rig: ReaderBroker
        /// The CLI's environment (it names the broker's socket; nothing in it reaches the reader).
        var environment: [String: String]
        var socket: String { rig.sensor }

        init(driver: String = "virtual_device", variable: String = "FP_VIRTUAL_DEVICE", reader: Bool = true) throws {
            rig = try ReaderBroker(driver: driver, variable: variable, reader: reader, pin: ReaderCLITests.pin)
            environment = rig.environment()
        }

        func start(_ arguments: [String], fd3: String? = nil) throws -> Child {
            try rig.startCLI(arguments, fd3: fd3, environment: environment)
        }

        func run(_ arguments: [String], fd3: String? = nil) throws -> Child.Result {
            try start(arguments, fd3: fd3).finish()
        }

        /// Runs `arguments` while feeding `commands` to the sensor, one at a time.
        func scan(_ arguments: [String], _ commands: [String], fd3: String? = nil) throws -> Child.Result {
            let child = try start(arguments, fd3: fd3)
            for command in commands { try VirtualSensor.send(command, to: socket) }
            return child.finish()
        }

        func enroll(_ id: String, finger: String = "right-index-finger") throws {
            let result = try scan(["enroll", "--finger", finger, "--pin-fd", "3"], Array(repeating: "SCAN \(id)", count: 5),
                                  fd3: ReaderCLITests.pin + "\n")
            #expect(result.status == 0, "\(result.all)")
            #expect(result.stdout.contains("Enrolled \(finger.replacing("-", with: " "))."), "\(result.stdout)")
            #expect(result.stderr.contains("Scan 3 of 5 done."), "\(result.stderr)")
        }
    }

    @Test func enrollThenMatchAndNoMatch() throws {
        let rig = try Rig()
        try rig.enroll("finger-a")
        #expect(try rig.run(["fingers"]).stdout == "right-index-finger\n")
        let match = try rig.scan(["verify", "--json"], ["SCAN finger-a"])
        #expect(match.status == 0, "\(match.all)")
        #expect(match.stdout.contains("\"finger\" : \"right-index-finger\""))
        #expect(match.stdout.contains("\"result\" : \"match\""))
        let miss = try rig.scan(["verify", "--json"], ["SCAN finger-b"])
        #expect(miss.status == 1, "\(miss.all)")
        #expect(miss.stdout.contains("\"result\" : \"no-match\""))
        #expect(try rig.run(["status"]).stdout.contains("failed scans in a row: 1"))
    }

    @Test func retryHintReachesTheUser() throws {
        let rig = try Rig()
        try rig.enroll("finger-a")
        // The scan that matches goes only after the hint arrived: a command queued while the
        // first verify is ending may be dropped by the virtual driver.
        let child = try rig.start(["verify", "--events-fd", "1"])
        try VirtualSensor.send("RETRY 2", to: rig.socket) // FP_DEVICE_RETRY_CENTER_FINGER
        var hinted = false
        for _ in 0..<6 where !hinted { hinted = child.readLine()?.contains("center-finger") ?? false }
        #expect(hinted)
        try VirtualSensor.send("SCAN finger-a", to: rig.socket)
        let result = child.finish()
        #expect(result.status == 0, "\(result.all)")
        #expect(result.stderr.contains("Your finger was not centred on the reader."), "\(result.stderr)")
    }

    @Test func deviceErrorIsAClearFailure() throws {
        let rig = try Rig()
        try rig.enroll("finger-a")
        let result = try rig.scan(["verify"], ["ERROR 0"])
        #expect(result.status == 8, "\(result.all)")
        #expect(result.stderr.contains("The fingerprint reader reported an error"))
        #expect(try rig.run(["status"]).stdout.contains("failed scans in a row: 0"))
    }

    @Test func unplugDuringVerify() throws {
        let rig = try Rig()
        try rig.enroll("finger-a")
        // Once the scan runs: a reader unplugged before is not used (the next request
        // enumerates again), so there would be nothing to see.
        let child = try rig.start(["verify", "--events-fd", "1"])
        #expect(child.readLine() == #"{"event":"finger-needed"}"#)
        try VirtualSensor.send("UNPLUG", to: rig.socket)
        let result = child.finish()
        #expect(result.status == 8, "\(result.all)")
        #expect(result.stderr.contains("The fingerprint reader was disconnected."))
    }

    @Test func ctrlCCancelsWithoutCountingAFailure() throws {
        let rig = try Rig()
        try rig.enroll("finger-a")
        let child = try rig.start(["verify", "--events-fd", "1"])
        #expect(child.readLine() == #"{"event":"finger-needed"}"#)
        let start = VirtualSensor.now()
        child.signal(SIGINT)
        let result = child.finish()
        #expect(result.status == 3, "\(result.all)")
        #expect(result.stderr.contains("Cancelled."))
        #expect(VirtualSensor.now() - start < 2)
        #expect(try rig.run(["status"]).stdout.contains("failed scans in a row: 0"))
    }

    @Test func ctrlCDuringEnrollmentStoresNothing() throws {
        let rig = try Rig()
        let child = try rig.start(["enroll", "--pin-fd", "3", "--events-fd", "1"], fd3: ReaderCLITests.pin + "\n")
        #expect(child.readLine() == #"{"event":"finger-needed"}"#)
        try VirtualSensor.send("SCAN finger-a", to: rig.socket)
        // finger-needed and progress may interleave; wait (bounded by the lines) for progress.
        var progressed = false
        for _ in 0..<5 where !progressed { progressed = child.readLine()?.contains("enroll-progress") ?? false }
        #expect(progressed)
        child.signal(SIGINT)
        let result = child.finish()
        #expect(result.status == 3, "\(result.all)")
        #expect(try rig.run(["fingers"]).stdout == "No finger is enrolled.\n")
    }

    @Test func enrollWithoutAReaderSaysSoBeforeAskingForThePIN() throws {
        let rig = try Rig(reader: false)
        // No PIN on descriptor 3: if the PIN were asked first, this would fail differently.
        let result = try rig.run(["enroll"])
        #expect(result.status == 8, "\(result.all)")
        #expect(result.stderr.contains("No fingerprint reader is connected."))
    }

    @Test func slowSensorTimesOut() throws {
        let rig = try Rig()
        try rig.enroll("finger-a")
        let start = VirtualSensor.now()
        let result = try rig.scan(["verify", "--timeout", "1"], ["SLEEP 5000"])
        #expect(result.status == 4, "\(result.all)")
        #expect(result.stderr.contains("No finger was scanned in time."))
        #expect(VirtualSensor.now() - start < 4.5)
    }

    @Test func missingReaderAnswersAtOnce() throws {
        let rig = try Rig(reader: false)
        let start = VirtualSensor.now()
        let verify = try rig.run(["verify"])
        #expect(verify.status == 8)
        #expect(verify.stderr.contains("No fingerprint reader is connected."))
        let devices = try rig.run(["devices", "--json"])
        #expect(devices.status == 0 && devices.stdout.contains("[") && !devices.stdout.contains("driver"))
        #expect(VirtualSensor.now() - start < 2)
    }

    @Test func devicesDescribesTheReader() throws {
        let rig = try Rig()
        let result = try rig.run(["devices", "--json"])
        #expect(result.status == 0, "\(result.all)")
        #expect(result.stdout.contains("\"driver\" : \"virtual_device\""))
        #expect(result.stdout.contains("\"scan_type\" : \"swipe\""))
    }

    @Test func enrollNeedsTheRightPIN() throws {
        let rig = try Rig()
        let result = try rig.run(["enroll", "--pin-fd", "3"], fd3: "0000\n")
        #expect(result.status == 1)
        #expect(try rig.run(["fingers"]).stdout == "No finger is enrolled.\n")
    }

    @Test func enrollRefusesAFingerTwice() throws {
        let rig = try Rig()
        try rig.enroll("finger-a")
        let again = try rig.run(["enroll", "--finger", "right-index-finger", "--pin-fd", "3"], fd3: ReaderCLITests.pin + "\n")
        #expect(again.status == 2)
        #expect(again.stderr.contains("already enrolled"))
    }

    @Test func lockoutAfterMaxFailsAndResetByPIN() throws {
        let rig = try Rig()
        try rig.enroll("finger-a")
        for _ in 0..<4 { #expect(try rig.scan(["verify"], ["SCAN stranger"]).status == 1) }
        // The fifth failure locks, and says so.
        let fifth = try rig.scan(["verify"], ["SCAN stranger"])
        #expect(fifth.status == 5, "\(fifth.all)")
        let locked = try rig.run(["verify"])
        #expect(locked.status == 5, "\(locked.all)")
        #expect(locked.stderr.contains("locked"))
        // A PIN success clears the fingerprint lock.
        #expect(try rig.run(["pin", "change", "--pin-fd", "3"], fd3: "\(ReaderCLITests.pin)\n\(ReaderCLITests.pin)\n").status == 0)
        #expect(try rig.scan(["verify"], ["SCAN finger-a"]).status == 0)
    }

    @Test func forgetNeedsThePINAndStopsMatching() throws {
        let rig = try Rig()
        try rig.enroll("finger-a")
        #expect(try rig.run(["forget", "right-index-finger", "--pin-fd", "3"], fd3: "0000\n").status == 1)
        let forgot = try rig.run(["forget", "right-index-finger", "--pin-fd", "3"], fd3: ReaderCLITests.pin + "\n")
        #expect(forgot.status == 0, "\(forgot.all)")
        #expect(try rig.run(["fingers"]).stdout == "No finger is enrolled.\n")
        #expect(try rig.run(["verify"]).status == 6)
    }

    @Test func forgetDeletesTheTemplateOnAMatchOnChipReader() throws {
        let rig = try Rig(driver: "virtual_device_storage", variable: "FP_VIRTUAL_DEVICE_STORAGE")
        try rig.enroll("chip-1")
        let forget = try rig.scan(["forget", "--all", "--pin-fd", "3"], ["CONT "], fd3: ReaderCLITests.pin + "\n")
        #expect(forget.status == 0, "\(forget.all)")
        // Ask the reader what it still stores, while an enrollment holds it open.
        let child = try rig.start(["enroll", "--pin-fd", "3", "--timeout", "5"], fd3: ReaderCLITests.pin + "\n")
        let listing = try VirtualSensor.send("LIST", to: rig.socket)
        for _ in 0..<5 { try VirtualSensor.send("SCAN chip-2", to: rig.socket) }
        #expect(child.finish().status == 0)
        #expect(listing.isEmpty, "still stored: \(listing)")
    }

    @Test func aDuplicateIsRefusedWhereTheReaderCanTell() throws {
        let rig = try Rig(driver: "virtual_device_storage", variable: "FP_VIRTUAL_DEVICE_STORAGE")
        // The virtual chip's storage lives as long as one process: put the finger on it first,
        // as a real match-on-chip reader would already hold it.
        let again = try rig.scan(["enroll", "--finger", "left-index-finger", "--pin-fd", "3"],
                                 ["INSERT chip-1", "SCAN chip-1"], fd3: ReaderCLITests.pin + "\n")
        #expect(again.status == 2, "\(again.all)")
        #expect(again.stderr.contains("The reader already holds this finger, stored by another program (fprintd, another operating "
                                      + "system or another user). Enroll a different finger, or remove that print with the program "
                                      + "that stored it."), "\(again.stderr)")
        #expect(try rig.run(["fingers"]).stdout == "No finger is enrolled.\n")
    }
}

extension ReaderCLITests {
    /// Recorded real sensors replayed by umockdev under the broker.
    ///
    /// The replayed device's descriptor is always writable, so libusb's event thread may find
    /// it before the open that registers it ("cannot find handle for fd N") and spin, logging
    /// that line each time while it holds the lock the open waits for. With the log going to a
    /// file the open soon gets its turn; into a pipe nobody reads (TestBroker's), the log fills
    /// it, the spinning thread blocks in write() holding the lock, and the replay stalls. So the
    /// broker's output goes to a file here.
    @Suite struct RecordedSensors {
        static var umockdev: Bool { access("/usr/bin/umockdev-run", X_OK) == 0 }

        /// A broker running under umockdev-run, so its libfprint sees the recorded device, its
        /// output going to `log`. umockdev-run makes its test bed under TMPDIR: `temp`, which
        /// goes with the test (the broker is stopped with SIGKILL, which leaves no time to
        /// clean up).
        static func replayBroker(_ umockdev: [String], driver: String, log: String, temp: TempDirectory) throws -> TestBroker {
            try TestBroker(environment: ["FP_DEVICE_EMULATION": "1", "FP_DRIVERS_WHITELIST": driver, "TMPDIR": temp.path],
                           wrap: { ("/bin/sh", ["-c", #"exec "$@" >>"$0" 2>&1"#, log, "/usr/bin/umockdev-run"] + umockdev + ["--"] + $0) })
        }

        @Test(.enabled(if: umockdev)) func captureReplaysTheVFS5011Recording() throws {
            let temp = try TempDirectory()
            let recording = Paths.fixtures + "/umockdev/vfs5011"
            let broker = try Self.replayBroker(["-d", recording + "/device", "-i", "/dev/bus/usb/002/017=" + recording + "/capture.ioctl"],
                                               driver: "vfs5011", log: temp.file("broker.log"), temp: temp)
            let out = temp.file("capture.pgm")
            let result = try Child.run(Paths.cli, ["capture", "--out", out], environment: broker.clientEnvironment)
            #expect(result.status == 0, "\(result.all)")
            #expect(result.stdout.contains("Saved a 160 by 334 image"))
            // Compare every pixel with the recording's reference image.
            let compare = try Child.run("/usr/bin/python3", ["-c", """
                import sys
                from PIL import Image
                ref = Image.open(sys.argv[1]).convert("L")
                got = Image.open(sys.argv[2])
                print("size", ref.size == got.size, "differ", sum(a != b for a, b in zip(ref.tobytes(), got.tobytes())))
                """, recording + "/capture.png", out])
            #expect(compare.stdout == "size True differ 0\n", "\(compare.all)")
        }

        /// The recording was made by a program that clears the chip before enrolling (libfprint's
        /// own test). fingerseal never clears a reader's storage, so the replay stops where the
        /// recording expects the clear: the self-test fails at enroll, says why in one
        /// sentence, and still closes the reader. (A new recording without the clear would let
        /// this pass again.)
        @Test(.enabled(if: umockdev)) func selftestNeverClearsTheSynapticsRecording() throws {
            let temp = try TempDirectory()
            let recording = Paths.fixtures + "/umockdev/synaptics"
            let sysfs = "/sys/devices/pci0000:00/0000:00:14.0/usb1/1-9"
            let broker = try Self.replayBroker(["-d", recording + "/device", "-p", sysfs + "=" + recording + "/custom.pcapng"],
                                               driver: "synaptics", log: temp.file("broker.log"), temp: temp)
            let result = try Child.run(Paths.cli, ["selftest", "--json"], environment: broker.clientEnvironment)
            #expect(result.status == 8, "\(result.all)")
            #expect(result.stdout.contains("\"driver\" : \"synaptics\""), "\(result.stdout)")
            #expect(!result.all.contains("clear"), "\(result.all)")
            #expect(!result.all.contains(".."), "\(result.all)")
            #expect(result.stderr.contains("The self-test failed at enroll: "), "\(result.stderr)")
            for step in ["open", "enroll", "close"] {
                #expect(result.stdout.contains("\"name\" : \"\(step)\""))
            }
        }
    }
}
