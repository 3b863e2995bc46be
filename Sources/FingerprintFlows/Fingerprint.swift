import FingersealCore
import FprintKit
import SodiumKit
import SystemKit

/// A prompter that also wants every reader event as it happens (machine-readable progress).
public protocol ScanPrompter: Prompter {
    func readerEvent(_ event: ReaderEvent)
}

extension ScanPrompter {
    public func readerEvent(_ event: ReaderEvent) {}
}

/// Reader settings for one flow.
public struct ScanSettings: Sendable {
    /// Seconds to wait for a finger (per attempt; enrollment gets this per scan).
    public var timeout: Double
    /// Failed matches allowed in this attempt.
    public var maxTries: Int
    /// Ends "Place your finger on the reader, …": how to cancel, what comes next.
    public var cancelHint: String

    public init(timeout: Double, maxTries: Int, cancelHint: String) {
        self.timeout = timeout
        self.maxTries = maxTries
        self.cancelHint = cancelHint
    }
}

/// The fingerprint flows: verify against the user's prints, enroll, forget.
public enum Fingerprint {
    /// Opens a reader; a missing one is reported at once.
    public static func openReader(deviceID: String? = nil) throws -> Reader {
        do { return try Reader(deviceID: deviceID) } catch { throw translate(error) }
    }

    public static func describe(_ hint: RetryHint) -> String {
        switch hint {
        case .general: return Messages.hintGeneral
        case .tooShort: return Messages.hintTooShort
        case .centerFinger: return Messages.hintCenter
        case .removeFinger: return Messages.hintRemove
        }
    }

    /// A reader error as an outcome and a sentence.
    public static func translate(_ error: FprintError) -> FingersealError {
        switch error {
        case .noReader: return FingersealError(.noReader, Messages.noReader)
        case let .noSuchReader(id): return FingersealError(.noReader, Messages.noSuchReader(id))
        case .cancelled: return FingersealError(.cancelled, Messages.cancelled)
        case .timedOut: return FingersealError(.timedOut, Messages.scanTimedOut)
        case let .retry(hint): return FingersealError(.unavailable, describe(hint))
        case .device(.removed, _, _): return FingersealError(.noReader, Messages.readerRemoved)
        case .device(.busy, _, _): return FingersealError(.unavailable, Messages.readerBusy)
        case .device(.dataDuplicate, _, _): return FingersealError(.usage, Messages.duplicateFinger)
        case .device(.dataFull, _, _): return FingersealError(.unavailable, Messages.readerStorageFull)
        case let .device(_, code, message):
            return FingersealError(.unavailable, Messages.readerFailed(message.isEmpty ? "code \(code)" : message))
        case let .notSupported(what): return FingersealError(.unavailable, Messages.readerFailed("it does not support \(what)"))
        case let .other(domain, code, message):
            return FingersealError(.unavailable, Messages.readerFailed(message.isEmpty ? "\(domain) \(code)" : message))
        case .contextUnavailable, .system, .invalidPrint:
            return FingersealError(.systemError, Messages.systemFailure("use the fingerprint reader"), detail: "\(error)")
        }
    }

    /// What a successful match gives: the finger, and the vault opened through its device slot.
    public struct Match {
        public let finger: String
        public let vault: UnlockedVault
        /// From the scan request to the match, in milliseconds.
        public let milliseconds: Double
    }

    /// Scans until a match, `maxTries` failed matches, the timeout, or a cancel. Failed
    /// matches are counted in the lockout ledger (persisted); cancel and timeout are not.
    ///
    /// `afterMatch`: where the success-side bookkeeping (resetting the failure count) goes;
    /// the broker runs it after answering. Without one it runs before returning.
    public static func verify(store: VaultStore, ledger: LockoutLedger, reader: Reader, settings: ScanSettings,
                              prompter: ScanPrompter, cancelFD: Int32?,
                              afterMatch: ((@escaping () -> Void) -> Void)? = nil) throws -> Match {
        if try ledger.current().fingerLocked { throw FingersealError(.lockedOut, Messages.fingerLocked) }
        let vault = try Vault.unlockWithDevice(store)
        let enrolled = try vault.prints()
        guard !enrolled.isEmpty else { throw FingersealError(.notEnrolled, Messages.notEnrolled) }
        let candidates = enrolled.compactMap { entry -> (finger: String, print: Print)? in
            guard let print = try? entry.template.withUnsafeBytes({ try Print(serialized: $0) }),
                  reader.isCompatible(print) else { return nil }
            return (entry.finger, print)
        }
        guard let first = candidates.first else { throw FingersealError(.noPrints, Messages.noCompatiblePrints) }
        let useIdentify = candidates.count > 1 && reader.info.features.contains(.identify)

        let deadline = monotonicSeconds() + settings.timeout
        var failures = 0
        var lastScan: Double? = nil
        prompter.info(Messages.placeFinger(swipe: reader.info.scanType == .swipe, cancelHint: settings.cancelHint))
        while failures < settings.maxTries {
            let started = monotonicSeconds()
            let operation: ReaderOperation
            do {
                operation = useIdentify ? try reader.identify(candidates.map(\.print)) : try reader.verify(first.print)
            } catch { throw translate(error) }
            let result = operation.wait(timeout: max(deadline - started, 0), cancelFD: cancelFD) { event in
                prompter.readerEvent(event)
                if case let .hint(hint) = event { prompter.info(describe(hint)) }
            }
            let elapsed = (monotonicSeconds() - started) * 1000
            var matched: String? = nil
            switch result {
            case let .verified(isMatch): matched = isMatch ? first.finger : nil
            case let .identified(index): matched = index.map { candidates[$0].finger }
            case .failed(.retry): continue // the hint was shown; a retry is not a failed match
            case let .failed(error): throw translate(error)
            default: throw FingersealError(.unavailable, Messages.readerFailed("unexpected result"))
            }
            if let matched {
                if let afterMatch {
                    afterMatch { try? ledger.fingerSucceeded() }
                } else {
                    try ledger.fingerSucceeded()
                }
                return Match(finger: matched, vault: vault, milliseconds: elapsed)
            }
            failures += 1
            lastScan = elapsed
            if try ledger.fingerFailed().fingerLocked {
                throw FingersealError(.lockedOut, Messages.fingerLocked, milliseconds: elapsed)
            }
            if failures < settings.maxTries { prompter.error(Messages.noMatchTryAgain) }
        }
        throw FingersealError(settings.maxTries > 1 ? .triesExhausted : .noMatch, Messages.noMatch, milliseconds: lastScan)
    }

    /// Enrolls `finger` on `reader` into a vault opened with the PIN.
    public static func enroll(vault: UnlockedVault, reader: Reader, finger: Finger, settings: ScanSettings,
                              prompter: ScanPrompter, cancelFD: Int32?) throws {
        guard vault.unlockedBy == .pin else { throw FingersealError(.usage, Messages.pinNeeded) }
        if try vault.enrolledFingers().contains(finger.name) {
            throw FingersealError(.usage, Messages.alreadyEnrolled(finger.name))
        }
        let swipe = reader.info.scanType == .swipe
        prompter.info(Messages.placeFinger(swipe: swipe, cancelHint: settings.cancelHint))
        let operation: ReaderOperation
        do {
            operation = try reader.enroll(finger: finger, username: vault.store.location.account.name,
                                          description: "fingerseal")
        } catch { throw translate(error) }
        let total = max(reader.enrollStages, 1)
        let result = operation.wait(timeout: settings.timeout * Double(total + 1), cancelFD: cancelFD) { event in
            prompter.readerEvent(event)
            switch event {
            case let .enrollProgress(done, total): prompter.info(Messages.enrollProgress(done, total, swipe: swipe))
            case let .hint(hint): prompter.info(describe(hint))
            case .fingerNeeded, .finished: break
            }
        }
        guard case let .enrolled(print) = result else {
            if case let .failed(error) = result { throw translate(error) }
            throw FingersealError(.unavailable, Messages.readerFailed("unexpected result"))
        }
        do {
            var bytes = try print.serialize()
            defer { Sodium.wipe(&bytes) }
            let template = try SecureBytes(copying: bytes)
            try vault.update { try $0.enroll(finger: finger.name, template: template) }
        } catch {
            // Do not leave an orphan template on a match-on-chip reader.
            if reader.info.features.contains(.storageDelete), let delete = try? reader.deleteStoredPrint(print) {
                _ = delete.wait(timeout: 10)
            }
            if let error = error as? FingersealError { throw error }
            throw translate(error as? FprintError ?? .invalidPrint)
        }
    }

    /// Forgets `fingers` (nil: all), deleting on-device templates first where the reader is
    /// connected. Returns the fingers forgotten.
    public static func forget(vault: UnlockedVault, fingers: [String]?, openReader: () -> Reader?,
                              prompter: Prompter) throws -> [String] {
        guard vault.unlockedBy == .pin else { throw FingersealError(.usage, Messages.pinNeeded) }
        let enrolled = try vault.prints()
        let targets = fingers ?? enrolled.map(\.finger)
        for finger in targets where !enrolled.contains(where: { $0.finger == finger }) {
            throw FingersealError(.usage, Messages.notEnrolledFinger(finger))
        }
        let prints = enrolled.filter { targets.contains($0.finger) }.compactMap { entry in
            try? entry.template.withUnsafeBytes { try Print(serialized: $0) }
        }
        // Delete on the reader first: if the vault write then fails, the vault names a
        // template that is gone (a failed match), never the reverse (an orphan on the chip).
        // Only the vault's own prints, and only where the chip holds that very template.
        if let reader = openReader() {
            if reader.info.features.contains(.storageDelete) {
                let ours = prints.filter { $0.isStoredOnDevice && reader.isCompatible($0) }
                for print in try heldByReader(ours, reader) {
                    guard let operation = try? reader.deleteStoredPrint(print) else { continue }
                    if case let .failed(error) = operation.wait(timeout: 10) {
                        if case .device(.dataNotFound, _, _) = error { continue } // already gone
                        throw translate(error)
                    }
                }
            }
        } else if prints.contains(where: \.isStoredOnDevice) {
            prompter.error(Messages.onDeviceTemplateLeft)
        }
        try vault.update { editor in for finger in targets { try editor.forget(finger: finger) } }
        return targets
    }

    /// Those of the vault's `prints` whose template the reader really holds (the same
    /// template, by libfprint's comparison): fingerseal deletes nothing on a chip that it did
    /// not store. A reader that cannot list its storage is trusted to delete by template.
    static func heldByReader(_ prints: [Print], _ reader: Reader) throws -> [Print] {
        guard !prints.isEmpty, reader.info.features.contains(.storageList) else { return prints }
        let listing: ReaderOperation
        do { listing = try reader.listStoredPrints() } catch { throw translate(error) }
        switch listing.wait(timeout: 10) {
        case let .listed(stored): return prints.filter { print in stored.contains { $0.isSame(as: print) } }
        case let .failed(error): throw translate(error)
        default: throw FingersealError(.unavailable, Messages.readerFailed("unexpected result"))
        }
    }
}
