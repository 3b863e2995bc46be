import FingersealCore
import FingersealWire
import Glibc
import SodiumKit
import SystemKit
#if canImport(Testing)
import Testing
#endif

/// A vault in a fresh temp directory, owned by whoever runs the tests.
struct TestVault {
    let temp: TempDirectory
    let store: VaultStore
    var directory: String { store.location.directory }

    /// `tpm`: the TPM settings the store's operations use (none by default).
    init(tpm: TPMPolicy = .off) throws {
        temp = try TempDirectory()
        guard let account = try UserAccount.current() else { throw TestFailure("no account") }
        store = VaultStore(location: VaultLocation(directory: temp.path + "/vault", account: account), lockTimeout: 10, tpm: tpm)
    }

    func ledger(at now: Int64 = 1_000_000) -> LockoutLedger {
        LockoutLedger(store: store, policy: LockoutPolicy(maxFingerFailures: 5), clock: FixedClock(time: now))
    }

    @discardableResult
    func create(pin: String = "2468") throws -> UnlockedVault {
        try Vault.create(store, pin: PINKeyslot(pin: secret(pin), cost: .fastForTests), clock: FixedClock(time: 1_000_000))
    }

    func unlock(pin: String, at now: Int64 = 1_000_000) throws -> UnlockedVault {
        try Vault.unlock(store, pin: PINKeyslot(pin: secret(pin), cost: .fastForTests), ledger: ledger(at: now))
    }

    /// Every file a populated vault has: vault, lockout and the device key.
    func populatedFiles() throws -> [String] {
        let vault = try create()
        try vault.update { try $0.setSecret("refresh-token", secret("rt-original")) }
        _ = try? unlock(pin: "wrong") // writes the lockout record
        let names = try SafeDirectory(path: directory, owner: store.location.account.uid).entries()
        return names.filter { $0 != VaultFiles.lock }.sorted()
    }
}

struct FixedClock: Clock {
    let time: Int64
    func now() -> Int64 { time }
}

func secret(_ text: String) -> SecureBytes {
    (try? SecureBytes(copying: Array(text.utf8))) ?? (try! SecureBytes(count: 0))
}

func text(_ bytes: SecureBytes?) -> String? {
    bytes.map { String(decoding: $0.copyBytes(), as: UTF8.self) }
}

// Assertions: only where Swift Testing is (the test builds; TestSupport also builds without).
#if canImport(Testing)
func expectOutcome(_ outcome: Outcome, _ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
    do {
        try body()
        Issue.record("expected \(outcome), got success", sourceLocation: sourceLocation)
    } catch let error as FingersealError {
        #expect(error.outcome == outcome, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(outcome), got \(error)", sourceLocation: sourceLocation)
    }
}
#endif
