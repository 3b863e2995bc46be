import FprintKit
import Glibc
import Testing
@testable import TestSupport

extension InProcessLibfprint.ReaderTests {
    // MARK: virtual_device_storage (match on chip)

    /// Enrolls `id` on the storage driver.
    func enrollStored(_ reader: LibfprintDevice, id: String, sensor: String) throws -> OperationResult {
        let operation = try reader.enroll(finger: .leftIndex, username: "tester", description: id)
        for _ in 0..<reader.enrollStages { try VirtualSensor.send("SCAN \(id)", to: sensor) }
        return operation.wait(timeout: 10)
    }

    @Test func storageIdentifyListDeleteAndDuplicate() throws {
        let env = try VirtualEnvironment(driver: "virtual_device_storage", variable: "FP_VIRTUAL_DEVICE_STORAGE")
        let reader = try LibfprintDevice()
        #expect(reader.info.features.isSuperset(of: [.storage, .identify, .storageList, .storageDelete]))
        guard case let .enrolled(first) = try enrollStored(reader, id: "print-1", sensor: env.socket),
              case let .enrolled(second) = try enrollStored(reader, id: "print-2", sensor: env.socket) else {
            throw TestFailure("enrollment failed")
        }
        #expect(first.isStoredOnDevice)

        // Identify picks the right one of the user's prints.
        let gallery = [try Print(serialized: try first.serialize()), try Print(serialized: try second.serialize())]
        let identify = try reader.identify(gallery)
        try VirtualSensor.send("SCAN print-2", to: env.socket)
        guard case .identified(index: 1) = identify.wait(timeout: 10) else { throw TestFailure("wrong identify result") }
        let unknown = try reader.identify(gallery)
        try VirtualSensor.send("SCAN print-3", to: env.socket)
        guard case .identified(index: nil) = unknown.wait(timeout: 10) else { throw TestFailure("identified a stranger") }

        // The device lists both; CONT lets the driver answer at once.
        try VirtualSensor.send("CONT ", to: env.socket)
        guard case let .listed(stored) = try reader.listStoredPrints().wait(timeout: 10) else { throw TestFailure("no list") }
        #expect(stored.count == 2)

        // A duplicate is refused by the device.
        let duplicate = try enrollStored(reader, id: "print-1", sensor: env.socket)
        guard case .failed(.device(.dataDuplicate, _, _)) = duplicate else { throw TestFailure("duplicate accepted: \(duplicate)") }

        try VirtualSensor.send("CONT ", to: env.socket)
        guard case .done = try reader.deleteStoredPrint(first).wait(timeout: 10) else { throw TestFailure("delete failed") }
        let listing = try VirtualSensor.send("LIST", to: env.socket)
        #expect(listing.split(separator: "\n") == ["print-2"], "\(listing)")
    }

    // MARK: virtual_image with real prints (NBIS)

    /// Enrolls `image` (sent 5 times, each when the sensor asks) and checks which images
    /// match it: real minutiae matching on the fixture prints.
    func checkMatches(enroll image: String, accept: [String], reject: [String]) throws {
        let env = try VirtualEnvironment(driver: "virtual_image", variable: "FP_VIRTUAL_IMAGE")
        let reader = try LibfprintDevice()
        let sensor = try VirtualImageSensor(path: env.socket)
        let payload = try VirtualImageSensor.fixture(image)
        let enroll = try reader.enroll(finger: .rightIndex, username: "tester", description: image)
        var sendError: Error? = nil
        let result = enroll.wait(timeout: 60) { event in
            if case .fingerNeeded = event {
                do { try sensor.send(payload) } catch { sendError = error }
            }
        }
        if let sendError { throw sendError }
        guard case let .enrolled(print) = result else { throw TestFailure("enroll \(image): \(result)") }
        for (candidate, expected) in accept.map({ ($0, true) }) + reject.map({ ($0, false) }) {
            let scan = try VirtualImageSensor.fixture(candidate)
            let verify = try reader.verify(print)
            let outcome = verify.wait(timeout: 30) { event in
                if case .fingerNeeded = event { try? sensor.send(scan) }
            }
            guard case let .verified(matched) = outcome else { throw TestFailure("verify \(candidate): \(outcome)") }
            #expect(matched == expected, "\(image) vs \(candidate)")
        }
        reader.close()
    }

    @Test func whorlAcceptsItsSecondImpressionOnly() throws {
        try checkMatches(enroll: "whorl.fpimg", accept: ["whorl_dx12_dy-8_rot10.fpimg"],
                         reject: ["tented_arch.fpimg", "loop-right.fpimg", "egis0570.fpimg"])
    }

    @Test func tentedArchAcceptsItsSecondImpressionOnly() throws {
        try checkMatches(enroll: "tented_arch.fpimg", accept: ["tented_arch_dx15_dy10_rot0.fpimg"],
                         reject: ["whorl.fpimg", "loop-right.fpimg", "egis0570.fpimg"])
    }

    @Test func loopRightAcceptsItsSecondImpressionOnly() throws {
        try checkMatches(enroll: "loop-right.fpimg", accept: ["loop-right_dx8_dy-6_rot4.fpimg"],
                         reject: ["whorl.fpimg", "tented_arch.fpimg", "egis0570.fpimg"])
    }
}
