// fingerseal-scan: the fingerprint step of pam_fingerseal.so, in a process of its own, so
// libfprint, its threads and GLib's main context never enter sshd, sudo or gdm (gdm's worker
// runs its own GLib loop on the default context, which an in-process reader could not use).
//
//   fingerseal-scan USER [name=value ...]     settings as the module's options
//
// Scans against USER's enrolled prints with the lockout rules, and writes ScanMessage lines
// to stdout: sentences for the user, then one result. SIGTERM or SIGINT cancel the scan.
import FingerprintFlows
import FingersealCore
import Glibc
import SystemKit

struct LinePrompter: ScanPrompter {
    func send(_ message: ScanMessage) {
        let bytes = Array(message.line().utf8)
        _ = bytes.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
    }
    func info(_ text: String) { send(.info(text)) }
    func error(_ text: String) { send(.error(text)) }
}

let prompter = LinePrompter()

func finish(_ outcome: Outcome, finger: String? = nil, _ detail: String) -> Never {
    prompter.send(.result(outcome: outcome.rawValue, finger: finger, detail: detail))
    exit(outcome == .success ? 0 : 1)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard let user = arguments.first else { finish(.badConfiguration, "usage: fingerseal-scan USER [name=value ...]") }
var options = Options()
do {
    try options.apply(Array(arguments.dropFirst()), source: "fingerseal-scan")
} catch let error as FingersealError {
    finish(.badConfiguration, error.message)
}
let interrupt: InterruptWatch
do { interrupt = try InterruptWatch(signals: [SIGINT, SIGTERM]) } catch { finish(.systemError, "signalfd: \(error)") }

do {
    guard let account = try UserAccount.named(user) else { finish(.unknownUser, Messages.unknownUser) }
    let store = VaultStore(location: try VaultLocation.resolve(account: account, options: options, stateHome: nil))
    let reader = try Fingerprint.openReader()
    defer { reader.close() }
    let settings = ScanSettings(timeout: Double(options.timeout), maxTries: options.maxTries,
                                cancelHint: Messages.pressCtrlCForPassword)
    let match = try Fingerprint.verify(store: store, ledger: LockoutLedger(store: store, options: options), reader: reader,
                                       settings: settings, prompter: prompter, cancelFD: interrupt.fd)
    reader.close()
    finish(.success, finger: match.finger, "matched \(match.finger) in \(Int(match.milliseconds)) ms")
} catch let error as FingersealError {
    finish(error.outcome, error.message)
} catch {
    finish(.systemError, "\(error)")
}
