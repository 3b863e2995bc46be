import Foundation
import FprintKit
import Glibc
import Testing
@testable import TestSupport

/// libfprint reads its driver selection from process-global environment variables when a
/// context is created, and is single-threaded: these tests must never overlap.
extension InProcessLibfprint {
@Suite(.serialized) struct FprintKitTests {
    private static let variables = ["FP_DRIVERS_WHITELIST", "FP_VIRTUAL_DEVICE", "FP_VIRTUAL_IMAGE",
                                    "FP_VIRTUAL_DEVICE_STORAGE"]

    /// Runs `body` with only `driver` allowed and `variable` pointing at a socket path in a
    /// fresh temp dir (libfprint creates the socket when the device is opened, not here).
    private func withVirtualDriver(_ driver: String, variable: String,
                                   _ body: () throws -> Void) throws {
        let dir = FileManager.default.temporaryDirectory
            .appendingPathComponent("fprintkit-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: false)
        defer {
            for name in Self.variables { unsetenv(name) }
            try? FileManager.default.removeItem(at: dir)
        }
        for name in Self.variables { unsetenv(name) }
        // The whitelist keeps libfprint from probing real USB/SPI readers on the test host.
        setenv("FP_DRIVERS_WHITELIST", driver, 1)
        setenv(variable, dir.appendingPathComponent("reader.sock").path, 1)
        try body()
    }

    @Test func virtualDeviceIsEnumerated() throws {
        try withVirtualDriver("virtual_device", variable: "FP_VIRTUAL_DEVICE") {
            let readers = try LibfprintDevice.list()
            #expect(readers.count == 1)
            let reader = try #require(readers.first)
            #expect(reader.driver == "virtual_device")
            #expect(!reader.deviceID.isEmpty)
            #expect(!reader.name.isEmpty)
            #expect(reader.features.contains(.verify))
            #expect(!reader.features.contains(.storage))
            // A second listing finds the same reader.
            #expect(try LibfprintDevice.list() == readers)
        }
    }

    @Test func virtualImageIsEnumeratedWithCapture() throws {
        try withVirtualDriver("virtual_image", variable: "FP_VIRTUAL_IMAGE") {
            let readers = try LibfprintDevice.list()
            #expect(readers.count == 1)
            let reader = try #require(readers.first)
            #expect(reader.driver == "virtual_image")
            #expect(reader.features.contains(.capture))
            #expect(reader.features.contains(.verify))
            #expect(reader.features.contains(.identify))
        }
    }

    @Test func storageDeviceReportsStorageFeatures() throws {
        try withVirtualDriver("virtual_device_storage", variable: "FP_VIRTUAL_DEVICE_STORAGE") {
            let readers = try LibfprintDevice.list()
            let reader = try #require(readers.first)
            #expect(readers.count == 1)
            #expect(reader.driver == "virtual_device_storage")
            #expect(reader.features.isSuperset(of: [.storage, .storageList, .storageDelete, .identify]))
        }
    }

    @Test func noAllowedDriverMeansNoReaders() throws {
        try withVirtualDriver("virtual_image", variable: "FP_VIRTUAL_DEVICE") {
            // virtual_device has its socket variable but is not whitelisted; virtual_image is
            // whitelisted but has no variable: nothing may appear.
            let readers = try LibfprintDevice.list()
            #expect(readers.isEmpty)
        }
    }
}
}
