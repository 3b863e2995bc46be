import FingersealCore
import FprintdKit
import FprintKit
import ReaderValues
import SodiumKit
import SystemKit

/// A prompter that also wants every reader event as it happens (machine-readable progress).
public protocol ScanPrompter: Prompter {
    func readerEvent(_ event: ReaderEvent)
    /// What a scan came to, beside its sentence, for clients that draw their own prompt.
    func scanOutcome(_ outcome: ScanOutcome)
}

extension ScanPrompter {
    public func readerEvent(_ event: ReaderEvent) {}
    public func scanOutcome(_ outcome: ScanOutcome) {}
}

/// How a scan ended when it did not unlock, as a machine-readable state.
public enum ScanOutcome: String, Sendable {
    /// The finger did not match; the reader may wait for another try.
    case noMatch = "no-match"
    /// Too many failed matches: the finger is locked until a PIN or password success.
    case fingerLocked = "finger-locked"
}

/// Reader settings for one flow.
public struct ScanSettings: Sendable {
    /// Seconds to wait for a finger (per attempt; enrollment gets this per scan).
    public var timeout: Double
    /// Failed matches allowed in this attempt.
    public var maxTries: Int
    /// Ends "Place your finger on the reader, …": how to cancel, what comes next.
    public var cancelHint: ScanHint

    public init(timeout: Double, maxTries: Int, cancelHint: ScanHint) {
        self.timeout = timeout
        self.maxTries = maxTries
        self.cancelHint = cancelHint
    }
}

/// The fingerprint flows: verify against the user's prints, enroll, forget.
public enum Fingerprint {
    /// Opens a reader; a missing one is reported at once.
    public static func openReader(deviceID: String? = nil) throws -> LibfprintDevice {
        do { return try LibfprintDevice(deviceID: deviceID) } catch { throw translate(error) }
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
            return FingersealError(.unavailable, message.isEmpty ? Messages.readerErrorCode(String(code)) : Messages.readerFailed(message))
        case let .notSupported(what): return FingersealError(.unavailable, Messages.readerDoesNotSupport(String(describing: what)))
        case let .other(domain, code, message):
            return FingersealError(.unavailable, Messages.readerFailed(message.isEmpty ? "\(domain) \(code)" : message))
        case .contextUnavailable, .system, .invalidPrint:
            return FingersealError(.systemError, Messages.systemFailure(.useReader), detail: "\(error)")
        }
    }

    /// What a successful match gives: the finger, and the vault opened through its device slot.
    public struct Match {
        public let finger: String
        public let vault: UnlockedVault
        /// From the scan request to the match, in milliseconds.
        public let milliseconds: Double
    }

    /// What one scan is matched against, and how the result names the finger.
    private enum MatchPlan {
        case single(finger: String, print: Print)
        case identify([(finger: String, print: Print)])
        case fprintd(FprintdDevice, fingers: [String])

        /// The vault's templates this reader can match, or fprintd's set if the PIN confirmed it.
        init(_ reader: ReaderBackend, vault: UnlockedVault) throws {
            switch reader {
            case let .libfprint(device):
                let enrolled = try vault.prints()
                guard !enrolled.isEmpty else { throw FingersealError(.notEnrolled, Messages.notEnrolled) }
                let candidates = enrolled.compactMap { entry -> (finger: String, print: Print)? in
                    guard let print = try? entry.template.withUnsafeBytes({ try Print(serialized: $0) }),
                          device.isCompatible(print) else { return nil }
                    return (entry.finger, print)
                }
                guard let first = candidates.first else { throw FingersealError(.noPrints, Messages.noCompatiblePrints) }
                self = candidates.count > 1 && device.info.features.contains(.identify)
                    ? .identify(candidates) : .single(finger: first.finger, print: first.print)
            case let .fprintd(device, user, storage):
                let current = try FprintdEnrolledSet.read(device, user: user, storage: storage)
                guard !current.fingers.isEmpty else { throw FingersealError(.notEnrolled, Messages.notEnrolled) }
                guard let bound = try vault.fprintdSet(), bound.digest == current.digest else {
                    throw FingersealError(.fingersChanged, Messages.fingersChanged)
                }
                self = .fprintd(device, fingers: current.fingers)
            }
        }

        func start(_ reader: ReaderBackend) throws(FprintError) -> any ScanOperation {
            switch (self, reader) {
            case let (.single(_, print), .libfprint(device)): return try device.verify(print)
            case let (.identify(candidates), .libfprint(device)): return try device.identify(candidates.map(\.print))
            case let (.fprintd(device, _), _): return try device.verify()
            default: throw FprintError.notSupported("this reader")
            }
        }

        /// The matched finger; nil for no match. Throws for a result that is not a decision.
        func decide(_ result: OperationResult) throws(FprintError) -> String? {
            switch (self, result) {
            case let (.single(finger, _), .verified(isMatch)): return isMatch ? finger : nil
            case let (.identify(candidates), .identified(index)): return index.map { candidates[$0].finger }
            case let (.fprintd(_, fingers), .verified(isMatch)):
                return isMatch ? (fingers.count == 1 ? fingers[0] : Messages.anyFprintdFinger) : nil
            case let (_, .failed(error)): throw error
            default: throw FprintError.other(domain: "fingerseal", code: 0, message: "unexpected result")
            }
        }
    }

    /// Scans until a match, `maxTries` failed matches, the timeout, or a cancel. Failed
    /// matches are counted in the lockout ledger (persisted); cancel and timeout are not.
    ///
    /// `afterMatch`: where the success-side bookkeeping (resetting the failure count) goes;
    /// the broker runs it after answering. Without one it runs before returning. The prints
    /// and the counters come from the request's `session` (read once).
    public static func verify(session: VaultSession, ledger: LockoutLedger, reader: ReaderBackend, settings: ScanSettings,
                              prompter: ScanPrompter, cancelFDs: [Int32],
                              afterMatch: ((@escaping () -> Void) -> Void)? = nil) throws -> Match {
        guard let status = try session.status() else { throw FingersealError(.noVault, Messages.noVault) }
        let counters = status.lockout.counters(for: ledger.applicant)
        if counters.fingerLocked { throw FingersealError(.lockedOut, Messages.fingerLocked) }
        let vault = try session.unlockWithDevice()
        let plan = try MatchPlan(reader, vault: vault)

        let deadline = monotonicSeconds() + settings.timeout
        var failures = 0
        var lastScan: Double? = nil
        var prompted = false
        while failures < settings.maxTries {
            let started = monotonicSeconds()
            let operation: any ScanOperation
            do { operation = try plan.start(reader) } catch { throw translate(error) }
            // Once the reader is armed (fprintd's VerifyStart has returned), not before.
            if !prompted {
                prompter.info(Messages.placeFinger(swipe: reader.swipe, cancelHint: settings.cancelHint))
                prompted = true
            }
            let result = operation.wait(timeout: max(deadline - started, 0), cancelFDs: cancelFDs) { event in
                prompter.readerEvent(event)
                if case let .hint(hint) = event { prompter.info(describe(hint)) }
            }
            let elapsed = (monotonicSeconds() - started) * 1000
            let matched: String?
            do { matched = try plan.decide(result) } catch .retry { continue } // the hint was shown; not a failed match
            catch { throw translate(error) }
            // A match resets failures counted before it; with none, the lockout file is not
            // touched (a failure another request counts meanwhile stays counted: never less).
            if let matched {
                if counters.fingerFailures > 0 || failures > 0 {
                    if let afterMatch {
                        afterMatch { try? ledger.fingerSucceeded() }
                    } else {
                        try ledger.fingerSucceeded()
                    }
                }
                return Match(finger: matched, vault: vault, milliseconds: elapsed)
            }
            failures += 1
            lastScan = elapsed
            if try ledger.fingerFailed().fingerLocked {
                prompter.scanOutcome(.fingerLocked)
                throw FingersealError(.lockedOut, Messages.fingerLocked, milliseconds: elapsed)
            }
            prompter.scanOutcome(.noMatch)
            if failures < settings.maxTries { prompter.error(Messages.noMatchTryAgain) }
        }
        throw FingersealError(settings.maxTries > 1 ? .triesExhausted : .noMatch, Messages.noMatch, milliseconds: lastScan)
    }

    /// Enrolls `finger` into a vault opened with the PIN: its template sealed in the vault
    /// (libfprint), or enrolled at fprintd, whose new set the PIN then confirms.
    public static func enroll(vault: UnlockedVault, reader: ReaderBackend, finger: Finger, settings: ScanSettings,
                              prompter: ScanPrompter, cancelFDs: [Int32]) throws {
        guard vault.unlockedBy == .pin else { throw FingersealError(.usage, Messages.pinNeeded) }
        let enrolled: [String]
        if case let .fprintd(device, user, storage) = reader {
            enrolled = try FprintdEnrolledSet.read(device, user: user, storage: storage).fingers
        } else {
            enrolled = try vault.enrolledFingers()
        }
        if enrolled.contains(finger.name) { throw FingersealError(.usage, Messages.alreadyEnrolled(finger.name)) }
        prompter.info(Messages.placeFinger(swipe: reader.swipe, cancelHint: settings.cancelHint))
        let operation: any ScanOperation
        do throws(FprintError) {
            switch reader {
            case let .libfprint(device):
                operation = try device.enroll(finger: finger, username: vault.store.location.account.name, description: "fingerseal")
            case let .fprintd(device, _, _):
                operation = try device.enroll(finger: finger)
            }
        } catch { throw translate(error) }
        // Per scan: fprintd may not know its stage count before the claim.
        let result = operation.wait(timeout: settings.timeout, cancelFDs: cancelFDs) { event in
            prompter.readerEvent(event)
            switch event {
            case let .enrollProgress(done, total): prompter.info(Messages.enrollProgress(done, total, swipe: reader.swipe))
            case let .hint(hint): prompter.info(describe(hint))
            case .fingerNeeded: break
            }
        }
        switch (reader, result) {
        case let (.libfprint(device), .enrolled(print)):
            try seal(print, finger: finger, into: vault, from: device)
        case let (.fprintd(device, user, storage), .done):
            // The new set, confirmed by the PIN this enrollment was made with.
            let set = try FprintdEnrolledSet.read(device, user: user, storage: storage)
            let here = (try vault.fprintdSet()?.enrolledHere ?? []) + [finger.name]
            try vault.update { try $0.bindFprintd(FprintdSet(fingers: set.fingers, digest: set.digest, enrolledHere: here)) }
        case let (_, .failed(error)):
            throw translate(error)
        default:
            throw FingersealError(.unavailable, Messages.readerUnexpectedResult)
        }
    }

    /// Seals a new libfprint template into the vault; never leaves an orphan on a chip.
    private static func seal(_ print: Print, finger: Finger, into vault: UnlockedVault, from reader: LibfprintDevice) throws {
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
    public static func forget(vault: UnlockedVault, fingers: [String]?, openReader: () -> LibfprintDevice?,
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
    static func heldByReader(_ prints: [Print], _ reader: LibfprintDevice) throws -> [Print] {
        guard !prints.isEmpty, reader.info.features.contains(.storageList) else { return prints }
        let listing: ReaderOperation
        do { listing = try reader.listStoredPrints() } catch { throw translate(error) }
        switch listing.wait(timeout: 10) {
        case let .listed(stored): return prints.filter { print in stored.contains { $0.isSame(as: print) } }
        case let .failed(error): throw translate(error)
        default: throw FingersealError(.unavailable, Messages.readerUnexpectedResult)
        }
    }
}
