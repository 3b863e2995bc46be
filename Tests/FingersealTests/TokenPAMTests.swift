import CPAM
import Dispatch
import FoundationEssentials
import Glibc
import Testing
@testable import FingersealCore
@testable import IdentityClient
import PAMKit
import SystemKit

/// pam_fingerseal.so's token step against the local IdP: after a correct PIN (the module in
/// this process, the refresh in fingerseal-scan) and after a match (pamtester, virtual_device).
@Suite(.disabled("moves to the broker (issue 10)"), .enabled(if: LocalIdP.available && PamtesterTests.available)) struct TokenPAMTests {
    static let pin = ModuleAuthenticationTests.pin

    /// A PIN-only vault signed in to the local IdP (alice), and a PAM service with auth and
    /// session lines.
    struct SignedInStack {
        let idp: LocalIdP
        let stack: ModuleAuthenticationTests.Stack
        let runtimeDirectory: TempDirectory
        var runtime: String { runtimeDirectory.path }

        init(options: String, lastRefresh: Int64? = nil) throws {
            idp = try LocalIdP()
            stack = try ModuleAuthenticationTests.Stack()
            runtimeDirectory = try TempDirectory(base: "/dev/shm")
            let line = "\(Paths.module) store=\(stack.temp.path)/%u helper=\(Paths.buildDirectory)/fingerseal-scan pin \(options)"
            writeFile(stack.services + "/fingerseal-test", Array("auth required \(line)\nsession required \(line)\n".utf8),
                      mode: 0o644)
            try idp.signIn(try Vault.unlockWithDevice(stack.store), at: lastRefresh ?? SystemClock().now())
        }

        /// authenticate with the PIN, then open_session; returns both codes.
        func login() throws -> (auth: Int32, session: Int32) {
            let client = try PAMClient(service: "fingerseal-test", user: stack.user.name, configDirectory: stack.services) { message in
                if case .promptEchoOff = message { return TokenPAMTests.pin }
                return nil
            }
            #expect(client.setEnvironment("XDG_RUNTIME_DIR", runtime) == PAM_SUCCESS)
            let auth = client.authenticate()
            return (auth, auth == PAM_SUCCESS ? client.openSession() : auth)
        }

        var sessionToken: AccessTokenFile? {
            readFile(runtime + "/fingerseal/access-token").flatMap { bytes in bytes.withUnsafeBytes { AccessTokenFile.parse($0) } }
        }
    }

    @Test func aCorrectPINRefreshesAndTheSessionGetsTheToken() throws {
        let s = try SignedInStack(options: "require_token")
        let codes = try s.login()
        #expect(codes.auth == PAM_SUCCESS && codes.session == PAM_SUCCESS, "\(codes)")
        let token = try #require(s.sessionToken)
        #expect(token.isValid(at: SystemClock().now()))
        var info = stat()
        #expect(stat(s.runtime + "/fingerseal/access-token", &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(try s.idp.family("alice").contains("\"rotations\": 1"))
        #expect(try s.idp.familyAlive("alice"))
    }

    @Test(arguments: [("require_token", PAM_AUTH_ERR), ("", PAM_AUTHINFO_UNAVAIL)])
    func aRevokedSignInDeniesOrFallsBack(options: String, expected: Int32) throws {
        let s = try SignedInStack(options: options)
        try s.idp.hook("/test/revoke-user-tokens", [("username", "alice")])
        #expect(try s.login().auth == expected)
        #expect(try Vault.status(s.stack.store)?.signIn == .required)
        #expect(s.sessionToken == nil)
    }

    @Test func anUnreachableProviderIsAllowedOnlyWithinTheGrace() throws {
        let hourAgo = SystemClock().now() - 3600
        let within = try SignedInStack(options: "require_token offline_grace=7200", lastRefresh: hourAgo)
        try within.idp.hook("/test/mode", [("mode", "down-5xx")])
        let allowed = try within.login()
        #expect(allowed.auth == PAM_SUCCESS && allowed.session == PAM_SUCCESS, "\(allowed)")
        #expect(within.sessionToken == nil, "no fresh token while offline")

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

    /// A match through pamtester refreshes in the helper; CLI unlocks (PIN) run at the same
    /// time against the same vault, and the IdP never sees a refresh token twice.
    @Test func fingerUnlocksInPAMAndCLIUnlocksAtOnceNeverReuseAToken() throws {
        let idp = try LocalIdP()
        let rig = try ModuleFingerprintTests.Rig(moduleOptions: "pin require_token")
        var cli = rig.environment
        cli["LD_PRELOAD"] = nil
        cli["PAM_WRAPPER"] = nil
        cli["FP_DRIVERS_WHITELIST"] = "none"
        let login = try Child.run(Paths.cli, ["login", "--issuer", idp.issuer, "--client-id", "fingerseal-test", "--flow", "password",
                                              "--user", "alice", "--password-fd", "3", "--pin-fd", "3"],
                                  environment: cli, fd3: Array("wonderland-7\n\(ModuleFingerprintTests.pin)\n".utf8))
        #expect(login.status == 0, "\(login.all)")
        let pair = UnlockPair(rig: rig, cli: cli)
        for _ in 0..<5 {
            let failures = Failures()
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                do {
                    let result = index == 0 ? try pair.rig.authenticate(answers: [], sensor: ["SCAN finger-a"])
                        : try Child.run(Paths.cli, ["unlock", "--pin-fd", "3"], environment: pair.cli,
                                        fd3: Array("\(ModuleFingerprintTests.pin)\n".utf8))
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
    let cli: [String: String]
    init(rig: ModuleFingerprintTests.Rig, cli: [String: String]) {
        self.rig = rig
        self.cli = cli
    }
}
