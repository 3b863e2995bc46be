import Glibc
import Testing

/// `fingerseal login` against the local IdP.
@Suite(.enabled(if: LocalIdP.available)) struct LoginTests {
    struct Home {
        let temp: TempDirectory
        let environment: [String: String]
        init() throws {
            temp = try TempDirectory()
            environment = ["XDG_STATE_HOME": temp.path, "PATH": "/usr/bin:/bin", "NO_COLOR": "1"]
        }
        func run(_ arguments: [String], fd3: String? = nil) throws -> Child.Result {
            try Child.run(Paths.cli, arguments, environment: environment, fd3: fd3.map { Array($0.utf8) })
        }
    }

    @Test func passwordSignInSealsTheChain() throws {
        let idp = try LocalIdP()
        let home = try Home()
        let login = try home.run(["login", "--issuer", idp.issuer, "--client-id", "fingerseal-test", "--flow", "password",
                                  "--user", "alice", "--password-fd", "3", "--pin-fd", "3"], fd3: "wonderland-7\n2580\n")
        #expect(login.status == 0, "\(login.all)")
        #expect(login.stdout.contains("Signed in to \(idp.issuer)."))
        #expect(login.stderr.contains("fingerseal enroll"), "enrollment is offered")
        let status = try home.run(["status", "--json"])
        #expect(status.stdout.contains("\"sign_in\" : \"active\""), "\(status.stdout)")
        #expect(status.stdout.contains("\"issuer\" : \"\(idp.issuer)\""))
        #expect(!status.all.contains("wonderland-7"))
        // Signing in again into the same vault needs its PIN.
        let again = try home.run(["login", "--issuer", idp.issuer, "--client-id", "fingerseal-test", "--flow", "password",
                                  "--user", "alice", "--password-fd", "3", "--pin-fd", "3"], fd3: "wonderland-7\n0000\n")
        #expect(again.status == 1, "\(again.all)")
    }

    /// Starts a device sign-in and returns it with the user code it shows (its --json line).
    func startDeviceLogin(_ idp: LocalIdP, _ home: Home) throws -> (Child, String) {
        let child = try Child(Paths.cli, ["login", "--issuer", idp.issuer, "--client-id", "fingerseal-device", "--json",
                                          "--pin-fd", "3"], environment: home.environment, fd3: Array("2580\n".utf8))
        let prompt = try #require(child.readLine())
        let code = try #require(prompt.split(separator: "\"").drop { $0 != "user_code" }.dropFirst(2).first)
        return (child, String(code))
    }

    @Test func deviceSignInApprovedThroughTheIdP() throws {
        let idp = try LocalIdP()
        let home = try Home()
        let (child, code) = try startDeviceLogin(idp, home)
        try idp.hook("/test/approve-device", [("user_code", code), ("username", "alice")])
        let result = child.finish()
        #expect(result.status == 0, "\(result.all)")
        #expect(try home.run(["status"]).stdout.contains("Sign-in: signed in"))
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
        #expect(try home.run(["login", "--client-id", "x"]).status == 2)
    }
}
