import CFprint
import Glibc
import ReaderValues
import SystemKit

/// What a libfprint operation ends with: an enrolled or listed print is an FpPrint.
public typealias OperationResult = ReaderResult<Print>

/// What the worker hands a waiting operation: an event for the person, or the end.
enum OperationProgress: Sendable {
    case event(ReaderEvent)
    case finished(OperationResult)
}

/// One running libfprint operation. Its events arrive on `events` (pollable through
/// `events.fd`); `cancel` may be called from any thread.
public final class ReaderOperation: @unchecked Sendable {
    let events: EventQueue<OperationProgress>
    let cancellable: UnsafeMutablePointer<GCancellable>

    init() throws(FprintError) {
        events = try EventQueue()
        guard let cancellable = g_cancellable_new() else { throw FprintError.contextUnavailable }
        self.cancellable = cancellable
    }

    deinit {
        fs_g_object_unref(UnsafeMutableRawPointer(cancellable))
    }

    /// Asks libfprint to stop; the operation then finishes with `.failed(.cancelled)`.
    public func cancel() {
        g_cancellable_cancel(cancellable)
    }

    /// How long to wait for libfprint to confirm a cancellation before giving up on it.
    public static let cancelGrace = 2.0

    /// Waits for the result, handing every other event to `onEvent`. After `timeout` seconds
    /// the operation is cancelled and the result is `.failed(.timedOut)`; when one of `cancelFDs`
    /// becomes readable (a signalfd, a terminal) it is cancelled with `.failed(.cancelled)`.
    /// An enrollment's `timeout` is per scan: each stage passed starts the wait again.
    public func wait(timeout: Double, cancelFDs: [Int32] = [],
                     onEvent: (ReaderEvent) -> Void = { _ in }) -> OperationResult {
        var deadline = monotonicSeconds() + timeout
        while true {
            switch events.next(timeout: deadline - monotonicSeconds(), orReadable: cancelFDs) {
            case let .event(.finished(result)): return result
            case let .event(.event(event)):
                if event.isProgress { deadline = monotonicSeconds() + timeout }
                onEvent(event)
            case .other:
                cancel()
                return finishAfterCancel(as: .cancelled)
            case .timedOut:
                cancel()
                return finishAfterCancel(as: .timedOut)
            }
        }
    }

    /// After `cancel()`: waits (bounded) for libfprint's confirmation and reports `error`
    /// unless the operation had already produced a real result.
    public func finishAfterCancel(as error: FprintError) -> OperationResult {
        let deadline = monotonicSeconds() + ReaderOperation.cancelGrace
        while true {
            let remaining = deadline - monotonicSeconds()
            guard remaining > 0, let event = events.next(timeout: remaining) else { return .failed(error) }
            if case let .finished(result) = event {
                if case .failed(.cancelled) = result { return .failed(error) }
                return result
            }
        }
    }
}

/// An open fingerprint reader. Every libfprint call runs on the reader's own worker thread;
/// callers only ever wait on event queues, with deadlines. `close()` (or deinit) closes the
/// device and joins the thread.
public final class LibfprintDevice: @unchecked Sendable {
    public let info: ReaderInfo
    /// Scans an enrollment needs.
    public let enrollStages: Int
    private let worker: GLibWorker
    /// The thread all of this reader's libfprint calls run on (the tests check it ends at close).
    var workerThreadID: pid_t? { worker.threadID }
    private let context: OpaquePointer
    private let device: UnsafeMutablePointer<FpDevice>
    private var closed = false
    private let relay = StatusRelay()
    private var statusHandler: gulong = 0

    /// Passes finger-status changes to the running operation. Touched only on the worker.
    final class StatusRelay: @unchecked Sendable {
        var current: ReaderOperation? = nil
        /// Last seen "needed" bit: report only the moment it turns on.
        var needed = false
    }

    /// Readers libfprint can see now. Quick when there are none.
    public static func list(timeout: Double = 5) throws(FprintError) -> [ReaderInfo] {
        let worker = try GLibWorker()
        defer { worker.stop() }
        let listed: [ReaderInfo]?? = worker.run(timeout: timeout) {
            guard let context = fp_context_new() else { return nil }
            defer { fs_g_object_unref(context) }
            return LibfprintDevice.devices(OpaquePointer(context)).map(\.info)
        }
        guard let outcome = listed else { throw FprintError.timedOut }
        guard let readers = outcome else { throw FprintError.contextUnavailable }
        return readers
    }

    /// Opens the reader with `deviceID`, or the first one. Throws `.noReader` at once when
    /// none is connected.
    public init(deviceID: String? = nil, timeout: Double = 10) throws(FprintError) {
        let worker = try GLibWorker()
        let found: Result<Found, FprintError>? = worker.run(timeout: timeout) {
            guard let rawContext = fp_context_new() else { return .failure(.contextUnavailable) }
            let context = OpaquePointer(rawContext)
            let devices = LibfprintDevice.devices(context)
            guard let chosen = deviceID.map({ id in devices.first { $0.info.deviceID == id } }) ?? devices.first else {
                fs_g_object_unref(rawContext)
                return .failure(deviceID.map { .noSuchReader($0) } ?? .noReader)
            }
            // The device belongs to the context; keep our own reference for its lifetime.
            _ = fs_g_object_ref(UnsafeMutableRawPointer(chosen.device))
            return .success(Found(context: context, device: chosen.device, info: chosen.info,
                                  stages: Int(fp_device_get_nr_enroll_stages(chosen.device))))
        }
        guard let found else { worker.stop(); throw FprintError.timedOut }
        let opened: Found
        switch found {
        case let .success(value): opened = value
        case let .failure(error): worker.stop(); throw error
        }
        self.worker = worker
        self.context = opened.context
        self.device = opened.device
        self.info = opened.info
        self.enrollStages = opened.stages
        let relay = self.relay, device = self.device
        statusHandler = worker.run(timeout: timeout) {
            fs_connect_finger_status(device, LibfprintDevice.fingerStatusChanged, Unmanaged.passUnretained(relay).toOpaque())
        } ?? 0
        let operation = try start(.open)
        if case let .failed(error) = operation.wait(timeout: timeout) {
            closed = true
            release()
            throw error
        }
    }

    deinit {
        close()
    }

    /// Closes the device (waiting at most `timeout`) and stops the worker thread. False when
    /// the device did not confirm the close in time (or reported an error closing): the
    /// reader is released either way. True when it was closed already.
    @discardableResult
    public func close(timeout: Double = 5) -> Bool {
        guard !closed else { return true }
        closed = true
        // Confirmed within `timeout`: a close that libfprint confirms only during the cancel
        // grace after it came too late, and is reported so.
        let started = monotonicSeconds()
        var confirmed = false
        if let operation = try? start(.close), case .done = operation.wait(timeout: timeout) {
            confirmed = monotonicSeconds() - started <= timeout
        }
        release()
        return confirmed
    }

    private func release() {
        let context = self.context, device = self.device, handler = statusHandler, relay = self.relay
        worker.post {
            fs_disconnect(device, handler)
            relay.current = nil
            fs_g_object_unref(UnsafeMutableRawPointer(device))
            fs_g_object_unref(UnsafeMutableRawPointer(context))
        }
        worker.stop()
    }

    /// Whether libfprint saw the device go (unplugged, undocked) since it was opened: a
    /// removed reader answers every operation with an error, so the next request opens
    /// whatever is connected now instead. True as well when the worker does not answer
    /// within `timeout` (the reader is not to be trusted then either).
    public func isRemoved(timeout: Double = 1) -> Bool {
        guard !closed else { return true }
        let device = self.device
        return worker.run(timeout: timeout) { fs_device_removed(device) != 0 } ?? true
    }

    // MARK: operations

    /// Enrolls a new print for `finger` and `username`; progress arrives as
    /// `.enrollProgress` and `.hint` events.
    /// Whether `print` was enrolled on a reader of this kind (same driver and device).
    public func isCompatible(_ print: Print) -> Bool {
        fp_print_compatible(print.raw, device) != 0
    }

    public func enroll(finger: Finger, username: String, description: String) throws(FprintError) -> ReaderOperation {
        try start(.enroll(Template(finger: finger, username: username, description: description)))
    }

    /// Enrolls with a bare template: no finger, user, description or date (what a reader
    /// self-test needs, and what recorded sessions of match-on-chip sensors expect).
    public func enrollBare() throws(FprintError) -> ReaderOperation {
        try start(.enroll(nil))
    }

    /// Matches one scan against `print`.
    public func verify(_ print: Print) throws(FprintError) -> ReaderOperation {
        try start(.verify(print))
    }

    /// Matches one scan against all of `prints` (readers with the identify feature).
    public func identify(_ prints: [Print]) throws(FprintError) -> ReaderOperation {
        guard info.features.contains(.identify) else { throw FprintError.notSupported("identify") }
        return try start(.identify(prints))
    }

    /// Captures one image (image readers only).
    public func capture(waitForFinger: Bool = true) throws(FprintError) -> ReaderOperation {
        guard info.features.contains(.capture) else { throw FprintError.notSupported("capture") }
        return try start(.capture(waitForFinger: waitForFinger))
    }

    /// Prints stored on the reader (match-on-chip readers).
    public func listStoredPrints() throws(FprintError) -> ReaderOperation {
        guard info.features.contains(.storageList) else { throw FprintError.notSupported("listing stored prints") }
        return try start(.list)
    }

    public func deleteStoredPrint(_ print: Print) throws(FprintError) -> ReaderOperation {
        guard info.features.contains(.storageDelete) else { throw FprintError.notSupported("deleting stored prints") }
        return try start(.delete(print))
    }

    // MARK: plumbing

    /// What opening found; handed from the worker thread once, then owned by the LibfprintDevice.
    private struct Found: @unchecked Sendable {
        let context: OpaquePointer
        let device: UnsafeMutablePointer<FpDevice>
        let info: ReaderInfo
        let stages: Int
    }

    enum DeviceCall {
        // No clear-storage: it wipes every print on a chip, other programs' too (fingerseal
        // deletes only the prints it stored).
        case open, close, list
        case enroll(Template?)
        case verify(Print)
        case identify([Print])
        case capture(waitForFinger: Bool)
        case delete(Print)
    }

    struct Template {
        let finger: Finger
        let username: String
        let description: String
    }

    /// State of one operation, alive (retained) from start until its finish callback.
    final class Box {
        let kind: DeviceCall
        let operation: ReaderOperation
        let device: UnsafeMutablePointer<FpDevice>
        let total: Int
        /// The match decision reported by the match callback, which comes before finish.
        var reportedMatch: Bool? = nil
        var reportedIndex: Int? = nil

        init(_ kind: DeviceCall, _ operation: ReaderOperation, _ device: UnsafeMutablePointer<FpDevice>, total: Int) {
            self.kind = kind
            self.operation = operation
            self.device = device
            self.total = total
        }
    }

    private func start(_ kind: DeviceCall) throws(FprintError) -> ReaderOperation {
        let operation = try ReaderOperation()
        let box = Box(kind, operation, device, total: enrollStages)
        let relay = self.relay
        worker.post {
            relay.current = operation
            relay.needed = false
            LibfprintDevice.begin(box)
        }
        return operation
    }

    private static let fingerStatusChanged: fs_notify_cb = { object, _, data in
        guard let object, let data else { return }
        let relay = Unmanaged<StatusRelay>.fromOpaque(data).takeUnretainedValue()
        let status = fp_device_get_finger_status(UnsafeMutableRawPointer(object).assumingMemoryBound(to: FpDevice.self))
        let needed = status.rawValue & FP_FINGER_STATUS_NEEDED.rawValue != 0
        if needed && !relay.needed { relay.current?.events.push(.event(.fingerNeeded)) }
        relay.needed = needed
    }

    /// On the worker thread: starts the async libfprint call.
    private static func begin(_ box: Box) {
        let device = box.device
        let cancellable = box.operation.cancellable
        let retained = Unmanaged.passRetained(box).toOpaque()
        let unretained = Unmanaged.passUnretained(box).toOpaque()
        switch box.kind {
        case .open: fp_device_open(device, cancellable, LibfprintDevice.ready, retained)
        case .close: fp_device_close(device, nil, LibfprintDevice.ready, retained)
        case .list: fp_device_list_prints(device, cancellable, LibfprintDevice.ready, retained)
        case let .delete(print): fp_device_delete_print(device, print.raw, cancellable, LibfprintDevice.ready, retained)
        case let .capture(wait): fp_device_capture(device, wait ? 1 : 0, cancellable, LibfprintDevice.ready, retained)
        case let .verify(print):
            fp_device_verify(device, print.raw, cancellable, LibfprintDevice.matched, unretained, nil,
                             LibfprintDevice.ready, retained)
        case let .identify(prints):
            let array = fs_object_array_new()
            for print in prints { fs_object_array_add(array, UnsafeMutableRawPointer(print.raw)) }
            fp_device_identify(device, array, cancellable, LibfprintDevice.matched, unretained, nil, LibfprintDevice.ready, retained)
            g_ptr_array_unref(array)
        case let .enroll(details):
            guard let template = fp_print_new(device) else {
                Unmanaged<Box>.fromOpaque(retained).release()
                box.operation.events.push(.finished(.failed(.contextUnavailable)))
                return
            }
            let print = Print(owning: template)
            if let details {
                fp_print_set_finger(print.raw, FpFinger(rawValue: UInt32(details.finger.rawValue)))
                fp_print_set_username(print.raw, details.username)
                fp_print_set_description(print.raw, details.description)
                if let today = g_date_new() {
                    g_date_set_time_t(today, time(nil))
                    fp_print_set_enroll_date(print.raw, today)
                    g_date_free(today)
                }
            }
            fp_device_enroll(device, print.raw, cancellable, LibfprintDevice.progressed, unretained, nil,
                             LibfprintDevice.ready, retained)
        }
    }

    private static let progressed: FpEnrollProgress = { _, completed, _, data, error in
        guard let data else { return }
        let box = Unmanaged<Box>.fromOpaque(data).takeUnretainedValue()
        if let error, error.pointee.domain == fp_device_retry_quark() {
            box.operation.events.push(.event(.hint(RetryHint(code: error.pointee.code))))
        } else {
            box.operation.events.push(.event(.enrollProgress(completed: Int(completed), total: box.total)))
        }
    }

    private static let matched: FpMatchCb = { _, match, _, data, error in
        guard let data else { return }
        let box = Unmanaged<Box>.fromOpaque(data).takeUnretainedValue()
        if let error, error.pointee.domain == fp_device_retry_quark() {
            box.operation.events.push(.event(.hint(RetryHint(code: error.pointee.code))))
            return
        }
        box.reportedMatch = match != nil
        if case let .identify(prints) = box.kind, let match {
            box.reportedIndex = prints.firstIndex { UnsafeMutableRawPointer($0.raw) == UnsafeMutableRawPointer(match) }
                ?? prints.firstIndex { fp_print_equal($0.raw, match) != 0 }
        }
    }

    private static let ready: GAsyncReadyCallback = { _, result, data in
        guard let data else { return }
        let box = Unmanaged<Box>.fromOpaque(data).takeRetainedValue()
        box.operation.events.push(.finished(finish(box, result)))
    }

    /// On the worker thread: collects the result of a finished async call.
    private static func finish(_ box: Box, _ result: OpaquePointer?) -> OperationResult {
        let device = box.device
        var error: UnsafeMutablePointer<GError>? = nil
        switch box.kind {
        case .open:
            return fp_device_open_finish(device, result, &error) != 0 ? .done : .failed(.take(error))
        case .close:
            return fp_device_close_finish(device, result, &error) != 0 ? .done : .failed(.take(error))
        case .delete:
            return fp_device_delete_print_finish(device, result, &error) != 0 ? .done : .failed(.take(error))
        case .enroll:
            guard let print = fp_device_enroll_finish(device, result, &error) else { return .failed(.take(error)) }
            return .enrolled(Print(owning: print))
        case .verify:
            var match: gboolean = 0
            var scanned: OpaquePointer? = nil
            let ok = fp_device_verify_finish(device, result, &match, &scanned, &error)
            if let scanned { fs_g_object_unref(UnsafeMutableRawPointer(scanned)) }
            if ok != 0 { return .verified(matched: match != 0) }
            // A decision reported before a late error stands (as fprintd treats it).
            if let decided = box.reportedMatch {
                if let error { g_error_free(error) }
                return .verified(matched: decided)
            }
            return .failed(.take(error))
        case let .identify(prints):
            var match: OpaquePointer? = nil
            var scanned: OpaquePointer? = nil
            let ok = fp_device_identify_finish(device, result, &match, &scanned, &error)
            if let scanned { fs_g_object_unref(UnsafeMutableRawPointer(scanned)) }
            var index = box.reportedIndex
            if let match {
                index = index ?? prints.firstIndex { fp_print_equal($0.raw, match) != 0 }
                fs_g_object_unref(UnsafeMutableRawPointer(match))
            }
            if ok != 0 { return .identified(index: index) }
            if let decided = box.reportedMatch {
                if let error { g_error_free(error) }
                return .identified(index: decided ? index : nil)
            }
            return .failed(.take(error))
        case .capture:
            guard let image = fp_device_capture_finish(device, result, &error) else { return .failed(.take(error)) }
            defer { fs_g_object_unref(UnsafeMutableRawPointer(image)) }
            var length: gsize = 0
            let width = Int(fp_image_get_width(image)), height = Int(fp_image_get_height(image))
            guard let pixels = fp_image_get_data(image, &length), Int(length) == width * height else {
                return .failed(.other(domain: "fingerseal", code: 0, message: "captured image has an unexpected size"))
            }
            return .captured(FingerprintImage(width: width, height: height,
                                              pixels: Array(UnsafeBufferPointer(start: pixels, count: Int(length)))))
        case .list:
            guard let array = fp_device_list_prints_finish(device, result, &error) else { return .failed(.take(error)) }
            var prints: [Print] = []
            for index in 0..<fs_ptr_array_length(array) {
                guard let element = fs_ptr_array_index(array, index) else { continue }
                _ = fs_g_object_ref(element)
                prints.append(Print(owning: OpaquePointer(element)))
            }
            g_ptr_array_unref(array)
            return .listed(prints)
        }
    }

    /// On the worker thread: the context's devices with their info.
    static func devices(_ context: OpaquePointer) -> [(device: UnsafeMutablePointer<FpDevice>, info: ReaderInfo)] {
        guard let array = fp_context_get_devices(UnsafeMutablePointer(context)) else { return [] }
        var found: [(UnsafeMutablePointer<FpDevice>, ReaderInfo)] = []
        for index in 0..<fs_ptr_array_length(array) {
            guard let raw = fs_ptr_array_index(array, index) else { continue }
            let device = raw.assumingMemoryBound(to: FpDevice.self)
            found.append((device, LibfprintDevice.info(device)))
        }
        return found
    }

    /// On the worker thread: a snapshot of one device, holding no libfprint pointer.
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
