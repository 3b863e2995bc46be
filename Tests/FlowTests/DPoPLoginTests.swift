import FoundationEssentials
import Glibc
import Testing
@testable import TestSupport

/// Sign-ins bound to this computer (RFC 9449) through the broker, against the local IdP
/// (jwcrypto checks every proof): `dpop=auto` binds where the provider lists DPoP, each unlock's
/// refresh proves possession of the key sealed in the vault, `dpop=required` refuses what
/// cannot be bound, and a provider without DPoP keeps working with bearer tokens.
@Suite(.enabled(if: LocalIdP.available && getuid() == 0)) struct DPoPLoginTests {
    typealias Home = CLIHome

    func home(_ config: String = "") throws -> Home {
        let home = try Home()
        writeFile(home.broker.config, Array(config.utf8), mode: 0o644)
        return home
    }

    func login(_ idp: LocalIdP, _ home: Home) throws -> Child.Result {
        try home.run(["login", "--issuer", idp.issuer, "--client-id", "fingerseal-test", "--flow", "password", "--idp-user", "alice",
                      "--password-fd", "3", "--pin-fd", "3"], fd3: "wonderland-7\n2580\n")
    }

    /// doctor's finding on the binding: its status and sentence.
    func binding(_ home: Home) throws -> (status: String, message: String)? {
        struct Report: Decodable {
            struct Finding: Decodable { let check, status, message: String }
            let findings: [Finding]
        }
        let doctor = try home.run(["doctor", "--json"])
        let report = try JSONDecoder().decode(Report.self, from: Data(doctor.stdout.utf8))
        return report.findings.first { $0.check == "binding" }.map { ($0.status, $0.message) }
    }

    @Test func aSignInIsBoundAndEachRefreshProvesTheKey() throws {
        let idp = try LocalIdP()
        let home = try home()
        let login = try login(idp, home)
        #expect(login.status == 0, "\(login.all)")
        let report = try idp.dpopReport()
        #expect(report.bound == 1 && report.refused.isEmpty, "\(report)")
        let status = try home.run(["status"])
        #expect(status.stdout.contains("Bound to this computer: yes"), "\(status.stdout)")
        let json = try home.run(["status", "--json"])
        #expect(json.stdout.contains("\"bound_to_computer\" : true") && json.stdout.contains("\"proof_key\" : \"software\""), "\(json.stdout)")
        let doctor = try binding(home)
        // No TPM here: the TPM's own finding says so, this one only what the binding is.
        #expect(doctor?.status == "ok" && doctor?.message.contains("by a key sealed in the vault") == true, "\(String(describing: doctor))")
        // Two unlocks: each refresh carries a proof by the sealed key, and rotates.
        for _ in 0..<2 {
            let unlock = try home.run(["unlock", "--pin-fd", "3"], fd3: "2580\n")
            #expect(unlock.status == 0, "\(unlock.all)")
        }
        let after = try idp.dpopReport()
        #expect(after.bound == 3 && after.refused.isEmpty, "\(after)")
        #expect(try idp.familyAlive("alice"))
    }

    @Test func aProviderWithoutDPoPGivesBearerTokensAndStatusSaysSo() throws {
        let idp = try LocalIdP()
        try idp.setSwitch("dpop", "off")
        let home = try home()
        #expect(try login(idp, home).status == 0)
        #expect(try home.run(["status"]).stdout.contains("Bound to this computer: no."))
        #expect(try home.run(["unlock", "--pin-fd", "3"], fd3: "2580\n").status == 0)
        #expect(try idp.dpopReport().proofs == 0)
        #expect(try binding(home)?.status == "warning", "bearer where the provider could bind")
    }

    @Test func dpopOffSendsNoProofs() throws {
        let idp = try LocalIdP()
        let home = try home("dpop = off\n")
        #expect(try login(idp, home).status == 0)
        #expect(try idp.dpopReport().proofs == 0)
        #expect(try home.run(["status"]).stdout.contains("Bound to this computer: no."))
        #expect(try binding(home)?.status == "ok", "bearer, as the administrator chose")
    }

    /// `dpop=` per issuer: the provider named has its own policy, whatever the general one says.
    @Test func anIssuersOwnPolicyWins() throws {
        let idp = try LocalIdP()
        let bound = try home("dpop = off, \(idp.issuer)/=auto\n")
        #expect(try login(idp, bound).status == 0)
        #expect(try bound.run(["status"]).stdout.contains("Bound to this computer: yes"))
        let bearer = try home("dpop = \(idp.issuer)=off, required\n")
        #expect(try login(idp, bearer).status == 0)
        #expect(try bearer.run(["status"]).stdout.contains("Bound to this computer: no."))
        let other = try home("dpop = auto, https://elsewhere.example.org=off\n")
        #expect(try login(idp, other).status == 0)
        #expect(try other.run(["status"]).stdout.contains("Bound to this computer: yes"), "another issuer's policy is its own")
    }

    /// `dpop=required`: a provider without DPoP is refused before anyone signs in, and one that
    /// answers Bearer to a proof gets its tokens back (revoked), nothing sealed.
    @Test func dpopRequiredRefusesWhatCannotBeBound() throws {
        let idp = try LocalIdP()
        let home = try home("dpop = required\n")
        try idp.setSwitch("dpop", "off")
        let unlisted = try login(idp, home)
        #expect(unlisted.status != 0 && unlisted.stderr.contains("cannot bind its tokens to this computer"), "\(unlisted.all)")
        try idp.setSwitch("dpop", "on")
        try idp.setSwitch("dpop-token-type", "bearer")
        let bearer = try login(idp, home)
        #expect(bearer.status != 0 && bearer.stderr.contains("gave tokens that are not bound to this computer"), "\(bearer.all)")
        // Refused before the vault was made: nothing was kept.
        #expect(try home.run(["status", "--json"]).stdout.contains("\"vault\" : false"))
    }

    /// A clock far off (here the provider's, ten minutes ahead): the unlock says to check the
    /// clock and keeps the sign-in; set right, the next unlock refreshes.
    @Test func aClockFarOffSaysSoAndKeepsTheSignIn() throws {
        let idp = try LocalIdP()
        let home = try home()
        #expect(try login(idp, home).status == 0)
        try idp.setSwitch("dpop-clock", "600")
        let skewed = try home.run(["unlock", "--pin-fd", "3"], fd3: "2580\n")
        #expect(skewed.status != 0 && skewed.stderr.contains("check that the clock is right"), "\(skewed.all)")
        #expect(try home.run(["status", "--json"]).stdout.contains("\"sign_in\" : \"active\""))
        try idp.setSwitch("dpop-clock", "0")
        #expect(try home.run(["unlock", "--pin-fd", "3"], fd3: "2580\n").status == 0)
    }
}
