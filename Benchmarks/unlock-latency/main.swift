// Unlock end to end, in-process, as `fingerseal unlock` does it: a virtual_device match, the
// refresh token unsealed, the refresh at the local IdP (rotated token sealed and fsync'd), the
// access token in hand. Prints median and p95 of each part and of the whole.
//
//   unlock-latency ISSUER [runs]        (scripts/bench starts the local IdP)
import BenchSupport
import CurlKit
import FingerprintFlows
import FingersealCore
import FprintKit
import Glibc
import IdentityClient
import SodiumKit
import SystemKit

struct Quiet: ScanPrompter {
    func info(_ text: String) {}
    func error(_ text: String) {}
}

func summary(_ name: String, _ values: [Double]) -> String {
    let sorted = values.sorted()
    let median = sorted[sorted.count / 2], p95 = sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.95))]
    return "\(name): median \((median * 100).rounded() / 100) ms, p95 \((p95 * 100).rounded() / 100) ms"
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else { fail("usage: unlock-latency ISSUER [runs]") }
let runs = arguments.count > 2 ? Int(arguments[2]) ?? 50 : 50
var template = Array("/tmp/fingerseal-unlock-XXXXXX".utf8CString)
guard let made = mkdtemp(&template) else { fail("mkdtemp") }
let root = String(cString: made)
defer { _ = system("rm -rf '\(root)'") }
let socketPath = root + "/sensor.sock"
setenv("FP_DRIVERS_WHITELIST", "virtual_device", 1)
setenv("FP_VIRTUAL_DEVICE", socketPath, 1)

do {
    guard let account = try UserAccount.current() else { fail("no account") }
    let store = VaultStore(location: VaultLocation(directory: root + "/vault", account: account))
    let pin = try SecureBytes(copying: Array("4826".utf8))
    let vault = try Vault.create(store, pin: PINKeyslot(pin: pin, cost: .fastForTests))
    let reader = try Fingerprint.openReader()
    defer { reader.close() }
    let settings = ScanSettings(timeout: 10, maxTries: 1, cancelHint: "")
    for _ in 0..<reader.enrollStages { command("SCAN bench", socketPath) }
    try Fingerprint.enroll(vault: vault, reader: reader, finger: .rightIndex, settings: settings, prompter: Quiet(), cancelFD: nil)

    let http = HTTPClient(configuration: .init(connectTimeout: 5, timeout: 10))
    let client = OAuthClient(metadata: try Discovery.discover(issuer: arguments[1], http: http), clientID: "fingerseal-test", http: http)
    let tokens = try client.passwordGrant(username: "alice", password: try SecureBytes(copying: Array("wonderland-7".utf8)),
                                          scope: "openid offline_access")
    guard let refresh = tokens.refreshToken else { fail("no refresh token") }
    try vault.update { try $0.signedIn(refreshToken: refresh, provider: client.providerRecord, at: SystemClock().now()) }

    let ledger = LockoutLedger(store: store, policy: LockoutPolicy())
    let makeClient = OAuthClient.factory(Options())
    var (match, unseal, refreshing, total) = ([Double](), [Double](), [Double](), [Double]())
    for _ in 0..<runs {
        command("SCAN bench", socketPath) // queued; taken when the verify starts
        let start = monotonicSeconds()
        let matched = try Fingerprint.verify(store: store, ledger: ledger, reader: reader, settings: settings,
                                             prompter: Quiet(), cancelFD: nil)
        let afterMatch = monotonicSeconds()
        // What the refresh reads first: the device slot and the sealed refresh token.
        let opened = try Vault.unlockWithDevice(store)
        guard try opened.secret(TokenChain.refreshTokenRecord) != nil else { fail("no sealed token") }
        let afterUnseal = monotonicSeconds()
        guard case .refreshed = try TokenChain.refresh(matched.vault, offlineGrace: 0, makeClient: makeClient) else {
            fail("the refresh did not give a token")
        }
        let end = monotonicSeconds()
        match.append((afterMatch - start) * 1000)
        unseal.append((afterUnseal - afterMatch) * 1000)
        refreshing.append((end - afterUnseal) * 1000)
        total.append((end - start) * 1000)
    }
    print(summary("match (verify request to match, virtual_device)", match))
    print(summary("unseal (device slot opened, refresh token decrypted)", unseal))
    print(summary("refresh (POST to the local IdP, rotated token sealed and fsync'd)", refreshing))
    print(summary("unlock total, match to access token in hand", total) + " over \(runs) runs")
} catch {
    fail("\(error)")
}
