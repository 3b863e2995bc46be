import FoundationEssentials
import FingersealCore
import Glibc
import IdentityClient
import SodiumKit
import SystemKit
import Testing
import TPMKit
@testable import TestSupport

extension InProcessTPM {
    /// The theft test (issue 35): a vault whose keyslots open anywhere with the PIN (`tpm=off`:
    /// the weakest there is), its sign-in bound to a key the TPM holds. Copied to another
    /// machine (another swtpm), it refreshes nothing: the broker there cannot prove the key and
    /// ends the sign-in, and the refresh token taken out of it is refused by the provider. The
    /// first machine goes on as before. The same copy of a bearer sign-in does refresh: that is
    /// what the binding buys.
    @Suite(.enabled(if: LocalIdP.available && getuid() == 0)) struct DPoPTheftTests {
        static let pin = "2580"

        static func config(_ swtpm: SwtpmProcess, _ extra: String = "") -> String {
            "tpm_tcti=\(swtpm.tcti)\ntpm=off\n" + extra
        }

        static func login(_ idp: LocalIdP, _ home: CLIHome) throws -> Child.Result {
            try home.run(["login", "--issuer", idp.issuer, "--client-id", "fingerseal-test", "--flow", "password", "--idp-user", "alice",
                          "--password-fd", "3", "--pin-fd", "3"], fd3: "wonderland-7\n\(pin)\n")
        }

        /// The refresh token, taken out of the vault with the PIN (what a thief with the disk
        /// and the PIN holds).
        static func refreshToken(_ home: CLIHome) throws -> SecureBytes {
            guard let account = try UserAccount.current() else { throw TestFailure("no account") }
            let store = VaultStore(location: VaultLocation(directory: home.vaultDirectory, account: account))
            let vault = try Vault.unlock(store, pin: PINKeyslot(pin: secret(pin), cost: .fastForTests),
                                         ledger: LockoutLedger(store: store, policy: LockoutPolicy()))
            return try #require(try vault.secret(TokenChain.refreshTokenRecord))
        }

        @Test func aCopiedVaultRefreshesNothingElsewhere() throws {
            let idp = try LocalIdP()
            let here = try SwtpmProcess(), there = try SwtpmProcess()
            defer { here.stop(); there.stop() }
            let home = try CLIHome(brokerConfig: Self.config(here))
            #expect(try Self.login(idp, home).status == 0)
            #expect(try home.run(["status"]).stdout.contains("Bound to this computer: yes, by a key the TPM holds"))
            #expect(try home.run(["unlock", "--pin-fd", "3"], fd3: Self.pin + "\n").status == 0, "a refresh here")

            // The thief's copy: the refresh token alone, as a bearer token, is refused.
            let stolen = try Self.refreshToken(home)
            #expect(throws: TokenFailure.chainEnded("invalid_grant")) { _ = try idp.client().refresh(stolen) }
            // The whole vault on another machine: the PIN opens it, the key is not there.
            writeFile(home.broker.config, Array(Self.config(there).utf8), mode: 0o644)
            let elsewhere = try home.run(["unlock", "--pin-fd", "3"], fd3: Self.pin + "\n")
            #expect(elsewhere.status != 0 && elsewhere.stderr.contains("Sign in again"), "\(elsewhere.all)")
            #expect(try idp.dpopReport().refused["the token is bound to a key; a proof is required"] == 1)
        }

        /// A resource request's proof from the key the TPM holds (`fingerseal proof`): after the
        /// unlock, nothing more is asked, and the resource accepts it.
        @Test func aProofFromTheTPMsKeyPassesTheResource() throws {
            let idp = try LocalIdP()
            let here = try SwtpmProcess()
            defer { here.stop() }
            let home = try CLIHome(brokerConfig: Self.config(here))
            #expect(try Self.login(idp, home).status == 0)
            #expect(try home.run(["status", "--json"]).stdout.contains("\"proof_key\" : \"tpm\""))
            let doctor = try home.run(["doctor"])
            #expect(doctor.stdout.contains("Bound to this computer: yes, by a key the TPM holds"), "\(doctor.all)")
            let unlock = try home.run(["unlock", "--print-token", "--pin-fd", "3"], fd3: Self.pin + "\n", newSession: false)
            #expect(unlock.status == 0, "\(unlock.all)")
            let url = idp.issuer + "/userinfo/"
            let proof = try home.run(["proof", "GET", url], newSession: false)
            #expect(proof.status == 0 && proof.stderr.isEmpty, "\(proof.all)")
            let answered = try LocalIdP.getResource(url, token: String(unlock.stdout.dropLast()), proof: String(proof.stdout.dropLast()))
            #expect(answered.status == 200)
        }

        @Test func theFirstMachineGoesOnAndABearerCopyDoesRefresh() throws {
            let idp = try LocalIdP()
            let here = try SwtpmProcess()
            defer { here.stop() }
            let home = try CLIHome(brokerConfig: Self.config(here))
            #expect(try Self.login(idp, home).status == 0)
            // The thief's attempt changes nothing here: the next unlock refreshes as before.
            _ = try? idp.client().refresh(try Self.refreshToken(home))
            #expect(try home.run(["unlock", "--pin-fd", "3"], fd3: Self.pin + "\n").status == 0)
            // Bearer (a provider without DPoP): the same token taken out does refresh anywhere.
            try idp.setSwitch("dpop", "off")
            let bearer = try CLIHome(brokerConfig: Self.config(here))
            #expect(try Self.login(idp, bearer).status == 0)
            #expect(try bearer.run(["status"]).stdout.contains("Bound to this computer: no."))
            #expect(try idp.client().refresh(try Self.refreshToken(bearer)).refreshToken != nil, "a bearer copy works anywhere")
        }
    }
}
