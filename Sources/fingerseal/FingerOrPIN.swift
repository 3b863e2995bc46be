import CLinux
import Dispatch
import FingerprintFlows
import FingersealCore
import FprintKit
import Glibc
import SodiumKit
import SystemKit

/// A fingerprint scan on a thread of its own, so the terminal can take a PIN meanwhile.
/// The result is written before `done` is signalled and read only after it is seen (the
/// eventfd write and read order the two threads).
final class BackgroundScan: @unchecked Sendable {
    let done: FileDescriptor
    private let cancel: FileDescriptor
    private var result: Result<Fingerprint.Match, Error>? = nil
    private var finished = false

    init() throws {
        done = FileDescriptor(owning: try syscall("eventfd") { eventfd(0, Int32(EFD_CLOEXEC)) })
        cancel = FileDescriptor(owning: try syscall("eventfd") { eventfd(0, Int32(EFD_CLOEXEC)) })
    }

    func start(_ scan: @escaping @Sendable (_ cancelFD: Int32) throws -> Fingerprint.Match) {
        DispatchQueue.global().async {
            do { self.result = .success(try scan(self.cancel.rawValue)) } catch { self.result = .failure(error) }
            var one: UInt64 = 1
            _ = write(self.done.rawValue, &one, 8)
        }
    }

    /// Asks the scan to stop and waits for it (the reader confirms a cancel within seconds;
    /// FprintKit bounds it). Returns the scan's result, which may still be a match.
    func stop() -> Result<Fingerprint.Match, Error>? {
        var one: UInt64 = 1
        _ = write(cancel.rawValue, &one, 8)
        return wait()
    }

    /// Waits for the scan to end and returns its result.
    func wait() -> Result<Fingerprint.Match, Error>? {
        if !finished {
            var value: UInt64 = 0
            while read(done.rawValue, &value, 8) < 0 && errno == EINTR {}
            finished = true
        }
        return result
    }
}

extension Commands {
    /// How an unlock went: the vault, and which way it was opened.
    struct Unlocked {
        let vault: UnlockedVault
        /// "finger" or "pin".
        let method: String
        let finger: String?
    }

    /// Opens the vault with a finger, or with the PIN typed while the reader waits: the first
    /// to succeed wins and cancels the other. Enter alone skips to the PIN. Without a reader,
    /// an enrolled finger, or with the finger locked, it asks for the PIN straight away; with
    /// --pin-fd it reads the PIN from there.
    static func unlockWithFingerOrPIN(_ arguments: ParsedArguments, _ context: Context, store: VaultStore,
                                      options: Options) throws -> Unlocked {
        guard let status = try Vault.status(store) else { throw FingersealError(.noVault, Messages.noVault) }
        let pins = try PINSource(arguments)
        let ledger = LockoutLedger(store: store, options: options)
        /// The PIN; `fallback` says why the finger gave way to it (for the audit trail).
        func withPIN(fallback reason: Outcome? = nil) throws -> Unlocked {
            if let reason { AuditTrail(store: store).record(.fallback(reason: reason.rawValue), vault: nil) }
            return Unlocked(vault: try unlockWithPIN(pins, store, options), method: "pin", finger: nil)
        }
        if pins.fd != nil || arguments.has("--pin") { return try withPIN() }
        if status.fingers.isEmpty { return try withPIN() }
        if status.lockout.fingerLocked {
            context.output.note(Messages.fingerLocked)
            return try withPIN(fallback: .lockedOut)
        }
        let interrupt = try InterruptWatch()
        let reader: Reader
        do {
            reader = try Fingerprint.openReader(deviceID: arguments.values["--device"])
        } catch let error as FingersealError where error.outcome == .noReader {
            context.output.note(error.message)
            return try withPIN(fallback: .noReader)
        }
        defer { reader.close() }
        let hasTerminal = access("/dev/tty", R_OK | W_OK) == 0 && isatty(STDIN_FILENO) == 1
        var scanSettings = try settings(arguments, options)
        if hasTerminal { scanSettings.cancelHint = Messages.fingerOrPIN }
        let scan = scanSettings
        let prompter = try prompter(arguments, context)
        let job = try BackgroundScan()
        let scanReader = UncheckedReader(reader)
        job.start { cancelFD in
            try Fingerprint.verify(store: store, ledger: ledger, reader: scanReader.reader, settings: scan,
                                   prompter: prompter, cancelFD: cancelFD)
        }
        func matched(_ result: Result<Fingerprint.Match, Error>?) -> Unlocked? {
            guard case let .success(match)? = result else { return nil }
            return Unlocked(vault: match.vault, method: "finger", finger: match.finger)
        }
        // No terminal (a rig, a pipe): the finger only; a signal cancels.
        guard hasTerminal else {
            var watched = [pollfd(fd: job.done.rawValue, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: interrupt.fd, events: Int16(POLLIN), revents: 0)]
            while poll(&watched, 2, -1) < 0 && errno == EINTR {}
            if watched[1].revents != 0 && watched[0].revents == 0 {
                if let won = matched(job.stop()) { return won }
                throw FingersealError(.cancelled, Messages.cancelled)
            }
            switch job.wait() {
            case let .success(match)?: return Unlocked(vault: match.vault, method: "finger", finger: match.finger)
            case let .failure(error)?: throw error
            case nil: throw FingersealError(.systemError, Messages.systemFailure("scan"))
            }
        }
        while true {
            let answer: SecretInput.Answer
            do {
                answer = try SecretInput.prompt("", wakingOn: [job.done.rawValue, interrupt.fd])
            } catch {
                // Ctrl-C typed at the prompt: stop the scan first, then report the cancel.
                if let won = matched(job.stop()) { return won }
                throw error
            }
            switch answer {
            case .woken(interrupt.fd):
                if let won = matched(job.stop()) { return won }
                throw FingersealError(.cancelled, Messages.cancelled)
            case .woken:
                // The scan ended: a match wins; otherwise the PIN is the fallback.
                let result = job.wait()
                if let won = matched(result) { return won }
                var reason = Outcome.systemError
                if case let .failure(error as FingersealError)? = result {
                    if error.outcome == .cancelled { throw error }
                    context.output.note(error.message)
                    reason = error.outcome
                }
                return try withPIN(fallback: reason)
            case let .line(pin):
                if pin.count == 0 {
                    if let won = matched(job.stop()) { return won }
                    return try withPIN(fallback: .cancelled)
                }
                do {
                    let vault = try Vault.unlock(store, pin: PINKeyslot(pin: pin), ledger: ledger)
                    if let won = matched(job.stop()) { return won }
                    return Unlocked(vault: vault, method: "pin", finger: nil)
                } catch let error as FingersealError where error.outcome == .wrongPIN {
                    // The reader keeps waiting; the PIN may be typed again.
                    context.output.note(error.message)
                } catch {
                    _ = job.stop()
                    throw error
                }
            }
        }
    }
}

/// The reader, handed to the scan thread, which is its only user until the scan ends.
struct UncheckedReader: @unchecked Sendable {
    let reader: Reader
    init(_ reader: Reader) { self.reader = reader }
}
