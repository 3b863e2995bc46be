import CPAM
import FoundationEssentials
import Glibc
import PAMKit
import Testing
@testable import FingersealCore
import SystemKit
@testable import TestSupport

/// pam_fingerseal.so's authenticate through a real PAM stack in this process (a private
/// service directory), asking a broker of each test's own (`socket=`) that has no reader, with
/// the PIN fallback. The PAM transactions name a terminal (PAM_TTY): a person can answer.
@Suite struct ModuleAuthenticationTests {
    static let pin = "4826"

    final class Stack {
        let rig: ReaderBroker
        let user: UserAccount
        let services: String
        var temp: TempDirectory { rig.files }
        /// Root's vault in the broker's store.
        var store: VaultStore { VaultStore(location: .broker(stateDirectory: rig.broker.state, account: user)) }
        var messages: [PAMClient.Message] = []
        var socket: String { rig.broker.socketPath }

        /// `config`: the broker's fingerseal.conf.
        init(options: String = "pin", vault: Bool = true, config: String = "") throws {
            rig = try ReaderBroker(driver: "none", reader: false, config: config)
            guard let user = try UserAccount.current() else { throw TestFailure("no account") }
            self.user = user
            services = rig.files.file("pam.d")
            #expect(mkdir(services, 0o755) == 0)
            service("auth required \(Paths.module) socket=\(socket) \(options)")
            if vault {
                // Made in the broker's store directly (root, as the broker), with a cheap PIN
                // cost: these tests ask for the PIN many times.
                _ = try Vault.create(store, pin: PINKeyslot(pin: secret(ModuleAuthenticationTests.pin), cost: .fastForTests))
            }
        }

        func service(_ lines: String) {
            writeFile(services + "/fingerseal-test", Array((lines + "\n").utf8), mode: 0o644)
        }

        /// Runs authenticate, answering the PIN prompt with `answer`; `tty` is PAM_TTY.
        func authenticate(answer: String?, rhost: String? = nil, user name: String? = nil,
                          tty: String? = "/dev/pts/0") throws -> Int32 {
            var seen: [PAMClient.Message] = []
            let client = try PAMClient(service: "fingerseal-test", user: name ?? user.name, configDirectory: services) { message in
                seen.append(message)
                if case .promptEchoOff = message { return answer }
                return nil
            }
            if let tty { _ = client.setItem(.tty, tty) }
            if let rhost { _ = client.setItem(.rhost, rhost) }
            let rc = client.authenticate()
            messages = seen
            return rc
        }

        var prompted: Bool { messages.contains(.promptEchoOff("PIN: ")) }

        func pinFailures() throws -> Int { try LockoutLedger(store: store, policy: LockoutPolicy()).current().pinFailures }
    }

    @Test func rightPINSucceeds() throws {
        let stack = try Stack()
        #expect(try stack.authenticate(answer: ModuleAuthenticationTests.pin) == PAM_SUCCESS)
        #expect(stack.prompted)
    }

    @Test func wrongPINIsAnAuthErrorAndCounted() throws {
        let stack = try Stack()
        #expect(try stack.authenticate(answer: "0000") == PAM_AUTH_ERR)
        #expect(stack.messages.contains(.errorMessage("The PIN is not correct.")))
        #expect(try stack.pinFailures() == 1)
    }

    @Test func skippedPINMovesOnWithoutCounting() throws {
        let stack = try Stack()
        #expect(try stack.authenticate(answer: "") == PAM_AUTHINFO_UNAVAIL)
        #expect(try stack.authenticate(answer: nil) == PAM_AUTHINFO_UNAVAIL)
        #expect(try stack.pinFailures() == 0)
    }

    @Test func lockedPINIsAnAuthErrorWithAMessage() throws {
        let stack = try Stack()
        var state = LockoutState()
        state.pinLocked = true
        state.pinFailures = LockoutPolicy.pinMaxFailures
        let encoder = JSONEncoder()
        writeFile(stack.store.location.directory + "/lockout",
                  try Container.encode(.lockout, body: Array(try encoder.encode(state))))
        #expect(try stack.authenticate(answer: ModuleAuthenticationTests.pin) == PAM_AUTH_ERR)
        #expect(stack.messages.contains { if case let .errorMessage(text) = $0 { return text.contains("locked") }; return false })
    }

    @Test func noVaultSaysNothing() throws {
        let stack = try Stack(vault: false)
        #expect(try stack.authenticate(answer: ModuleAuthenticationTests.pin) == PAM_AUTHINFO_UNAVAIL)
        #expect(stack.messages.isEmpty)
    }

    @Test func withoutThePINOptionNothingIsAsked() throws {
        let stack = try Stack(options: "")
        #expect(try stack.authenticate(answer: ModuleAuthenticationTests.pin) == PAM_AUTHINFO_UNAVAIL)
        #expect(!stack.prompted)
    }

    /// No PAM_TTY, no PAM_XDISPLAY and a caller in no login session (this test runner): no
    /// person can answer, so nothing is asked, unless the administrator names the service.
    @Test func aRequestNoPersonCanAnswerGetsNoPIN() throws {
        let stack = try Stack()
        #expect(try stack.authenticate(answer: ModuleAuthenticationTests.pin, tty: nil) == PAM_AUTHINFO_UNAVAIL)
        #expect(!stack.prompted && stack.messages.isEmpty)
        #expect(try stack.pinFailures() == 0)
        let named = try Stack(config: "interactive_services=fingerseal-test\n")
        #expect(try named.authenticate(answer: ModuleAuthenticationTests.pin, tty: nil) == PAM_SUCCESS)
        #expect(named.prompted)
        let unattended = try Stack(config: "unattended_services=fingerseal-test\n")
        #expect(try unattended.authenticate(answer: ModuleAuthenticationTests.pin) == PAM_AUTHINFO_UNAVAIL)
        #expect(!unattended.prompted)
    }

    @Test func remoteSessionsAreRefusedUnlessAllowed() throws {
        let refused = try Stack()
        #expect(try refused.authenticate(answer: ModuleAuthenticationTests.pin, rhost: "203.0.113.7") == PAM_AUTHINFO_UNAVAIL)
        #expect(!refused.prompted)
        #expect(try refused.authenticate(answer: ModuleAuthenticationTests.pin, rhost: "localhost") == PAM_SUCCESS)
        let allowed = try Stack(options: "pin allow_remote")
        #expect(try allowed.authenticate(answer: ModuleAuthenticationTests.pin, rhost: "203.0.113.7") == PAM_SUCCESS)
    }

    @Test func unknownUser() throws {
        let stack = try Stack()
        #expect(try stack.authenticate(answer: ModuleAuthenticationTests.pin, user: "no-such-user-fingerseal") == PAM_USER_UNKNOWN)
    }

    @Test func onlyGroupRefusesOthers() throws {
        let stack = try Stack(options: "pin only_group=no-such-group-fingerseal")
        #expect(try stack.authenticate(answer: ModuleAuthenticationTests.pin) == PAM_AUTHINFO_UNAVAIL)
        #expect(!stack.prompted)
    }

    /// No broker at the socket: PAM_AUTHINFO_UNAVAIL at once, nothing asked (the password next).
    @Test func anUnreachableBrokerIsUnavailableAtOnce() throws {
        let stack = try Stack()
        stack.service("auth required \(Paths.module) socket=\(stack.temp.file("no-broker")) pin")
        let started = VirtualSensor.now()
        #expect(try stack.authenticate(answer: ModuleAuthenticationTests.pin) == PAM_AUTHINFO_UNAVAIL)
        #expect(VirtualSensor.now() - started < 1)
        #expect(!stack.prompted)
    }

    @Test func damagedOrUnsafeVaultFallsBackAndIsLeftAlone() throws {
        let stack = try Stack()
        let path = stack.store.location.directory + "/vault"
        let original = try #require(readFile(path))
        var flipped = original
        flipped[original.count / 3] ^= 0x01
        writeFile(path, flipped)
        #expect(try stack.authenticate(answer: ModuleAuthenticationTests.pin) == PAM_AUTHINFO_UNAVAIL)
        #expect(!stack.prompted)
        #expect(readFile(path) == flipped)
        writeFile(path, original)
        #expect(chmod(path, 0o666) == 0)
        #expect(try stack.authenticate(answer: ModuleAuthenticationTests.pin) == PAM_AUTHINFO_UNAVAIL)
        #expect(readFile(path) == original)
        #expect(chmod(path, 0o600) == 0)
        let aside = stack.temp.file("aside")
        #expect(rename(path, aside) == 0 && symlink(aside, path) == 0)
        #expect(try stack.authenticate(answer: ModuleAuthenticationTests.pin) == PAM_AUTHINFO_UNAVAIL)
    }

    @Test func accountCheckSaysWhenSignInIsNeeded() throws {
        let stack = try Stack()
        let run = { () throws -> Int32 in
            stack.messages = []
            let client = try PAMClient(service: "fingerseal-test", user: stack.user.name, configDirectory: stack.services) {
                stack.messages.append($0)
                return nil
            }
            return client.accountManagement()
        }
        // The module has an opinion only when the sign-in needs renewing; pam_permit decides.
        stack.service("""
            account [success=ok ignore=ignore default=bad] \(Paths.module) socket=\(stack.socket)
            account required pam_permit.so
            """)
        #expect(try run() == PAM_SUCCESS)
        #expect(stack.messages.isEmpty)
        let vault = try Vault.unlock(stack.store, pin: PINKeyslot(pin: secret(ModuleAuthenticationTests.pin)),
                                     ledger: LockoutLedger(store: stack.store, policy: LockoutPolicy()))
        try vault.update { $0.setSignIn(.required) }
        #expect(try run() == PAM_SUCCESS)
        #expect(stack.messages == [.textInfo("Fingerprint unlock needs a new sign-in. Run: fingerseal login")])
        // Alone in the stack it says PAM_IGNORE, never success or a failure of its own.
        stack.service("account [ignore=ignore default=die] \(Paths.module) socket=\(stack.socket)\n"
                      + "account required pam_debug.so acct=cred_insufficient")
        #expect(try run() == PAM_CRED_INSUFFICIENT)
    }

    @Test func accountCheckWithoutAVaultHasNoOpinion() throws {
        let stack = try Stack(vault: false)
        // PAM_IGNORE from us, so pam_permit decides; any error from us would fail the stack.
        stack.service("""
            account [success=ok ignore=ignore default=bad] \(Paths.module) socket=\(stack.socket)
            account required pam_permit.so
            """)
        let client = try PAMClient(service: "fingerseal-test", user: stack.user.name, configDirectory: stack.services) { _ in nil }
        #expect(client.accountManagement() == PAM_SUCCESS)
    }

    /// Step-up grants live in the broker per (uid, login session): close_session drops this
    /// session's and leaves another's. Nothing is read from or written to the session's
    /// runtime directory (XDG_RUNTIME_DIR), whatever is there.
    @Test(.enabled(if: Pamtester.available)) func closingTheSessionDropsItsGrantsOnly() throws {
        let stack = try Stack(options: "pin stepup=contacts")
        let runtime = stack.temp.file("runtime")
        #expect(mkdir(runtime, 0o700) == 0 && mkdir(runtime + "/fingerseal", 0o700) == 0
                && mkdir(runtime + "/fingerseal/grants", 0o700) == 0)
        writeFile(runtime + "/fingerseal/access-token", Array("token".utf8))
        writeFile(runtime + "/fingerseal/grants/contacts", Array("grant".utf8))
        let check = { () throws -> Int32 in
            try stack.rig.cli(["step-up", "contacts", "--check"], inTestSession: true).status
        }
        #expect(try stack.authenticate(answer: ModuleAuthenticationTests.pin) == PAM_SUCCESS)
        #expect(try check() == 0, "the grant is held in this session")
        stack.service("""
            session [success=ok ignore=ignore default=die] \(Paths.module) socket=\(stack.socket)
            session required pam_permit.so
            """)
        // Another session's close (a pamtester of its own) leaves it.
        let other = try Pamtester.run(services: stack.services, service: "fingerseal-test", user: stack.user.name,
                                      operations: ["open_session", "close_session"])
        #expect(other.status == 0, "\(other.all)")
        #expect(try check() == 0, "another session's close leaves this session's grant")
        // This session's close drops it.
        let client = try PAMClient(service: "fingerseal-test", user: stack.user.name, configDirectory: stack.services) { _ in nil }
        #expect(client.setEnvironment("XDG_RUNTIME_DIR", runtime) == PAM_SUCCESS)
        #expect(client.openSession() == PAM_SUCCESS)
        #expect(client.closeSession() == PAM_SUCCESS)
        #expect(try check() == 1, "this session's close dropped it")
        #expect(readFile(runtime + "/fingerseal/access-token") == Array("token".utf8))
        #expect(readFile(runtime + "/fingerseal/grants/contacts") == Array("grant".utf8))
    }

    /// In a process of its own (other tests open and close descriptors in this one), which
    /// also links the Swift runtime: the module must coexist with it. pam-cycles names no
    /// terminal: the broker's configuration names the service as one a person answers.
    @Test func hundredCyclesLeaveTheHostAsFound() throws {
        let stack = try Stack(config: "interactive_services=fingerseal-test\n")
        let run = try Child.run(Paths.buildDirectory + "/pam-cycles",
                                [stack.services, "fingerseal-test", stack.user.name, "101", ModuleAuthenticationTests.pin])
        #expect(run.status == 0, "\(run.all)")
        let lines = run.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        for line in lines where line.first == "threads" || line.first == "fds" {
            #expect(line.count == 3 && line[1] == line[2], "\(line.joined(separator: " "))")
        }
        #expect(run.stdout.contains("signals same"), "\(run.stdout)")
        #expect(run.stdout.contains("environment same"))
        #expect(run.stdout.contains("codes 0:101"), "\(run.stdout)")
    }
}
