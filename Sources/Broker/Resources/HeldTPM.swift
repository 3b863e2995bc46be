import FingersealCore
import SystemKit
import TPMKit

/// The TPM connection, storage key and salted session, kept between vault operations of one
/// process (the broker) like its fingerprint reader: creating the key and exchanging the
/// session's salt are most of an unseal's cost. One operation at a time uses them (an ESAPI
/// context is not thread-safe, and a TPM serves one command at a time anyway).
///
/// Closed after `idleLimit` without use (the broker's tick), when the broker stops, when
/// another TCTI is configured, and after any failure that is not the TPM's verdict on what
/// was asked (a reset TPM, a broken connection, a handle a resource manager dropped): then
/// the operation runs once more on a new connection. A wrong PIN is never tried twice.
///
/// The broker makes one (`BrokerState.tpm`) and lends it to every store it makes, through the
/// policy's `keys`; the core only sees the `TPMKeySource` it conforms to.
public final class HeldTPM: TPMKeySource, @unchecked Sendable {
    /// Like the reader's: a burst of requests (a login: the finger, then the session's
    /// refresh) shares one connection; an idle TPM holds nothing of ours.
    public static let idleLimit = 30.0

    private let lock = ThreadLock()
    private var held: (tcti: String, key: HeldStorageKey)?
    private var lastUse = 0.0

    public init() {}

    public func withKey<T>(tcti: String, _ body: (HeldStorageKey) throws -> T) throws -> T {
        try lock.locked {
            let kept = held.flatMap { $0.tcti == tcti ? $0.key : nil }
            let reused = kept != nil
            let key = try kept ?? open(tcti)
            do {
                return try finish(body(key))
            } catch let error as TPMError where !error.isVerdict {
                close()
                guard reused else { throw error }
                do {
                    return try finish(body(open(tcti)))
                } catch let error as TPMError where !error.isVerdict {
                    close()
                    throw error
                }
            }
        }
    }

    /// Closes the connection when it has not been used for `seconds`: the broker's idle tick.
    public func closeIfIdle(after seconds: Double = HeldTPM.idleLimit) {
        lock.locked {
            if held != nil && monotonicSeconds() - lastUse >= seconds { close() }
        }
    }

    /// Closes it now, flushing the storage key and its session: when the broker stops, and
    /// before a test or a tool talks to a TPM that serves one connection at a time (swtpm).
    public func closeNow() {
        lock.locked { close() }
    }

    private func finish<T>(_ result: T) -> T {
        lastUse = monotonicSeconds()
        return result
    }

    private func open(_ tcti: String) throws -> HeldStorageKey {
        close()
        let key = try HeldStorageKey(TPMContext(tcti: tcti))
        held = (tcti, key)
        return key
    }

    private func close() {
        held?.key.close()
        held = nil
    }
}

private extension TPMError {
    /// The TPM's answer about what was asked (a wrong authValue, the lockout, a policy not
    /// met, an object from another storage key) or our own refusal of a value: the same on
    /// any connection, so never a reason to drop the held key or to try again.
    var isVerdict: Bool {
        if case .invalidArgument = self { return true }
        return isAuthFailure || isLockout || isPolicyFailure || isForeignObject
    }
}
