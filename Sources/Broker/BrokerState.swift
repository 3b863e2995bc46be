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

    init(settings: BrokerSettings) throws {
        self.settings = settings
        // The store's root: root's, 0700 (systemd's StateDirectory makes it so too).
        try createDirectories(settings.stateDirectory, mode: 0o700)
        let directory = try SafeDirectory(path: settings.stateDirectory, owner: geteuid())
        _ = directory
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
/// and is told why.
final class ReaderGate: @unchecked Sendable {
    private var semaphore = sem_t()
    /// The longest a request waits for another to finish with the reader.
    static let waitLimit = 30.0

    init() { sem_init(&semaphore, 0, 1) }
    deinit { sem_destroy(&semaphore) }

    /// Opens the reader for `body` and closes it afterwards; waits for another request's
    /// turn first, saying so.
    func withReader<T>(_ conversation: Conversation, deviceID: String? = nil, _ body: (Reader) throws -> T) throws -> T {
        if sem_trywait(&semaphore) != 0 {
            conversation.info(Messages.readerBusyWaiting)
            var deadline = timespec()
            clock_gettime(CLOCK_REALTIME, &deadline)
            deadline.tv_sec += Int(ReaderGate.waitLimit)
            while sem_timedwait(&semaphore, &deadline) != 0 {
                if errno == EINTR { continue }
                throw FingersealError(.unavailable, Messages.readerBusy)
            }
        }
        defer { sem_post(&semaphore) }
        let reader = try Fingerprint.openReader(deviceID: deviceID)
        defer { reader.close() }
        return try body(reader)
    }

    /// Runs `body` while holding the reader's turn, without opening it (listing devices).
    func whileHeld<T>(_ body: () throws -> T) throws -> T {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        deadline.tv_sec += Int(ReaderGate.waitLimit)
        while sem_timedwait(&semaphore, &deadline) != 0 {
            if errno == EINTR { continue }
            throw FingersealError(.unavailable, Messages.readerBusy)
        }
        defer { sem_post(&semaphore) }
        return try body()
    }
}
