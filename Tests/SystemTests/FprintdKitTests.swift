@testable import FprintdKit
import Glibc
import ReaderValues
import SystemdKit
import Testing
@testable import TestSupport

/// FprintdKit against a real fprintd (virtual_device) on a private system bus. Each test has
/// its own bus and fprintd; they run one at a time (each starts three daemons).
@Suite(.serialized, .enabled(if: PrivateSystemBus.available, "\(PrivateSystemBus.missing ?? "")"))
struct FprintdKitTests {
    static let user = "root"
    static let enrolledID = "fprintd-test-finger"

    /// A bus with fprintd, our connection to it, and the default device.
    struct Rig {
        let bus: PrivateSystemBus
        let connection: SystemBus
        let device: FprintdDevice

        init(enrolled: Bool = false) throws {
            bus = try PrivateSystemBus()
            if enrolled { try bus.enrollWithFprintdEnroll(user: FprintdKitTests.user, scanID: FprintdKitTests.enrolledID) }
            connection = try SystemBus.open(address: bus.address)
            device = try connection.fprintdDefaultDevice()
        }
    }

    /// Waits for `operation`, collecting its events.
    func outcome(_ operation: FprintdOperation, timeout: Double = 10,
                 cancelFDs: [Int32] = []) -> (FprintdResult, [ReaderEvent]) {
        var events: [ReaderEvent] = []
        let result = operation.wait(timeout: timeout, cancelFDs: cancelFDs) { events.append($0) }
        return (result, events)
    }

    func matched(_ result: FprintdResult) -> Bool? {
        if case let .verified(matched) = result { return matched }
        return nil
    }

    @Test func presenceIsRunningWithFprintdAndAbsentWithout() throws {
        let withFprintd = try PrivateSystemBus()
        #expect(try SystemBus.open(address: withFprintd.address).fprintdPresence() == .running)
        let without = try PrivateSystemBus(fprintd: false)
        #expect(try SystemBus.open(address: without.address).fprintdPresence() == .absent)
    }

    @Test func presenceSeesAnActivatableFprintdWithoutStartingIt() throws {
        let bus = try PrivateSystemBus(fprintd: false, activatable: ["net.reactivated.Fprint"])
        let connection = try SystemBus.open(address: bus.address)
        #expect(connection.fprintdPresence() == .activatable)
        // Activation would have run the service file's Exec, which leaves a marker.
        #expect(access(bus.activationMarker("net.reactivated.Fprint"), F_OK) != 0)
        #expect(try connection.nameHasOwner("net.reactivated.Fprint", timeout: 2) == false)
    }

    @Test func openingAMissingBusSaysWhere() {
        #expect {
            _ = try SystemBus.open(address: "unix:path=/nonexistent/fingerseal-test-bus")
        } throws: { error in
            // SystemdKit's own error (a D-Bus failure by its type); FprintdKit says it as
            // FprintError.other(domain: "dbus", …) with the same message.
            guard case let .failed(_, message)? = error as? BusError else { return false }
            return message.contains("/nonexistent/fingerseal-test-bus")
                && FprintError(BusError.failed(code: 2, message: message)) == .other(domain: "dbus", code: 2, message: message)
        }
    }

    @Test func theDefaultDeviceAndItsProperties() throws {
        let rig = try Rig()
        let expected = FprintdDeviceInfo(objectPath: "/net/reactivated/Fprint/Device/0", name: "Virtual device for debugging",
                                         scanType: "swipe", enrollStages: 5)
        #expect(rig.device.info == expected)
        #expect(try rig.connection.fprintdDevices() == [expected])
    }

    @Test func enrolledFingersAreEmptyThenListTheEnrolledOne() throws {
        let rig = try Rig()
        #expect(try rig.device.enrolledFingers(user: Self.user) == [])
        try rig.bus.enrollWithFprintdEnroll(user: Self.user, scanID: Self.enrolledID)
        #expect(try rig.device.enrolledFingers(user: Self.user) == [.rightIndex])
    }

    @Test func verifyMatchesAfterARetryThenRejectsAnotherFinger() throws {
        let rig = try Rig(enrolled: true)
        try rig.device.claim(user: Self.user)
        // Each scan goes when fprintd says it needs the finger (a scan queued before would
        // let fprintd coalesce finger-needed away).
        var scans = ["RETRY 1", "SCAN \(Self.enrolledID)"]
        var events: [ReaderEvent] = []
        var sendFailure: String? = nil
        let result = try rig.device.verify().wait(timeout: 10) { event in
            events.append(event)
            guard case .fingerNeeded = event, !scans.isEmpty else { return }
            do { try rig.bus.sensor(scans.removeFirst()) } catch { sendFailure = "\(error)" }
        }
        #expect(sendFailure == nil)
        #expect(matched(result) == true)
        let kinds = events.map { event -> String in
            switch event {
            case .fingerNeeded: return "needed"
            case let .hint(hint): return "hint(\(hint))"
            default: return "other"
            }
        }
        #expect(kinds == ["needed", "hint(tooShort)", "needed"])
        // A second verify starts only if the first one was stopped (fprintd insists).
        try rig.bus.sensor("SCAN someone-else")
        let (second, _) = outcome(try rig.device.verify(finger: .rightIndex))
        #expect(matched(second) == false)
    }

    @Test func cancellingThroughTheDescriptorStopsTheVerify() throws {
        let rig = try Rig(enrolled: true)
        try rig.device.claim(user: Self.user)
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let operation = try rig.device.verify()
        _ = write(fds[1], "x", 1)
        let started = VirtualSensor.now()
        let (result, _) = outcome(operation, cancelFDs: [fds[0]])
        guard case .failed(.cancelled) = result else { Issue.record("expected cancelled, got \(result)"); return }
        #expect(VirtualSensor.now() - started < 3)
        // The device is usable afterwards: verify again, release, claim again.
        try rig.bus.sensor("SCAN \(Self.enrolledID)")
        #expect(matched(outcome(try rig.device.verify()).0) == true)
        rig.device.release()
        try rig.device.claim(user: Self.user)
    }

    @Test func cancelFromAnotherThreadAndTimeoutBothStop() throws {
        let rig = try Rig(enrolled: true)
        try rig.device.claim(user: Self.user)
        let timedOut = try rig.device.verify()
        guard case .failed(.timedOut) = timedOut.wait(timeout: 0.3) else { Issue.record("expected a timeout"); return }
        // Waiting again returns the same result, without touching fprintd.
        guard case .failed(.timedOut) = timedOut.wait(timeout: 5) else { Issue.record("the result changed"); return }

        let cancelled = try rig.device.verify()
        cancelled.cancel()
        guard case .failed(.cancelled) = cancelled.wait(timeout: 5) else { Issue.record("expected cancelled"); return }

        try rig.bus.sensor("SCAN \(Self.enrolledID)")
        #expect(matched(outcome(try rig.device.verify()).0) == true)
    }

    @Test func enrollThroughTheAPIThenDelete() throws {
        let rig = try Rig()
        try rig.device.claim(user: Self.user)
        let operation = try rig.device.enroll(finger: .leftIndex)
        try rig.bus.sensor("RETRY 2")
        for _ in 0..<5 { try rig.bus.sensor("SCAN left-index") }
        let (result, events) = outcome(operation)
        guard case .done = result else { Issue.record("enroll ended with \(result)"); return }
        let progress = events.compactMap { event -> Int? in
            if case let .enrollProgress(completed, total) = event, total == 5 { return completed }
            return nil
        }
        #expect(progress == [1, 2, 3, 4, 5])
        #expect(events.contains { if case .hint(.centerFinger) = $0 { return true } else { return false } })
        #expect(try rig.device.enrolledFingers(user: Self.user) == [.leftIndex])

        try rig.bus.sensor("SCAN left-index")
        #expect(matched(outcome(try rig.device.verify(finger: .leftIndex)).0) == true)

        try rig.device.deleteEnrolledFinger(.leftIndex)
        #expect(try rig.device.enrolledFingers(user: Self.user) == [])
    }

    @Test func aSecondClaimIsBusyUntilTheFirstIsReleased() throws {
        let rig = try Rig()
        try rig.device.claim(user: Self.user)
        let other = try SystemBus.open(address: rig.bus.address).fprintdDefaultDevice()
        #expect {
            try other.claim(user: Self.user)
        } throws: { error in
            guard case let .device(kind, _, message) = error as? FprintError else { return false }
            return kind == .busy && !message.isEmpty
        }
        #expect(try rig.bus.claimFromAnotherClient() == "net.reactivated.Fprint.Error.AlreadyInUse")
        rig.device.release()
        rig.device.release()
        try other.claim(user: Self.user)
        other.release()
        #expect(try rig.bus.claimFromAnotherClient() == "claimed")
    }

    @Test func aClaimEndsWithTheConnection() throws {
        let bus = try PrivateSystemBus()
        do {
            let device = try SystemBus.open(address: bus.address).fprintdDefaultDevice()
            try device.claim(user: Self.user)
            #expect(try bus.claimFromAnotherClient() == "net.reactivated.Fprint.Error.AlreadyInUse")
        }
        #expect(try bus.claimFromAnotherClient() == "claimed")
    }

    @Test func deletingOrVerifyingWithoutAClaimIsRefused() throws {
        let rig = try Rig()
        let notClaimed: (any Error) -> Bool = { error in
            guard case .device(.notOpen, _, _) = error as? FprintError else { return false }
            return true
        }
        #expect(performing: { try rig.device.deleteEnrolledFinger(.rightIndex) }, throws: notClaimed)
        #expect(performing: { _ = try rig.device.verify() }, throws: notClaimed)
    }

    @Test func theLidThroughLogindAndNilWithoutIt() throws {
        let closed = try PrivateSystemBus(fprintd: false)
        try closed.startLogindMock(lidClosed: true)
        #expect(try SystemBus.open(address: closed.address).lidClosed() == true)
        let open = try PrivateSystemBus(fprintd: false)
        try open.startLogindMock(lidClosed: false)
        let connection = try SystemBus.open(address: open.address)
        #expect(connection.lidClosed() == false)
        // logind wins over ACPI.
        let acpi = try TempDirectory()
        mkdir(acpi.file("LID0"), 0o755)
        writeFile(acpi.file("LID0/state"), Array("state:      closed\n".utf8))
        #expect(LidState.closed(bus: connection, acpiDirectory: acpi.path) == false)

        let none = try PrivateSystemBus(fprintd: false)
        #expect(try SystemBus.open(address: none.address).lidClosed() == nil)
    }
}

/// The parts that need no bus.
struct FprintdMappingTests {
    @Test func theACPIFallback() throws {
        let acpi = try TempDirectory()
        #expect(LidState.closed(bus: nil, acpiDirectory: acpi.path) == nil)
        #expect(LidState.closed(bus: nil, acpiDirectory: acpi.file("missing")) == nil)
        mkdir(acpi.file("LID0"), 0o755)
        writeFile(acpi.file("LID0/state"), Array("state:      open\n".utf8))
        #expect(LidState.closed(bus: nil, acpiDirectory: acpi.path) == false)
        mkdir(acpi.file("LID1"), 0o755)
        writeFile(acpi.file("LID1/state"), Array("state:      closed\n".utf8))
        #expect(LidState.closed(bus: nil, acpiDirectory: acpi.path) == true)
    }

    @Test(arguments: [
        ("verify-match", true, "verified(true)"), ("verify-no-match", true, "verified(false)"),
        ("verify-retry-scan", false, "hint(general)"), ("verify-swipe-too-short", false, "hint(tooShort)"),
        ("verify-finger-not-centered", false, "hint(centerFinger)"), ("verify-remove-and-retry", false, "hint(removeFinger)"),
        ("verify-retry-scan", true, "retry(general)"), ("verify-disconnected", true, "device(removed)"),
        ("verify-unknown-error", true, "device(general)"), ("enroll-completed", true, "done"),
        ("enroll-stage-passed", false, "stage"), ("enroll-failed", true, "device(general)"),
        ("enroll-data-full", true, "device(dataFull)"), ("enroll-duplicate", true, "device(dataDuplicate)"),
        ("enroll-disconnected", true, "device(removed)"), ("enroll-swipe-too-short", false, "hint(tooShort)"),
        ("enroll-something-new", false, "ignored"), ("enroll-something-new", true, "device(unknown)"),
    ])
    func statusTable(status: String, done: Bool, expected: String) {
        let described: String
        switch FprintdStatus.interpret(status, done: done) {
        case let .hint(hint): described = "hint(\(hint))"
        case .stagePassed: described = "stage"
        case .ignored: described = "ignored"
        case .final(.verified(let matched)): described = "verified(\(matched))"
        case .final(.done): described = "done"
        case .final(.failed(.retry(let hint))): described = "retry(\(hint))"
        case .final(.failed(.device(let kind, _, _))): described = "device(\(kind))"
        case let .final(other): described = "\(other)"
        }
        #expect(described == expected)
    }

    @Test func fprintdErrorsKeepTheirMessage() {
        let prefix = "net.reactivated.Fprint.Error."
        #expect(BusErrors.map(name: prefix + "NoSuchDevice", message: "none", code: 5, member: "GetDefaultDevice") == .noReader)
        #expect(BusErrors.map(name: prefix + "AlreadyInUse", message: "in use", code: 16, member: "Claim")
                    == .device(.busy, code: 16, message: "in use"))
        #expect(BusErrors.map(name: prefix + "PermissionDenied", message: "Not Authorized: x", code: 1, member: "Claim")
                    == .other(domain: "fprintd", code: 1, message: "Not Authorized: x"))
        #expect(BusErrors.map(name: "org.freedesktop.DBus.Error.NoReply", message: "", code: 110, member: "Claim") == .timedOut)
        #expect(BusErrors.map(name: "org.freedesktop.DBus.Error.ServiceUnknown", message: "gone", code: 2, member: "GetDevices")
                    == .other(domain: "dbus", code: 2, message: "GetDevices failed: org.freedesktop.DBus.Error.ServiceUnknown: gone"))
    }
}
