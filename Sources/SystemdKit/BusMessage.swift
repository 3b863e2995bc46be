import CSystemd
import Glibc

/// One sd_bus_message, owned: unreferenced when dropped. Reads and appends only the basic
/// types fprintd and logind use (strings, object paths, booleans, int32) through sd-bus's
/// non-variadic calls.
public final class BusMessage {
    let raw: OpaquePointer

    /// Takes ownership of one reference.
    init(owning raw: OpaquePointer) {
        self.raw = raw
    }

    /// A message sd-bus lends to a callback: takes a reference of our own.
    convenience init(borrowing raw: OpaquePointer) {
        self.init(owning: sd_bus_message_ref(raw))
    }

    deinit {
        sd_bus_message_unref(raw)
    }

    public var member: String? { sd_bus_message_get_member(raw).map { String(cString: $0) } }
    public var interface: String? { sd_bus_message_get_interface(raw).map { String(cString: $0) } }

    public func append(_ string: String) throws(BusError) {
        try check(string.withCString { sd_bus_message_append_basic(raw, BusType.string, $0) }, "append an argument")
    }

    /// The next string (or object path, `type` "o"); nil at the end of the enclosing container.
    public func readString(type: Unicode.Scalar = "s") throws(BusError) -> String? {
        var value: UnsafePointer<CChar>? = nil
        let read = sd_bus_message_read_basic(raw, BusType.code(type), &value)
        try check(read, "read a string")
        guard read > 0, let value else { return nil }
        return String(cString: value)
    }

    public func readBool() throws(BusError) -> Bool {
        var value: Int32 = 0
        guard try check(sd_bus_message_read_basic(raw, BusType.bool, &value), "read a boolean") > 0 else {
            throw BusMessage.malformed("a boolean is missing")
        }
        return value != 0
    }

    public func readInt32() throws(BusError) -> Int32 {
        var value: Int32 = 0
        guard try check(sd_bus_message_read_basic(raw, BusType.code("i"), &value), "read an integer") > 0 else {
            throw BusMessage.malformed("an integer is missing")
        }
        return value
    }

    /// Enters the next container (`type` a, e, v, r) holding `contents`; false at the end of
    /// the enclosing one.
    public func enter(_ type: Unicode.Scalar, _ contents: String) throws(BusError) -> Bool {
        let entered = contents.withCString { sd_bus_message_enter_container(raw, BusType.code(type), $0) }
        return try check(entered, "enter a container") > 0
    }

    public func exit() throws(BusError) {
        try check(sd_bus_message_exit_container(raw), "leave a container")
    }

    public func skip(_ types: String) throws(BusError) {
        try check(types.withCString { sd_bus_message_skip(raw, $0) }, "skip a value")
    }

    /// An array of strings (`type` "s") or object paths ("o").
    public func readStrings(type: Unicode.Scalar = "s") throws(BusError) -> [String] {
        guard try enter("a", String(Character(type))) else { throw BusMessage.malformed("an array is missing") }
        var values: [String] = []
        while let value = try readString(type: type) { values.append(value) }
        try exit()
        return values
    }

    /// A variant holding `contents`, read by `body`.
    public func readVariant<T>(_ contents: String, _ body: (BusMessage) throws(BusError) -> T) throws(BusError) -> T {
        guard try enter("v", contents) else { throw BusMessage.malformed("a variant is missing") }
        let value = try body(self)
        try exit()
        return value
    }

    /// Calls `body` with each key of an a{sv} dictionary; `body` must read (or skip) the
    /// variant that follows.
    public func readDictionary(_ body: (String, BusMessage) throws(BusError) -> Void) throws(BusError) {
        guard try enter("a", "{sv}") else { throw BusMessage.malformed("a dictionary is missing") }
        while try enter("e", "sv") {
            guard let key = try readString() else { throw BusMessage.malformed("a dictionary key is missing") }
            try body(key, self)
            try exit()
        }
        try exit()
    }

    @discardableResult
    private func check(_ result: Int32, _ what: String) throws(BusError) -> Int32 {
        guard result < 0 else { return result }
        throw .failed(code: -result, message: "cannot \(what) in a D-Bus message: " + String(cString: strerror(-result)))
    }

    public static func malformed(_ what: String) -> BusError {
        .failed(code: EBADMSG, message: "unexpected D-Bus reply: \(what)")
    }
}

/// D-Bus type codes as sd-bus takes them (a C `char`).
enum BusType {
    static func code(_ scalar: Unicode.Scalar) -> CChar { CChar(truncatingIfNeeded: UInt8(ascii: scalar)) }
    static let string = code("s")
    static let bool = code("b")
}
