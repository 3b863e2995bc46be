import Glibc
import ReaderValues
import SystemdKit
import SystemKit

public enum FprintdPresence: Sendable {
    /// net.reactivated.Fprint has an owner now.
    case running
    /// Nobody owns it, but the bus could start fprintd (a D-Bus service file names it).
    case activatable
    case absent
}

extension SystemBus {
    /// Whether net.reactivated.Fprint has an owner now (.running), could be activated
    /// (.activatable), or neither (.absent). Never activates it. Bounded (1 s).
    public func fprintdPresence() -> FprintdPresence {
        let deadline = monotonicSeconds() + 1
        guard let owned = try? nameHasOwner(Fprintd.service, timeout: 1) else { return .absent }
        if owned { return .running }
        let remaining = deadline - monotonicSeconds()
        guard remaining > 0,
              let reply = try? call(BusCall.daemon("ListActivatableNames"), timeout: remaining),
              let names = try? reply.readStrings() else { return .absent }
        return names.contains(Fprintd.service) ? .activatable : .absent
    }

    /// Manager.GetDefaultDevice → the device; fprintd's NoSuchDevice → FprintError.noReader.
    public func fprintdDefaultDevice(timeout: Double = 5) throws(FprintError) -> FprintdDevice {
        let deadline = monotonicSeconds() + timeout
        let path = try overBus { () throws(BusError) -> String in
            guard let path = try call(Fprintd.manager("GetDefaultDevice"), timeout: timeout).readString(type: "o") else {
                throw BusMessage.malformed("no device path")
            }
            return path
        }
        return FprintdDevice(bus: self, info: try deviceInfo(path: path, timeout: deadline - monotonicSeconds()))
    }

    /// Manager.GetDevices with each one's properties.
    public func fprintdDevices(timeout: Double = 5) throws(FprintError) -> [FprintdDeviceInfo] {
        let deadline = monotonicSeconds() + timeout
        let paths = try overBus { () throws(BusError) in try call(Fprintd.manager("GetDevices"), timeout: timeout).readStrings(type: "o") }
        var devices: [FprintdDeviceInfo] = []
        for path in paths { devices.append(try deviceInfo(path: path, timeout: deadline - monotonicSeconds())) }
        return devices
    }

    func deviceInfo(path: String, timeout: Double) throws(FprintError) -> FprintdDeviceInfo {
        try overBus { () throws(BusError) -> FprintdDeviceInfo in
            let reply = try call(BusCall(destination: Fprintd.service, path: path, interface: BusCall.properties,
                                         member: "GetAll", arguments: [Fprintd.deviceInterface]), timeout: timeout)
            var name = "", scanType = "", stages = -1
            try reply.readDictionary { (key, message) throws(BusError) in
                switch key {
                case "name": name = try message.readVariant("s") { (m) throws(BusError) in try m.readString() ?? "" }
                case "scan-type": scanType = try message.readVariant("s") { (m) throws(BusError) in try m.readString() ?? "" }
                case "num-enroll-stages": stages = Int(try message.readVariant("i") { (m) throws(BusError) in try m.readInt32() })
                default: try message.skip("v")
                }
            }
            return FprintdDeviceInfo(objectPath: path, name: name, scanType: scanType, enrollStages: stages)
        }
    }

    /// The unique name that owns net.reactivated.Fprint now: signals are matched on it, so
    /// no other peer can forge a status.
    func fprintdOwner(timeout: Double) throws(FprintError) -> String {
        try overBus { () throws(BusError) -> String in
            guard let owner = try call(BusCall.daemon("GetNameOwner", [Fprintd.service]), timeout: timeout).readString() else {
                throw BusMessage.malformed("no name owner")
            }
            return owner
        }
    }
}

/// `body`'s bus work, its failures said as fprintd's callers know them.
func overBus<T>(_ body: () throws(BusError) -> T) throws(FprintError) -> T {
    do { return try body() } catch { throw FprintError(error) }
}

extension FprintError {
    /// A bus failure: fprintd's error replies through `BusErrors`, the rest as D-Bus's.
    init(_ error: BusError) {
        switch error {
        case .timedOut: self = .timedOut
        case let .callFailed(name, message, code, member): self = BusErrors.map(name: name, message: message, code: code, member: member)
        case let .failed(code, message): self = .other(domain: "dbus", code: code, message: message)
        }
    }
}

/// fprintd's names on the bus.
enum Fprintd {
    static let service = "net.reactivated.Fprint"
    static let managerPath = "/net/reactivated/Fprint/Manager"
    static let managerInterface = "net.reactivated.Fprint.Manager"
    static let deviceInterface = "net.reactivated.Fprint.Device"
    static let errorPrefix = "net.reactivated.Fprint.Error."

    static func manager(_ member: String) -> BusCall {
        BusCall(destination: service, path: managerPath, interface: managerInterface, member: member)
    }
}

/// D-Bus error replies as FprintError, in one table. fprintd's message is kept.
enum BusErrors {
    static func map(name: String, message: String, code: Int32, member: String) -> FprintError {
        if code == ETIMEDOUT || name == "org.freedesktop.DBus.Error.NoReply" || name == "org.freedesktop.DBus.Error.Timeout" {
            return .timedOut
        }
        guard name.hasPrefix(Fprintd.errorPrefix) else {
            let what = name.isEmpty ? message : "\(name): \(message)"
            return .other(domain: "dbus", code: code, message: "\(member) failed: \(what)")
        }
        switch name.dropFirst(Fprintd.errorPrefix.count) {
        case "NoSuchDevice": return .noReader
        case "AlreadyInUse": return .device(.busy, code: code, message: message)
        case "ClaimDevice": return .device(.notOpen, code: code, message: message)
        case "NoEnrolledPrints": return .device(.dataNotFound, code: code, message: message)
        case "Internal": return .device(.general, code: code, message: message)
        // PermissionDenied, InvalidFingername, NoActionInProgress, PrintsNotDeleted, ...
        default: return .other(domain: "fprintd", code: code, message: message)
        }
    }
}
