import Glibc
import Testing
import Broker
@testable import FingersealCore
import SodiumKit
import SystemKit
import TPMKit
@testable import TestSupport

extension InProcessTPM {
    /// The vault's keyslots sealed to a TPM (swtpm, one per test; "another machine" is another
    /// swtpm): round trips, the TPM's counter and lockout, another TPM, upgrades, `tpm=`.
    @Suite struct TPMVaultTests {
        static let pin = "2468"

        /// The connection kept between operations, as the broker keeps its own.
        static let held = HeldTPM()

        static func policy(_ swtpm: SwtpmProcess, _ mode: TPMMode = .auto, pcrs: [Int] = []) -> TPMPolicy {
            var policy = TPMPolicy(mode: mode, tcti: swtpm.tcti, pcrs: pcrs)
            policy.keys = held
            return policy
        }

        /// The same vault directory seen with other TPM settings (the broker's configuration).
        static func store(_ v: TestVault, _ tpm: TPMPolicy) -> VaultStore {
            VaultStore(location: v.store.location, lockTimeout: 10, tpm: tpm)
        }

        static func unlock(_ store: VaultStore, _ pin: String, ledger: LockoutLedger? = nil) throws -> UnlockedVault {
            try Vault.unlock(store, pin: PINKeyslot(pin: secret(pin), cost: .fastForTests),
                             ledger: ledger ?? LockoutLedger(store: store, policy: LockoutPolicy(), clock: FixedClock(time: 1_000_000)))
        }

        static func protections(_ store: VaultStore) throws -> [KeyslotKind: KeyslotProtection] {
            let slots = try #require(try Vault.status(store, checkingSlots: true)).keyslots
            return Dictionary(uniqueKeysWithValues: slots.map { ($0.kind, $0.protection) })
        }

        @Test func deviceAndPINSlotsRoundTripThroughTheTPM() throws {
            let swtpm = try SwtpmProcess()
            let v = try TestVault(tpm: Self.policy(swtpm))
            let vault = try v.create(pin: Self.pin)
            try vault.update { try $0.setSecret("refresh-token", secret("rt-1")) }
            #expect(try Self.protections(v.store) == [.pin: .argon2idTPM2, .device: .tpm2])
            // No device key file: the key is sealed in the vault document itself.
            let names = try SafeDirectory(path: v.directory, owner: v.store.location.account.uid).entries()
            #expect(!names.contains { $0.hasPrefix("device-") }, "\(names)")
            #expect(try Vault.unlockWithDevice(v.store).secret("refresh-token")?.copyBytes() == Array("rt-1".utf8))
            #expect(try Self.unlock(v.store, Self.pin).secret("refresh-token")?.copyBytes() == Array("rt-1".utf8))
            #expect(try Vault.status(v.store, checkingSlots: true)?.keyslots.allSatisfy(\.usable) == true)
            // A PIN change and a re-enrolment keep both slots sealed.
            let byPIN = try Self.unlock(v.store, Self.pin)
            try byPIN.update { try $0.changePIN(PINKeyslot(pin: secret("9753"), cost: .fastForTests)) }
            try byPIN.update { try $0.enroll(finger: "right-thumb", template: secret("template")) }
            #expect(try Self.protections(v.store) == [.pin: .argon2idTPM2, .device: .tpm2])
            #expect(try Self.unlock(v.store, "9753").prints().count == 1)
            #expect(try Vault.unlockWithDevice(v.store).prints().count == 1)
        }

        /// The PIN slot's sealed object as the vault keeps it.
        static func pinObject(_ store: VaultStore) throws -> TPMSealedRecord {
            let document = try #require(try store.withDirectory(exclusive: false) { try store.readDocument($0) } ?? nil)
            return try #require(document.keyslot(.pin)?.tpm)
        }

        /// A vault as fingerseal made them before issue 19: its PIN slot inside the TPM's
        /// dictionary-attack lockout.
        @discardableResult
        static func createOld(_ v: TestVault) throws -> UnlockedVault {
            var pin = PINKeyslot(pin: secret(Self.pin), cost: .fastForTests)
            pin.dictionaryProtected = true
            let vault = try Vault.create(v.store, pin: pin)
            #expect(try Self.pinObject(v.store).isDictionaryProtected)
            return vault
        }

        /// Puts the TPM into its lockout the way any other program can: wrong authValues for
        /// an object of its own inside the lockout (libtpms's defaults: 3, recovered after 1000 s).
        static func lockOut(_ swtpm: SwtpmProcess) throws {
            let tpm = try TPMContext(tcti: swtpm.tcti)
            let object = try tpm.withStorageKey { key in
                try [UInt8](repeating: 7, count: 16).withUnsafeBytes { secret in
                    try Array("theirs".utf8).withUnsafeBytes { try key.seal(secret, authValue: $0, pcrs: .none, dictionaryProtected: true) }
                }
            }
            for _ in 0..<10 where try !tpm.dictionaryAttackState().lockedOut {
                _ = try? tpm.withStorageKey { key in
                    try Array("guess".utf8).withUnsafeBytes { try key.unseal(object, authValue: $0, pcrs: .none) { _ in } }
                }
            }
            try #require(try tpm.dictionaryAttackState().lockedOut)
        }

        /// Premise changed by issue 19 (was "a wrong PIN hits the TPM counter"): a new PIN slot
        /// is outside the TPM's lockout. A wrong PIN is counted by fingerseal only; while the
        /// lockout lasts (another program's doing) the right PIN opens, and a PIN change and a
        /// new vault work.
        @Test func aWrongPINIsCountedByFingersealOnlyAndThePINOpensWhileTheTPMsLockoutLasts() throws {
            let swtpm = try SwtpmProcess()
            let tpm = try TPMContext(tcti: swtpm.tcti)
            let v = try TestVault(tpm: Self.policy(swtpm))
            try v.create(pin: Self.pin)
            #expect(try Self.pinObject(v.store).isDictionaryProtected == false)
            let ledger = LockoutLedger(store: v.store, policy: LockoutPolicy(), clock: FixedClock(time: 1_000_000))
            for tries in 1...3 {
                #expect { try Self.unlock(v.store, "0000", ledger: ledger) } throws: {
                    ($0 as? FingersealError)?.outcome == .wrongPIN
                }
                #expect(try ledger.current().pinFailures == tries, "fingerseal counted the wrong PIN")
            }
            #expect(try tpm.dictionaryAttackState().failures == 0, "the TPM did not")
            try Self.lockOut(swtpm)
            let later = LockoutLedger(store: v.store, policy: LockoutPolicy(), clock: FixedClock(time: 2_000_000))
            let vault = try Self.unlock(v.store, Self.pin, ledger: later)
            #expect(vault.sealedToTPM.isEmpty && !vault.pinLeftTPMLockout)
            #expect(try later.current().pinFailures == 0)
            try vault.update { try $0.changePIN(PINKeyslot(pin: secret("9753"), cost: .fastForTests)) }
            #expect(throws: Never.self) { try Self.unlock(v.store, "9753", ledger: later) }
            let other = try TestVault(tpm: Self.policy(swtpm))
            #expect(throws: Never.self) { try other.create(pin: "1357") }
            #expect(throws: Never.self) { try Self.unlock(other.store, "1357") }
            #expect(try tpm.dictionaryAttackState().lockedOut, "all of it while the lockout lasted")
        }

        /// An old PIN slot (inside the lockout) still counts towards it, and while the lockout
        /// lasts its right PIN is refused unchecked, said with the TPM's interval, not counted.
        @Test func anOldPINSlotHitsTheTPMCounterAndItsLockoutIsSaidWithItsInterval() throws {
            let swtpm = try SwtpmProcess()
            let tpm = try TPMContext(tcti: swtpm.tcti)
            // Two failures lock it, and a failure is forgotten after 10 minutes: nothing
            // recovers while the test runs.
            try tpm.setDictionaryAttackParameters(maxTries: 2, recoveryInterval: 600, lockoutRecovery: 600)
            let v = try TestVault(tpm: Self.policy(swtpm))
            try Self.createOld(v)
            let ledger = LockoutLedger(store: v.store, policy: LockoutPolicy(), clock: FixedClock(time: 1_000_000))
            for tries in 1...2 {
                #expect { try Self.unlock(v.store, "0000", ledger: ledger) } throws: {
                    ($0 as? FingersealError)?.outcome == .wrongPIN
                }
                #expect(try tpm.dictionaryAttackState().failures == UInt32(tries), "the TPM counted the wrong PIN")
                #expect(try ledger.current().pinFailures == tries, "so did fingerseal")
            }
            // Locked out: the right PIN is refused unchecked, with how long, and is not counted.
            do {
                _ = try Self.unlock(v.store, Self.pin, ledger: ledger)
                Issue.record("the TPM's lockout let the PIN through")
            } catch let error as FingersealError {
                #expect(error.outcome == .lockedOut && error.cause == .tpmLockedOut)
                #expect(error.message == Messages.tpmLockedOut(seconds: 600), "\(error.message)")
                #expect(error.message.contains("10 minutes"), "\(error.message)")
            }
            #expect(try ledger.current().pinFailures == 2)
            #expect(try Self.pinObject(v.store).isDictionaryProtected, "nothing was resealed")
            // The finger's slot stays outside the lockout.
            #expect(throws: Never.self) { try Vault.unlockWithDevice(v.store) }
        }

        /// The next correct PIN seals an old PIN slot again outside the lockout: same salt and
        /// cost, the device slot untouched, recorded in the audit trail, once; afterwards the PIN
        /// opens and a wrong one is no longer counted by the TPM.
        @Test func anOldPINSlotIsSealedOutsideTheLockoutByTheNextCorrectPIN() throws {
            let swtpm = try SwtpmProcess()
            let tpm = try TPMContext(tcti: swtpm.tcti)
            let v = try TestVault(tpm: Self.policy(swtpm))
            try Self.createOld(v).update { try $0.setSecret("refresh-token", secret("rt-1")) }
            let before = try #require(try v.store.withDirectory(exclusive: false) { try v.store.readDocument($0) } ?? nil)
            #expect { try Self.unlock(v.store, "0000") } throws: { ($0 as? FingersealError)?.outcome == .wrongPIN }
            #expect(try tpm.dictionaryAttackState().failures == 1, "the old slot counts")
            let vault = try Self.unlock(v.store, Self.pin)
            #expect(vault.pinLeftTPMLockout && vault.sealedToTPM.isEmpty)
            let after = try #require(try v.store.withDirectory(exclusive: false) { try v.store.readDocument($0) } ?? nil)
            let (old, new) = (try #require(before.keyslot(.pin)), try #require(after.keyslot(.pin)))
            #expect(new.tpm?.isDictionaryProtected == false && new.protection == .argon2idTPM2)
            #expect(new.salt == old.salt && new.opsLimit == old.opsLimit && new.memLimit == old.memLimit)
            #expect(new.tpm?.publicArea != old.tpm?.publicArea)
            #expect(after.keyslot(.device) == before.keyslot(.device), "the device slot is untouched")
            let trail = AuditTrail(store: v.store, sink: .none)
            #expect(try trail.list().records.map(\.event).filter { $0 == "pin-left-tpm-lockout" }.count == 1)
            #expect(try trail.list().records.contains { $0.sentence == Messages.auditPINLeftTPMLockout })
            #expect(try trail.verify(vault).intact)
            // Afterwards: the PIN opens (once resealed, never again), the finger too, and a wrong
            // PIN is refused without the TPM counting it.
            let again = try Self.unlock(v.store, Self.pin)
            #expect(!again.pinLeftTPMLockout)
            #expect(try again.secret("refresh-token")?.copyBytes() == Array("rt-1".utf8))
            #expect(try Vault.unlockWithDevice(v.store).secret("refresh-token")?.copyBytes() == Array("rt-1".utf8))
            #expect { try Self.unlock(v.store, "0000") } throws: { ($0 as? FingersealError)?.outcome == .wrongPIN }
            #expect(try tpm.dictionaryAttackState().failures == 1, "not counted any more")
            // tpm=off: an old slot is resealed all the same (it stays sealed, only outside).
            let w = try TestVault(tpm: Self.policy(swtpm))
            try Self.createOld(w)
            #expect(try Self.unlock(Self.store(w, TPMPolicy(mode: .off, tcti: swtpm.tcti)), Self.pin).pinLeftTPMLockout)
            #expect(try Self.pinObject(w.store).isDictionaryProtected == false)
        }

        @Test func anotherTPMRefusesTheFingerAndThePINAndTheVaultIsReplacedOnlyByAReset() throws {
            let here = try SwtpmProcess()
            let there = try SwtpmProcess()
            let v = try TestVault(tpm: Self.policy(here))
            try v.create(pin: Self.pin).update { try $0.setSecret("refresh-token", secret("rt-1")) }
            // The disk moves to another machine (or this TPM is cleared): same files, another TPM.
            let moved = Self.store(v, Self.policy(there))
            #expect { try Vault.unlockWithDevice(moved) } throws: {
                let error = $0 as? FingersealError
                return error?.cause == .tpmChanged && error?.message == Messages.tpmChangedFinger
            }
            #expect { try Self.unlock(moved, Self.pin) } throws: {
                let error = $0 as? FingersealError
                return error?.cause == .tpmChanged && error?.message == Messages.tpmChangedPIN && error?.outcome == .vaultUnusable
            }
            #expect(try Vault.status(moved, checkingSlots: true)?.keyslots.map(\.state) == [.tpmChanged, .tpmChanged])
            // tpm=off there: never a quiet fall back to file protection; still refused.
            #expect { try Vault.unlockWithDevice(Self.store(v, TPMPolicy(mode: .off, tcti: there.tcti))) } throws: {
                ($0 as? FingersealError)?.cause == .tpmChanged
            }
            // A new vault replaces it (the broker asks the account password first).
            let (fresh, previous) = try Vault.replace(moved, pin: PINKeyslot(pin: secret("1357"), cost: .fastForTests))
            #expect(previous != nil && previous != fresh.vaultID)
            #expect(try fresh.secret("refresh-token") == nil, "the old secrets went with the old TPM")
            #expect(try Self.protections(moved) == [.pin: .argon2idTPM2, .device: .tpm2])
            #expect(throws: Never.self) { try Self.unlock(moved, "1357") }
            #expect(throws: Never.self) { try Vault.unlockWithDevice(moved) }
        }

        @Test func noHandleIsLeftAfter200Unlocks() throws {
            let swtpm = try SwtpmProcess()
            let v = try TestVault(tpm: Self.policy(swtpm))
            try v.create(pin: Self.pin)
            for _ in 0..<200 { _ = try Vault.unlockWithDevice(v.store) }
            for _ in 0..<3 { _ = try Self.unlock(v.store, Self.pin) }
            _ = try? Self.unlock(v.store, "0000")
            // What stays between operations is the kept storage key and its session, one each
            // (swtpm has no resource manager: a leak would grow here, and fail early).
            let kept = try TPMContext(tcti: swtpm.tcti).loadedHandles()
            #expect(kept.objects.count == 1 && kept.sessions.count == 1, "\(kept)")
            Self.held.closeNow()
            let left = try TPMContext(tcti: swtpm.tcti).loadedHandles()
            #expect(left.objects.isEmpty && left.sessions.isEmpty, "\(left)")
        }

        /// The kept storage key and session gone under it (the TPM was reset, or its handles
        /// dropped): the next unlock opens new ones and succeeds, once, without a word.
        @Test func aKeptStorageKeyThatIsGoneIsMadeAgain() throws {
            let swtpm = try SwtpmProcess()
            let v = try TestVault(tpm: Self.policy(swtpm))
            try v.create(pin: Self.pin)
            _ = try Vault.unlockWithDevice(v.store)
            let other = try TPMContext(tcti: swtpm.tcti)
            try other.flushEverythingForTests()
            #expect(try other.loadedHandles().objects.isEmpty)
            // "Is the TPM usable" asks the TPM, not the kept key: it finds the key gone and
            // makes it again.
            #expect(VaultTPM.unusable(Self.policy(swtpm)) == nil)
            #expect(try other.loadedHandles().objects.count == 1, "the kept key was made again")
            try other.flushEverythingForTests()
            #expect(try Vault.unlockWithDevice(v.store).prints().isEmpty)
            #expect(try Self.unlock(v.store, Self.pin).prints().isEmpty)
            #expect(try other.dictionaryAttackState().failures == 0, "the PIN was not counted as wrong on the stale session")
            let kept = try other.loadedHandles()
            #expect(kept.objects.count == 1 && kept.sessions.count == 1, "\(kept)")
            Self.held.closeNow()
        }

        @Test func requireRefusesWithoutATPM() throws {
            // Nothing listens there: no TPM.
            let closed = try BoundSocket(port: 0).port
            let none = TPMPolicy(mode: .require, tcti: "swtpm:host=127.0.0.1,port=\(closed)")
            let v = try TestVault(tpm: none)
            #expect { try v.create(pin: Self.pin) } throws: {
                ($0 as? FingersealError)?.outcome == .unavailable && ($0 as? FingersealError)?.message == Messages.tpmRequired
            }
            #expect(try Vault.status(v.store) == nil, "nothing was created")
            // A vault made without a TPM is not unlocked either, by finger or PIN.
            try TestVault.create(in: v, policy: .off)
            #expect { try Vault.unlockWithDevice(v.store) } throws: {
                ($0 as? FingersealError)?.message == Messages.tpmRequiredNotSealed
            }
            #expect { try Self.unlock(v.store, Self.pin) } throws: { ($0 as? FingersealError)?.message == Messages.tpmRequired }
            #expect(try LockoutLedger(store: v.store, policy: LockoutPolicy()).current().pinFailures == 0, "not counted")
        }

        @Test func aVaultMadeWithoutATPMIsSealedWhenThePINIsNextEntered() throws {
            let swtpm = try SwtpmProcess()
            let v = try TestVault()
            try v.create(pin: Self.pin).update { try $0.setSecret("refresh-token", secret("rt-1")) }
            #expect(try Self.protections(v.store) == [.pin: .argon2id, .device: .filePermissions])
            let withTPM = Self.store(v, Self.policy(swtpm))
            // The finger alone changes nothing (no PIN to seal the PIN slot with).
            _ = try Vault.unlockWithDevice(withTPM)
            #expect(try Self.protections(withTPM) == [.pin: .argon2id, .device: .filePermissions])
            let vault = try Self.unlock(withTPM, Self.pin)
            #expect(vault.sealedToTPM == [.pin, .device])
            #expect(try Self.protections(withTPM) == [.pin: .argon2idTPM2, .device: .tpm2])
            #expect(try Vault.unlockWithDevice(withTPM).secret("refresh-token")?.copyBytes() == Array("rt-1".utf8))
            #expect(try Self.unlock(withTPM, Self.pin).sealedToTPM.isEmpty, "once")
            // The old device key file is gone, and the upgrade is in the audit trail.
            let names = try SafeDirectory(path: v.directory, owner: v.store.location.account.uid).entries()
            #expect(!names.contains { $0.hasPrefix("device-") }, "\(names)")
            let events = try AuditTrail(store: withTPM, sink: .none).list().records.map(\.event)
            #expect(events.contains("sealed-to-tpm"), "\(events)")
            #expect(try AuditTrail(store: withTPM, sink: .none).verify(vault).intact)
            // tpm=off later: what is sealed stays sealed, also through a PIN change.
            let off = Self.store(v, TPMPolicy(mode: .off, tcti: swtpm.tcti))
            try Self.unlock(off, Self.pin).update { try $0.changePIN(PINKeyslot(pin: secret(Self.pin), cost: .fastForTests)) }
            #expect(try Self.protections(off) == [.pin: .argon2idTPM2, .device: .tpm2])
        }

        @Test func aDeviceSlotBoundToPCRsIsResealedByThePINAfterTheyChange() throws {
            let swtpm = try SwtpmProcess()
            let v = try TestVault(tpm: Self.policy(swtpm, pcrs: [16]))
            try v.create(pin: Self.pin)
            #expect(try Vault.status(v.store, checkingSlots: true)?.keyslots.first { $0.kind == .device }?.pcrs == [16])
            #expect(throws: Never.self) { try Vault.unlockWithDevice(v.store) }
            try TPMContext(tcti: swtpm.tcti).extendPCR16ForTests()  // a firmware update, say
            #expect { try Vault.unlockWithDevice(v.store) } throws: {
                ($0 as? FingersealError)?.cause == .tpmPCRsChanged && ($0 as? FingersealError)?.message == Messages.tpmPCRsChanged
            }
            #expect(try Vault.status(v.store, checkingSlots: true)?.keyslots.first { $0.kind == .device }?.state == .pcrsChanged)
            #expect(try Self.unlock(v.store, Self.pin).sealedToTPM == [.device])
            #expect(throws: Never.self) { try Vault.unlockWithDevice(v.store) }
            // tpm_pcrs removed: the next PIN reseals the device slot without them.
            let unbound = Self.store(v, Self.policy(swtpm))
            #expect(try Self.unlock(unbound, Self.pin).sealedToTPM == [.device])
            #expect(try Vault.status(unbound, checkingSlots: true)?.keyslots.first { $0.kind == .device }?.pcrs == [])
        }
    }
}

extension TestVault {
    /// A vault in `v`'s directory made with other TPM settings than `v.store`'s.
    static func create(in v: TestVault, policy: TPMPolicy) throws {
        _ = try Vault.create(VaultStore(location: v.store.location, lockTimeout: 10, tpm: policy),
                             pin: PINKeyslot(pin: secret(InProcessTPM.TPMVaultTests.pin), cost: .fastForTests))
    }
}
