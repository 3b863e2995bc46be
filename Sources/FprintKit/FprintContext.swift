import CFprint

/// Owns one libfprint `FpContext`.
///
/// libfprint is single-threaded and its sync calls iterate GLib's global default main
/// context: create the context and make every call on it (and on anything obtained from it)
/// from one and the same thread. Deliberately not `Sendable`.
public final class FprintContext {
    private let context: UnsafeMutablePointer<FpContext>

    /// Drivers are chosen when the context is created: set `FP_DRIVERS_WHITELIST` and the
    /// `FP_VIRTUAL_*` variables before calling this, not after.
    public init() throws(FprintError) {
        guard let context = fp_context_new() else { throw FprintError.contextUnavailable }
        self.context = context
    }

    deinit {
        fs_g_object_unref(context)
    }

    /// Readers known to the context. The first call enumerates (probing each allowed driver,
    /// which libfprint drives to completion before returning); later calls return the same
    /// list plus hot-plugged devices seen while the main context was iterated.
    public func devices() -> [ReaderInfo] {
        // The array and its devices belong to the context ("transfer none"): copy, don't free.
        guard let array = fp_context_get_devices(context) else { return [] }
        let count = Int(array.pointee.len)
        guard count > 0, let slots = array.pointee.pdata else { return [] }
        var readers: [ReaderInfo] = []
        readers.reserveCapacity(count)
        for index in 0..<count {
            guard let raw = slots[index] else { continue }
            readers.append(Self.info(raw.assumingMemoryBound(to: FpDevice.self)))
        }
        return readers
    }

    static func info(_ device: UnsafeMutablePointer<FpDevice>) -> ReaderInfo {
        ReaderInfo(
            deviceID: string(fp_device_get_device_id(device)),
            driver: string(fp_device_get_driver(device)),
            name: string(fp_device_get_name(device)),
            scanType: fp_device_get_scan_type(device) == FP_SCAN_TYPE_SWIPE ? .swipe : .press,
            features: ReaderFeatures(rawValue: UInt32(fp_device_get_features(device).rawValue)))
    }

    private static func string(_ pointer: UnsafePointer<gchar>?) -> String {
        guard let pointer else { return "" }
        return String(cString: pointer)
    }
}

// Explicit: a context must never be handed to another thread.
@available(*, unavailable)
extension FprintContext: Sendable {}
