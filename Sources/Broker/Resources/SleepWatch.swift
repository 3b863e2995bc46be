import FingersealCore
import Glibc
import SystemKit
import SystemdKit

/// logind's PrepareForSleep, watched on a system-bus connection and a thread of its own and
/// handed to the reader (`ReaderTurns.prepareForSleep`), so no request ever waits for the bus.
///
/// The match names logind but does not need it: where logind is not on the bus (containers,
/// the build machines), nothing arrives and nothing changes; if it comes later, its signals
/// do. Where there is no system bus (a container, a kiosk without D-Bus: nothing to suspend
/// it either) the watch looks again every `retryInterval` and says nothing; a bus that
/// refuses the match or breaks is said once in the log, not at every try.
final class SleepWatch: @unchecked Sendable {
    private let reader: ReaderTurns
    /// Readable once `stop` was called.
    private let stopEvent: EventFD
    /// Readable once the first try to subscribe is over, matched or not.
    private let firstTry: EventFD
    private var saidWhy = false

    static let logind = "org.freedesktop.login1"
    static let managerPath = "/org/freedesktop/login1"
    static let managerInterface = "org.freedesktop.login1.Manager"
    /// How often a missing or broken system bus is tried again.
    static let retryInterval = 30.0

    init(reader: ReaderTurns) throws {
        self.reader = reader
        stopEvent = try EventFD()
        firstTry = try EventFD()
    }

    /// Starts the watch on its own thread; false when no thread could be started.
    func start() -> Bool {
        startThread { [self] in run() }
    }

    /// Waits at most `limit` seconds for the first try to subscribe, so that the broker says
    /// it is ready only once a signal sent after that reaches it.
    func waitForFirstTry(limit: Double) {
        var fds = [pollEntry(firstTry.rawValue)]
        _ = waitReady(&fds, until: monotonicSeconds() + limit)
    }

    /// Ends the watch: its thread leaves at its next wake, which this makes now.
    func stop() { stopEvent.signal() }

    private func run() {
        var first = true
        while true {
            let bus = subscribe()
            if first {
                first = false
                firstTry.signal()
            }
            if let (connection, match) = bus {
                if withExtendedLifetime(match, { serve(connection) }) { return }
                say("the connection to the system bus broke")
            }
            var fds = [pollEntry(stopEvent.rawValue)]
            _ = waitReady(&fds, until: monotonicSeconds() + SleepWatch.retryInterval)
            if fds[0].revents != 0 { return }
        }
    }

    /// A connection with the match in place; nil when there is none to be had.
    private func subscribe() -> (SystemBus, BusMatch)? {
        guard let bus = ReaderTurns.openSystemBus() else { return nil }
        let reader = self.reader
        do {
            let match = try bus.matchSignal(sender: SleepWatch.logind, path: SleepWatch.managerPath,
                                            interface: SleepWatch.managerInterface, member: "PrepareForSleep") { message in
                // One boolean: true before sleep, false after waking.
                guard let sleeping = try? message.readBool() else { return }
                reader.prepareForSleep(sleeping)
            }
            return (bus, match)
        } catch {
            say("\(error)")
            return nil
        }
    }

    /// Runs the match's handler for each signal until `stop` (true) or the connection breaks
    /// (false).
    private func serve(_ bus: SystemBus) -> Bool {
        while true {
            // First what sd-bus has read already (the match's own reply may have brought more).
            guard bus.dispatchPending() else { return false }
            let stopped = bus.waitForTraffic(until: monotonicSeconds() + SleepWatch.retryInterval, others: [stopEvent.rawValue])
            if !stopped.isEmpty { return true }
        }
    }

    /// One line in the log for the broker's life: a broken bus is tried again quietly.
    private func say(_ why: String) {
        guard !saidWhy else { return }
        saidWhy = true
        Syslog.log(.notice, "fingersealed: suspend and resume are not watched for now: \(why)")
    }
}
