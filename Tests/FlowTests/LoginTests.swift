import Glibc
import Testing
@testable import TestSupport

/// `fingerseal login` against the local IdP, through a broker of its own: the broker makes
/// every request to the provider and seals the chain in its store; the CLI shows what the
/// person must see and relays the passwords.
@Suite(.enabled(if: LocalIdP.available)) struct LoginTests {
    typealias Home = CLIHome

    @Test func passwordSignInSealsTheChain() throws {
        let idp = try LocalIdP()
        let home = try Home()
        let login = try LocalIdP.passwordLogin(idp, home)
        #expect(login.status == 0, "\(login.all)")
        #expect(login.stdout.contains("Signed in to \(idp.issuer)."))
        #expect(login.stderr.contains("fingerseal enroll"), "enrollment is offered")
        #expect(!login.all.contains("wonderland-7"))
        let status = try home.run(["status", "--json"])
        #expect(status.stdout.contains("\"sign_in\" : \"active\""), "\(status.stdout)")
        #expect(status.stdout.contains("\"issuer\" : \"\(idp.issuer)\""))
        #expect(status.stdout.contains("\"directory\" : \"\(home.vaultDirectory)\""))
        #expect(!status.all.contains("wonderland-7"))
        #expect(try idp.familyAlive("alice"))
        // The chain is sealed in the broker's store, root's; nothing in the home.
        home.storeIsRootOnly()
        #expect(home.leftInHome().isEmpty, "\(home.leftInHome())")
        // Signing in again into the same vault needs its PIN.
        let again = try LocalIdP.passwordLogin(idp, home, pin: "0000")
        #expect(again.status == 1, "\(again.all)")
        #expect(again.stderr.contains("The PIN is not correct."), "\(again.all)")
    }

    /// `--user` is the local account now (root only); the provider's user name is `--idp-user`.
    @Test func theProviderUserIsIdpUser() throws {
        let idp = try LocalIdP()
        let home = try Home()
        // A local account that does not exist: refused before anyone signs in.
        let unknown = try home.run(["login", "--issuer", idp.issuer, "--client-id", "fingerseal-test", "--flow", "password",
                                    "--user", "no-such-account-fs", "--password-fd", "3", "--pin-fd", "3"],
                                   fd3: "wonderland-7\n2580\n")
        #expect(unknown.status == 11, "\(unknown.all)")
        #expect(try home.run(["status"]).status == 6)
        // Without --idp-user the provider is asked for the local account's name (root), which
        // it does not know: its refusal, and no vault.
        let asRoot = try home.run(["login", "--issuer", idp.issuer, "--client-id", "fingerseal-test", "--flow", "password",
                                   "--password-fd", "3", "--pin-fd", "3"], fd3: "wonderland-7\n2580\n")
        #expect(asRoot.status == 1, "\(asRoot.all)")
        #expect(asRoot.stderr.contains("The identity provider refused the user name or password."), "\(asRoot.all)")
        #expect(try home.run(["status"]).status == 6, "no vault was created")
    }

    /// Issue 12, finding 3: a wrong password answered 400, 401 or 403 with an empty body is
    /// "not accepted", exit 1, as DOT's own 400 invalid_grant is; nothing is created.
    @Test(arguments: [nil, 400, 401, 403])
    func aWrongPasswordIsNotAcceptedWhateverTheProviderAnswers(emptyStatus: Int?) throws {
        let idp = try LocalIdP()
        try idp.emptyErrors(emptyStatus, grantType: "password")
        let home = try Home()
        let wrong = try home.run(["login", "--issuer", idp.issuer, "--client-id", "fingerseal-test", "--flow", "password",
                                  "--idp-user", "alice", "--password-fd", "3", "--pin-fd", "3"], fd3: "not-her-password\n2580\n")
        #expect(wrong.status == 1, "\(wrong.all)")
        #expect(wrong.stderr.contains("The identity provider refused the user name or password."), "\(wrong.all)")
        #expect(!wrong.all.contains("cannot be used"), "\(wrong.all)")
        #expect(try home.run(["status"]).status == 6, "no vault was created")
    }

    /// Issue 12, finding 4: an issuer typed with a trailing slash is shown, audited and stored
    /// as one string.
    @Test func aTrailingSlashIssuerIsShownAsStored() throws {
        let idp = try LocalIdP()
        let home = try Home()
        let login = try home.run(["login", "--issuer", idp.issuer + "/", "--client-id", "fingerseal-test", "--flow", "password",
                                  "--idp-user", "alice", "--password-fd", "3", "--pin-fd", "3"], fd3: "wonderland-7\n2580\n")
        #expect(login.status == 0, "\(login.all)")
        #expect(login.stdout.contains("Signed in to \(idp.issuer). "), "\(login.stdout)")
        #expect(try home.run(["status", "--json"]).stdout.contains("\"issuer\" : \"\(idp.issuer)\""))
        let audit = try home.run(["audit"])
        #expect(audit.stdout.contains("Signed in to \(idp.issuer) with"), "\(audit.all)")
        #expect(!audit.stdout.contains(idp.issuer + "/ "), "\(audit.all)")
    }

    /// Starts a device sign-in and returns it with the user code it shows (its --json line).
    func startDeviceLogin(_ idp: LocalIdP, _ home: Home) throws -> (Child, String) {
        let child = try home.start(["login", "--issuer", idp.issuer, "--client-id", "fingerseal-device", "--json",
                                    "--pin-fd", "3"], fd3: "2580\n")
        let prompt = try #require(child.readLine())
        let code = try #require(prompt.split(separator: "\"").drop { $0 != "user_code" }.dropFirst(2).first)
        return (child, String(code))
    }

    /// Issue 12, finding 1: with a provider that refuses a repeated parameter, as the public
    /// client fingerseal-device (client_id once, from post()).
    @Test func deviceSignInApprovedThroughTheIdP() throws {
        let idp = try LocalIdP()
        try idp.refuseDuplicateParameters()
        let home = try Home()
        let (child, code) = try startDeviceLogin(idp, home)
        try idp.hook("/test/approve-device", [("user_code", code), ("username", "alice")])
        let result = child.finish()
        #expect(result.status == 0, "\(result.all)")
        #expect(try home.run(["status"]).stdout.contains("Sign-in: signed in"))
        #expect(home.leftInHome().isEmpty, "\(home.leftInHome())")
    }

    @Test func deviceSignInRefused() throws {
        let idp = try LocalIdP()
        let home = try Home()
        let (child, code) = try startDeviceLogin(idp, home)
        try idp.hook("/test/deny-device", [("user_code", code)])
        let result = child.finish()
        #expect(result.status == 1, "\(result.all)")
        #expect(result.stderr.contains("The sign-in was refused."))
        #expect(try home.run(["status"]).status == 6, "no vault was created")
    }

    @Test func badProvidersAreClearErrors() throws {
        let home = try Home()
        let insecure = try home.run(["login", "--issuer", "http://idp.example.org", "--client-id", "x", "--flow", "password"])
        #expect(insecure.status == 10, "\(insecure.all)")
        #expect(insecure.stderr.contains("must use https"))
        let closed = try home.run(["login", "--issuer", "http://127.0.0.1:9", "--client-id", "x", "--flow", "password"])
        #expect(closed.status == 8, "\(closed.all)")
        #expect(closed.stderr.contains("cannot be reached"))
        let missing = try home.run(["login", "--client-id", "x"])
        #expect(missing.status == 2, "\(missing.all)")
        #expect(missing.stderr.contains("--issuer URL --client-id ID"), "\(missing.all)")
        #expect(try home.run(["status"]).status == 6, "no vault was created")
    }
}
