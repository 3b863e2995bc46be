import CFprint
import Glibc
import ReaderValues

/// One fingerprint template (an FpPrint). On match-on-chip readers the template stays on the
/// device and this is the reference to it. Use a print from one thread at a time.
public final class Print: @unchecked Sendable {
    let raw: OpaquePointer

    /// Takes ownership of one reference (sinking a floating one).
    init(owning raw: OpaquePointer) {
        self.raw = fs_own_print(raw)
    }

    /// Reads a print back from `serialize()`'s bytes.
    public convenience init(serialized bytes: [UInt8]) throws(FprintError) {
        let print = bytes.withUnsafeBytes { Print.deserialize($0) }
        guard let print else { throw FprintError.invalidPrint }
        self.init(owning: print)
    }

    /// Reads a print from bytes held elsewhere (e.g. secure memory), without copying them.
    public convenience init(serialized bytes: UnsafeRawBufferPointer) throws(FprintError) {
        guard let print = Print.deserialize(bytes) else { throw FprintError.invalidPrint }
        self.init(owning: print)
    }

    private static func deserialize(_ bytes: UnsafeRawBufferPointer) -> OpaquePointer? {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: guchar.self), bytes.count > 0 else { return nil }
        var error: UnsafeMutablePointer<GError>? = nil
        let print = fp_print_deserialize(base, gsize(bytes.count), &error)
        if let error { g_error_free(error) }
        return print
    }

    deinit {
        fs_g_object_unref(UnsafeMutableRawPointer(raw))
    }

    public func serialize() throws(FprintError) -> [UInt8] {
        var data: UnsafeMutablePointer<guchar>? = nil
        var length: gsize = 0
        var error: UnsafeMutablePointer<GError>? = nil
        guard fp_print_serialize(raw, &data, &length, &error) != 0, let data else {
            throw FprintError.take(error)
        }
        defer {
            // Templates are biometric data: do not leave them in freed heap memory.
            memset(data, 0, Int(length))
            g_free(data)
        }
        return Array(UnsafeBufferPointer(start: data, count: Int(length)))
    }

    public var finger: Finger? { Finger(rawValue: Int32(fp_print_get_finger(raw).rawValue)) }
    public var username: String? { fp_print_get_username(raw).map { String(cString: $0) } }
    public var printDescription: String? { fp_print_get_description(raw).map { String(cString: $0) } }
    public var driver: String { fp_print_get_driver(raw).map { String(cString: $0) } ?? "" }
    /// True when the template lives on the reader (match on chip).
    public var isStoredOnDevice: Bool { fp_print_get_device_stored(raw) != 0 }

    /// Same template (libfprint's notion: same driver, device and data).
    public func isSame(as other: Print) -> Bool {
        fp_print_equal(raw, other.raw) != 0
    }
}
