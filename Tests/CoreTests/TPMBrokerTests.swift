import FoundationEssentials
import FingersealCore
import Glibc
import Testing
import TPMKit
@testable import TestSupport

extension InProcessTPM {
    /// The TPM through the broker, as a person meets it: `status` and `doctor` name each slot's
    /// protector, another machine's TPM refuses the finger and the PIN with one sentence each
    /// and `pin reset` sets fingerseal up again, `tpm=require` without a TPM refuses.
    @Suite struct TPMBrokerTests {
        static let pin = "4826"

        static func config(_ swtpm: SwtpmProcess, _ extra: String = "") -> String {
            "tpm_tcti=\(swtpm.tcti)\n" + extra
        }

        struct Status: Decodable {
            struct Slot: Decodable {
                let kind: String
                let protection: String
                let sealedToTpm: Bool
                let state: String
            }
            let keyslots: [Slot]
            let tpm: String
        }

        static func status(_ home: CLIHome) throws -> Status {
            let result = try home.run(["status", "--json"])
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            return try decoder.decode(Status.self, from: Data(result.stdout.utf8))
        }

        @Test func statusAndDoctorSayWhichProtectorEachSlotUses() throws {
            let swtpm = try SwtpmProcess()
            let home = try CLIHome(brokerConfig: Self.config(swtpm))
            #expect(try home.run(["pin", "set", "--pin-fd", "3"], fd3: Self.pin + "\n").status == 0)
            let text = try home.run(["status"])
            #expect(text.stdout.contains("pin: protected by the PIN (Argon2id) and this computer's TPM"), "\(text.all)")
            #expect(text.stdout.contains("device: device key sealed to this computer's TPM"), "\(text.all)")
            #expect(text.stdout.contains("TPM: used when one is usable (tpm=auto)"), "\(text.all)")
            let json = try Self.status(home)
            #expect(json.tpm == "auto")
            #expect(json.keyslots.map(\.protection).sorted() == ["argon2id+tpm2", "tpm2"])
            #expect(json.keyslots.allSatisfy { $0.sealedToTpm && $0.state == "usable" })
            let doctor = try home.run(["doctor"])
            #expect(doctor.stdout.contains("OK: Your PIN and your device key are sealed to this computer's TPM."), "\(doctor.all)")
            // A module argument cannot lower the policy: it is the configuration file's alone.
            let lowered = try home.broker.wire(["pam.account", "pam.user=root", "option=tpm=off", "option=tpm_tcti=device:/x"])
            #expect(!lowered.stdout.contains("result: badConfiguration"), "\(lowered.all)")
            #expect(try Self.status(home).tpm == "auto")
        }

        @Test func anotherMachinesTPMRefusesWithASentenceAndPINResetSetsItUpAgain() throws {
            let here = try SwtpmProcess()
            let there = try SwtpmProcess()
            let home = try CLIHome(reader: true, brokerConfig: Self.config(here))
            #expect(try home.run(["pin", "set", "--pin-fd", "3"], fd3: Self.pin + "\n").status == 0)
            try home.enroll("finger-a", pin: Self.pin)
            // Here, the finger opens the device keyslot sealed to this TPM, twice in a row (the
            // second on the connection, key and session the broker kept).
            for _ in 0..<2 {
                let byFinger = try home.scan(["verify"], ["SCAN finger-a"])
                #expect(byFinger.status == 0, "\(byFinger.all)")
            }
            // The disk in another machine: the same store, another TPM (read per request).
            writeFile(home.broker.config, Array(Self.config(there).utf8), mode: 0o644)
            let started = VirtualSensor.now()
            let refused = try home.run(["step-up", "--pin-fd", "3", "payroll"], fd3: Self.pin + "\n")
            #expect(VirtualSensor.now() - started < 10, "nothing hangs")
            #expect(refused.status == 9, "\(refused.all)")
            #expect(refused.all.contains("Your PIN cannot unlock fingerseal any more: the TPM your vault is sealed to is gone"),
                    "\(refused.all)")
            // Through PAM: the finger first, then the PIN, one sentence each, and the password next.
            let pam = try home.broker.wire(["pam.authenticate", "pam.user=root", "option=pin", "option=timeout=1"],
                                           answers: [Self.pin])
            #expect(pam.stdout.contains("Your finger cannot unlock fingerseal any more"), "\(pam.all)")
            #expect(pam.stdout.contains("Your PIN cannot unlock fingerseal any more"), "\(pam.all)")
            #expect(pam.stdout.contains("result: vaultUnusable"), "\(pam.all)")
            #expect(try Self.status(home).keyslots.allSatisfy { $0.state == "tpm-changed" })
            let doctor = try home.run(["doctor"])
            #expect(doctor.stdout.contains("Problem: Your vault is sealed to a TPM this computer no longer has"), "\(doctor.all)")
            // pin set says to use pin reset; pin reset (root: no account password) replaces it.
            let set = try home.run(["pin", "set", "--pin-fd", "3"], fd3: "1357\n")
            #expect(set.status == 9 && set.stderr.contains("fingerseal pin reset"), "\(set.all)")
            let reset = try home.run(["pin", "reset", "--pin-fd", "3"], fd3: "1357\n")
            #expect(reset.status == 0, "\(reset.all)")
            #expect(reset.stdout.contains("A new vault with your new PIN replaces it"), "\(reset.all)")
            #expect(try Self.status(home).keyslots.allSatisfy { $0.sealedToTpm && $0.state == "usable" })
            let audit = try home.run(["audit"])
            #expect(audit.stdout.contains("was sealed to a TPM this computer no longer has; after the account password, this new vault replaced it."),
                    "\(audit.all)")
            #expect(try home.run(["step-up", "--pin-fd", "3", "--fresh", "payroll"], fd3: "1357\n").status == 0)
        }

        /// tpm=require on a vault from before (its slots not sealed yet): a PAM host hears why the
        /// finger does not unlock, and the PIN seals the vault, after which the finger does.
        @Test func requireWithAVaultNotSealedYetSaysSoAndThePINSealsIt() throws {
            let swtpm = try SwtpmProcess()
            let home = try CLIHome(reader: true, brokerConfig: Self.config(swtpm, "tpm=off\n"))
            #expect(try home.run(["pin", "set", "--pin-fd", "3"], fd3: Self.pin + "\n").status == 0)
            try home.enroll("finger-a", pin: Self.pin)
            writeFile(home.broker.config, Array(Self.config(swtpm, "tpm=require\n").utf8), mode: 0o644)
            let refused = try home.broker.wire(["pam.authenticate", "pam.user=root", "option=timeout=1"])
            #expect(refused.stdout.contains(Messages.tpmRequiredNotSealed), "\(refused.all)")
            #expect(!refused.stdout.contains("result: success"), "\(refused.all)")
            let withPIN = try home.broker.wire(["pam.authenticate", "pam.user=root", "option=pin", "option=timeout=1"],
                                               answers: [Self.pin])
            #expect(withPIN.stdout.contains("result: success"), "\(withPIN.all)")
            #expect(try Self.status(home).keyslots.allSatisfy { $0.sealedToTpm && $0.state == "usable" })
            let byFinger = try home.scan(["verify"], ["SCAN finger-a"])
            #expect(byFinger.status == 0, "\(byFinger.all)")
        }

        @Test func requireWithoutATPMRefusesToCreateAVault() throws {
            let home = try CLIHome(brokerConfig: "tpm=require\ntpm_tcti=device:/dev/fingerseal-no-such-tpm\n")
            let refused = try home.run(["pin", "set", "--pin-fd", "3"], fd3: Self.pin + "\n")
            #expect(refused.status == 8, "\(refused.all)")
            #expect(refused.stderr.contains("This computer requires fingerseal to use a TPM (tpm=require)"), "\(refused.all)")
            #expect(access(home.vaultFile, F_OK) != 0, "no vault was written")
        }
    }
}
