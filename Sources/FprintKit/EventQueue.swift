import CLinux
import Glibc
import ReaderValues
import SystemKit

/// A queue one thread fills and another drains, with an eventfd that is readable whenever
/// events may be waiting, so a consumer can poll it together with a signalfd or a terminal.
public final class EventQueue<Event: Sendable>: @unchecked Sendable {
    /// Behind a pthread mutex, not Synchronization's Mutex: on Linux that is a bare futex,
    /// which ThreadSanitizer cannot see, so it took every event for a race (issue 24).
    private let lock = ThreadLock()
    private var events: [Event] = []
    private let ready: EventFD
    /// Readable when `pop` may return an event.
    public var fd: Int32 { ready.rawValue }

    public init() throws(FprintError) {
        do { ready = try EventFD(nonBlocking: true) } catch { throw FprintError.system(operation: "eventfd", code: error.code) }
    }

    func push(_ event: Event) {
        lock.locked { events.append(event) }
        ready.signal()
    }

    /// The oldest event, without waiting.
    public func pop() -> Event? {
        lock.locked { events.isEmpty ? nil : events.removeFirst() }
    }

    public enum Wake: Sendable {
        case event(Event)
        /// The other descriptor became readable.
        case other
        case timedOut
    }

    /// The oldest event, waiting at most `timeout` seconds; every wait is bounded.
    public func next(timeout: Double) -> Event? {
        if case let .event(event) = next(timeout: timeout, orReadable: []) { return event }
        return nil
    }

    /// The oldest event, or `.other` as soon as one of `others` is readable, or `.timedOut`.
    public func next(timeout: Double, orReadable others: [Int32]) -> Wake {
        let deadline = monotonicSeconds() + timeout
        while true {
            if let event = pop() { return .event(event) }
            let remaining = deadline - monotonicSeconds()
            if remaining <= 0 { return .timedOut }
            var fds = [pollEntry(fd)] + others.map { pollEntry($0) }
            _ = waitReady(&fds, until: deadline)
            if fds.dropFirst().contains(where: { $0.revents != 0 }) { return .other }
            ready.drain()
        }
    }
}
