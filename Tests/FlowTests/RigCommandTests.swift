import Foundation
import Glibc
import Testing
@testable import TestSupport

/// Bugs found running the rig commands (verify, capture, selftest) on recordings of real
/// readers: descriptors, the image file, timing of impostors, and GLib's log on stdout.
@Suite struct RigCommandTests {
    static let pin = ReaderCLITests.pin

    /// A descriptor the caller never opened is refused before anything is opened, even the
    /// number the CLI's own socket would get (3): nothing reaches the broker, nothing is
    /// written anywhere.
    @Test func aDescriptorTheCallerNeverOpenedIsRefusedFirst() throws {
        let rig = try ReaderCLITests.Rig()
        for arguments in [["verify", "--events-fd", "3"], ["enroll", "--pin-fd", "3"], ["capture", "--out", "x", "--events-fd", "3"]] {
            let result = try Child.run("/bin/sh", ["-c", #"exec 3>&-; exec "$0" "$@""#, Paths.cli] + arguments,
                                       environment: rig.environment)
            #expect(result.status == 2, "\(arguments): \(result.all)")
            #expect(result.stdout.isEmpty, "\(arguments): \(result.stdout)")
            let option = arguments.first { $0.hasSuffix("-fd") } ?? ""
            #expect(result.stderr == "fingerseal: error: The option \(option) names file descriptor 3, which is not open. "
                    + "Open it for fingerseal (for example 3>FILE) or name another.\n", "\(result.stderr)")
        }
        // The broker never opened the reader (libfprint makes its socket when it does), and
        // capture created no file.
        #expect(access(rig.socket, F_OK) != 0)
        #expect(access("x", F_OK) != 0)
    }

    @Test func captureReplacesAnExistingFileOwnerOnly() throws {
        let rig = try ReaderCLITests.Rig(driver: "virtual_image", variable: "FP_VIRTUAL_IMAGE")
        let directory = try TempDirectory()
        let out = directory.file("finger.pgm")
        writeFile(out, Array("someone else's notes\n".utf8), mode: 0o644)
        chmod(out, 0o644)
        let child = try rig.start(["capture", "--out", out, "--events-fd", "1"])
        #expect(child.readLine() == #"{"event":"finger-needed"}"#)
        let sensor = try VirtualImageSensor(path: rig.socket)
        try sensor.send(try VirtualImageSensor.fixture("whorl.fpimg"))
        let result = child.finish()
        #expect(result.status == 0, "\(result.all)")
        var info = stat()
        #expect(lstat(out, &info) == 0)
        #expect(info.st_mode & S_IFMT == S_IFREG)
        #expect(info.st_mode & 0o7777 == 0o600, "mode \(String(info.st_mode & 0o7777, radix: 8))")
        #expect(info.st_uid == getuid())
        let bytes = readFile(out) ?? []
        #expect(bytes.starts(with: Array("P5\n".utf8)), "not a PGM")
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(left == ["finger.pgm"], "\(left)")
    }

    @Test func captureThatFailsLeavesTheFileAsItWas() throws {
        let rig = try ReaderCLITests.Rig(driver: "virtual_image", variable: "FP_VIRTUAL_IMAGE")
        let directory = try TempDirectory()
        let out = directory.file("finger.pgm")
        writeFile(out, Array("kept\n".utf8), mode: 0o644)
        let result = try rig.run(["capture", "--out", out, "--timeout", "1"])
        #expect(result.status == 4, "\(result.all)")
        #expect(readFile(out) == Array("kept\n".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["finger.pgm"])
    }

    /// One `verify --json` answer, decoded.
    struct VerifyReport: Decodable {
        let result: String
        let finger: String?
        let milliseconds: Double?
    }

    @Test func verifyJSONTimesAnImpostorToo() throws {
        let rig = try ReaderCLITests.Rig()
        try rig.enroll("finger-a")
        let miss = try rig.scan(["verify", "--json"], ["SCAN finger-b"])
        #expect(miss.status == 1, "\(miss.all)")
        let report = try JSONDecoder().decode(VerifyReport.self, from: Data(miss.stdout.utf8))
        #expect(report.result == "no-match")
        #expect(report.finger == nil)
        #expect((report.milliseconds ?? -1) >= 0, "\(miss.stdout)")
        let match = try rig.scan(["verify", "--json"], ["SCAN finger-a"])
        let matched = try JSONDecoder().decode(VerifyReport.self, from: Data(match.stdout.utf8))
        #expect(matched.result == "match" && (matched.milliseconds ?? -1) >= 0, "\(match.stdout)")
    }

    /// With G_MESSAGES_DEBUG=all GLib and libfprint log every step; the broker sends all of it
    /// to standard error, so standard output carries only what fingerseal prints.
    @Test func glibLogStaysOffStandardOutput() throws {
        let temp = try TempDirectory()
        let errors = temp.file("broker.stderr")
        let rig = try ReaderBroker(pin: Self.pin, wrap: { command in
            ("/bin/sh", ["-c", #"exec env G_MESSAGES_DEBUG=all "$@" 2>>"$0""#, errors] + command)
        })
        let enroll = try rig.enroll("finger-a", pin: Self.pin)
        #expect(enroll.status == 0, "\(enroll.all)")
        let verify = try rig.scan(["verify", "--json"], ["SCAN finger-a"])
        #expect(verify.status == 0, "\(verify.all)")
        let report = try JSONDecoder().decode(VerifyReport.self, from: Data(verify.stdout.utf8))
        #expect(report.result == "match")
        let logged = String(decoding: readFile(errors) ?? [], as: UTF8.self)
        #expect(logged.contains("virtual_device"), "GLib's debug log was not on: \(logged.prefix(500))")
        let stdout = String(decoding: readFile(rig.broker.log) ?? [], as: UTF8.self)
        #expect(!stdout.contains("DEBUG") && !stdout.contains("virtual_device"), "\(stdout.prefix(1000))")
    }
}
