import CSystemd
import Glibc
import SystemKit

/// What went wrong on the bus, for the client to say in its own words (FprintdKit's
/// `BusErrors` turns fprintd's replies into `FprintError`s).
public enum BusError: Error, Equatable, Sendable {
    /// No time was left to make the call.
    case timedOut
    /// A method call failed: the D-Bus error's name (empty when sd-bus failed before an
    /// answer), its message (or errno's), the errno, and the method.
    case callFailed(name: String, message: String, code: Int32, member: String)
    /// Connecting, making a message, reading or appending a value, or matching signals failed:
    /// the errno and what was being done (for logs).
    case failed(code: Int32, message: String)
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
    public static func open(address: String? = nil) throws(BusError) -> SystemBus {
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
            throw .failed(code: -result, message: "cannot connect to the system bus at \(target): \(String(cString: strerror(-result)))")
        }
        let opened = SystemBus(raw: bus)
        // sd-bus's own calls (AddMatch when a signal match is installed) wait this long at most.
        _ = sd_bus_set_method_call_timeout(bus, 5_000_000)
        return opened
    }

    /// org.freedesktop.DBus.NameHasOwner: whether `name` has an owner now (never activates it).
    public func nameHasOwner(_ name: String, timeout: Double) throws(BusError) -> Bool {
        try call(BusCall.daemon("NameHasOwner", [name]), timeout: timeout).readBool()
    }

    // MARK: logind

    /// logind's Manager.LidClosed; nil when logind is not on the bus. Bounded.
    public func lidClosed() -> Bool? { logindFlag("LidClosed") }

    /// logind's Manager.PreparingForSleep: true from before PrepareForSleep(true) until the
    /// computer woke; nil when logind is not on the bus. Bounded.
    public func preparingForSleep() -> Bool? { logindFlag("PreparingForSleep") }

    /// A boolean property of logind's Manager; nil when logind is not on the bus (it is never
    /// activated: NameHasOwner first). Bounded (1 s each call).
    private func logindFlag(_ property: String) -> Bool? {
        guard (try? nameHasOwner("org.freedesktop.login1", timeout: 1)) == true else { return nil }
        let get = BusCall(destination: "org.freedesktop.login1", path: "/org/freedesktop/login1", interface: BusCall.properties,
                          member: "Get", arguments: ["org.freedesktop.login1.Manager", property])
        guard let reply = try? call(get, timeout: 1) else { return nil }
        return try? reply.readVariant("b") { (m) throws(BusError) in try m.readBool() }
    }

    // MARK: plumbing

    /// One method call with string arguments, waiting at most `timeout` for the reply.
    /// Signals that arrive meanwhile stay queued for `dispatchPending`.
    @discardableResult
    public func call(_ request: BusCall, timeout: Double) throws(BusError) -> BusMessage {
        guard timeout > 0 else { throw .timedOut }
        var made: OpaquePointer? = nil
        let created = sd_bus_message_new_method_call(raw, &made, request.destination, request.path, request.interface,
                                                     request.member)
        guard created >= 0, let made else {
            throw .failed(code: -created, message: "cannot make a D-Bus call to \(request.member)")
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
            throw .callFailed(name: name, message: text, code: -result, member: request.member)
        }
        return BusMessage(owning: reply)
    }

    /// A signal match on this connection: `handler` gets each matching signal, on the thread
    /// that calls `dispatchPending`, for as long as the returned match is kept.
    public func matchSignal(sender: String, path: String, interface: String, member: String,
                            _ handler: @escaping (BusMessage) -> Void) throws(BusError) -> BusMatch {
        let receiver = BusMatch.Receiver(handler)
        var slot: OpaquePointer? = nil
        let result = sd_bus_match_signal(raw, &slot, sender, path, interface, member, BusMatch.callback,
                                         Unmanaged.passUnretained(receiver).toOpaque())
        guard result >= 0, let slot else {
            throw .failed(code: -result, message: "cannot watch \(member) signals: \(String(cString: strerror(-result)))")
        }
        return BusMatch(owning: slot, receiver: receiver)
    }

    /// Runs the callbacks for everything that has arrived. False when the connection broke.
    public func dispatchPending() -> Bool {
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
    public func waitForTraffic(until deadline: Double, others: [Int32]) -> [Int32] {
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

/// One signal match (an sd_bus_slot), owned: the match goes when this is dropped, and its
/// handler with it (after the slot, so sd-bus never calls a handler that is gone).
public final class BusMatch {
    private let raw: OpaquePointer
    private let receiver: Receiver

    /// The handler, kept where sd-bus's callback finds it (its userdata).
    final class Receiver {
        let handler: (BusMessage) -> Void
        init(_ handler: @escaping (BusMessage) -> Void) { self.handler = handler }
    }

    static let callback: sd_bus_message_handler_t = { message, userdata, _ in
        guard let message, let userdata else { return 0 }
        Unmanaged<Receiver>.fromOpaque(userdata).takeUnretainedValue().handler(BusMessage(borrowing: message))
        return 0
    }

    init(owning raw: OpaquePointer, receiver: Receiver) {
        self.raw = raw
        self.receiver = receiver
    }

    deinit {
        sd_bus_slot_unref(raw)
    }
}

/// A method call: where to, and its string arguments.
public struct BusCall: Sendable {
    public let destination: String
    public let path: String
    public let interface: String
    public let member: String
    public var arguments: [String] = []

    public init(destination: String, path: String, interface: String, member: String, arguments: [String] = []) {
        self.destination = destination
        self.path = path
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }

    public static let properties = "org.freedesktop.DBus.Properties"

    public static func daemon(_ member: String, _ arguments: [String] = []) -> BusCall {
        BusCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                member: member, arguments: arguments)
    }
}

