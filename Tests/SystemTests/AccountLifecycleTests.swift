import CPAM
import Glibc
import FingersealCore
import FoundationEssentials
import PAMKit
import SystemKit
import Testing
@testable import TestSupport

/// Issue 31 §1: a vault belongs to the person who made it. Real accounts (useradd, userdel,
/// with explicit uids so that the test is about a uid handed out again), a broker of the
/// test's own on libfprint's virtual_device, the PAM module in a real stack
/// (pam_start_confdir), the CLI, and useradd's and userdel's own hooks (shadow's run-parts
/// directories) where the test installs them.
@Suite(.serialized, .enabled(if: getuid() == 0)) struct AccountLifecycleTests {
    static let earlier = "fs-acct-old"
    static let later = "fs-acct-new"
    static let again = "fs-acct-again"
    static let pin = "8642"
    static let service = "fingerseal-accounts-test"

    /// A uid no account has, above what useradd hands out here on its own.
    static func freeUID() throws -> UInt32 {
        try #require((47_000..<48_000).first { getpwuid($0) == nil })
    }

    static func useradd(_ name: String, uid: UInt32, environment: [String: String] = ["PATH": "/usr/sbin:/usr/bin:/bin"]) throws -> Child.Result {
        let made = try Child.run("/usr/sbin/useradd", ["--uid", String(uid), "--shell", "/bin/sh", name], environment: environment)
        try #require(made.status == 0, "\(made.all)")
        return made
    }

    static func userdel(_ name: String, environment: [String: String] = ["PATH": "/usr/sbin:/usr/bin:/bin"]) throws -> Child.Result {
        try Child.run("/usr/sbin/userdel", [name], environment: environment)
    }

    static func removeAccounts() {
        for name in [earlier, later, again] where getpwnam(name) != nil { _ = Child.runQuietly("/usr/sbin/userdel", [name]) }
    }

    struct Rig {
        let rig: ReaderBroker
        var services: String { rig.files.file("pam.d") }

        init() throws {
            rig = try ReaderBroker()
            #expect(mkdir(services, 0o755) == 0)
            let module = "\(Paths.module) socket=\(rig.broker.socketPath) pin"
            writeFile(services + "/" + AccountLifecycleTests.service, Array("auth required \(module)\n".utf8), mode: 0o644)
        }

        /// A vault for `name` (root sets it up for the account), and its finger `finger`.
        func setUp(_ name: String, finger: String) throws {
            let set = try rig.cli(["pin", "set", "--user", name, "--pin-fd", "3"], fd3: AccountLifecycleTests.pin + "\n")
            try #require(set.status == 0, "\(set.all)")
            let enrolled = try rig.scan(["enroll", "--user", name, "--finger", "right-index-finger", "--pin-fd", "3"],
                                        Array(repeating: "SCAN \(finger)", count: 5), fd3: AccountLifecycleTests.pin + "\n")
            try #require(enrolled.status == 0, "\(enrolled.all)")
        }

        /// A login of `name` at a terminal through the module: `finger` on the reader whenever
        /// the module asks for one, `pin` whenever it asks for that (nil: the conversation
        /// ends there). The PAM status, and what was shown.
        func login(_ name: String, finger: String, pin: String? = AccountLifecycleTests.pin) throws -> (status: Int32, shown: [PAMClient.Message]) {
            var shown: [PAMClient.Message] = []
            let sensor = rig.sensor
            let client = try PAMClient.start(service: AccountLifecycleTests.service, user: name, configDirectory: services) { message in
                shown.append(message)
                switch message {
                case let .textInfo(text) where text.contains("finger"):
                    _ = try? VirtualSensor.send("SCAN \(finger)", to: sensor)
                    return .none
                case .promptEchoOff: return pin.map { .text($0) } ?? .abort
                default: return .none
                }
            }
            _ = client.setItem(.tty, "/dev/pts/0")
            return (client.authenticate(), shown)
        }

        struct Listing: Decodable {
            struct SetAside: Decodable {
                let id: String
                let uid: UInt32
                let boundTo: String?
                let reason: String
                let account: String?
            }
            let setAside: [SetAside]
        }

        /// The vaults `account list --json` says are set aside.
        func setAside() throws -> [Listing.SetAside] {
            let listed = try rig.cli(["account", "list", "--json"])
            try #require(listed.status == 0, "\(listed.all)")
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            return try decoder.decode(Listing.self, from: Data(listed.stdout.utf8)).setAside
        }
    }

    /// The finding: after a plain `userdel`, `useradd` hands the uid to the next account, which
    /// must get nothing of the old vault. Neither the old finger nor the PIN signs it in
    /// (the module does not even ask), the CLI finds no vault for it (status, pin reset, the
    /// PIN), the vault is set aside, listed with its reason and shown by doctor with the
    /// command that deletes it, and the new account sets up a vault of its own.
    @Test func theNextAccountWithTheUIDGetsNothingOfTheOldVault() throws {
        Self.removeAccounts()
        defer { Self.removeAccounts() }
        let uid = try Self.freeUID()
        _ = try Self.useradd(Self.earlier, uid: uid)
        let rig = try Rig()
        try rig.setUp(Self.earlier, finger: "finger-earlier")
        let before = try rig.login(Self.earlier, finger: "finger-earlier")
        #expect(before.status == PAM_SUCCESS, "the vault's own account signs in with its finger: \(before.shown)")

        #expect(try Self.userdel(Self.earlier).status == 0)
        _ = try Self.useradd(Self.later, uid: uid)

        let after = try rig.login(Self.later, finger: "finger-earlier")
        #expect(after.status == PAM_AUTHINFO_UNAVAIL, "\(after.shown)")
        #expect(after.shown.isEmpty, "no finger and no PIN is asked of the new account: \(after.shown)")
        let status = try rig.rig.cli(["status", "--user", Self.later])
        #expect(status.status != 0 && status.all.contains(Messages.noVault), "\(status.all)")
        let reset = try rig.rig.cli(["pin", "reset", "--user", Self.later, "--pin-fd", "3"], fd3: "1111\n")
        #expect(reset.status != 0 && reset.all.contains(Messages.noVault), "\(reset.all)")
        let unlock = try rig.rig.cli(["unlock", "--user", Self.later, "--pin", "--pin-fd", "3"], fd3: Self.pin + "\n")
        #expect(unlock.status != 0 && unlock.all.contains(Messages.noVault), "\(unlock.all)")

        let aside = try rig.setAside()
        try #require(aside.count == 1, "\(aside)")
        #expect(aside[0].uid == uid && aside[0].boundTo == Self.earlier && aside[0].reason == "other-name"
                && aside[0].account == Self.later, "\(aside)")
        let id = aside[0].id
        let doctor = try rig.rig.cli(["doctor", "--user", Self.later])
        #expect(doctor.stdout.contains("fingerseal account purge \(id)"), "\(doctor.all)")
        #expect(access(rig.rig.broker.state + "/set-aside/" + id + "/vault", F_OK) == 0, "set aside, not deleted")

        // The new account makes a vault of its own; the old one stays aside until deleted.
        try rig.setUp(Self.later, finger: "finger-later")
        #expect(try rig.login(Self.later, finger: "finger-later").status == PAM_SUCCESS)
        #expect(try rig.login(Self.later, finger: "finger-earlier", pin: nil).status != PAM_SUCCESS, "the old finger is not the new account's")
        let purged = try rig.rig.cli(["account", "purge", id])
        #expect(purged.status == 0 && purged.stdout.contains(Messages.accountPurged(id)), "\(purged.all)")
        #expect(try rig.setAside().isEmpty)
        #expect(try rig.rig.cli(["account", "purge", id]).status != 0, "deleted once")
    }

    /// useradd's and userdel's hooks, installed as the package installs them (the CLI path
    /// this build's): userdel removes the vault with the account; useradd records the new
    /// account's making, and sets aside a vault still under its uid (one that a userdel which
    /// could not reach the broker left), even for the same name and uid.
    @Test func useraddAndUserdelTellTheBroker() throws {
        Self.removeAccounts()
        defer { Self.removeAccounts() }
        let hooks = try InstalledHooks()
        defer { hooks.remove() }
        let rig = try Rig()
        let environment = rig.rig.environment(["PATH": "/usr/sbin:/usr/bin:/bin"])
        let uid = try Self.freeUID()
        let directory = rig.rig.broker.vaultDirectory(uid: uid)

        _ = try Self.useradd(Self.again, uid: uid, environment: environment)
        #expect(access(directory + "/" + VaultFiles.birth, F_OK) == 0, "useradd's hook recorded the account's making")
        try rig.setUp(Self.again, finger: "finger-first")
        let removed = try Self.userdel(Self.again, environment: environment)
        #expect(removed.status == 0 && removed.stdout.contains(Messages.accountVaultRemoved(Self.again)), "\(removed.all)")
        #expect(access(directory, F_OK) != 0, "userdel's hook removed the vault with the account")

        _ = try Self.useradd(Self.again, uid: uid, environment: environment)
        let fresh = try rig.rig.cli(["status", "--user", Self.again])
        #expect(fresh.status != 0 && fresh.all.contains(Messages.noVault), "\(fresh.all)")
        try rig.setUp(Self.again, finger: "finger-first")

        // A userdel that cannot reach the broker leaves the vault; the next useradd of the same
        // name and uid sets it aside.
        #expect(try Self.userdel(Self.again, environment: rig.rig.environment(["FINGERSEAL_SOCKET": "/nonexistent",
                                                                                 "PATH": "/usr/sbin:/usr/bin:/bin"])).status == 0)
        #expect(access(directory + "/" + VaultFiles.vault, F_OK) == 0)
        let made = try Self.useradd(Self.again, uid: uid, environment: environment)
        #expect(made.stdout.contains(Messages.accountEarlierVaultSetAside(uid)), "\(made.all)")
        let aside = try rig.setAside()
        #expect(aside.count == 1 && aside.first?.reason == "new-account" && aside.first?.boundTo == Self.again, "\(aside)")
        let login = try rig.login(Self.again, finger: "finger-first")
        #expect(login.status == PAM_AUTHINFO_UNAVAIL && login.shown.isEmpty, "\(login.shown)")
    }

    /// This build's hooks in /etc/shadow-maint (the package's scripts, the CLI's path
    /// replaced), removed at the end with the directories made for them (the package's purge
    /// in scripts/test-deb finds the machine as it was). Other tests' useradd runs them too;
    /// without FINGERSEAL_SOCKET they ask the default socket, which no test has, and change
    /// nothing.
    struct InstalledHooks {
        static let name = "zz-fingerseal-test"
        static let top = "/etc/shadow-maint"
        let paths: [String]
        /// The directories that were not there before, deepest first.
        let made: [String]

        init() throws {
            var paths: [String] = []
            var made: [String] = access(InstalledHooks.top, F_OK) == 0 ? [] : [InstalledHooks.top]
            for hook in ["useradd-post", "userdel-pre"] {
                let directory = InstalledHooks.top + "/" + hook + ".d"
                if access(directory, F_OK) != 0 { made.insert(directory, at: 0) }
                try createDirectories(directory, mode: 0o755)
                let script = String(decoding: readFile(Paths.packageRoot + "/shadow-maint/" + hook) ?? [], as: UTF8.self)
                try #require(script.contains("fingerseal=/usr/bin/fingerseal\n"))
                let path = directory + "/" + InstalledHooks.name
                writeFile(path, Array(script.replacingOccurrences(of: "fingerseal=/usr/bin/fingerseal\n", with: "fingerseal=\(Paths.cli)\n").utf8),
                          mode: 0o755)
                paths.append(path)
            }
            self.paths = paths
            self.made = made
        }

        func remove() {
            for path in paths { unlink(path) }
            for directory in made { rmdir(directory) }
        }
    }
}
