import CGio

/// A D-Bus value as the session agent's interface uses them, without GVariant in sight: built
/// into a GVariant only to be sent, read out of one as it arrives.
public indirect enum BusValue: Equatable, Sendable {
    case string(String)
    case objectPath(String)
    case bool(Bool)
    case uint32(UInt32)
    case int32(Int32)
    case int64(Int64)
    case uint64(UInt64)
    /// `h`: an index into the message's descriptor list.
    case handle(Int32)
    /// `v`
    case variant(BusValue)
    /// `a…`, with the element's signature (an empty array needs it).
    case array(element: String, [BusValue])
    /// `a{sv}`, the options and results of every call.
    case dictionary([String: BusValue])
    /// `(…)`
    case tuple([BusValue])
    /// `ay`
    case bytes([UInt8])
    /// A type the agent does not read (kept so a caller can say so).
    case unsupported(String)

    /// An array of strings (`as`).
    public static func strings(_ values: [String]) -> BusValue { .array(element: "s", values.map { .string($0) }) }

    public var string: String? {
        if case let .string(value) = self { return value }
        if case let .objectPath(value) = self { return value }
        return nil
    }

    public var bool: Bool? {
        if case let .bool(value) = self { return value }
        return nil
    }

    /// Any whole number that fits.
    public var integer: Int64? {
        switch self {
        case let .uint32(value): return Int64(value)
        case let .int32(value): return Int64(value)
        case let .int64(value): return value
        case let .uint64(value): return value <= UInt64(Int64.max) ? Int64(value) : nil
        default: return nil
        }
    }

    public var stringArray: [String]? {
        guard case let .array(_, elements) = self else { return nil }
        let strings = elements.compactMap(\.string)
        return strings.count == elements.count ? strings : nil
    }

    /// What a variant holds, or the value itself.
    public var unboxed: BusValue {
        if case let .variant(inner) = self { return inner.unboxed }
        return self
    }

    /// The D-Bus signature.
    public var signature: String {
        switch self {
        case .string: return "s"
        case .objectPath: return "o"
        case .bool: return "b"
        case .uint32: return "u"
        case .int32: return "i"
        case .int64: return "x"
        case .uint64: return "t"
        case .handle: return "h"
        case .variant: return "v"
        case let .array(element, _): return "a" + element
        case .dictionary: return "a{sv}"
        case let .tuple(values): return "(" + values.map(\.signature).joined() + ")"
        case .bytes: return "ay"
        case let .unsupported(type): return type
        }
    }

    /// A new floating GVariant (consumed by whatever it is handed to); nil for a value that
    /// cannot be sent (`unsupported`, an invalid object path).
    func makeVariant() -> OpaquePointer? {
        switch self {
        case let .string(value): return fs_variant_string(value)
        case let .objectPath(value): return g_variant_is_object_path(value) != 0 ? fs_variant_object_path(value) : nil
        case let .bool(value): return fs_variant_bool(value ? 1 : 0)
        case let .uint32(value): return fs_variant_uint32(value)
        case let .int32(value): return fs_variant_int32(value)
        case let .int64(value): return fs_variant_int64(gint64(value))
        case let .uint64(value): return fs_variant_uint64(guint64(value))
        case let .handle(value): return fs_variant_handle(value)
        case let .variant(inner): return inner.makeVariant().map { fs_variant_boxed($0) }
        case let .array(element, values):
            return BusValue.container(values.map { $0.makeVariant() }) { children in
                children.withUnsafeBufferPointer { fs_variant_array(element, $0.baseAddress, gsize($0.count)) }
            }
        case let .dictionary(entries):
            // Each entry a `{sv}` dict entry, in a stable order.
            let built = entries.sorted { $0.key < $1.key }.map { key, value -> OpaquePointer? in
                BusValue.variant(value).makeVariant().map { fs_variant_dict_entry(fs_variant_string(key), $0) }
            }
            return BusValue.container(built) { children in
                children.withUnsafeBufferPointer { fs_variant_array("{sv}", $0.baseAddress, gsize($0.count)) }
            }
        case let .tuple(values):
            return BusValue.container(values.map { $0.makeVariant() }) { children in
                children.withUnsafeBufferPointer { fs_variant_tuple($0.baseAddress, gsize($0.count)) }
            }
        case let .bytes(bytes):
            return bytes.withUnsafeBytes { fs_variant_bytes($0.baseAddress, gsize($0.count)) }
        case .unsupported:
            return nil
        }
    }

    /// The container from its children, built already; nil (nothing leaked) when one of them
    /// could not be built.
    private static func container(_ built: [OpaquePointer?], _ make: ([OpaquePointer?]) -> OpaquePointer?) -> OpaquePointer? {
        var children: [OpaquePointer?] = []
        for child in built {
            guard let child else {
                for built in children { if let built { g_variant_unref(g_variant_ref_sink(built)) } }
                return nil
            }
            children.append(child)
        }
        return make(children)
    }

    /// Reads `variant` (not consumed).
    init(reading variant: OpaquePointer) {
        let type = String(cString: fs_variant_type(variant))
        switch type {
        case "s": self = .string(String(cString: fs_variant_get_string(variant)))
        case "o": self = .objectPath(String(cString: fs_variant_get_string(variant)))
        case "b": self = .bool(g_variant_get_boolean(variant) != 0)
        case "u": self = .uint32(g_variant_get_uint32(variant))
        case "i": self = .int32(g_variant_get_int32(variant))
        case "x": self = .int64(Int64(g_variant_get_int64(variant)))
        case "t": self = .uint64(UInt64(g_variant_get_uint64(variant)))
        case "h": self = .handle(fs_variant_get_handle(variant))
        case "v":
            guard let inner = g_variant_get_variant(variant) else { self = .unsupported(type); return }
            defer { g_variant_unref(inner) }
            self = .variant(BusValue(reading: inner))
        case "ay":
            var count: gsize = 0
            guard let base = g_variant_get_fixed_array(variant, &count, 1) else { self = .bytes([]); return }
            self = .bytes(Array(UnsafeRawBufferPointer(start: base, count: Int(count))))
        case "a{sv}":
            var entries: [String: BusValue] = [:]
            for index in 0..<g_variant_n_children(variant) {
                guard let entry = g_variant_get_child_value(variant, index) else { continue }
                defer { g_variant_unref(entry) }
                guard let key = g_variant_get_child_value(entry, 0), let value = g_variant_get_child_value(entry, 1) else { continue }
                defer { g_variant_unref(key); g_variant_unref(value) }
                entries[String(cString: fs_variant_get_string(key))] = BusValue(reading: value).unboxed
            }
            self = .dictionary(entries)
        default:
            if type.hasPrefix("a") || type.hasPrefix("(") {
                var children: [BusValue] = []
                for index in 0..<g_variant_n_children(variant) {
                    guard let child = g_variant_get_child_value(variant, index) else { continue }
                    defer { g_variant_unref(child) }
                    children.append(BusValue(reading: child))
                }
                self = type.hasPrefix("a") ? .array(element: String(type.dropFirst()), children) : .tuple(children)
            } else {
                self = .unsupported(type)
            }
        }
    }
}
