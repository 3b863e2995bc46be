import CGio
import Glibc

/// Why the session bus could not be used.
public struct BusServiceError: Error, CustomStringConvertible, Sendable {
    public let operation: String
    public let message: String

    init(_ operation: String, _ error: UnsafeMutablePointer<GError>?) {
        self.operation = operation
        message = String(cString: fs_error_message(error))
        if let error { g_error_free(error) }
    }

    init(_ operation: String, message: String) {
        self.operation = operation
        self.message = message
    }

    public var description: String { "\(operation): \(message)" }
}

/// The agent's connection to the session bus (GDBus): the objects it exports, the signals it
/// sends, the names it watches. Main thread only: every callback runs on the main loop.
public final class SessionBus {
    private let connection: OpaquePointer

    private init(_ connection: OpaquePointer) { self.connection = connection }

    deinit { fs_gio_unref(UnsafeMutableRawPointer(connection)) }

    /// The session bus of DBUS_SESSION_BUS_ADDRESS (the user's, or a test's private one).
    public static func connect() throws(BusServiceError) -> SessionBus {
        var error: UnsafeMutablePointer<GError>? = nil
        guard let connection = g_bus_get_sync(G_BUS_TYPE_SESSION, nil, &error) else {
            throw BusServiceError("connecting to the session bus", error)
        }
        // The agent decides when to end, not the bus going away under it.
        g_dbus_connection_set_exit_on_close(connection, 0)
        return SessionBus(connection)
    }

    /// This connection's unique name (":1.7").
    public var uniqueName: String {
        guard let name = g_dbus_connection_get_unique_name(connection) else { return "" }
        return String(cString: name)
    }

    /// Asks for the well-known `name`: true when this connection owns it now. Without
    /// `replace` a running owner keeps it (a second agent says so and exits).
    public func requestName(_ name: String, replace: Bool) throws(BusServiceError) -> Bool {
        // DBUS_NAME_FLAG_REPLACE_EXISTING (2) | DBUS_NAME_FLAG_DO_NOT_QUEUE (4)
        let flags: UInt32 = (replace ? 2 : 0) | 4
        let reply = try call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                             method: "RequestName", [.string(name), .uint32(flags)])
        // DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER (1), ALREADY_OWNER (4)
        guard case let .uint32(code)? = reply.first else { return false }
        return code == 1 || code == 4
    }

    /// What the bus daemon says of a connection: its process and user, which the daemon read
    /// from the socket (SO_PEERCRED) when it connected.
    public func credentials(of uniqueName: String) throws(BusServiceError) -> (pid: pid_t?, uid: uid_t?) {
        let reply = try call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                             method: "GetConnectionCredentials", [.string(uniqueName)])
        guard case let .dictionary(entries)? = reply.first else { return (nil, nil) }
        let pid = entries["ProcessID"]?.integer.flatMap { pid_t(exactly: $0) }
        let uid = entries["UnixUserID"]?.integer.flatMap { uid_t(exactly: $0) }
        return (pid, uid)
    }

    /// A blocking method call (bounded by `timeout` seconds); the reply's values.
    public func call(destination: String, path: String, interface: String, method: String, _ arguments: [BusValue],
                     timeout: Double = 5) throws(BusServiceError) -> [BusValue] {
        guard let parameters = BusValue.tuple(arguments).makeVariant() else {
            throw BusServiceError(method, message: "arguments that cannot be sent")
        }
        var error: UnsafeMutablePointer<GError>? = nil
        guard let reply = g_dbus_connection_call_sync(connection, destination, path, interface, method, parameters, nil,
                                                      G_DBUS_CALL_FLAGS_NONE, Int32(timeout * 1000), nil, &error) else {
            throw BusServiceError(method, error)
        }
        defer { g_variant_unref(reply) }
        guard case let .tuple(values) = BusValue(reading: reply) else { return [] }
        return values
    }

    /// Exports an object at `path` implementing `interface` as `introspectionXML` describes
    /// it; `handler` gets every call (and must answer each, or the call answers "failed" when
    /// dropped). Returns the registration, to `unexport`.
    public func export(path: String, introspectionXML: String, interface: String,
                       _ handler: @escaping (MethodCall) -> Void) throws(BusServiceError) -> UInt32 {
        var error: UnsafeMutablePointer<GError>? = nil
        guard let node = g_dbus_node_info_new_for_xml(introspectionXML, &error) else { throw BusServiceError("the interface XML", error) }
        defer { g_dbus_node_info_unref(node) }
        guard let info = g_dbus_node_info_lookup_interface(node, interface) else {
            throw BusServiceError("the interface XML", message: "no interface \(interface)")
        }
        let box = Unmanaged.passRetained(Handler(handler)).toOpaque()
        var vtable = GDBusInterfaceVTable()
        vtable.method_call = { _, sender, path, interface, method, parameters, invocation, raw in
            guard let raw, let invocation else { return }
            let call = MethodCall(invocation: invocation, sender: sender.map { String(cString: $0) } ?? "",
                                  path: path.map { String(cString: $0) } ?? "", interface: interface.map { String(cString: $0) } ?? "",
                                  method: method.map { String(cString: $0) } ?? "", parameters: parameters)
            Unmanaged<Handler>.fromOpaque(raw).takeUnretainedValue().body(call)
        }
        let id = g_dbus_connection_register_object(connection, path, info, &vtable, box, { raw in
            guard let raw else { return }
            Unmanaged<Handler>.fromOpaque(raw).release()
        }, &error)
        guard id != 0 else { throw BusServiceError("exporting \(path)", error) }
        return id
    }

    public func unexport(_ registration: UInt32) {
        _ = g_dbus_connection_unregister_object(connection, registration)
    }

    private final class Handler {
        let body: (MethodCall) -> Void
        init(_ body: @escaping (MethodCall) -> Void) { self.body = body }
    }

    /// Sends a signal to `destination` only (unicast), with `descriptors` as its `h` values'
    /// list (indexes into it); false when it could not be sent.
    @discardableResult
    public func emit(to destination: String, path: String, interface: String, signal: String, _ arguments: [BusValue],
                     descriptors: [Int32] = []) -> Bool {
        guard let message = g_dbus_message_new_signal(path, interface, signal) else { return false }
        defer { fs_gio_unref(UnsafeMutableRawPointer(message)) }
        g_dbus_message_set_destination(message, destination)
        guard let body = BusValue.tuple(arguments).makeVariant() else { return false }
        g_dbus_message_set_body(message, body)
        if !descriptors.isEmpty {
            guard let list = FDList.make(descriptors) else { return false }
            defer { fs_gio_unref(UnsafeMutableRawPointer(list)) }
            g_dbus_message_set_unix_fd_list(message, list)
        }
        var error: UnsafeMutablePointer<GError>? = nil
        let sent = g_dbus_connection_send_message(connection, message, G_DBUS_SEND_MESSAGE_FLAGS_NONE, nil, &error) != 0
        if let error { g_error_free(error) }
        return sent
    }

    /// Calls `vanished` (once) when `uniqueName` leaves the bus; the id ends the watch.
    public func whenGone(_ uniqueName: String, _ vanished: @escaping () -> Void) -> UInt32 {
        final class Watch {
            var body: (() -> Void)?
            init(_ body: @escaping () -> Void) { self.body = body }
        }
        let box = Unmanaged.passRetained(Watch(vanished)).toOpaque()
        return g_dbus_connection_signal_subscribe(connection, "org.freedesktop.DBus", "org.freedesktop.DBus", "NameOwnerChanged",
                                                  "/org/freedesktop/DBus", uniqueName, G_DBUS_SIGNAL_FLAGS_NONE,
                                                  { _, _, _, _, _, parameters, raw in
            guard let raw, let parameters else { return }
            // (name, old owner, new owner): gone when the new owner is empty.
            guard case let .tuple(values) = BusValue(reading: parameters), values.count == 3, values[2].string == "" else { return }
            let watch = Unmanaged<Watch>.fromOpaque(raw).takeUnretainedValue()
            let body = watch.body
            watch.body = nil
            body?()
        }, box, { raw in
            guard let raw else { return }
            Unmanaged<Watch>.fromOpaque(raw).release()
        })
    }

    /// Calls `closed` once the bus is gone (the session ended or the daemon died): with
    /// nobody left to answer, the caller ends instead of waiting for its idle timer.
    public func whenClosed(_ closed: @escaping () -> Void) {
        final class Watch {
            let body: () -> Void
            init(_ body: @escaping () -> Void) { self.body = body }
        }
        // Lives as long as the connection, which lives as long as the process.
        let box = Unmanaged.passRetained(Watch(closed)).toOpaque()
        _ = fs_connection_when_closed(connection, { _, _, _, raw in
            guard let raw else { return }
            Unmanaged<Watch>.fromOpaque(raw).takeUnretainedValue().body()
        }, box)
    }

    public func endWatch(_ id: UInt32) {
        if id != 0 { g_dbus_connection_signal_unsubscribe(connection, id) }
    }
}

/// GUnixFDList, built from descriptors (duplicated into it: the caller keeps its own).
enum FDList {
    static func make(_ descriptors: [Int32]) -> UnsafeMutablePointer<GUnixFDList>? {
        guard let list = g_unix_fd_list_new() else { return nil }
        for fd in descriptors {
            var error: UnsafeMutablePointer<GError>? = nil
            if g_unix_fd_list_append(list, fd, &error) < 0 {
                if let error { g_error_free(error) }
                fs_gio_unref(UnsafeMutableRawPointer(list))
                return nil
            }
        }
        return list
    }
}

/// One call to an exported object. Answered exactly once: `reply`, `fail`, or (dropped
/// unanswered) a "failed" error, so a caller never waits for nothing.
public final class MethodCall {
    private var invocation: OpaquePointer?
    public let sender: String
    public let path: String
    public let interface: String
    public let method: String
    /// The call's arguments, in order.
    public let arguments: [BusValue]

    init(invocation: OpaquePointer, sender: String, path: String, interface: String, method: String,
         parameters: OpaquePointer?) {
        // The invocation is lent to the handler: ours until answered.
        self.invocation = OpaquePointer(g_object_ref(UnsafeMutableRawPointer(invocation)))
        self.sender = sender
        self.path = path
        self.interface = interface
        self.method = method
        if let parameters, case let .tuple(values) = BusValue(reading: parameters) { arguments = values } else { arguments = [] }
    }

    deinit {
        if invocation != nil { fail("org.freedesktop.DBus.Error.Failed", "The request was dropped without an answer.") }
    }

    /// A duplicate of the descriptor the call's `h` argument `handle` names (the caller owns
    /// it, close-on-exec); nil when there is none.
    public func descriptor(_ handle: Int32) -> Int32? {
        guard let invocation, let message = g_dbus_method_invocation_get_message(invocation),
              let list = g_dbus_message_get_unix_fd_list(message) else { return nil }
        var error: UnsafeMutablePointer<GError>? = nil
        let fd = g_unix_fd_list_get(list, handle, &error)
        if let error { g_error_free(error) }
        guard fd >= 0 else { return nil }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return fd
    }

    public func reply(_ values: [BusValue] = [], descriptors: [Int32] = []) {
        guard let invocation else { return }
        self.invocation = nil
        defer { fs_gio_unref(UnsafeMutableRawPointer(invocation)) }
        guard let body = BusValue.tuple(values).makeVariant() else {
            g_dbus_method_invocation_return_dbus_error(OpaquePointer(g_object_ref(UnsafeMutableRawPointer(invocation))),
                                                       "org.freedesktop.DBus.Error.Failed", "The answer could not be built.")
            return
        }
        let list = descriptors.isEmpty ? nil : FDList.make(descriptors)
        defer { if let list { fs_gio_unref(UnsafeMutableRawPointer(list)) } }
        // return_value* consume a reference to the invocation: give them one of their own.
        let owned = OpaquePointer(g_object_ref(UnsafeMutableRawPointer(invocation)))
        g_dbus_method_invocation_return_value_with_unix_fd_list(owned, body, list)
    }

    public func fail(_ name: String, _ message: String) {
        guard let invocation else { return }
        self.invocation = nil
        defer { fs_gio_unref(UnsafeMutableRawPointer(invocation)) }
        g_dbus_method_invocation_return_dbus_error(OpaquePointer(g_object_ref(UnsafeMutableRawPointer(invocation))), name, message)
    }
}
