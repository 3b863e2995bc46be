import Glibc
import Testing
@testable import FingersealCore
import SystemKit

/// pamtester under pam_wrapper: fingerseal first, then a password module (pam_wrapper's
/// pam_matrix), the order the pam-auth-update profile sets up.
@Suite(.disabled("moves to the broker (issue 10)")) struct PamtesterTests {
    static let multiarch = "x86_64-linux-gnu"
    static let wrapper = "/usr/lib/\(multiarch)/libpam_wrapper.so"
    static let matrix = "/usr/lib/\(multiarch)/pam_wrapper/pam_matrix.so"
    static var available: Bool { access(wrapper, R_OK) == 0 && access("/usr/bin/pamtester", X_OK) == 0 }
    static let pin = "4826"

    struct Stack {
        let temp: TempDirectory
        let user: UserAccount

        init() throws {
            temp = try TempDirectory()
            guard let user = try UserAccount.current() else { throw TestFailure("no account") }
            self.user = user
            #expect(mkdir(temp.file("pam.d"), 0o755) == 0)
            writeFile(temp.file("passdb"), Array("\(user.name):secret:fingerseal-fallback\n".utf8))
            writeFile(temp.file("pam.d/fingerseal-fallback"), Array("""
                auth [success=done default=ignore] \(Paths.module) pin store=\(temp.path)/%u
                auth required \(PamtesterTests.matrix) passdb=\(temp.file("passdb"))

                """.utf8), mode: 0o644)
            let store = VaultStore(location: VaultLocation(directory: temp.path + "/" + user.name, account: user))
            _ = try Vault.create(store, pin: PINKeyslot(pin: secret(PamtesterTests.pin), cost: .fastForTests))
        }

        /// pamtester reads the answers to its prompts from stdin, one per line.
        func authenticate(_ answers: [String]) throws -> Child.Result {
            try Child.run("/usr/bin/pamtester", ["fingerseal-fallback", user.name, "authenticate"], environment: [
                "LD_PRELOAD": PamtesterTests.wrapper, "PAM_WRAPPER": "1", "PAM_WRAPPER_SERVICE_DIR": temp.file("pam.d"),
                "PATH": "/usr/bin:/bin",
            ], stdin: Array(answers.map { $0 + "\n" }.joined().utf8))
        }
    }

    @Test(.enabled(if: available)) func rightPINSkipsThePassword() throws {
        let result = try Stack().authenticate([PamtesterTests.pin])
        #expect(result.status == 0, "\(result.all)")
        // pamtester shows prompts on stderr.
        #expect(result.stderr.contains("PIN: "))
        #expect(!result.stderr.contains("Password: "))
    }

    @Test(.enabled(if: available)) func skippingThePINReachesThePassword() throws {
        let result = try Stack().authenticate(["", "secret"])
        #expect(result.status == 0, "\(result.all)")
        #expect(result.stderr.contains("PIN: Password: "))
    }

    @Test(.enabled(if: available)) func aWrongPINIsCountedAndThePasswordStillWorks() throws {
        let stack = try Stack()
        let result = try stack.authenticate(["0000", "secret"])
        #expect(result.status == 0, "\(result.all)")
        #expect(result.all.contains("The PIN is not correct."))
        #expect(result.stderr.contains("Password: "))
        let store = VaultStore(location: VaultLocation(directory: stack.temp.path + "/" + stack.user.name, account: stack.user))
        #expect(try LockoutLedger(store: store, policy: LockoutPolicy()).current().pinFailures == 1)
    }

    @Test(.enabled(if: available)) func neitherMeansFailure() throws {
        let result = try Stack().authenticate(["", "wrong"])
        #expect(result.status != 0)
        #expect(result.all.contains("Authentication failure"))
    }
}
