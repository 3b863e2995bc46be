// fingerseal-scan: the fingerprint and token steps of pam_fingerseal.so, in a process of its
// own, so libfprint, libcurl, their threads and GLib's main context never enter sshd, sudo or
// gdm (gdm's worker runs its own GLib loop on the default context, which an in-process reader
// could not use).
//
//   fingerseal-scan [--refresh-only] [--token-fd N] USER [name=value ...]
//
// Scans against USER's enrolled prints with the lockout rules (unless --refresh-only, which
// the module runs after a correct PIN), then refreshes USER's sealed sign-in. Writes
// ScanMessage lines to stdout: sentences for the user, then one result. A fresh access token
// goes to descriptor N as an AccessTokenFile, never to stdout. SIGTERM or SIGINT cancel.
import FingerprintFlows
import FingersealCore
import Glibc
import IdentityClient
import SodiumKit
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

func finish(_ outcome: Outcome, finger: String? = nil, _ detail: String, token: TokenStep? = nil) -> Never {
    prompter.send(.result(outcome: outcome.rawValue, finger: finger, detail: detail, token: token))
    exit(outcome == .success ? 0 : 1)
}

Syslog.open()
var arguments = Array(CommandLine.arguments.dropFirst())
var refreshOnly = false
var tokenFD: Int32? = nil
while let first = arguments.first, first.hasPrefix("--") {
    arguments.removeFirst()
    switch first {
    case "--refresh-only": refreshOnly = true
    case "--token-fd":
        guard let value = arguments.first, let number = Int32(value), number > 2, fcntl(number, F_GETFD) != -1 else {
            finish(.badConfiguration, "--token-fd needs an open descriptor above 2")
        }
        arguments.removeFirst()
        tokenFD = number
    default: finish(.badConfiguration, "unknown option \(first)")
    }
}
guard let user = arguments.first else {
    finish(.badConfiguration, "usage: fingerseal-scan [--refresh-only] [--token-fd N] USER [name=value ...]")
}
var options = Options()
do {
    try options.apply(Array(arguments.dropFirst()), source: "fingerseal-scan")
} catch let error as FingersealError {
    finish(.badConfiguration, error.message)
}
let interrupt: InterruptWatch
do { interrupt = try InterruptWatch(signals: [SIGINT, SIGTERM]) } catch { finish(.systemError, "signalfd: \(error)") }

/// The token step: refresh the sealed sign-in; hand a fresh access token to `tokenFD`.
func tokenStep(_ vault: UnlockedVault, _ options: Options, _ tokenFD: Int32?) -> (TokenStep, String) {
    do {
        let result = try TokenChain.refresh(vault, offlineGrace: options.offlineGrace, makeClient: OAuthClient.factory(options))
        if case let .refreshed(tokens) = result, let tokenFD {
            let file = try AccessTokenFile(tokens, issuedAt: SystemClock().now()).encoded()
            let output = FileDescriptor(owning: tokenFD) // closed when done: the module reads to the end
            try file.withUnsafeBytes { try output.writeAll($0, subject: "the token descriptor") }
        }
        switch result {
        case .unreachable(let why), .failed(let why): return (result.step, why)
        default: return (result.step, "\(result.step.rawValue)")
        }
    } catch {
        return (.failed, "\(error)")
    }
}

do {
    guard let account = try UserAccount.named(user) else { finish(.unknownUser, Messages.unknownUser) }
    let store = VaultStore(location: try VaultLocation.resolve(account: account, options: options, stateHome: nil))
    if refreshOnly {
        // After a correct PIN in the module: the vault through its device slot, as after a match.
        let (step, detail) = tokenStep(try Vault.unlockWithDevice(store), options, tokenFD)
        finish(.success, "token \(detail)", token: step)
    }
    let reader = try Fingerprint.openReader()
    defer { reader.close() }
    let settings = ScanSettings(timeout: Double(options.timeout), maxTries: options.maxTries,
                                cancelHint: Messages.pressCtrlCForPassword)
    // The audit trail: a match, or no match (an engaged lock is recorded by the ledger).
    let trail = AuditTrail(store: store)
    let match: Fingerprint.Match
    do {
        match = try Fingerprint.verify(store: store, ledger: LockoutLedger(store: store, options: options), reader: reader,
                                       settings: settings, prompter: prompter, cancelFD: interrupt.fd)
    } catch let error as FingersealError where error.outcome == .noMatch || error.outcome == .triesExhausted {
        trail.record(.failure(action: "fingerprint scan", reason: error.outcome.rawValue), vault: nil)
        throw error
    }
    reader.close()
    trail.record(.unlock(method: .finger, via: .pam), vault: match.vault)
    let (step, detail) = tokenStep(match.vault, options, tokenFD)
    finish(.success, finger: match.finger, "matched \(match.finger) in \(Int(match.milliseconds)) ms; token \(detail)", token: step)
} catch let error as FingersealError {
    finish(error.outcome, error.message)
} catch {
    finish(.systemError, "\(error)")
}
