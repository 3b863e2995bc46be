import CPAM
import FoundationEssentials
import Glibc
import PAMKit
import Testing
@testable import FingersealCore
import SystemKit

/// pam_fingerseal.so's authenticate through a real PAM stack, with the PIN fallback, against
/// a vault in a private store (`store=` points at a temp directory).
@Suite(.disabled("moves to the broker (issue 10)")) struct ModuleAuthenticationTests {
    static let pin = "4826"

    final class Stack {
        let temp: TempDirectory
        let user: UserAccount
        let services: String
        var store: VaultStore { VaultStore(location: VaultLocation(directory: temp.path + "/" + user.name, account: user)) }
        var messages: [PAMClient.Message] = []

        init(options: String = "pin", vault: Bool = true) throws {
            temp = try TempDirectory()
            guard let user = try UserAccount.current() else { throw TestFailure("no account") }
            self.user = user
            services = temp.file("pam.d")
            #expect(mkdir(services, 0o755) == 0)
            writeFile(services + "/fingerseal-test",
                      Array("auth required \(Paths.module) store=\(temp.path)/%u \(options)\n".utf8), mode: 0o644)
            if vault {
                _ = try Vault.create(store, pin: PINKeyslot(pin: secret(ModuleAuthenticationTests.pin), cost: .fastForTests))
            }
        }

        /// Runs authenticate, answering the PIN prompt with `answer`.
        func authenticate(answer: String?, rhost: String? = nil, user name: String? = nil) throws -> Int32 {
            var seen: [PAMClient.Message] = []
            let client = try PAMClient(service: "fingerseal-test", user: name ?? user.name, configDirectory: services) { message in
                seen.append(message)
                if case .promptEchoOff = message { return answer }
                return nil
            }
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
            let client = try PAMClient(service: "fingerseal-test", user: stack.user.name, configDirectory: stack.services) {
                stack.messages.append($0)
                return nil
            }
            return client.accountManagement()
        }
        writeFile(stack.services + "/fingerseal-test",
                  Array("account required \(Paths.module) store=\(stack.temp.path)/%u\n".utf8), mode: 0o644)
        #expect(try run() == PAM_SUCCESS)
        #expect(stack.messages.isEmpty)
        let vault = try Vault.unlock(stack.store, pin: PINKeyslot(pin: secret(ModuleAuthenticationTests.pin)),
                                     ledger: LockoutLedger(store: stack.store, policy: LockoutPolicy()))
        try vault.update { $0.setSignIn(.required) }
        #expect(try run() == PAM_SUCCESS)
        #expect(stack.messages == [.textInfo("Fingerprint unlock needs a new sign-in. Run: fingerseal login")])
    }

    @Test func accountCheckWithoutAVaultHasNoOpinion() throws {
        let stack = try Stack(vault: false)
        // PAM_IGNORE from us, so pam_permit decides; any error from us would fail the stack.
        writeFile(stack.services + "/fingerseal-test", Array("""
            account [success=ok ignore=ignore default=bad] \(Paths.module) store=\(stack.temp.path)/%u
            account required pam_permit.so

            """.utf8), mode: 0o644)
        let client = try PAMClient(service: "fingerseal-test", user: stack.user.name, configDirectory: stack.services) { _ in nil }
        #expect(client.accountManagement() == PAM_SUCCESS)
    }

    @Test func closingTheSessionDropsTokenAndGrants() throws {
        let stack = try Stack()
        let runtime = stack.temp.file("runtime")
        #expect(mkdir(runtime, 0o700) == 0 && mkdir(runtime + "/fingerseal", 0o700) == 0
                && mkdir(runtime + "/fingerseal/grants", 0o700) == 0)
        writeFile(runtime + "/fingerseal/access-token", Array("token".utf8))
        writeFile(runtime + "/fingerseal/grants/contacts", Array("grant".utf8))
        writeFile(stack.services + "/fingerseal-test",
                  Array("session required \(Paths.module) store=\(stack.temp.path)/%u\n".utf8), mode: 0o644)
        let client = try PAMClient(service: "fingerseal-test", user: stack.user.name, configDirectory: stack.services) { _ in nil }
        #expect(client.setEnvironment("XDG_RUNTIME_DIR", runtime) == PAM_SUCCESS)
        #expect(client.openSession() == PAM_SUCCESS)
        #expect(readFile(runtime + "/fingerseal/access-token") != nil)
        #expect(client.closeSession() == PAM_SUCCESS)
        #expect(readFile(runtime + "/fingerseal/access-token") == nil)
        #expect(readFile(runtime + "/fingerseal/grants/contacts") == nil)
        var info = stat()
        #expect(stat(runtime + "/fingerseal/grants", &info) != 0)
    }

    /// In a process of its own (other tests open and close descriptors in this one), which
    /// also links the Swift runtime: the module must coexist with it.
    @Test func hundredCyclesLeaveTheHostAsFound() throws {
        let stack = try Stack()
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

@Suite struct SessionFilesTests {
    @Test func accessTokenIsPlacedOwnerOnlyAndDroppedAtClose() throws {
        let temp = try TempDirectory(base: "/dev/shm")
        let user = try #require(try UserAccount.current())
        let runtime = temp.file("runtime")
        #expect(mkdir(runtime, 0o700) == 0)
        let token = Array("access-token-value".utf8)
        #expect(try token.withUnsafeBytes { try SessionFiles.placeAccessToken($0, for: user, runtimeDirectory: runtime) })
        let path = runtime + "/fingerseal/access-token"
        #expect(readFile(path) == token)
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600 && info.st_uid == user.uid)
        #expect(stat(runtime + "/fingerseal", &info) == 0 && info.st_mode & 0o777 == 0o700)
        // A second login's token replaces the first.
        #expect(try Array("newer".utf8).withUnsafeBytes { try SessionFiles.placeAccessToken($0, for: user, runtimeDirectory: runtime) })
        // Never on a disk: a runtime directory that is not in memory gets nothing.
        let disk = try TempDirectory()
        #expect(try !Array("t".utf8).withUnsafeBytes { try SessionFiles.placeAccessToken($0, for: user, runtimeDirectory: disk.path) })
        #expect(readFile(disk.file("fingerseal/access-token")) == nil)
        #expect(readFile(path) == Array("newer".utf8))
        #expect(try SessionFiles.drop(for: user, runtimeDirectory: runtime) == ["access-token"])
        #expect(readFile(path) == nil)
    }

    @Test func aSymlinkedSessionDirectoryIsRefused() throws {
        let temp = try TempDirectory(base: "/dev/shm")
        let user = try #require(try UserAccount.current())
        let runtime = temp.file("runtime")
        #expect(mkdir(runtime, 0o700) == 0 && mkdir(temp.file("elsewhere"), 0o700) == 0)
        #expect(symlink(temp.file("elsewhere"), runtime + "/fingerseal") == 0)
        expectOutcome(.vaultUnusable) {
            _ = try Array("t".utf8).withUnsafeBytes { try SessionFiles.placeAccessToken($0, for: user, runtimeDirectory: runtime) }
        }
        #expect(readFile(temp.file("elsewhere/access-token")) == nil)
    }
}
