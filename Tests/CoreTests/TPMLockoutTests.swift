import Glibc
import Testing
@testable import FingersealCore
import TPMKit
@testable import TestSupport

extension InProcessTPM {
    /// Issue 19 item 7, the TPM's lockout shared by everyone, as the attack itself: accounts
    /// made with useradd, each with a vault sealed to swtpm (libtpms's own lockout: 3 tries,
    /// one forgiven per 1000 s), a broker in the foreground, the CLI run as each account. One
    /// account's wrong PINs, or anything else that locks the TPM out, must never refuse another
    /// account's PIN, `pin set` or `pin reset`.
    @Suite(.enabled(if: getuid() == 0)) struct TPMLockoutTests {
        static let alice = (name: TestUsers.alice, pin: "3141")
        static let bob = (name: TestUsers.bob, pin: "2718")
        static let carol = (name: "fs-tpm-carol", pin: "1618")

        /// A broker using `swtpm`, the three accounts, and vaults for `provisioned` (root
        /// sets them up: no account password).
        static func rig(_ swtpm: SwtpmProcess, provisioned: [(name: String, pin: String)]) throws -> ReaderBroker {
            for user in [alice.name, bob.name, carol.name] { try #require(TestUsers.ensure(user), "no account \(user)") }
            let rig = try ReaderBroker(driver: "none", reader: false, config: "tpm_tcti=\(swtpm.tcti)\n")
            for user in provisioned {
                let set = try rig.cli(["pin", "set", "--user", user.name, "--pin-fd", "3"], fd3: user.pin + "\n")
                #expect(set.status == 0, "\(set.all)")
            }
            return rig
        }

        /// A PIN entered by `user` themself, as the CLI sends it (a fresh confirmation).
        static func enterPIN(_ rig: ReaderBroker, as user: String, _ pin: String) throws -> Child.Result {
            try rig.cli(["step-up", "--fresh", "--pin-fd", "3", "mail"], fd3: pin + "\n", as: user,
                        environment: ["HOME": "/nonexistent"])
        }

        static func expectUnlocks(_ rig: ReaderBroker, _ user: String, _ pin: String,
                                  sourceLocation: SourceLocation = #_sourceLocation) throws {
            let result = try enterPIN(rig, as: user, pin)
            #expect(result.status == 0, "\(user): \(result.all)", sourceLocation: sourceLocation)
            #expect(!result.all.contains("TPM refuses PINs"), "\(result.all)", sourceLocation: sourceLocation)
        }

        /// `pin set` for a new account, and `pin change` and `pin reset` for `user`, ending
        /// with `user`'s PIN `final`.
        static func expectPINCommandsWork(_ rig: ReaderBroker, _ user: (name: String, pin: String), final: String,
                                          sourceLocation: SourceLocation = #_sourceLocation) throws {
            let set = try rig.cli(["pin", "set", "--user", carol.name, "--pin-fd", "3"], fd3: carol.pin + "\n")
            #expect(set.status == 0, "pin set: \(set.all)", sourceLocation: sourceLocation)
            try expectUnlocks(rig, carol.name, carol.pin, sourceLocation: sourceLocation)
            let changed = try rig.cli(["pin", "change", "--pin-fd", "3"], fd3: "\(user.pin)\n9999\n", as: user.name,
                                      environment: ["HOME": "/nonexistent"])
            #expect(changed.status == 0, "pin change: \(changed.all)", sourceLocation: sourceLocation)
            let reset = try rig.cli(["pin", "reset", "--user", user.name, "--pin-fd", "3"], fd3: final + "\n")
            #expect(reset.status == 0, "pin reset: \(reset.all)", sourceLocation: sourceLocation)
            try expectUnlocks(rig, user.name, final, sourceLocation: sourceLocation)
        }

        /// The attack from the issue: alice sends wrong PINs on her own vault until
        /// fingerseal's own counter stops her (3 free tries, then a wait); bob's PIN then
        /// unlocks, and `pin set`, `pin change` and `pin reset` work. The TPM counted nothing.
        @Test func oneAccountsWrongPINsNeverLockOutAnotherAccountsPIN() throws {
            let swtpm = try SwtpmProcess()
            let tpm = try TPMContext(tcti: swtpm.tcti)
            let defaults = try tpm.dictionaryAttackState()
            #expect(defaults.maxTries == 3 && defaults.recoveryInterval == 1000, "the issue's TPM: \(defaults)")
            let rig = try Self.rig(swtpm, provisioned: [Self.alice, Self.bob])
            var wrong = 0
            var stopped: Child.Result? = nil
            while stopped == nil && wrong < LockoutPolicy.pinMaxFailures {
                let result = try Self.enterPIN(rig, as: Self.alice.name, "0000")
                if result.status == 1 { wrong += 1 } else { stopped = result }
            }
            #expect(wrong == LockoutPolicy.pinFreeTries, "wrong PINs checked before fingerseal stopped her")
            let refusal = try #require(stopped)
            #expect(refusal.status == 5 && refusal.stderr.contains("Too many wrong PINs. Wait"), "\(refusal.all)")
            // Her own right PIN waits too: the limit is hers.
            let own = try Self.enterPIN(rig, as: Self.alice.name, Self.alice.pin)
            #expect(own.status == 5 && own.stderr.contains("Too many wrong PINs. Wait"), "\(own.all)")
            #expect(try tpm.dictionaryAttackState().failures == 0, "her wrong PINs never reached the TPM's counter")

            try Self.expectUnlocks(rig, Self.bob.name, Self.bob.pin)
            try Self.expectPINCommandsWork(rig, Self.bob, final: "8642")
            #expect(try LockoutLedger(store: try rig.store(for: Self.alice.name), policy: LockoutPolicy()).current().pinFailures
                    == LockoutPolicy.pinFreeTries, "alice's count is hers alone, unchanged by bob's")
        }

        /// The TPM locked out by something else (another program's objects inside its lockout,
        /// libtpms's 3 tries): fingerseal's PINs, `pin set`, `pin change` and `pin reset` work
        /// all the while.
        @Test func whileTheTPMIsLockedOutPINsAndPINCommandsStillWork() throws {
            let swtpm = try SwtpmProcess()
            let rig = try Self.rig(swtpm, provisioned: [Self.bob])
            try TPMVaultTests.lockOut(swtpm)
            try Self.expectUnlocks(rig, Self.bob.name, Self.bob.pin)
            try Self.expectPINCommandsWork(rig, Self.bob, final: "8642")
            #expect(try TPMContext(tcti: swtpm.tcti).dictionaryAttackState().lockedOut, "all of it during the lockout")
        }

        /// A vault from before (its PIN slot inside the lockout): its wrong PINs still count
        /// there, so while the lockout lasts its own PIN is refused with the TPM's sentence
        /// (not counted), and nobody else's is. Its next correct PIN, once the TPM allows
        /// one, seals it outside the lockout (audit trail: pin-left-tpm-lockout), after which
        /// its wrong PINs are fingerseal's alone.
        @Test func anOldVaultKeepsTheTPMsSentenceUntilItsNextCorrectPINSealsItOutside() throws {
            let swtpm = try SwtpmProcess()
            let tpm = try TPMContext(tcti: swtpm.tcti)
            // Two tries: locked out before fingerseal's own delays begin (after three).
            try tpm.setDictionaryAttackParameters(maxTries: 2, recoveryInterval: 1000, lockoutRecovery: 1000)
            let rig = try Self.rig(swtpm, provisioned: [Self.bob])
            let store = try rig.store(for: Self.alice.name)
            var old = PINKeyslot(pin: secret(Self.alice.pin), cost: .fastForTests)
            old.dictionaryProtected = true
            _ = try Vault.create(VaultStore(location: store.location, tpm: TPMPolicy(mode: .auto, tcti: swtpm.tcti)), pin: old)
            let doctor = try rig.cli(["doctor"], as: Self.alice.name, environment: ["HOME": "/nonexistent"])
            #expect(doctor.stdout.contains(Messages.doctorPINInsideTPMLockout), "\(doctor.all)")
            for _ in 1...2 { #expect(try Self.enterPIN(rig, as: Self.alice.name, "0000").status == 1) }
            #expect(try tpm.dictionaryAttackState().lockedOut, "the old slot counted")
            let refused = try Self.enterPIN(rig, as: Self.alice.name, Self.alice.pin)
            #expect(refused.status == 5 && refused.stderr.contains("This computer's TPM refuses PINs for now"), "\(refused.all)")
            try Self.expectUnlocks(rig, Self.bob.name, Self.bob.pin)
            // The lockout over (reset here; else one try back per 1000 s): the PIN reseals it.
            try tpm.resetLockoutForTests()
            try Self.expectUnlocks(rig, Self.alice.name, Self.alice.pin)
            let audit = try rig.cli(["audit", "--json"], as: Self.alice.name, environment: ["HOME": "/nonexistent"])
            #expect(audit.stdout.contains("\"event\":\"pin-left-tpm-lockout\""), "\(audit.all)")
            let healed = try rig.cli(["doctor"], as: Self.alice.name, environment: ["HOME": "/nonexistent"])
            #expect(healed.stdout.contains("OK: " + Messages.doctorSealedToTPM), "\(healed.all)")
            for _ in 1...3 { #expect(try Self.enterPIN(rig, as: Self.alice.name, "0000").status == 1) }
            #expect(try tpm.dictionaryAttackState().failures == 0, "no longer counted by the TPM")
        }
    }
}
