import Glibc
import Testing
import FingersealCore
@testable import TestSupport

/// The IdP account bound to the Linux account, against the local IdP (issue 12 §2): root
/// signs in for the test account fs-alice (`--user`), as the IdP user `--idp-user`; the
/// IdP has a user named fs-alice too.
@Suite(.enabled(if: LocalIdP.available), .serialized) struct IdentityLoginTests {
    static let pin = "2580"
    static let linuxUser = TestUsers.alice

    static func login(_ idp: LocalIdP, _ home: CLIHome, as idpUser: String, password: String) throws -> Child.Result {
        try home.run(["login", "--user", linuxUser, "--issuer", idp.issuer, "--client-id", "fingerseal-test",
                      "--flow", "password", "--idp-user", idpUser, "--password-fd", "3", "--pin-fd", "3"],
                     fd3: "\(password)\n\(pin)\n")
    }

    static func unlock(_ home: CLIHome) throws -> Child.Result {
        try home.run(["unlock", "--user", linuxUser, "--pin-fd", "3", "--json"], fd3: pin + "\n")
    }

    @Test func aMatchingClaimSignsInAndStatusSaysWho() throws {
        try #require(TestUsers.ensure(Self.linuxUser))
        for claim in ["preferred_username", "email_local"] {
            let idp = try LocalIdP()
            let home = try CLIHome(brokerConfig: "user_claim=\(claim)\nrequire_token=yes\n")
            let login = try Self.login(idp, home, as: "fs-alice", password: "looking-glass-5")
            #expect(login.status == 0, "\(claim): \(login.all)")
            #expect(login.stdout.contains("Signed in as fs-alice@example.test."), "\(login.stdout)")
            let status = try home.run(["status", "--user", Self.linuxUser, "--json"])
            #expect(status.stdout.contains("\"signed_in_as\" : \"fs-alice@example.test\""), "\(status.stdout)")
            // Every refresh checks again (DOT sends an ID token with each refresh; RS256).
            let unlock = try Self.unlock(home)
            #expect(unlock.status == 0 && unlock.stdout.contains("\"token\""), "\(unlock.all)")
        }
    }

    @Test func aMismatchIsRefusedNamingBothAndNothingIsStored() throws {
        try #require(TestUsers.ensure(Self.linuxUser))
        let idp = try LocalIdP()
        let home = try CLIHome(brokerConfig: "user_claim=preferred_username\n")
        let login = try Self.login(idp, home, as: "alice", password: "wonderland-7")
        #expect(login.status == 13, "\(login.all)")
        #expect(login.stderr.contains(Messages.identityMismatch("alice@example.test", Self.linuxUser)), "\(login.stderr)")
        #expect(try home.run(["status", "--user", Self.linuxUser]).status == 6, "nothing was stored")
        // The tokens the provider gave for the wrong account were revoked.
        #expect(!(try idp.familyAlive("alice")))
        // Without user_claim nothing is enforced, but status says who signed in.
        let free = try CLIHome()
        #expect(try Self.login(idp, free, as: "alice", password: "wonderland-7").status == 0)
        #expect(try free.run(["status", "--user", Self.linuxUser]).stdout.contains("Signed in as alice@example.test."))
    }

    @Test func subjectsMapThroughTheRootOwnedMap() throws {
        try #require(TestUsers.ensure(Self.linuxUser))
        let idp = try LocalIdP()
        let subject = try Self.subject(idp, of: "alice", password: "wonderland-7")
        let files = try TempDirectory()
        chmod(files.path, 0o755)
        writeFile(files.file("users.map"), Array("# subject user\n\(subject) \(Self.linuxUser)\n".utf8), mode: 0o644)
        let home = try CLIHome(brokerConfig: "user_claim=sub\nuser_map=\(files.file("users.map"))\n")
        let mapped = try Self.login(idp, home, as: "alice", password: "wonderland-7")
        #expect(mapped.status == 0, "\(mapped.all)")
        // bob's subject is not in the map.
        let other = try CLIHome(brokerConfig: "user_claim=sub\nuser_map=\(files.file("users.map"))\n")
        let refused = try Self.login(idp, other, as: "bob", password: "builder-3")
        #expect(refused.status == 13, "\(refused.all)")
        // A map others may write is not trusted.
        chmod(files.file("users.map"), 0o666)
        let unsafe = try Self.login(idp, try CLIHome(brokerConfig: "user_claim=sub\nuser_map=\(files.file("users.map"))\n"),
                                    as: "alice", password: "wonderland-7")
        #expect(unsafe.status == 10, "\(unsafe.all)")
    }

    /// The provider names another account at a refresh: the chain ends (sign-in required).
    @Test(arguments: ["RS256", "ES256"])
    func aRefreshNamingAnotherAccountEndsTheChain(algorithm: String) throws {
        try #require(TestUsers.ensure(Self.linuxUser))
        let idp = try LocalIdP()
        try idp.signIDTokens(algorithm)
        let home = try CLIHome(brokerConfig: "user_claim=preferred_username\n")
        #expect(try Self.login(idp, home, as: "fs-alice", password: "looking-glass-5").status == 0)
        let fine = try Self.unlock(home)
        #expect(fine.status == 0, "\(algorithm): \(fine.all)")
        try idp.claimIdentity(of: "alice")
        let ended = try Self.unlock(home)
        #expect(ended.status == 7, "\(algorithm): \(ended.all)")
        #expect(ended.stderr.contains(Messages.identityChanged), "\(ended.stderr)")
        let status = try home.run(["status", "--user", Self.linuxUser])
        #expect(status.stdout.contains("sign-in required"), "\(status.stdout)")
    }

    /// DOT's subject for `user`, from an ID token it issues.
    static func subject(_ idp: LocalIdP, of user: String, password: String) throws -> String {
        let payload = try idp.idToken(user, password: password).payload
        guard let range = payload.range(of: "\"sub\":"), let end = payload[range.upperBound...].firstIndex(of: ",") else {
            throw TestFailure("no sub in \(payload)")
        }
        return String(payload[range.upperBound..<end].filter { $0 != "\"" && $0 != " " })
    }
}
