import CPAM
import Dispatch
import FoundationEssentials
import Glibc
import Testing
@testable import FingersealCore
@testable import IdentityClient
import PAMKit
import SystemKit
@testable import TestSupport

/// pam_fingerseal.so's token step against the local IdP, decided by the broker: after a
/// correct PIN (the module in this process) and after a match (pamtester, virtual_device).
/// The access token stays in the broker, kept for the session that authenticated (and handed
/// to the one open_session opens); the CLI in the same session asks for it with `token`.
@Suite(.enabled(if: LocalIdP.available && PamtesterTests.available)) struct TokenPAMTests {
    static let pin = ModuleAuthenticationTests.pin

    /// A PIN-only vault signed in to the local IdP (alice), and a PAM service with auth and
    /// session lines. open_session's answer tells whether it was handed a token: the module
    /// then says success; with nothing to hand on it has no opinion (PAM_IGNORE), which
    /// pam_debug after it turns into PAM_CRED_INSUFFICIENT.
    struct SignedInStack {
        let idp: LocalIdP
        let stack: ModuleAuthenticationTests.Stack
        static let noToken = PAM_CRED_INSUFFICIENT

        init(options: String, lastRefresh: Int64? = nil) throws {
            idp = try LocalIdP()
            stack = try ModuleAuthenticationTests.Stack()
            let line = "\(Paths.module) socket=\(stack.socket) pin \(options)"
            stack.service("""
                auth required \(line)
                session [success=done ignore=ignore default=die] \(line)
                session required pam_debug.so open_session=cred_insufficient close_session=cred_insufficient
                """)
            // Signed in as `fingerseal login` would, with the last refresh at `lastRefresh`:
            // written into the broker's store directly (the tests run as root).
            try idp.signIn(try Vault.unlockWithDevice(stack.store), at: lastRefresh ?? SystemClock().now())
        }

        func client() throws -> PAMClient {
            let client = try PAMClient(service: "fingerseal-test", user: stack.user.name, configDirectory: stack.services) { message in
                if case .promptEchoOff = message { return TokenPAMTests.pin }
                return nil
            }
            #expect(client.setItem(.tty, "/dev/pts/0") == PAM_SUCCESS)
            return client
        }

        /// authenticate with the PIN, then open_session, in this process (the test runner's
        /// session); returns both codes.
        func login() throws -> (auth: Int32, session: Int32) {
            let client = try client()
            let auth = client.authenticate()
            return (auth, auth == PAM_SUCCESS ? client.openSession() : auth)
        }

        /// The access token the broker keeps for a session: this one, or (`ownSession`) a
        /// process's own. `fingerseal token` answers from the session's token; without one it
        /// would unlock, which needs the PIN, and none is given.
        func sessionToken(ownSession: Bool = false) throws -> (token: String, expiresAt: Int64)? {
            let result = try stack.rig.cli(["token", "--json", "--min-valid", "0", "--pin-fd", "3"], fd3: "",
                                           inTestSession: !ownSession)
            guard result.status == 0 else { return nil }
            struct Report: Decodable { let access_token: String; let expires_at: Int64 }
            let json = result.stdout.prefix { $0 != "}" } + "}"
            let report = try JSONDecoder().decode(Report.self, from: Data(json.utf8))
            return (report.access_token, report.expires_at)
        }
    }

    @Test func aCorrectPINRefreshesAndTheSessionGetsTheToken() throws {
        let s = try SignedInStack(options: "require_token")
        let codes = try s.login()
        #expect(codes.auth == PAM_SUCCESS && codes.session == PAM_SUCCESS, "\(codes)")
        let token = try #require(try s.sessionToken())
        #expect(token.expiresAt > SystemClock().now() && token.token.count >= 10)
        #expect(try s.sessionToken(ownSession: true) == nil, "another session has no token")
        #expect(try s.idp.family("alice").contains("\"rotations\": 1"))
        #expect(try s.idp.familyAlive("alice"))
        // close_session drops this session's token.
        #expect(try s.client().closeSession() == PAM_SUCCESS)
        #expect(try s.sessionToken() == nil)
    }

    /// The provider's refusal with its code, or (issue 12) a bare 400/401 as some answer it.
    @Test(arguments: [("require_token", PAM_AUTH_ERR, nil), ("", PAM_AUTHINFO_UNAVAIL, nil),
                      ("require_token", PAM_AUTH_ERR, 400), ("", PAM_AUTHINFO_UNAVAIL, 401)])
    func aRevokedSignInDeniesOrFallsBack(options: String, expected: Int32, emptyStatus: Int?) throws {
        let s = try SignedInStack(options: options)
        try s.idp.emptyErrors(emptyStatus, grantType: "refresh_token")
        try s.idp.hook("/test/revoke-user-tokens", [("username", "alice")])
        #expect(try s.login().auth == expected)
        #expect(try Vault.status(s.stack.store)?.signIn == .required)
        #expect(try s.sessionToken() == nil)
    }

    @Test func anUnreachableProviderIsAllowedOnlyWithinTheGrace() throws {
        let hourAgo = SystemClock().now() - 3600
        let within = try SignedInStack(options: "require_token offline_grace=7200", lastRefresh: hourAgo)
        try within.idp.hook("/test/mode", [("mode", "down-5xx")])
        let allowed = try within.login()
        #expect(allowed.auth == PAM_SUCCESS && allowed.session == SignedInStack.noToken, "\(allowed)")
        #expect(try within.sessionToken() == nil, "no fresh token while offline")

        let beyond = try SignedInStack(options: "require_token offline_grace=60", lastRefresh: hourAgo)
        try beyond.idp.hook("/test/mode", [("mode", "down-5xx")])
        #expect(try beyond.login().auth == PAM_AUTH_ERR)
        #expect(try Vault.status(beyond.stack.store)?.signIn == .active, "the sign-in is kept for when the IdP is back")
    }

    @Test func aSlowProviderIsCutOffAtIdpTimeout() throws {
        let s = try SignedInStack(options: "require_token idp_timeout=2 offline_grace=0")
        try s.idp.hook("/test/mode", [("mode", "slow"), ("seconds", "30")])
        let start = VirtualSensor.now()
        #expect(try s.login().auth == PAM_AUTH_ERR)
        let elapsed = VirtualSensor.now() - start
        #expect(elapsed < 8, "\(elapsed) s")
    }

    /// A match through pamtester and CLI unlocks (PIN) at the same time, all refreshing in the
    /// one broker against the same vault: the IdP never sees a refresh token twice.
    @Test func fingerUnlocksInPAMAndCLIUnlocksAtOnceNeverReuseAToken() throws {
        let idp = try LocalIdP()
        let rig = try ModuleFingerprintTests.Rig(moduleOptions: "pin require_token")
        let login = try rig.rig.cli(["login", "--issuer", idp.issuer, "--client-id", "fingerseal-test", "--flow", "password",
                                     "--idp-user", "alice", "--password-fd", "3", "--pin-fd", "3"],
                                    fd3: "wonderland-7\n\(ModuleFingerprintTests.pin)\n")
        #expect(login.status == 0, "\(login.all)")
        let pair = UnlockPair(rig: rig)
        for _ in 0..<5 {
            let failures = Failures()
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                do {
                    let result = index == 0 ? try pair.rig.authenticate(answers: [], sensor: ["SCAN finger-a"])
                        : try pair.rig.rig.cli(["unlock", "--pin-fd", "3"], fd3: "\(ModuleFingerprintTests.pin)\n")
                    if result.status != 0 { failures.add(result.all) }
                } catch { failures.add("\(error)") }
            }
            #expect(failures.all.isEmpty, "\(failures.all)")
        }
        let family = try idp.family("alice")
        #expect(family.contains("\"rotations\": 10"), "\(family)")
        #expect(try idp.familyAlive("alice"))
    }
}

/// What the concurrent unlocks share (read-only).
final class UnlockPair: @unchecked Sendable {
    let rig: ModuleFingerprintTests.Rig
    init(rig: ModuleFingerprintTests.Rig) {
        self.rig = rig
    }
}
