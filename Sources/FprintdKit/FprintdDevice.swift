import ReaderValues
import SystemdKit
import SystemKit

public struct FprintdDeviceInfo: Sendable, Equatable {
    /// "/net/reactivated/Fprint/Device/0"
    public let objectPath: String
    /// The "name" property.
    public let name: String
    /// "press" or "swipe".
    public let scanType: String
    /// "num-enroll-stages" (-1 when fprintd does not know it yet).
    public let enrollStages: Int
}

/// One fprintd device (net.reactivated.Fprint.Device) over a `SystemBus` connection. A
/// claim made here is released by `release()`, when this is dropped, or when the connection
/// closes (fprintd watches its claimant).
public final class FprintdDevice: @unchecked Sendable {
    public let info: FprintdDeviceInfo
    let bus: SystemBus
    private var claimed = false

    init(bus: SystemBus, info: FprintdDeviceInfo) {
        self.bus = bus
        self.info = info
    }

    deinit {
        release()
    }

    /// ListEnrolledFingers(user); fprintd's NoEnrolledPrints → []. Unknown finger names are
    /// skipped.
    public func enrolledFingers(user: String, timeout: Double = 5) throws(FprintError) -> [Finger] {
        do {
            let names = try overBus { () throws(BusError) in
                try bus.call(method("ListEnrolledFingers", [user]), timeout: timeout).readStrings()
            }
            return names.compactMap { Finger(name: $0) }
        } catch .device(.dataNotFound, _, _) {
            return []
        }
    }

    /// Claim(user). AlreadyInUse → `.device(.busy, ...)`; PermissionDenied →
    /// `.other(domain: "fprintd", ...)` with fprintd's message.
    public func claim(user: String, timeout: Double = 10) throws(FprintError) {
        try overBus { () throws(BusError) in try bus.call(method("Claim", [user]), timeout: timeout) }
        claimed = true
    }

    /// Release(); errors ignored (the claim also ends when the bus connection closes).
    /// Idempotent.
    public func release() {
        guard claimed else { return }
        claimed = false
        _ = try? bus.call(method("Release"), timeout: FprintdOperation.stopGrace)
    }

    /// VerifyStart with the finger's name, or "any". See `FprintdOperation` for the events.
    public func verify(finger: Finger? = nil) throws(FprintError) -> FprintdOperation {
        try FprintdOperation(device: self, kind: .verify, finger: finger?.name ?? "any", stages: info.enrollStages)
    }

    /// EnrollStart(finger): `.enrollProgress` per stage passed, `.hint` for retries; `.done`
    /// at the end, or `.failed` (`.device(.dataDuplicate)`, `.device(.dataFull)`, ...).
    public func enroll(finger: Finger) throws(FprintError) -> FprintdOperation {
        // The stage count is only certain once the device is claimed: ask again now.
        let stages = (try? bus.deviceInfo(path: info.objectPath, timeout: 2).enrollStages) ?? info.enrollStages
        return try FprintdOperation(device: self, kind: .enroll, finger: finger.name, stages: stages)
    }

    /// DeleteEnrolledFinger(finger); needs a claim (for the user whose print goes).
    public func deleteEnrolledFinger(_ finger: Finger, timeout: Double = 5) throws(FprintError) {
        try overBus { () throws(BusError) in try bus.call(method("DeleteEnrolledFinger", [finger.name]), timeout: timeout) }
    }

    func method(_ member: String, _ arguments: [String] = []) -> BusCall {
        BusCall(destination: Fprintd.service, path: info.objectPath, interface: Fprintd.deviceInterface, member: member,
                arguments: arguments)
    }
}
