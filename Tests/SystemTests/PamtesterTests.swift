import Glibc
import Testing
@testable import FingersealCore
import SystemKit
@testable import TestSupport

/// pamtester under pam_wrapper: fingerseal first, then a password module (pam_wrapper's
/// pam_matrix), the order the pam-auth-update profile sets up. The module asks a broker of the
/// test's own (`socket=`, no reader); pamtester names a terminal (`-I tty=`): a person answers.
@Suite struct PamtesterTests {
    static let multiarch = Pamtester.multiarch
    static let wrapper = Pamtester.wrapper
    static let matrix = Pamtester.matrix
    static var available: Bool { Pamtester.available }
    static let pin = "4826"

    struct Stack {
        let rig: ReaderBroker
        let user: UserAccount
        var temp: TempDirectory { rig.files }
        var store: VaultStore { VaultStore(location: .broker(stateDirectory: rig.broker.state, account: user)) }

        init() throws {
            rig = try ReaderBroker(driver: "none", reader: false)
            guard let user = try UserAccount.current() else { throw TestFailure("no account") }
            self.user = user
            #expect(mkdir(rig.files.file("pam.d"), 0o755) == 0)
            writeFile(rig.files.file("passdb"), Array("\(user.name):secret:fingerseal-fallback\n".utf8))
            writeFile(rig.files.file("pam.d/fingerseal-fallback"), Array("""
                auth [success=done default=ignore] \(Paths.module) pin socket=\(rig.broker.socketPath)
                auth required \(PamtesterTests.matrix) passdb=\(rig.files.file("passdb"))

                """.utf8), mode: 0o644)
            // In the broker's store directly (root, as the broker), with a cheap PIN cost.
            _ = try Vault.create(store, pin: PINKeyslot(pin: secret(PamtesterTests.pin), cost: .fastForTests))
        }

        /// pamtester reads the answers to its prompts from stdin, one per line.
        func authenticate(_ answers: [String]) throws -> Child.Result {
            try Pamtester.run(services: temp.file("pam.d"), service: "fingerseal-fallback", user: user.name, answers: answers)
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
        #expect(try LockoutLedger(store: stack.store, policy: LockoutPolicy()).current().pinFailures == 1)
    }

    @Test(.enabled(if: available)) func neitherMeansFailure() throws {
        let result = try Stack().authenticate(["", "wrong"])
        #expect(result.status != 0)
        #expect(result.all.contains("Authentication failure"))
    }

    /// The broker gone (stopped): the password at once, nothing else asked.
    @Test(.enabled(if: available)) func withoutTheBrokerThePasswordWorksAtOnce() throws {
        let stack = try Stack()
        stack.rig.broker.stop()
        let started = VirtualSensor.now()
        let result = try stack.authenticate(["secret"])
        #expect(result.status == 0, "\(result.all)")
        #expect(!result.stderr.contains("PIN: ") && result.stderr.contains("Password: "))
        #expect(VirtualSensor.now() - started < 3)
    }
}
