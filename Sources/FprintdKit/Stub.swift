// TEMPORARY stub of the API helper-8 builds; replaced at merge.
import FprintKit

public enum FprintdPresence: Sendable { case running, activatable, absent }

public struct FprintdDeviceInfo: Sendable, Equatable {
    public let objectPath: String
    public let name: String
    public let scanType: String
    public let enrollStages: Int
}

public final class SystemBus: @unchecked Sendable {
    public static func open() throws(FprintError) -> SystemBus { throw .other(domain: "dbus", code: 0, message: "stub") }
    public func fprintdPresence() -> FprintdPresence { .absent }
    public func fprintdDefaultDevice(timeout: Double = 5) throws(FprintError) -> FprintdDevice { throw .noReader }
    public func fprintdDevices(timeout: Double = 5) throws(FprintError) -> [FprintdDeviceInfo] { [] }
    public func lidClosed() -> Bool? { nil }
}

public final class FprintdDevice: @unchecked Sendable {
    public let info: FprintdDeviceInfo
    init(info: FprintdDeviceInfo) { self.info = info }
    public func enrolledFingers(user: String, timeout: Double = 5) throws(FprintError) -> [Finger] { [] }
    public func claim(user: String, timeout: Double = 10) throws(FprintError) {}
    public func release() {}
    public func verify(finger: Finger? = nil) throws(FprintError) -> FprintdOperation { FprintdOperation() }
    public func enroll(finger: Finger) throws(FprintError) -> FprintdOperation { FprintdOperation() }
    public func deleteEnrolledFinger(_ finger: Finger, timeout: Double = 5) throws(FprintError) {}
}

public final class FprintdOperation: @unchecked Sendable {
    public func wait(timeout: Double, cancelFD: Int32? = nil, onEvent: (ReaderEvent) -> Void = { _ in }) -> OperationResult { .failed(.cancelled) }
    public func cancel() {}
}

public enum LidState {
    public static func closed(bus: SystemBus?, acpiDirectory: String = "/proc/acpi/button/lid") -> Bool? { nil }
}
