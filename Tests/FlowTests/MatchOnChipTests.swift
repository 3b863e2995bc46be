import Glibc
import Testing
@testable import TestSupport

/// A match-on-chip reader (libfprint's virtual_device_storage behind a broker) holding prints
/// other programs stored: fingerseal deletes only its own, never clears, and says plainly when
/// the chip refuses a duplicate or is full. `INSERT id` puts a print "stored by another
/// program" on the chip; `LIST` asks the chip what it holds (answered while the reader is open).
@Suite struct MatchOnChipTests {
    static let pin = ReaderCLITests.pin

    static func storageRig() throws -> ReaderCLITests.Rig {
        try ReaderCLITests.Rig(driver: "virtual_device_storage", variable: "FP_VIRTUAL_DEVICE_STORAGE")
    }

    /// What the chip holds, sorted.
    static func chip(_ rig: ReaderCLITests.Rig) throws -> [String] {
        try VirtualSensor.send("LIST", to: rig.socket).split(separator: "\n").map(String.init).sorted()
    }

    static func enroll(_ rig: ReaderCLITests.Rig, _ id: String, finger: String, first: [String] = []) throws -> Child.Result {
        try rig.scan(["enroll", "--finger", finger, "--pin-fd", "3"], first + Array(repeating: "SCAN \(id)", count: 5),
                     fd3: pin + "\n")
    }

    /// The sensor commands for one self-test: `enroll` five times, then the verify's scan, the
    /// delete's go-ahead and `close` (what the close does first). The verify starts with a
    /// pause, so every later command is queued before the delete and close begin (the driver
    /// would run those without a command after 500 ms, or at once).
    static func selftest(enroll: String = "selftest", verify: String = "selftest", close: String,
                         first: [String] = []) -> [String] {
        first + Array(repeating: "SCAN \(enroll)", count: 5) + ["SLEEP 1500", "SCAN \(verify)", "CONT ", close]
    }

    /// Feeds `commands` to the sensor while `child` runs; when the sensor never appears, the
    /// failure says what the CLI said.
    static func feed(_ commands: [String], _ rig: ReaderCLITests.Rig, _ child: Child) throws {
        do {
            for command in commands { try VirtualSensor.send(command, to: rig.socket) }
        } catch {
            throw TestFailure("\(error); the CLI said: \(child.finish(limit: 10).all)")
        }
    }

    /// Reads the self-test's step lines until `step`'s, which it returns.
    static func line(of step: String, from child: Child) -> String? {
        while let line = child.readLine() {
            if line.hasPrefix(step + ":") { return line }
        }
        return nil
    }

    @Test func anotherProgramsPrintSurvivesEveryCommand() throws {
        let rig = try Self.storageRig()
        let first = try Self.enroll(rig, "chip-1", finger: "right-index-finger", first: ["INSERT other-1"])
        #expect(first.status == 0, "\(first.all)")
        #expect(try Self.chip(rig) == ["chip-1", "other-1"])

        #expect(try rig.scan(["verify"], ["SCAN chip-1"]).status == 0)
        #expect(try Self.chip(rig) == ["chip-1", "other-1"])
        // The other program's finger is not ours: no match, and it stays.
        #expect(try rig.scan(["verify"], ["SCAN other-1"]).status == 1)
        #expect(try Self.chip(rig) == ["chip-1", "other-1"])

        #expect(try Self.enroll(rig, "chip-2", finger: "left-index-finger").status == 0)
        #expect(try Self.chip(rig) == ["chip-1", "chip-2", "other-1"])

        let one = try rig.scan(["forget", "right-index-finger", "--pin-fd", "3"], ["CONT "], fd3: Self.pin + "\n")
        #expect(one.status == 0, "\(one.all)")
        #expect(try Self.chip(rig) == ["chip-2", "other-1"])

        // Another program removed fingerseal's print meanwhile: forget finds it gone from the
        // chip, deletes nothing there, and forgets it in the vault.
        let all = try rig.scan(["forget", "--all", "--pin-fd", "3"], ["REMOVE chip-2", "CONT "], fd3: Self.pin + "\n")
        #expect(all.status == 0, "\(all.all)")
        #expect(try Self.chip(rig) == ["other-1"])
        #expect(try rig.run(["fingers"]).stdout == "No finger is enrolled.\n")

        let reset = try rig.run(["reset", "--yes", "--pin-fd", "3"], fd3: Self.pin + "\n")
        #expect(reset.status == 0, "\(reset.all)")
        #expect(try Self.chip(rig) == ["other-1"])
    }

    @Test func selftestDeletesOnlyItsOwnPrint() throws {
        let rig = try Self.storageRig()
        let child = try rig.start(["selftest"])
        // The close waits 3 s (SLEEP), which leaves time to ask the chip what is left.
        try Self.feed(Self.selftest(close: "SLEEP 3000", first: ["INSERT other-1"]), rig, child)
        let deleted = Self.line(of: "delete", from: child)
        #expect(deleted?.hasPrefix("delete: passed") == true, "\(deleted ?? "no delete step")")
        #expect(try Self.chip(rig) == ["other-1"])
        let result = child.finish()
        #expect(result.status == 0, "\(result.all)")
        #expect(result.stdout.contains("The self-test passed."))
        #expect(!result.all.contains("clear"), "\(result.all)")
    }

    @Test func selftestDeletesItsPrintAfterAFailedVerify() throws {
        let rig = try Self.storageRig()
        let child = try rig.start(["selftest"])
        try Self.feed(Self.selftest(verify: "stranger", close: "SLEEP 3000", first: ["INSERT other-1"]), rig, child)
        let deleted = Self.line(of: "delete", from: child)
        #expect(deleted?.hasPrefix("delete: passed") == true, "\(deleted ?? "no delete step")")
        #expect(try Self.chip(rig) == ["other-1"])
        let result = child.finish()
        #expect(result.status == 8, "\(result.all)")
        #expect(result.stderr.contains("The self-test failed at verify: The fingerprint did not match.\n"), "\(result.stderr)")
    }

    static let storageFull = "The reader's storage is full. fingerseal never deletes other programs' prints to make room: "
        + "remove prints you no longer need with the program that stored them, then enroll again."

    @Test func aFullReaderSaysSoAndMakesNoRoom() throws {
        let rig = try Self.storageRig()
        // FP_DEVICE_ERROR_DATA_FULL is 8.
        let enroll = try rig.scan(["enroll", "--finger", "right-index-finger", "--pin-fd", "3"], ["ERROR 8"], fd3: Self.pin + "\n")
        #expect(enroll.status == 8, "\(enroll.all)")
        #expect(enroll.stderr.contains(Self.storageFull), "\(enroll.stderr)")
        #expect(try rig.run(["fingers"]).stdout == "No finger is enrolled.\n")

        let selftest = try rig.scan(["selftest"], ["ERROR 8"])
        #expect(selftest.status == 8, "\(selftest.all)")
        #expect(selftest.stdout.contains("enroll: failed: " + Self.storageFull), "\(selftest.stdout)")
        #expect(!selftest.stdout.contains("delete:"), "\(selftest.stdout)")
        #expect(selftest.stdout.contains("close: passed"), "\(selftest.stdout)")
    }
}
