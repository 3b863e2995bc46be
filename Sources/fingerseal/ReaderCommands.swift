import FingerprintFlows
import FingersealCore
import FprintKit
import Glibc
import SodiumKit
import SystemKit

/// Prompts and progress go to stderr, so stdout carries only results (and --json). With
/// --events-fd, every reader event also goes out as a JSON line, for rigs (a finger robot
/// presses when it reads "finger-needed").
struct TerminalPrompter: ScanPrompter {
    let output: Output
    var eventsFD: Int32? = nil

    func info(_ text: String) { output.note(text) }
    func error(_ text: String) { output.note(text) }

    func readerEvent(_ event: ReaderEvent) {
        guard let eventsFD else { return }
        let line: String
        switch event {
        case .fingerNeeded: line = #"{"event":"finger-needed"}"#
        case let .enrollProgress(done, total): line = #"{"event":"enroll-progress","completed":\#(done),"total":\#(total)}"#
        case let .hint(hint): line = #"{"event":"hint","hint":"\#(Commands.hintName(hint))"}"#
        case .finished: return
        }
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(eventsFD, $0.baseAddress, $0.count) }
    }
}

extension Commands {
    static let device = OptionSpec.value("--device", "ID", "Use the reader with this id (see: fingerseal devices).")
    static let timeout = OptionSpec.value("--timeout", "SECONDS", "Wait at most this long for a finger (default 15).")
    static let eventsFD = OptionSpec.value("--events-fd", "N", "Also write reader events as JSON lines to file descriptor N.")

    static func hintName(_ hint: RetryHint) -> String {
        switch hint {
        case .general: return "general"
        case .tooShort: return "too-short"
        case .centerFinger: return "center-finger"
        case .removeFinger: return "remove-finger"
        }
    }

    static func prompter(_ arguments: ParsedArguments, _ context: Context) throws -> TerminalPrompter {
        guard let number = try arguments.integer("--events-fd") else { return TerminalPrompter(output: context.output) }
        guard number <= Int(Int32.max), fcntl(Int32(number), F_GETFD) != -1 else {
            throw FingersealError(.usage, "File descriptor \(number) is not open.")
        }
        return TerminalPrompter(output: context.output, eventsFD: Int32(number))
    }

    static let readerCommands: [CommandSpec] = [
        CommandSpec(name: "devices", summary: "List the fingerprint readers connected now.", options: [json], run: runDevices),
        CommandSpec(name: "enroll", summary: "Enroll a finger. Your PIN is needed.",
                    options: [.value("--finger", "NAME", "The finger to enroll (default: the first not yet enrolled, right index first)."),
                              device, timeout, pinFD, eventsFD],
                    discussion: "Finger names: " + Finger.allCases.map(\.name).joined(separator: ", ") + ".",
                    run: runEnroll),
        CommandSpec(name: "fingers", summary: "List the enrolled fingers.", options: [json], run: runFingers),
        CommandSpec(name: "forget", summary: "Forget one enrolled finger, or all. Your PIN is needed.",
                    arguments: "FINGER", options: [.flag("--all", "Forget every enrolled finger."), pinFD],
                    discussion: "Prints stored on the reader itself are deleted there too.", run: runForget),
        CommandSpec(name: "verify", summary: "Scan once and say whether it matches an enrolled finger (for test rigs).",
                    options: [json, device, timeout, eventsFD],
                    discussion: "Exit status 0: match; 1: no match; 3: cancelled; 4: timed out.", run: runVerify),
        CommandSpec(name: "capture", summary: "Capture one fingerprint image to a PGM file (image readers only).",
                    options: [.value("--out", "FILE", "Where to write the image (required)."), device, timeout, eventsFD],
                    run: runCapture),
        CommandSpec(name: "selftest", summary: "Exercise a reader with on-device storage: open, clear, enroll, verify, delete, close.",
                    options: [json, device, timeout, eventsFD],
                    discussion: "This clears the prints stored on the reader. Your vault is not touched.", run: runSelftest),
    ]

    static func settings(_ arguments: ParsedArguments, _ options: Options, maxTries: Int? = nil) throws -> ScanSettings {
        let seconds = try arguments.integer("--timeout") ?? options.timeout
        guard (1...600).contains(seconds) else { throw FingersealError(.usage, "The option --timeout needs 1 to 600 seconds.") }
        return ScanSettings(timeout: Double(seconds), maxTries: maxTries ?? options.maxTries, cancelHint: Messages.pressCtrlC)
    }



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

    static func runDevices(_ arguments: ParsedArguments, _ context: Context) throws {
        let readers: [ReaderInfo]
        do { readers = try Reader.list() } catch { throw Fingerprint.translate(error) }
        let reports = readers.map {
            DeviceReport(id: $0.deviceID, driver: $0.driver, name: $0.name,
                         scanType: $0.scanType == .swipe ? "swipe" : "press", features: featureNames($0.features))
        }
        if arguments.has("--json") { return try printJSON(reports, context) }
        guard !reports.isEmpty else { throw FingersealError(.noReader, Messages.noReader) }
        for report in reports {
            context.output.out("\(report.name) (driver \(report.driver), id \(report.id)): \(report.scanType) sensor; "
                               + "features: \(report.features.joined(separator: ", ")).")
        }
    }

    // MARK: enroll, fingers, forget

    static func runEnroll(_ arguments: ParsedArguments, _ context: Context) throws {
        let requested = try arguments.values["--finger"].map { name -> Finger in
            guard let finger = Finger(name: name) else { throw FingersealError(.usage, Messages.unknownFinger(String(name.prefix(64)))) }
            return finger
        }
        let (store, options) = try context.vault()
        let scan = try settings(arguments, options)
        let interrupt = try InterruptWatch()
        // The reader first: nobody should type a PIN only to hear there is no reader.
        let reader = try Fingerprint.openReader(deviceID: arguments.values["--device"])
        defer { reader.close() }
        let vault = try unlockWithPIN(try PINSource(arguments), store, options)
        let enrolled = try vault.enrolledFingers()
        let order: [Finger] = [.rightIndex, .leftIndex, .rightMiddle, .leftMiddle, .rightThumb, .leftThumb,
                               .rightRing, .leftRing, .rightLittle, .leftLittle]
        guard let finger = requested ?? order.first(where: { !enrolled.contains($0.name) }) else {
            throw FingersealError(.usage, Messages.alreadyEnrolled("every finger"))
        }
        try Fingerprint.enroll(vault: vault, reader: reader, finger: finger, settings: scan,
                               prompter: try prompter(arguments, context), cancelFD: interrupt.fd)
        context.output.out(Messages.enrolled(finger.name))
    }

    static func runFingers(_ arguments: ParsedArguments, _ context: Context) throws {
        let (store, _) = try context.vault()
        guard let status = try Vault.status(store) else { throw FingersealError(.noVault, Messages.noVault) }
        if arguments.has("--json") { return try printJSON(["fingers": status.fingers], context) }
        context.output.out(status.fingers.isEmpty ? "No finger is enrolled." : status.fingers.joined(separator: "\n"))
    }

    static func runForget(_ arguments: ParsedArguments, _ context: Context) throws {
        let all = arguments.has("--all")
        guard all != (arguments.positionals.count == 1), arguments.positionals.count <= 1 else {
            throw FingersealError(.usage, "Name one finger to forget, or use --all.")
        }
        let (store, options) = try context.vault()
        let vault = try unlockWithPIN(try PINSource(arguments), store, options)
        let forgotten = try Fingerprint.forget(vault: vault, fingers: all ? nil : arguments.positionals,
                                               openReader: { try? Fingerprint.openReader() },
                                               prompter: TerminalPrompter(output: context.output))
        context.output.out(Messages.forgotten(forgotten))
    }

    // MARK: verify, capture

    struct VerifyReport: Encodable {
        let result: String
        let finger: String?
        let milliseconds: Double?
        let message: String?
    }

    static func runVerify(_ arguments: ParsedArguments, _ context: Context) throws {
        let (store, options) = try context.vault()
        let scan = try settings(arguments, options, maxTries: 1)
        let interrupt = try InterruptWatch()
        let reader = try Fingerprint.openReader(deviceID: arguments.values["--device"])
        defer { reader.close() }
        let ledger = LockoutLedger(store: store, options: options)
        let json = arguments.has("--json")
        do {
            let match = try Fingerprint.verify(store: store, ledger: ledger, reader: reader, settings: scan,
                                               prompter: try prompter(arguments, context), cancelFD: interrupt.fd)
            let milliseconds = (match.milliseconds * 10).rounded() / 10
            if json {
                try printJSON(VerifyReport(result: "match", finger: match.finger, milliseconds: milliseconds, message: nil), context)
            } else {
                context.output.out("Match: \(match.finger), in \(milliseconds) milliseconds.")
            }
        } catch let error as FingersealError {
            if json {
                let result = error.outcome == .noMatch ? "no-match" : error.outcome.rawValue
                try printJSON(VerifyReport(result: result, finger: nil, milliseconds: nil, message: error.message), context)
            }
            throw error
        }
    }

    static func runCapture(_ arguments: ParsedArguments, _ context: Context) throws {
        guard let path = arguments.values["--out"], !path.isEmpty else {
            throw FingersealError(.usage, "Say where to write the image with --out FILE.")
        }
        let (_, options) = try context.vault()
        let scan = try settings(arguments, options)
        let interrupt = try InterruptWatch()
        let reader = try Fingerprint.openReader(deviceID: arguments.values["--device"])
        defer { reader.close() }
        guard reader.info.features.contains(.capture) else { throw FingersealError(.unavailable, Messages.captureNotSupported) }
        let prompts = try prompter(arguments, context)
        prompts.info(Messages.placeFinger(swipe: reader.info.scanType == .swipe, cancelHint: Messages.pressCtrlC))
        let operation: ReaderOperation
        do { operation = try reader.capture() } catch { throw Fingerprint.translate(error) }
        let result = operation.wait(timeout: scan.timeout, cancelFD: interrupt.fd) { event in
            prompts.readerEvent(event)
            if case let .hint(hint) = event { prompts.info(Fingerprint.describe(hint)) }
        }
        guard case let .captured(image) = result else {
            if case let .failed(error) = result { throw Fingerprint.translate(error) }
            throw FingersealError(.unavailable, Messages.readerFailed("unexpected result"))
        }
        // A fingerprint image is biometric data: owner-only.
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw FingersealError(.systemError, Messages.systemFailure("write \(path)")) }
        let file = FileDescriptor(owning: fd)
        do { try file.writeAll(image.pgm(), subject: path) } catch {
            throw FingersealError(.systemError, Messages.systemFailure("write \(path)"))
        }
        context.output.out(Messages.captured(path, image.width, image.height))
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

    static func runSelftest(_ arguments: ParsedArguments, _ context: Context) throws {
        let (_, options) = try context.vault()
        let scan = try settings(arguments, options)
        let interrupt = try InterruptWatch()
        let prompter = try prompter(arguments, context)
        var report = SelftestReport()
        var reader: Reader? = nil
        var enrolled: Print? = nil

        /// Runs one step, timing it; returns false (and records why) when it fails.
        func step(_ name: String, _ body: () throws -> Void) -> Bool {
            let start = monotonicSeconds()
            var message: String? = nil
            do { try body() } catch let error as FingersealError { message = error.message } catch {
                message = Fingerprint.translate(error as? FprintError ?? .invalidPrint).message
            }
            let milliseconds = ((monotonicSeconds() - start) * 10000).rounded() / 10
            report.steps.append(.init(name: name, passed: message == nil, milliseconds: milliseconds, message: message))
            if !arguments.has("--json") {
                context.output.out("\(name): " + (message.map { "failed: \($0)" } ?? "passed") + " (\(milliseconds) ms)")
            }
            return message == nil
        }
        func finish(_ operation: ReaderOperation, timeout: Double) throws -> OperationResult {
            let result = operation.wait(timeout: timeout, cancelFD: interrupt.fd) { event in
                prompter.readerEvent(event)
                switch event {
                case let .enrollProgress(done, total): prompter.info(Messages.enrollProgress(done, total, swipe: false))
                case let .hint(hint): prompter.info(Fingerprint.describe(hint))
                case .fingerNeeded, .finished: break
                }
            }
            if case let .failed(error) = result { throw Fingerprint.translate(error) }
            return result
        }

        var ok = step("open") {
            reader = try Fingerprint.openReader(deviceID: arguments.values["--device"])
            report.driver = reader?.info.driver ?? ""
            guard reader?.info.features.contains(.storage) == true else {
                throw FingersealError(.unavailable, Messages.selftestNeedsStorage)
            }
        }
        if ok, let reader {
            ok = step("clear-storage") { _ = try finish(try reader.clearStorage(), timeout: scan.timeout) }
            ok = ok && step("enroll") {
                prompter.info(Messages.placeFinger(swipe: reader.info.scanType == .swipe, cancelHint: Messages.pressCtrlC))
                let operation = try reader.enrollBare()
                guard case let .enrolled(print) = try finish(operation, timeout: scan.timeout * Double(reader.enrollStages + 1)) else {
                    throw FingersealError(.unavailable, Messages.readerFailed("enrollment gave no print"))
                }
                enrolled = print
            }
            ok = ok && step("verify") {
                guard let print = enrolled else { return }
                prompter.info(Messages.placeFinger(swipe: reader.info.scanType == .swipe, cancelHint: Messages.pressCtrlC))
                guard case .verified(matched: true) = try finish(try reader.verify(print), timeout: scan.timeout) else {
                    throw FingersealError(.noMatch, Messages.noMatch)
                }
            }
            ok = ok && step("delete") {
                guard let print = enrolled else { return }
                _ = try finish(try reader.deleteStoredPrint(print), timeout: scan.timeout)
            }
            let closed = step("close") { reader.close() }
            ok = ok && closed
        }
        reader = nil
        report.passed = ok
        if arguments.has("--json") { try printJSON(report, context) }
        if !ok {
            let failed = report.steps.first { !$0.passed }
            throw FingersealError(.unavailable, "The self-test failed at \(failed?.name ?? "a step"): \(failed?.message ?? "").")
        }
        if !arguments.has("--json") { context.output.out("The self-test passed.") }
    }
}
