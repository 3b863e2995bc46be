import FingerprintFlows
import FingersealCore
import FingersealWire
import FprintdKit
import FprintKit
import Glibc
import ReaderValues
import SystemdKit
import SystemKit

/// The reader's backends, in a turn: lending the reader to a request (`withReader`,
/// `whileHeld`), which backend it gets, the libfprint reader opened, kept and closed (the class
/// comment says when), fprintd's device claimed and released, the system bus.
extension ReaderTurns {
    /// Closes the reader when sleep came or went since it was opened. Holder only.
    func closeIfSlept() {
        guard condition.locked({ () -> Bool in
            defer { sleptSinceOpen = false }
            return sleptSinceOpen
        }) else { return }
        closeCached()
    }

    /// The system bus, kept open between requests; nil when there is none. Holder only.
    private func systemBus() -> SystemBus? {
        if let bus { return bus }
        bus = ReaderTurns.openSystemBus()
        return bus
    }

    /// A new connection to the system bus; nil at once where there is none (kiosks and rigs
    /// without D-Bus: no socket, no address), without asking sd-bus.
    static func openSystemBus() -> SystemBus? {
        guard getenv("DBUS_SYSTEM_BUS_ADDRESS") != nil || access("/run/dbus/system_bus_socket", F_OK) == 0 else { return nil }
        return try? SystemBus.open()
    }

    /// The backend `choice` comes to now. Holder only.
    private func backend(_ choice: ReaderBackendChoice) -> ReaderBackendChoice {
        switch choice {
        case .fprintd, .libfprint: return choice
        case .auto:
            guard let bus = systemBus() else { return .libfprint }
            return bus.fprintdPresence() == .absent ? .libfprint : .fprintd
        }
    }

    /// Lends the reader to `body` for `call`'s user, in `call`'s turn: fprintd's device
    /// claimed for them, or the libfprint reader (`deviceID`, or the first), opened when
    /// needed. With the lid closed and the reader built in, fails at once with `.noReader`;
    /// from a remote session (unless `allow_remote`), with `.remoteSession`. `body`'s scans
    /// watch the turn's `stopFD`.
    func withReader<T>(_ call: Call, deviceID: String? = nil, _ body: (ReaderBackend, Turn) throws -> T) throws -> T {
        try refuseRemote(call)
        let (priority, principal) = ReaderTurns.rank(call)
        let turn = try acquire(priority, principal, call.conversation)
        defer {
            // A reader that slept during the turn is not kept for the next request.
            closeIfSlept()
            release(turn)
        }
        do {
            return try withBackend(call, deviceID: deviceID) { try body($0, turn) }
        } catch let error as FingersealError {
            throw ReaderTurns.preemption(error, turn)
        }
    }

    private func withBackend<T>(_ call: Call, deviceID: String?, _ body: (ReaderBackend) throws -> T) throws -> T {
        let backend = backend(call.settings.reader)
        try checkLid(call.settings, backend: backend)
        if backend == .fprintd {
            closeCached()
            condition.locked { holderOnFprintd = true }
            return try withFprintd(call, body)
        }
        closeIfSlept()
        // Unplugged since (a dock, a USB reader pulled out): whatever is connected now instead.
        if let cached, cached.isRemoved() { closeCached() }
        let reader: LibfprintDevice
        if let cached, deviceID == nil || cached.info.deviceID == deviceID {
            reader = cached
        } else {
            closeCached()
            reader = try Fingerprint.openReader(deviceID: deviceID)
        }
        do {
            let result = try body(.libfprint(reader))
            cached = reader
            return result
        } catch let error as FingersealError where !ReaderTurns.readerFailures.contains(error.outcome) {
            // A failed match, a timeout or a cancel leave the reader fine.
            cached = reader
            throw error
        } catch {
            reader.close()
            cached = nil
            throw error
        }
    }

    /// A remote session (logind's, or a PAM host's remote host) never drives the reader unless
    /// `allow_remote`: the person is not at it.
    func refuseRemote(_ call: Call) throws {
        if call.isRemote && !call.settings.allowRemote { throw FingersealError(.remoteSession, Messages.readerNotFromRemote) }
    }

    /// Whether a reader is there to scan with, asked before a question that is only worth
    /// answering with one (enroll's PIN): only when the reader is free, and for no longer
    /// than opening it takes; nil when it cannot tell now (another request has it).
    func readerPresent(_ call: Call, deviceID: String? = nil) -> Bool? {
        switch readerState(call, deviceID: deviceID) {
        case .present: return true
        case .absent, .lidClosed: return false
        case .unknown: return nil
        }
    }

    /// What `readerState` found.
    enum ReaderState: String {
        case present, absent
        case lidClosed = "lid-closed"
        /// Another request holds it, or it could not be asked now.
        case unknown
    }

    /// Whether a reader is there to scan with, and if not, whether a closed lid is why; asked
    /// only when the reader is free, and for no longer than opening it takes.
    func readerState(_ call: Call, deviceID: String? = nil) -> ReaderState {
        guard let turn = idleTurn(call.caller.principal) else { return .unknown }
        defer { release(turn, served: false) }
        do {
            return try withBackend(call, deviceID: deviceID) { _ in .present }
        } catch let error as FingersealError where error.outcome == .noReader {
            return error.message == Messages.lidClosed ? .lidClosed : .absent
        } catch {
            return .unknown
        }
    }

    /// Outcomes after which the reader (or the bus) is not trusted for the next request.
    private static let readerFailures: [Outcome] = [.noReader, .unavailable, .systemError]

    /// fprintd's default device, claimed for the user for the length of `body`.
    private func withFprintd<T>(_ call: Call, _ body: (ReaderBackend) throws -> T) throws -> T {
        guard let bus = systemBus() else { throw FingersealError(.unavailable, Messages.fprintdUnavailable) }
        let user = call.account.name
        let device: FprintdDevice
        do throws(FprintError) {
            device = try bus.fprintdDefaultDevice()
            try device.claim(user: user)
        } catch {
            // No fprintd on the bus (reader=fprintd without it), or the bus itself broke.
            if case let .other(domain, _, _) = error, domain == "dbus" {
                self.bus = nil
                throw FingersealError(.unavailable, Messages.fprintdUnavailable, detail: "\(error)")
            }
            throw Fingerprint.translate(error)
        }
        defer { releaseAwake(device, bus: bus) }
        do {
            return try body(.fprintd(device, user: user, storage: call.settings.fprintdStorage))
        } catch let error as FingersealError where error.outcome == .systemError {
            self.bus = nil
            throw error
        }
    }

    /// Releases fprintd's device once the computer is awake. fprintd cannot close a suspended
    /// device, and its Release then leaves the device open for good: every Claim after fails
    /// ("already been opened") until fprintd restarts. A scan that failed may have been
    /// ended by the sleep (with an error or an outcome), whether or not PrepareForSleep reached
    /// the broker yet: logind's PreparingForSleep says. Waits at most `wakeLimit` of waking
    /// time. Holder only.
    private func releaseAwake(_ device: FprintdDevice, bus: SystemBus) {
        let (sleeping, seen) = condition.locked { (asleep, wakes) }
        if sleeping || bus.preparingForSleep() == true {
            let deadline = monotonicSeconds() + ReaderTurns.wakeLimit
            condition.locked {
                while wakes == seen && monotonicSeconds() < deadline { condition.wait(until: deadline) }
            }
        }
        device.release()
    }

    /// The fingers enrolled for `call`'s user where they are kept: fprintd's set when fprintd is
    /// the backend, the vault's own otherwise. Outside the reader's turn, as `fprintdSet`.
    func enrolledFingers(_ call: Call, vault: UnlockedVault) throws -> [String] {
        try fprintdSet(call)?.fingers ?? vault.enrolledFingers()
    }

    /// fprintd's enrolled set for `call`'s user, when fprintd is the backend; nil otherwise.
    /// Outside the reader's turn, on a connection of its own: listing needs no claim, and
    /// `status` must not wait for a scan to end.
    func fprintdSet(_ call: Call) throws -> FprintdSet? {
        let choice = call.settings.reader
        guard choice != .libfprint else { return nil }
        guard let bus = ReaderTurns.openSystemBus() else {
            if choice == .fprintd { throw FingersealError(.unavailable, Messages.fprintdUnavailable) }
            return nil
        }
        if choice == .auto && bus.fprintdPresence() == .absent { return nil }
        let device: FprintdDevice
        do throws(FprintError) { device = try bus.fprintdDefaultDevice() } catch { throw Fingerprint.translate(error) }
        return try FprintdEnrolledSet.read(device, user: call.account.name, storage: call.settings.fprintdStorage)
    }

    /// The scan is skipped at once while the lid is closed over a built-in reader (an
    /// external one is still used).
    private func checkLid(_ options: Options, backend: ReaderBackendChoice) throws {
        guard options.readerLocation != .external, LidState.closed(bus: systemBus()) == true else { return }
        if options.readerLocation == .auto && ReaderPlacement.hasExternalReader() { return }
        throw FingersealError(.noReader, Messages.lidClosed)
    }

    /// Runs `body` in `call`'s turn with the libfprint reader closed (listing devices, the
    /// self-test). Gives the backend the settings come to.
    func whileHeld<T>(_ call: Call, _ body: (ReaderBackendChoice, SystemBus?, Turn) throws -> T) throws -> T {
        try refuseRemote(call)
        let (priority, principal) = ReaderTurns.rank(call)
        let turn = try acquire(priority, principal, nil)
        defer { release(turn) }
        closeCached()
        let backend = backend(call.settings.reader)
        do {
            return try body(backend, backend == .fprintd ? systemBus() : nil, turn)
        } catch let error as FingersealError {
            throw ReaderTurns.preemption(error, turn)
        }
    }

    private func closeCached() {
        cached?.close()
        cached = nil
    }

    /// Closes the reader when nobody used it for `seconds` (the accept loop calls this; 0 on
    /// the way out). A reader in use, or wanted, is left alone.
    func closeIfIdle(after seconds: Double) {
        guard let turn = idleTurn(.system) else { return }
        defer { release(turn, served: false) }
        if cached != nil && condition.locked({ monotonicSeconds() - lastUse >= seconds }) { closeCached() }
    }
}
