import FingerprintFlows
import FingersealCore
import FprintKit
import FprintdKit
import IdentityClient
import Glibc
import SystemKit

/// What every request shares: the settings, the store, the session registry and the reader.
final class BrokerState: @unchecked Sendable {
    let settings: BrokerSettings
    let sessions = SessionRegistry()
    let reader = ReaderGate()
    let bookkeeping = Bookkeeping()
    /// The identity providers' signing keys, shared by every request (fetched again for an
    /// unknown key id, at most once a minute).
    let jwks = JWKSCache()
    /// Attempts per account written one by one, the rest counted (the audit trail's flood
    /// guard; reached through every store made here).
    let attemptLimiter = AttemptLimiter()

    init(settings: BrokerSettings) throws {
        self.settings = settings
        // The store's root: root's, 0700 (systemd's StateDirectory makes it so too).
        try createDirectories(settings.stateDirectory, mode: 0o700)
        // Refused when it is a link, not the broker's, or writable by others.
        _ = try SafeDirectory(path: settings.stateDirectory, owner: geteuid())
        guard chmod(settings.stateDirectory, 0o700) == 0 else {
            throw BrokerStartError("cannot set the mode of \(settings.stateDirectory)")
        }
    }

    func store(for account: UserAccount, tpm: TPMPolicy) -> VaultStore {
        VaultStore(location: .broker(stateDirectory: settings.stateDirectory, account: account), tpm: tpm,
                   attemptLimiter: attemptLimiter)
    }

    /// Writes counts of attempts the limiter held back (windows that ended, or all of them
    /// when the broker stops), each to its account's trail.
    func recordAttemptCounts(_ ended: [AttemptLimiter.Ended]) {
        guard !ended.isEmpty else { return }
        let tpm = ((try? systemOptions())?.0 ?? Options()).tpmPolicy
        for count in ended { AuditTrail(store: store(for: count.account, tpm: tpm)).record(count.tally) }
    }

    /// The system configuration, read for each request so an edit applies at once.
    func systemOptions() throws -> (Options, [String]) {
        try Options.loadSystem(path: settings.configPath)
    }
}

/// The one fingerprint reader: one operation at a time. A second request waits (bounded)
/// and is told why.
///
/// Two backends (`reader=`): fprintd, which owns the device on desktops (claimed for the
/// request's user and released at its end, so GNOME, KDE and pam_fprintd get it back at
/// once), or libfprint driving the device here (kiosks, rigs). Never both: while fprintd is
/// on the system bus (or can be activated) with `auto`, nothing here opens a USB device.
///
/// A libfprint reader stays open between requests, so a prompt follows a request at once
/// (opening costs a context, an enumeration and the device's own start-up); it is closed
/// after a reader error (unplugged, failed), after `idleLimit` without use, before listing
/// devices (one GLib worker may drive the default main context at a time), and when fprintd
/// takes over.
final class ReaderGate: @unchecked Sendable {
    private var semaphore = sem_t()
    /// Touched only by the holder of the semaphore.
    private var cached: Reader? = nil
    private var bus: SystemBus? = nil
    private var lastUse = monotonicSeconds()
    /// The longest a request waits for another to finish with the reader.
    static let waitLimit = 30.0
    /// An idle reader is closed after this long, leaving the device to others.
    static let idleLimit = 30.0

    init() { sem_init(&semaphore, 0, 1) }
    deinit { sem_destroy(&semaphore) }

    /// Waits for the reader's turn: at once when free, else (saying so) at most `waitLimit`.
    private func acquire(_ conversation: Conversation?) throws {
        if sem_trywait(&semaphore) == 0 { return }
        conversation?.info(Messages.readerBusyWaiting)
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        deadline.tv_sec += Int(ReaderGate.waitLimit)
        while sem_timedwait(&semaphore, &deadline) != 0 {
            if errno == EINTR { continue }
            throw FingersealError(.unavailable, Messages.readerBusy)
        }
    }

    private func release() {
        lastUse = monotonicSeconds()
        sem_post(&semaphore)
    }

    /// The system bus, kept open between requests; nil when there is none. Holder only.
    private func systemBus() -> SystemBus? {
        if let bus { return bus }
        bus = ReaderGate.openSystemBus()
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

    /// Lends the reader to `body` for `call`'s user: fprintd's device claimed for them, or
    /// the libfprint reader (`deviceID`, or the first), opened when needed. With the lid
    /// closed and the reader built in, fails at once with `.noReader`.
    func withReader<T>(_ call: Call, deviceID: String? = nil, _ body: (FingerReader) throws -> T) throws -> T {
        try acquire(call.conversation)
        defer { release() }
        let backend = backend(call.options.reader)
        try checkLid(call.options, backend: backend)
        if backend == .fprintd {
            closeCached()
            return try withFprintd(call, body)
        }
        let reader: Reader
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
        } catch let error as FingersealError where !ReaderGate.readerFailures.contains(error.outcome) {
            // A failed match, a timeout or a cancel leave the reader fine.
            cached = reader
            throw error
        } catch {
            reader.close()
            cached = nil
            throw error
        }
    }

    /// Outcomes after which the reader (or the bus) is not trusted for the next request.
    private static let readerFailures: [Outcome] = [.noReader, .unavailable, .systemError]

    /// fprintd's default device, claimed for the user for the length of `body`.
    private func withFprintd<T>(_ call: Call, _ body: (FingerReader) throws -> T) throws -> T {
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
        defer { device.release() }
        do {
            return try body(.fprintd(device, user: user, storage: call.options.fprintdStorage))
        } catch let error as FingersealError where error.outcome == .systemError {
            self.bus = nil
            throw error
        }
    }

    /// fprintd's enrolled set for `call`'s user, when fprintd is the backend; nil otherwise.
    /// Outside the reader's turn, on a connection of its own: listing needs no claim, and
    /// `status` must not wait for a scan to end.
    func fprintdSet(_ call: Call) throws -> FprintdSet? {
        let choice = call.options.reader
        guard choice != .libfprint else { return nil }
        guard let bus = ReaderGate.openSystemBus() else {
            if choice == .fprintd { throw FingersealError(.unavailable, Messages.fprintdUnavailable) }
            return nil
        }
        if choice == .auto && bus.fprintdPresence() == .absent { return nil }
        let device: FprintdDevice
        do throws(FprintError) { device = try bus.fprintdDefaultDevice() } catch { throw Fingerprint.translate(error) }
        return try FprintdEnrolledSet.read(device, user: call.account.name, storage: call.options.fprintdStorage)
    }

    /// The scan is skipped at once while the lid is closed over a built-in reader (an
    /// external one is still used).
    private func checkLid(_ options: Options, backend: ReaderBackendChoice) throws {
        guard options.readerLocation != .external, LidState.closed(bus: systemBus()) == true else { return }
        if options.readerLocation == .auto && ReaderPlacement.hasExternalReader() { return }
        throw FingersealError(.noReader, Messages.lidClosed)
    }

    /// Runs `body` while holding the reader's turn, with the libfprint reader closed (listing
    /// devices, the self-test). Gives the backend `options` come to.
    func whileHeld<T>(_ options: Options, _ body: (ReaderBackendChoice, SystemBus?) throws -> T) throws -> T {
        try acquire(nil)
        defer { release() }
        closeCached()
        let backend = backend(options.reader)
        return try body(backend, backend == .fprintd ? systemBus() : nil)
    }

    private func closeCached() {
        cached?.close()
        cached = nil
    }

    /// Closes the reader when nobody used it for `seconds` (the accept loop calls this; 0 on
    /// the way out). A reader in use is left alone.
    func closeIfIdle(after seconds: Double) {
        guard sem_trywait(&semaphore) == 0 else { return }
        if cached != nil && monotonicSeconds() - lastUse >= seconds { closeCached() }
        sem_post(&semaphore)
    }
}
