import FingerprintFlows
import FingersealCore
import FprintKit
import Glibc
import SystemKit

/// What every request shares: the settings, the store, the session registry and the reader.
final class BrokerState: @unchecked Sendable {
    let settings: BrokerSettings
    let sessions = SessionRegistry()
    let reader = ReaderGate()
    let bookkeeping = Bookkeeping()

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

    func store(for account: UserAccount) -> VaultStore {
        VaultStore(location: .broker(stateDirectory: settings.stateDirectory, account: account))
    }

    /// The system configuration, read for each request so an edit applies at once.
    func systemOptions() throws -> (Options, [String]) {
        try Options.loadSystem(path: settings.configPath)
    }
}

/// The one fingerprint reader: one operation at a time. A second request waits (bounded)
/// and is told why. The reader stays open between requests, so a prompt follows a request at
/// once (opening costs a context, an enumeration and the device's own start-up); it is
/// closed after a reader error (unplugged, failed), after `idleLimit` without use, and
/// before listing devices (one GLib worker may drive the default main context at a time).
final class ReaderGate: @unchecked Sendable {
    private var semaphore = sem_t()
    /// Touched only by the holder of the semaphore.
    private var cached: Reader? = nil
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

    /// Lends the reader (`deviceID`, or the first) to `body`, opening it when needed.
    func withReader<T>(_ conversation: Conversation, deviceID: String? = nil, _ body: (Reader) throws -> T) throws -> T {
        try acquire(conversation)
        defer { release() }
        let reader: Reader
        if let cached, deviceID == nil || cached.info.deviceID == deviceID {
            reader = cached
        } else {
            cached?.close()
            cached = nil
            reader = try Fingerprint.openReader(deviceID: deviceID)
        }
        do {
            let result = try body(reader)
            cached = reader
            return result
        } catch let error as FingersealError where ![.noReader, .unavailable, .systemError].contains(error.outcome) {
            // A failed match, a timeout or a cancel leave the reader fine.
            cached = reader
            throw error
        } catch {
            reader.close()
            cached = nil
            throw error
        }
    }

    /// Runs `body` while holding the reader's turn, with the reader closed (listing devices).
    func whileHeld<T>(_ body: () throws -> T) throws -> T {
        try acquire(nil)
        defer { release() }
        cached?.close()
        cached = nil
        return try body()
    }

    /// Closes the reader when nobody used it for `seconds` (the accept loop calls this; 0 on
    /// the way out). A reader in use is left alone.
    func closeIfIdle(after seconds: Double) {
        guard sem_trywait(&semaphore) == 0 else { return }
        if cached != nil && monotonicSeconds() - lastUse >= seconds {
            cached?.close()
            cached = nil
        }
        sem_post(&semaphore)
    }
}
