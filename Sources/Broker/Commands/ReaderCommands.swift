import FingerprintFlows
import FingersealCore
import FingersealWire
import FprintdKit
import FprintKit
import ReaderValues
import SystemKit

/// devices, enroll, fingers, forget, verify, capture, selftest. The reader is the broker's:
/// one operation at a time (`ReaderTurns`), cancelled by the client's cancel or hang-up.
enum ReaderCommands {
    // MARK: devices

    struct DeviceReport: Encodable {
        let id: String
        let driver: String
        let name: String
        let scanType: String
        let features: [String]
    }

    static func featureNames(_ features: ReaderFeatures) -> [String] {
        let names: [(ReaderFeatures, String)] = [
            (.capture, "capture"), (.identify, "identify"), (.verify, "verify"), (.storage, "storage"),
            (.storageList, "storage-list"), (.storageDelete, "storage-delete"), (.storageClear, "storage-clear"),
            (.duplicatesCheck, "duplicates-check"), (.alwaysOn, "always-on"), (.updatePrint, "update-print"),
        ]
        return names.filter { features.contains($0.0) }.map(\.1)
    }

    static func devices(_ call: Call) throws -> Reply {
        let reports = try connected(call).devices
        if call.json {
            try call.printJSON(reports)
            return Reply(.success)
        }
        guard !reports.isEmpty else { throw FingersealError(.noReader, Messages.noReader) }
        for report in reports {
            call.conversation.output("\(report.name) (driver \(report.driver), id \(report.id)): \(report.scanType) sensor; "
                                     + "features: \(report.features.joined(separator: ", ")).")
        }
        return Reply(.success)
    }

    /// The backend the settings come to now, and the readers it sees: fprintd's devices where
    /// it owns the reader (nothing here opens one then), else libfprint's.
    static func connected(_ call: Call) throws -> (backend: ReaderBackendChoice, devices: [DeviceReport]) {
        try call.state.reader.whileHeld(call) { backend, bus, _ throws -> (ReaderBackendChoice, [DeviceReport]) in
            if backend == .fprintd && bus == nil { throw FingersealError(.unavailable, Messages.fprintdUnavailable) }
            do throws(FprintError) {
                if backend == .fprintd, let bus {
                    return (backend, try bus.fprintdDevices().map {
                        DeviceReport(id: $0.objectPath, driver: "fprintd", name: $0.name, scanType: $0.scanType, features: ["verify"])
                    })
                }
                return (backend, try LibfprintDevice.list().map {
                    DeviceReport(id: $0.deviceID, driver: $0.driver, name: $0.name,
                                 scanType: $0.scanType == .swipe ? "swipe" : "press", features: featureNames($0.features))
                })
            } catch { throw Fingerprint.translate(error) }
        }
    }

    /// A cancel the reader reported: the client's (a cancel message or a hang-up) stays a
    /// cancel; any other is the reader's own failure.
    /// A scan whose turn was taken away says so instead.
    static func clientCancel(_ call: Call, _ error: FingersealError, _ turn: ReaderTurns.Turn) -> FingersealError {
        if turn.preempted { return ReaderTurns.preemption(error, turn) }
        guard error.outcome == .cancelled, !call.conversation.takeCancel() else { return error }
        return FingersealError(.unavailable, Messages.readerOperationCancelled)
    }

    // MARK: enroll, fingers, forget

    static func enroll(_ call: Call) throws -> Reply {
        let requested = try call.options(for: EnrollOptions.self).finger.map { name -> Finger in
            guard let finger = Finger(name: name) else { throw FingersealError(.usage, Messages.unknownFinger(String(name.prefix(64)))) }
            return finger
        }
        let store = call.store
        let scan = try call.scanSettings()
        // Nobody should type a PIN only to hear there is no reader: asked of a free reader
        // without waiting for one in use. The PIN comes before the reader's turn, so a person
        // thinking about their PIN holds nobody else's scan up.
        try call.state.reader.refuseRemote(call)
        if call.state.reader.readerPresent(call, deviceID: call.deviceID) == false {
            throw FingersealError(.noReader, Messages.noReader)
        }
        let vault = try PINEntry.unlock(call, store: store)
        let finger = try call.state.reader.withReader(call, deviceID: call.deviceID) { reader, turn -> Finger in
            let enrolled: [String]
            if case let .fprintd(device, user, storage) = reader {
                enrolled = try FprintdEnrolledSet.read(device, user: user, storage: storage).fingers
            } else {
                enrolled = try vault.enrolledFingers()
            }
            let order: [Finger] = [.rightIndex, .leftIndex, .rightMiddle, .leftMiddle, .rightThumb, .leftThumb,
                                   .rightRing, .leftRing, .rightLittle, .leftLittle]
            guard let finger = requested ?? order.first(where: { !enrolled.contains($0.name) }) else {
                throw FingersealError(.usage, Messages.everyFingerEnrolled)
            }
            do {
                try Fingerprint.enroll(vault: vault, reader: reader, finger: finger, settings: scan,
                                       prompter: call.conversation, cancelFDs: [call.conversation.cancelFD, turn.stopFD])
            } catch let error as FingersealError {
                throw clientCancel(call, error, turn)
            }
            return finger
        }
        call.conversation.output(Messages.enrolled(finger.name))
        return Reply(.success)
    }

    static func fingers(_ call: Call) throws -> Reply {
        guard let status = try Vault.status(call.store) else { throw FingersealError(.noVault, Messages.noVault) }
        // Where fprintd holds the fingers, they are fprintd's (enrolled here or elsewhere).
        let fingers = try call.state.reader.fprintdSet(call)?.fingers ?? status.fingers
        if call.json {
            try call.printJSON(["fingers": fingers])
            return Reply(.success)
        }
        call.conversation.output(fingers.isEmpty ? Messages.noFingerEnrolled : fingers.joined(separator: "\n"))
        return Reply(.success)
    }

    static func forget(_ call: Call) throws -> Reply {
        // One finger or --all: checked when the call was made (`ForgetOptions.validate`).
        let all = call.options(for: ForgetOptions.self).all
        let vault = try PINEntry.unlock(call, store: call.store)
        let fingers = all ? nil : call.arguments
        // fprintd holds the fingers: only those fingerseal enrolled there are deleted.
        if try call.state.reader.fprintdSet(call) != nil {
            let forgotten = try call.state.reader.withReader(call) { reader, _ -> [String] in
                guard case let .fprintd(device, user, storage) = reader else { throw FingersealError(.unavailable, Messages.fprintdUnavailable) }
                return try Fingerprint.forgetAtFprintd(vault: vault, fingers: fingers, device: device, user: user, storage: storage)
            }
            call.conversation.output(forgotten.isEmpty ? Messages.nothingForgottenAtFprintd : Messages.forgotten(forgotten))
            return Reply(.success)
        }
        // Prints stored on the reader are deleted there first, in the reader's turn. Opening
        // it may fail (none connected, or busy): then the vault forgets, and a print left on
        // a chip is reported.
        let attempt: Result<[String], any Error>?
        do {
            attempt = try call.state.reader.withReader(call) { reader, _ in
                guard case let .libfprint(device) = reader else { throw FingersealError(.unavailable, Messages.readerBusy) }
                return Result { try Fingerprint.forget(vault: vault, fingers: fingers, openReader: { device }, prompter: call.conversation) }
            }
        } catch is FingersealError {
            attempt = nil
        }
        let forgotten = try attempt?.get()
            ?? Fingerprint.forget(vault: vault, fingers: fingers, openReader: { nil }, prompter: call.conversation)
        call.conversation.output(Messages.forgotten(forgotten))
        return Reply(.success)
    }

    // MARK: verify, capture

    struct VerifyReport: Encodable {
        let result: String
        let finger: String?
        let milliseconds: Double?
        let message: String?
    }

    static func verify(_ call: Call) throws -> Reply {
        let store = call.store
        let scan = try call.scanSettings(maxTries: 1)
        let ledger = call.ledger(store)
        let json = call.json
        let result = try call.state.reader.withReader(call, deviceID: call.deviceID) { reader, turn in
            Result { () throws -> Fingerprint.Match in
                do {
                    return try Fingerprint.verify(session: VaultSession(store), ledger: ledger, reader: reader, settings: scan,
                                                  prompter: call.conversation, cancelFDs: [call.conversation.cancelFD, turn.stopFD])
                } catch let error as FingersealError {
                    throw clientCancel(call, error, turn)
                }
            }
        }
        func rounded(_ milliseconds: Double) -> Double { (milliseconds * 10).rounded() / 10 }
        do {
            let match = try result.get()
            let milliseconds = rounded(match.milliseconds)
            if json {
                try call.printJSON(VerifyReport(result: "match", finger: match.finger, milliseconds: milliseconds, message: nil))
            } else {
                call.conversation.output(Messages.verifyMatch(match.finger, milliseconds))
            }
            return Reply(.success)
        } catch let error as FingersealError {
            if json {
                let outcome = error.outcome == .noMatch ? "no-match" : error.outcome.rawValue
                try call.printJSON(VerifyReport(result: outcome, finger: nil, milliseconds: error.milliseconds.map(rounded),
                                                message: error.message))
            }
            throw error
        }
    }

    /// Captures one image; its PGM bytes go back as data, and the client writes them where
    /// its --out says (the broker never opens a file a caller names).
    static func capture(_ call: Call) throws -> Reply {
        let path = call.options(for: CaptureOptions.self).out ?? "the file"
        let scan = try call.scanSettings()
        let image = try call.state.reader.withReader(call, deviceID: call.deviceID) { backend, turn -> FingerprintImage in
            guard case let .libfprint(reader) = backend else { throw FingersealError(.unavailable, Messages.needsDirectReader) }
            guard reader.info.features.contains(.capture) else { throw FingersealError(.unavailable, Messages.captureNotSupported) }
            call.conversation.info(Messages.placeFinger(swipe: reader.info.scanType == .swipe, cancelHint: scan.cancelHint))
            let operation: ReaderOperation
            do throws(FprintError) { operation = try reader.capture() } catch { throw Fingerprint.translate(error) }
            let result = operation.wait(timeout: scan.timeout, cancelFDs: [call.conversation.cancelFD, turn.stopFD]) { event in
                call.conversation.readerEvent(event)
                if case let .hint(hint) = event { call.conversation.info(Fingerprint.describe(hint)) }
            }
            guard case let .captured(image) = result else {
                if case let .failed(error) = result { throw clientCancel(call, Fingerprint.translate(error), turn) }
                throw FingersealError(.unavailable, Messages.readerUnexpectedResult)
            }
            return image
        }
        image.pgm().withUnsafeBytes { call.conversation.data($0) }
        call.conversation.output(Messages.captured(path, image.width, image.height))
        return Reply(.success)
    }

    // MARK: selftest

    struct SelftestReport: Encodable {
        struct Step: Encodable {
            let name: String
            let passed: Bool
            let milliseconds: Double
            let message: String?
        }
        var driver: String = ""
        var passed = false
        var steps: [Step] = []
    }

    /// Open, enroll, verify, delete, close. The reader's storage is never cleared: other
    /// programs' prints stay, and a full reader fails the enroll step saying so. The print the
    /// enroll step made is deleted even when verify failed, so nothing of the self-test stays
    /// on the chip. The vault is not touched.
    static func selftest(_ call: Call) throws -> Reply {
        let scan = try call.scanSettings()
        let prompter = call.conversation
        let json = call.json
        var report = SelftestReport()

        /// Runs one step, timing it; returns false (and records why) when it fails.
        func step(_ name: String, _ body: () throws -> Void) -> Bool {
            let start = monotonicSeconds()
            var message: String? = nil
            do { try body() } catch let error as FingersealError { message = error.message } catch {
                message = Fingerprint.translate(error as? FprintError ?? .invalidPrint).message
            }
            let milliseconds = ((monotonicSeconds() - start) * 10000).rounded() / 10
            report.steps.append(.init(name: name, passed: message == nil, milliseconds: milliseconds, message: message))
            if !json {
                prompter.output(Messages.selftestStep(name, failure: message, milliseconds: milliseconds))
            }
            return message == nil
        }
        func finish(_ operation: ReaderOperation, timeout: Double, _ turn: ReaderTurns.Turn) throws -> OperationResult {
            let result = operation.wait(timeout: timeout, cancelFDs: [prompter.cancelFD, turn.stopFD]) { event in
                prompter.readerEvent(event)
                switch event {
                case let .enrollProgress(done, total): prompter.info(Messages.enrollProgress(done, total, swipe: false))
                case let .hint(hint): prompter.info(Fingerprint.describe(hint))
                case .fingerNeeded: break
                }
            }
            if case let .failed(error) = result { throw clientCancel(call, Fingerprint.translate(error), turn) }
            return result
        }

        let ok = try call.state.reader.whileHeld(call) { backend, _, turn -> Bool in
            // The self-test drives the device itself: never while fprintd owns it.
            guard backend == .libfprint else { throw FingersealError(.unavailable, Messages.needsDirectReader) }
            var opened: LibfprintDevice? = nil
            var enrolled: Print? = nil
            var ok = step("open") {
                opened = try Fingerprint.openReader(deviceID: call.deviceID)
                report.driver = opened?.info.driver ?? ""
                guard opened?.info.features.contains(.storage) == true else {
                    throw FingersealError(.unavailable, Messages.selftestNeedsStorage)
                }
            }
            guard let reader = opened else { return false }
            defer { reader.close() }
            if ok {
                ok = step("enroll") {
                    prompter.info(Messages.placeFinger(swipe: reader.info.scanType == .swipe, cancelHint: scan.cancelHint))
                    let operation = try reader.enrollBare()
                    guard case let .enrolled(print) = try finish(operation, timeout: scan.timeout, turn) else {
                        throw FingersealError(.unavailable, Messages.enrollGaveNoPrint)
                    }
                    enrolled = print
                }
                ok = ok && step("verify") {
                    guard let print = enrolled else { return }
                    prompter.info(Messages.placeFinger(swipe: reader.info.scanType == .swipe, cancelHint: scan.cancelHint))
                    guard case .verified(matched: true) = try finish(try reader.verify(print), timeout: scan.timeout, turn) else {
                        throw FingersealError(.noMatch, Messages.noMatch)
                    }
                }
                if let print = enrolled {
                    // Not cancellable by the client: the self-test's print must not stay behind.
                    let deleted = step("delete") {
                        if case let .failed(error) = try reader.deleteStoredPrint(print).wait(timeout: scan.timeout) {
                            throw Fingerprint.translate(error)
                        }
                    }
                    ok = ok && deleted
                }
            }
            let closed = step("close") {
                guard reader.close() else { throw FingersealError(.unavailable, Messages.readerDidNotClose) }
            }
            return ok && closed
        }
        report.passed = ok
        if json { try call.printJSON(report) }
        if !ok {
            let failed = report.steps.first { !$0.passed }
            throw FingersealError(.unavailable, Messages.selftestFailed(failed?.name ?? "a step", failed?.message ?? ""))
        }
        if !json { call.conversation.output(Messages.selftestPassed) }
        return Reply(.success)
    }
}
