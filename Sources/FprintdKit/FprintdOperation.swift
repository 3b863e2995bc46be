import CLinux
import Glibc
import ReaderValues
import SystemdKit
import SystemKit

/// How an fprintd operation ends: fprintd keeps the prints, so none is ever handed back.
public typealias FprintdResult = ReaderResult<Never>

/// A running fprintd verify or enroll, used like FprintKit's `ReaderOperation`: `wait`
/// reports events and returns the result. fprintd's statuses arrive as signals, which `wait`
/// dispatches on the calling thread. VerifyStop/EnrollStop is always sent once it ends
/// (fprintd refuses the next start without it), and on cancel and timeout.
public final class FprintdOperation: @unchecked Sendable {
    enum Action {
        case verify, enroll

        var start: String { self == .verify ? "VerifyStart" : "EnrollStart" }
        var stop: String { self == .verify ? "VerifyStop" : "EnrollStop" }
        var signal: String { self == .verify ? "VerifyStatus" : "EnrollStatus" }
    }

    /// How long a stop (or a release) may take before we give up on fprintd's answer.
    public static let stopGrace = 2.0

    private let device: FprintdDevice
    private let kind: Action
    private let state: SignalState
    private var slots: [BusMatch] = []
    /// Readable once `cancel()` was called (from any thread).
    private let cancelEvent: EventFD
    private var result: FprintdResult? = nil

    init(device: FprintdDevice, kind: Action, finger: String, stages: Int) throws(FprintError) {
        do { cancelEvent = try EventFD(nonBlocking: true) } catch { throw FprintError.system(operation: "eventfd", code: error.code) }
        self.device = device
        self.kind = kind
        self.state = SignalState(kind: kind, stages: stages)
        let bus = device.bus
        // Statuses left over from an earlier operation must not reach this one's handlers.
        _ = bus.dispatchPending()
        do {
            let owner = try bus.fprintdOwner(timeout: 2)
            let (state, path) = (state, device.info.objectPath)
            try overBus { () throws(BusError) in
                slots.append(try bus.matchSignal(sender: owner, path: path, interface: Fprintd.deviceInterface,
                                                 member: kind.signal) { state.receive($0) })
                slots.append(try bus.matchSignal(sender: owner, path: path, interface: BusCall.properties,
                                                 member: "PropertiesChanged") { state.receive($0) })
                try bus.call(device.method(kind.start, [finger]), timeout: 5)
            }
        } catch {
            // Nothing started, so nothing to stop.
            result = .failed(error)
            slots = []
            throw error
        }
    }

    deinit {
        if result == nil { stop() }
        // The matches go now: no signal reaches the state after the operation.
        slots = []
    }

    /// Ends the operation from any thread: the waiter (now or the next `wait`) sends the stop
    /// and reports `.failed(.cancelled)`.
    public func cancel() {
        cancelEvent.signal()
    }

    /// Waits for the result, handing every other event to `onEvent`. After `timeout` seconds
    /// the operation is stopped and the result is `.failed(.timedOut)`; when one of `cancelFDs`
    /// becomes readable (a signalfd, a terminal) or `cancel()` is called, it is stopped with
    /// `.failed(.cancelled)`. An enrollment's `timeout` is per scan: each stage passed starts
    /// the wait again.
    public func wait(timeout: Double, cancelFDs: [Int32] = [],
                     onEvent: (ReaderEvent) -> Void = { _ in }) -> FprintdResult {
        if let result { return result }
        let bus = device.bus
        var deadline = monotonicSeconds() + timeout
        let watched = [cancelEvent.rawValue] + cancelFDs
        while true {
            guard bus.dispatchPending() else {
                return finish(.failed(.other(domain: "dbus", code: ECONNRESET, message: "the system bus connection broke")))
            }
            while let event = state.takeEvent() {
                if event.isProgress { deadline = monotonicSeconds() + timeout }
                onEvent(event)
            }
            if let final = state.final { return finish(final) }
            if monotonicSeconds() >= deadline { return finish(.failed(.timedOut)) }
            if !bus.waitForTraffic(until: deadline, others: watched).isEmpty {
                // A result that arrived together with the cancellation still counts.
                _ = bus.dispatchPending()
                while let event = state.takeEvent() { onEvent(event) }
                return finish(state.final ?? .failed(.cancelled))
            }
        }
    }

    private func finish(_ outcome: FprintdResult) -> FprintdResult {
        stop()
        result = outcome
        slots = []
        return outcome
    }

    /// VerifyStop/EnrollStop, bounded; errors ignored (fprintd may have ended it already).
    private func stop() {
        _ = try? device.bus.call(device.method(kind.stop), timeout: FprintdOperation.stopGrace)
    }
}

/// What the signal callbacks collect for one operation. Touched only on the thread that
/// dispatches the bus (the waiter's).
final class SignalState {
    let kind: FprintdOperation.Action
    let stages: Int
    private var events: [ReaderEvent] = []
    private(set) var final: FprintdResult? = nil
    private var completedStages = 0
    private var fingerNeeded = false

    init(kind: FprintdOperation.Action, stages: Int) {
        self.kind = kind
        self.stages = stages
    }

    func takeEvent() -> ReaderEvent? {
        events.isEmpty ? nil : events.removeFirst()
    }

    func receive(_ message: BusMessage) {
        guard final == nil else { return }
        if message.member == "PropertiesChanged" {
            receiveProperties(message)
            return
        }
        guard let status = try? message.readString(), let done = try? message.readBool() else { return }
        switch FprintdStatus.interpret(status, done: done) {
        case let .hint(hint): events.append(.hint(hint))
        case .stagePassed:
            completedStages += 1
            events.append(.enrollProgress(completed: completedStages, total: stages))
        case let .final(outcome):
            // fprintd reports the last stage as enroll-completed, not as a passed stage: report
            // it as progress too, as libfprint's enroll does.
            if case .done = outcome, kind == .enroll {
                completedStages += 1
                events.append(.enrollProgress(completed: completedStages, total: stages))
            }
            final = outcome
        case .ignored: break
        }
    }

    /// finger-needed turning on becomes `.fingerNeeded`.
    private func receiveProperties(_ message: BusMessage) {
        guard (try? message.readString()) == Fprintd.deviceInterface else { return }
        var needed: Bool? = nil
        try? message.readDictionary { (key, value) throws(BusError) in
            if key == "finger-needed" {
                needed = try value.readVariant("b") { (m) throws(BusError) in try m.readBool() }
            } else {
                try value.skip("v")
            }
        }
        guard let needed else { return }
        if needed && !fingerNeeded { events.append(.fingerNeeded) }
        fingerNeeded = needed
    }
}

/// fprintd's status strings (VerifyStatus and EnrollStatus), in one table.
enum FprintdStatus {
    case hint(RetryHint)
    case stagePassed
    case final(FprintdResult)
    case ignored

    static func interpret(_ status: String, done: Bool) -> FprintdStatus {
        // verify-* and enroll-* share their suffixes.
        let suffix: Substring
        if status.hasPrefix("verify-") { suffix = status.dropFirst("verify-".count) }
        else if status.hasPrefix("enroll-") { suffix = status.dropFirst("enroll-".count) }
        else { return done ? .final(.failed(failure(.unknown, status))) : .ignored }
        let retry: RetryHint
        switch suffix {
        case "match": return .final(.verified(matched: true))
        case "no-match": return .final(.verified(matched: false))
        case "completed": return .final(.done)
        case "stage-passed": return .stagePassed
        case "retry-scan": retry = .general
        case "swipe-too-short": retry = .tooShort
        case "finger-not-centered": retry = .centerFinger
        case "remove-and-retry": retry = .removeFinger
        case "disconnected": return .final(.failed(failure(.removed, status)))
        case "data-full": return .final(.failed(failure(.dataFull, status)))
        case "duplicate": return .final(.failed(failure(.dataDuplicate, status)))
        case "failed", "unknown-error": return .final(.failed(failure(.general, status)))
        default: return done ? .final(.failed(failure(.unknown, status))) : .ignored
        }
        // A retry is normally not final; if fprintd says it is, the operation ended on it.
        return done ? .final(.failed(.retry(retry))) : .hint(retry)
    }

    private static func failure(_ kind: DeviceErrorKind, _ status: String) -> FprintError {
        .device(kind, code: 0, message: "fprintd reported \(status)")
    }
}
