// A process the crash and concurrency tests can race and SIGKILL. Not part of the product.
//
//   vault-torture init DIR PIN        create a vault with a cheap PIN cost, counter = 0
//   vault-torture increment DIR N     N read-modify-write increments through the device slot
//   vault-torture churn DIR PIN       increment forever; also rotates the token and, every
//                                     fifth write, re-wraps the PIN and device slots;
//                                     prints each committed counter value
//   vault-torture check DIR PIN       prints the counter after verifying token, PIN and device
//                                     (FINGERSEAL_TEST_TCTI: the TPM sealed slots open with)
//   vault-torture put DIR NAME        stores stdin's first line as secret NAME (device slot)
//   vault-torture audit DIR           appends audit events forever (device slot), one per
//                                     append, to each chain in turn; prints "recorded" after
//                                     each append the vault has committed
//   vault-torture refresh DIR         refreshes the sealed sign-in forever (device slot);
//                                     prints "refreshed" after each sealed rotation, and
//                                     exits 3 once the vault says sign-in required
import FingersealCore
import IdentityClient
import Glibc
import SodiumKit
import SystemKit

func fail(_ message: String) -> Never {
    let line = Array("vault-torture: \(message)\n".utf8)
    _ = line.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    exit(1)
}

func secure(_ text: String) -> SecureBytes {
    guard let bytes = try? SecureBytes(copying: Array(text.utf8)) else { fail("no secure memory") }
    return bytes
}

func number(_ secret: SecureBytes?) -> Int {
    guard let secret, let value = Int(String(decoding: secret.copyBytes(), as: UTF8.self)) else { fail("counter unreadable") }
    return value
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else { fail("usage: vault-torture init|increment|churn|check|put DIR ...") }
guard let account = try? UserAccount.current() else { fail("no account") }
// FINGERSEAL_TEST_TCTI: slots sealed to that TPM open through it (none is sealed anew).
let tpm = getenv("FINGERSEAL_TEST_TCTI").map { TPMPolicy(mode: .off, tcti: String(cString: $0)) } ?? .off
let store = VaultStore(location: VaultLocation(directory: arguments[2], account: account), lockTimeout: 30, tpm: tpm)
let ledger = LockoutLedger(store: store, policy: LockoutPolicy())

do {
    switch arguments[1] {
    case "init":
        let vault = try Vault.create(store, pin: PINKeyslot(pin: secure(arguments[3]), cost: .fastForTests))
        try vault.update { editor in
            try editor.setSecret("counter", secure("0"))
            try editor.setSecret("token", secure("token-0"))
        }
    case "increment":
        let vault = try Vault.unlockWithDevice(store)
        for _ in 0..<(Int(arguments[3]) ?? 0) {
            try vault.update { editor in
                let next = number(try editor.secret("counter")) + 1
                try editor.setSecret("counter", secure(String(next)))
                try editor.setSecret("token", secure("token-\(next)"))
            }
        }
    case "churn":
        let vault = try Vault.unlockWithDevice(store)
        let pin = arguments[3]
        while true {
            let value = try vault.update { editor -> Int in
                let next = number(try editor.secret("counter")) + 1
                try editor.setSecret("counter", secure(String(next)))
                try editor.setSecret("token", secure("token-\(next)"))
                if next % 5 == 0 { try editor.changePIN(PINKeyslot(pin: secure(pin), cost: .fastForTests)) }
                return next
            }
            // Unbuffered: the test counts these lines as committed writes.
            let line = Array("\(value)\n".utf8)
            _ = line.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
        }
    case "check":
        let byDevice = try Vault.unlockWithDevice(store)
        let byPIN = try Vault.unlock(store, pin: PINKeyslot(pin: secure(arguments[3]), cost: .fastForTests), ledger: ledger)
        let counter = number(try byDevice.secret("counter"))
        guard number(try byPIN.secret("counter")) == counter else { fail("slots disagree") }
        guard let token = try byDevice.secret("token"), token.copyBytes() == Array("token-\(counter)".utf8) else {
            fail("token does not match counter \(counter)")
        }
        print(counter)
    case "refresh":
        let vault = try Vault.unlockWithDevice(store)
        while true {
            switch try TokenChain.refresh(vault, offlineGrace: 0, makeClient: OAuthClient.factory(Options(), tpm: .off)) {
            case .refreshed:
                let line = Array("refreshed\n".utf8)
                _ = line.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
            case .signInRequired: exit(3)
            case let other: fail("refresh: \(other)")
            }
        }
    case "audit":
        let vault = try Vault.unlockWithDevice(store)
        let trail = AuditTrail(store: store, sink: .none)
        // Each chain in turn (an unlock, then a fallback): a kill lands in either's append.
        var next = AuditChain.security
        while true {
            let event: AuditEvent = next == .security ? .unlock(method: .finger, via: .cli) : .fallback(reason: .outcome(.noReader))
            next = next == .security ? .attempts : .security
            guard trail.record(event, vault: vault) else { fail("an append failed") }
            let line = Array("recorded\n".utf8)
            _ = line.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
        }
    case "put":
        guard let line = readLine() else { fail("no input") }
        let vault = try Vault.unlockWithDevice(store)
        try vault.update { try $0.setSecret(arguments[3], secure(line)) }
    default:
        fail("unknown mode \(arguments[1])")
    }
} catch {
    fail("\(error)")
}
