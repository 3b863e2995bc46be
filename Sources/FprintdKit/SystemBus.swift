import CSystemd
import FprintKit
import Glibc
import SystemKit

public enum FprintdPresence: Sendable {
    /// net.reactivated.Fprint has an owner now.
    case running
    /// Nobody owns it, but the bus could start fprintd (a D-Bus service file names it).
    case activatable
    case absent
}

/// One connection to the system bus (sd_bus_open_system, which honours
/// DBUS_SYSTEM_BUS_ADDRESS). Not thread-safe: one user at a time (the broker serialises
/// reader use). Everything runs on the calling thread, and every wait has a deadline.
public final class SystemBus: @unchecked Sendable {
    let raw: OpaquePointer

    private init(raw: OpaquePointer) {
        self.raw = raw
    }

    deinit {
        // No flush: it would wait without a bound for a peer that does not read. Whatever
        // fprintd gave this connection (a claim) ends when it closes.
        sd_bus_close_unref(raw)
    }

    /// Connects to the system bus, or to the bus at `address` (a D-Bus address such as
    /// "unix:path=/run/dbus/system_bus_socket"; tests give a private bus's).
    public static func open(address: String? = nil) throws(FprintError) -> SystemBus {
        var bus: OpaquePointer? = nil
        var result: Int32
        if let address {
            result = sd_bus_new(&bus)
            if result >= 0, let bus {
                result = address.withCString { sd_bus_set_address(bus, $0) }
                if result >= 0 { result = sd_bus_set_bus_client(bus, 1) }
                if result >= 0 { result = sd_bus_start(bus) }
            }
        } else {
            result = sd_bus_open_system(&bus)
        }
        guard result >= 0, let bus else {
            if let bus { sd_bus_close_unref(bus) }
            let target = address ?? getenv("DBUS_SYSTEM_BUS_ADDRESS").map { String(cString: $0) }
                ?? "unix:path=/run/dbus/system_bus_socket"
            throw FprintError.other(domain: "dbus", code: -result,
                                    message: "cannot connect to the system bus at \(target): \(String(cString: strerror(-result)))")
        }
        let opened = SystemBus(raw: bus)
        // sd-bus's own calls (AddMatch when a signal match is installed) wait this long at most.
        _ = sd_bus_set_method_call_timeout(bus, 5_000_000)
        return opened
    }

    // MARK: fprintd

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
        let reply = try call(Fprintd.manager("GetDefaultDevice"), timeout: timeout)
        guard let path = try reply.readString(type: "o") else { throw BusMessage.malformed("no device path") }
        return FprintdDevice(bus: self, info: try deviceInfo(path: path, timeout: deadline - monotonicSeconds()))
    }

    /// Manager.GetDevices with each one's properties.
    public func fprintdDevices(timeout: Double = 5) throws(FprintError) -> [FprintdDeviceInfo] {
        let deadline = monotonicSeconds() + timeout
        let paths = try call(Fprintd.manager("GetDevices"), timeout: timeout).readStrings(type: "o")
        var devices: [FprintdDeviceInfo] = []
        for path in paths { devices.append(try deviceInfo(path: path, timeout: deadline - monotonicSeconds())) }
        return devices
    }

    func deviceInfo(path: String, timeout: Double) throws(FprintError) -> FprintdDeviceInfo {
        let reply = try call(BusCall(destination: Fprintd.service, path: path, interface: BusCall.properties,
                                     member: "GetAll", arguments: [Fprintd.deviceInterface]), timeout: timeout)
        var name = "", scanType = "", stages = -1
        try reply.readDictionary { (key, message) throws(FprintError) in
            switch key {
            case "name": name = try message.readVariant("s") { (m) throws(FprintError) in try m.readString() ?? "" }
            case "scan-type": scanType = try message.readVariant("s") { (m) throws(FprintError) in try m.readString() ?? "" }
            case "num-enroll-stages": stages = Int(try message.readVariant("i") { (m) throws(FprintError) in try m.readInt32() })
            default: try message.skip("v")
            }
        }
        return FprintdDeviceInfo(objectPath: path, name: name, scanType: scanType, enrollStages: stages)
    }

    /// The unique name that owns net.reactivated.Fprint now: signals are matched on it, so
    /// no other peer can forge a status.
    func fprintdOwner(timeout: Double) throws(FprintError) -> String {
        guard let owner = try call(BusCall.daemon("GetNameOwner", [Fprintd.service]), timeout: timeout).readString() else {
            throw BusMessage.malformed("no name owner")
        }
        return owner
    }

    // MARK: logind

    /// logind's Manager.LidClosed; nil when logind is not on the bus (it is never activated:
    /// NameHasOwner first). Bounded (1 s each call).
    public func lidClosed() -> Bool? {
        guard (try? nameHasOwner("org.freedesktop.login1", timeout: 1)) == true else { return nil }
        let get = BusCall(destination: "org.freedesktop.login1", path: "/org/freedesktop/login1", interface: BusCall.properties,
                          member: "Get", arguments: ["org.freedesktop.login1.Manager", "LidClosed"])
        guard let reply = try? call(get, timeout: 1) else { return nil }
        return try? reply.readVariant("b") { (m) throws(FprintError) in try m.readBool() }
    }

    // MARK: plumbing

    func nameHasOwner(_ name: String, timeout: Double) throws(FprintError) -> Bool {
        try call(BusCall.daemon("NameHasOwner", [name]), timeout: timeout).readBool()
    }

    /// One method call with string arguments, waiting at most `timeout` for the reply.
    /// Signals that arrive meanwhile stay queued for `dispatchPending`.
    @discardableResult
    func call(_ request: BusCall, timeout: Double) throws(FprintError) -> BusMessage {
        guard timeout > 0 else { throw FprintError.timedOut }
        var made: OpaquePointer? = nil
        let created = sd_bus_message_new_method_call(raw, &made, request.destination, request.path, request.interface,
                                                     request.member)
        guard created >= 0, let made else {
            throw FprintError.other(domain: "dbus", code: -created, message: "cannot make a D-Bus call to \(request.member)")
        }
        let message = BusMessage(owning: made)
        for argument in request.arguments { try message.append(argument) }
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer? = nil
        let usec = UInt64(max(timeout * 1e6, 1))
        let result = sd_bus_call(raw, message.raw, usec, &error, &reply)
        guard result >= 0, let reply else {
            let name = error.name.map { String(cString: $0) } ?? ""
            let text = error.message.map { String(cString: $0) } ?? String(cString: strerror(-result))
            throw BusErrors.map(name: name, message: text, code: -result, member: request.member)
        }
        return BusMessage(owning: reply)
    }

    /// A signal match on this connection; the match lasts as long as the returned slot.
    /// `userdata` must outlive the slot.
    func matchSignal(sender: String, path: String, interface: String, member: String,
                     handler: sd_bus_message_handler_t, userdata: UnsafeMutableRawPointer) throws(FprintError) -> BusSlot {
        var slot: OpaquePointer? = nil
        let result = sd_bus_match_signal(raw, &slot, sender, path, interface, member, handler, userdata)
        guard result >= 0, let slot else {
            throw FprintError.other(domain: "dbus", code: -result,
                                    message: "cannot watch \(member) signals: \(String(cString: strerror(-result)))")
        }
        return BusSlot(owning: slot)
    }

    /// Runs the callbacks for everything that has arrived. False when the connection broke.
    func dispatchPending() -> Bool {
        // Bounded: a peer flooding us cannot keep the caller here forever.
        for _ in 0..<1000 {
            let result = sd_bus_process(raw, nil)
            if result < 0 { return false }
            if result == 0 { return true }
        }
        return true
    }

    /// Waits until the bus has work, one of `others` is readable, or `deadline` passes;
    /// returns the readable ones among `others`.
    func waitForTraffic(until deadline: Double, others: [Int32]) -> [Int32] {
        let busFD = sd_bus_get_fd(raw)
        let events = sd_bus_get_events(raw)
        var fds = others.map { pollEntry($0) }
        if busFD >= 0 && events >= 0 { fds.append(pollEntry(busFD, Int16(truncatingIfNeeded: events))) }
        var until = deadline
        var busTimeout: UInt64 = 0
        if sd_bus_get_timeout(raw, &busTimeout) > 0 && busTimeout != UInt64.max {
            until = min(until, Double(busTimeout) / 1e6)
        }
        guard case .ready = waitReady(&fds, until: until) else { return [] }
        return fds.prefix(others.count).filter { $0.revents != 0 }.map(\.fd)
    }
}

/// One sd_bus_slot (a signal match), owned: the match goes when this is dropped.
final class BusSlot {
    private let raw: OpaquePointer

    init(owning raw: OpaquePointer) {
        self.raw = raw
    }

    deinit {
        sd_bus_slot_unref(raw)
    }
}

/// A method call: where to, and its string arguments.
struct BusCall {
    let destination: String
    let path: String
    let interface: String
    let member: String
    var arguments: [String] = []

    static let properties = "org.freedesktop.DBus.Properties"

    static func daemon(_ member: String, _ arguments: [String] = []) -> BusCall {
        BusCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                member: member, arguments: arguments)
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
