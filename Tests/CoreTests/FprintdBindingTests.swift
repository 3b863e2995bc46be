import Glibc
import Testing
@testable import FingersealCore
@testable import FingerprintFlows
import SodiumKit
@testable import TestSupport

/// The device slot bound to fprintd's enrolled set, and where a reader sits (issue 11 §1, §5),
/// without fprintd itself (FprintdBackendTests runs it).
@Suite struct FprintdBindingTests {
    @Test func digestCoversNamesAndStoredPrints() {
        let one = FprintdSet.digest(fingers: ["right-index-finger"], stored: [:])
        #expect(one == FprintdSet.digest(fingers: ["right-index-finger"], stored: [:]))
        #expect(one != FprintdSet.digest(fingers: ["left-index-finger"], stored: [:]))
        #expect(one != FprintdSet.digest(fingers: ["right-index-finger", "left-index-finger"], stored: [:]))
        // The same name, re-enrolled: other bytes, another set.
        let a = FprintdSet.digest(fingers: ["right-index-finger"], stored: ["right-index-finger": [1, 2, 3]])
        let b = FprintdSet.digest(fingers: ["right-index-finger"], stored: ["right-index-finger": [1, 2, 4]])
        #expect(a != b && a != one)
        // Order does not matter; an empty set is a set too.
        #expect(FprintdSet.digest(fingers: ["a", "b"], stored: [:]) == FprintdSet.digest(fingers: ["b", "a"], stored: [:]))
        #expect(FprintdSet.digest(fingers: [], stored: [:]) != one)
    }

    @Test func enrolledHereKeepsOnlyFingersInTheSet() {
        let set = FprintdSet(fingers: ["b", "a"], digest: "d", enrolledHere: ["c", "a"])
        #expect(set.fingers == ["a", "b"] && set.enrolledHere == ["a"])
    }

    @Test func bindingNeedsThePINAndRebindsTheDeviceSlot() throws {
        let vault = try TestVault()
        let created = try vault.create()
        #expect(try Vault.unlockWithDevice(vault.store).fprintdSet() == nil)
        let set = FprintdSet(fingers: ["right-index-finger"], digest: "abc")
        // Opened through the device slot: it cannot bind a new set to itself.
        let byDevice = try Vault.unlockWithDevice(vault.store)
        expectOutcome(.usage) { try byDevice.update { try $0.bindFprintd(set) } }
        try created.update { try $0.bindFprintd(set) }
        // The device slot opens the vault again, bound to the new set, and says so.
        let reopened = try Vault.unlockWithDevice(vault.store)
        #expect(try reopened.fprintdSet() == set)
        #expect(try Vault.status(vault.store)?.fprintd == set)
    }

    @Test func storedPrintsAreReadFromFprintdsLayout() throws {
        let temp = try TempDirectory()
        let device = temp.path + "/alice/virtual_device/0"
        #expect(mkdir(temp.path + "/alice", 0o700) == 0 && mkdir(temp.path + "/alice/virtual_device", 0o700) == 0
                && mkdir(device, 0o700) == 0)
        let path = device + "/7" // fprintd names a print by its finger number in hex: 7 is right-index-finger
        let fd = open(path, O_WRONLY | O_CREAT, 0o600)
        #expect(fd >= 0)
        let bytes: [UInt8] = [9, 9, 9]
        _ = write(fd, bytes, bytes.count)
        close(fd)
        let stored = FprintdEnrolledSet.storedPrints(temp.path + "/alice", fingers: [.rightIndex, .leftIndex])
        #expect(stored == ["right-index-finger": [9, 9, 9]])
        #expect(FprintdEnrolledSet.storedPrints(temp.path + "/nobody", fingers: [.rightIndex]).isEmpty)
    }

    @Test func externalReaderIsOneInARemovablePort() throws {
        let temp = try TempDirectory()
        let hwdb = temp.file("readers.hwdb")
        try writeFile(hwdb, "# Supported by libfprint driver x\nusb:v06CBp00BD*\n ID_AUTOSUSPEND=1\nusb:v27C6p5110*\n")
        #expect(ReaderPlacement.supportedIDs(hwdb) == ["06cb:00bd", "27c6:5110"])
        let devices = temp.path + "/devices"
        #expect(mkdir(devices, 0o755) == 0)
        func device(_ name: String, _ vendor: String, _ product: String, _ removable: String) throws {
            #expect(mkdir(devices + "/" + name, 0o755) == 0)
            try writeFile(devices + "/\(name)/idVendor", vendor + "\n")
            try writeFile(devices + "/\(name)/idProduct", product + "\n")
            try writeFile(devices + "/\(name)/removable", removable + "\n")
        }
        // A built-in reader, and a removable keyboard that is no reader.
        try device("1-7", "06cb", "00bd", "fixed")
        try device("1-2", "046d", "c31c", "removable")
        #expect(!ReaderPlacement.hasExternalReader(devices: devices, hwdb: hwdb))
        try device("3-1", "27c6", "5110", "removable")
        #expect(ReaderPlacement.hasExternalReader(devices: devices, hwdb: hwdb))
        // Without libfprint's list nothing is known to be external.
        #expect(!ReaderPlacement.hasExternalReader(devices: devices, hwdb: temp.file("missing")))
    }

    private func writeFile(_ path: String, _ text: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw TestFailure("cannot write \(path)") }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else { throw TestFailure("short write \(path)") }
    }
}
