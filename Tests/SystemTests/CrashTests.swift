import Glibc
import Testing
@testable import FingersealCore
@testable import IdentityClient
import SystemKit
@testable import TestSupport

/// Crash safety and lost updates, with real processes: the torture helper writes, the test
/// kills it with SIGKILL or races two of them.
@Suite struct CrashTests {
    static let pin = VaultTorture.pin

    func initVault(_ temp: TempDirectory) throws -> String {
        let directory = temp.file("vault")
        let result = try Child.run(Paths.torture, ["init", directory, CrashTests.pin])
        #expect(result.status == 0, "\(result.all)")
        return directory
    }

    @Test func sigkillAtRandomPointsNeverTearsTheVault() throws {
        let temp = try TempDirectory()
        let directory = try initVault(temp)
        var committed = 0
        var generator = SystemRandomNumberGenerator()
        for round in 0..<200 {
            let writer = try Child(Paths.torture, ["churn", directory, CrashTests.pin])
            // Let it commit a random number of writes, then kill it a random few microseconds
            // later, so the kill lands anywhere in the write path.
            let writes = Int.random(in: 1...12, using: &generator)
            for _ in 0..<writes {
                guard let line = writer.readLine(), let value = Int(line) else {
                    Issue.record("round \(round): writer stopped early: \(writer.finish().stderr)")
                    return
                }
                committed = value
            }
            let spin = UInt64.random(in: 0...3000, using: &generator)
            var ts = timespec(tv_sec: 0, tv_nsec: Int(spin * 1000))
            nanosleep(&ts, nil)
            writer.signal(SIGKILL)
            // Lines already in the pipe were committed too.
            let rest = writer.finish()
            #expect(rest.status == 128 + SIGKILL)
            for line in rest.stdout.split(separator: "\n") { committed = Int(line) ?? committed }

            let check = try Child.run(Paths.torture, ["check", directory, CrashTests.pin])
            #expect(check.status == 0, "round \(round): \(check.stderr)")
            let found = Int(check.stdout.split(separator: "\n").first ?? "") ?? -1
            // Old or new: every reported write is durable, and at most one more landed.
            #expect(found == committed || found == committed + 1, "round \(round): committed \(committed), found \(found)")
            committed = max(found, committed)
        }
        // No temp files pile up: the next exclusive writer removes a killed one's leftovers.
        let leftovers = try Child.run("/bin/ls", ["-A", directory]).stdout.split(separator: "\n")
        #expect(leftovers.filter { $0.contains(".tmp-") }.count <= 1, "\(leftovers)")
    }

    @Test func concurrentWritersLoseNoUpdate() throws {
        let temp = try TempDirectory()
        let directory = try initVault(temp)
        let first = try Child(Paths.torture, ["increment", directory, "100"])
        let second = try Child(Paths.torture, ["increment", directory, "100"])
        let results = [first.finish(), second.finish()]
        for result in results { #expect(result.status == 0, "\(result.stderr)") }
        let check = try Child.run(Paths.torture, ["check", directory, CrashTests.pin])
        #expect(check.stdout.split(separator: "\n").first == "200", "\(check.all)")
    }
}

/// SIGKILL during refreshes against the local IdP: the vault is never torn, and afterwards
/// the chain either still works or says sign-in required (a response lost to the kill).
@Suite(.enabled(if: LocalIdP.available)) struct RefreshCrashTests {
    @Test func sigkillAtAHundredPointsDuringRefreshes() throws {
        let idp = try LocalIdP()
        let v = try TestVault()
        let vault = try v.create()
        let client = try idp.client()
        try idp.signIn(vault)
        var generator = SystemRandomNumberGenerator()
        var (survived, ended, refreshes, idpErrors) = (0, 0, 0, 0)
        for round in 0..<100 {
            let refresher = try Child(Paths.torture, ["refresh", v.directory])
            // A random number of sealed rotations, then a kill a random moment later: the
            // kill lands before, during or after a request, or while sealing its answer.
            for _ in 0..<Int.random(in: 0...2, using: &generator) {
                guard refresher.readLine() == "refreshed" else { break }
                refreshes += 1
            }
            var pause = timespec(tv_sec: 0, tv_nsec: Int.random(in: 0...60_000_000, using: &generator))
            nanosleep(&pause, nil)
            refresher.signal(SIGKILL)
            _ = refresher.finish()

            // Never torn: it opens, its MAC holds, and the sign-in is alive or ended. The IdP
            // itself may answer 500 for a moment (DOT races with the killed request it is still
            // serving); that is "unreachable", the token is kept, and the next try decides.
            let reopened = try Vault.unlockWithDevice(v.store)
            var result = try TokenChain.refresh(reopened, client: client, offlineGrace: 0)
            for _ in 0..<3 where [.offline, .unreachable].contains(result.step) {
                idpErrors += 1
                result = try TokenChain.refresh(reopened, client: client, offlineGrace: 0)
            }
            switch result {
            case .refreshed: survived += 1
            case .signInRequired:
                ended += 1
                #expect(try Vault.status(v.store)?.signIn == .required)
                try idp.signIn(vault) // a new chain for the next round
            case let other: Issue.record("round \(round): \(other)")
            }
        }
        #expect(survived + ended == 100)
        #expect(survived > 0, "the chain survived no kill at all")
        print("refresh crash test: \(refreshes) rotations seen, \(survived) kills survived, \(ended) ended the chain, "
              + "\(idpErrors) passing IdP errors")
    }
}

/// SIGKILL of the broker while a PIN unlock seals a vault made without a TPM to one (swtpm):
/// at every point the vault opens, by finger and by PIN, either as it was or fully sealed.
@Suite struct TPMUpgradeCrashTests {
    static let pin = "8642"

    @Test func killingTheBrokerAtAHundredPointsDuringAnUpgradeLeavesAVaultThatOpens() throws {
        let swtpm = try SwtpmProcess()
        let broker = try TestBroker(config: "tpm_tcti=\(swtpm.tcti)\n")
        let temp = try TempDirectory()
        // The vault as it was before there was a TPM (cheap PIN cost), copied in each round.
        let template = temp.file("template")
        #expect(try Child.run(Paths.torture, ["init", template, Self.pin]).status == 0)
        let directory = broker.vaultDirectory()
        guard let account = try UserAccount.current() else { throw TestFailure("no account") }
        let store = VaultStore(location: VaultLocation(directory: directory, account: account))
        func fresh() throws {
            _ = Child.runQuietly("/bin/rm", ["-rf", directory])
            #expect(Child.runQuietly("/bin/cp", ["-a", template, directory]) == 0)
        }
        func unlock() throws -> Child {
            try Child(Paths.buildDirectory + "/wire-client", [broker.socketPath, "--answer", Self.pin, "pam.authenticate",
                                                              "pam.user=root", "option=pin"])
        }
        /// Waits for the broker to ask the PIN (the client answers at once): the PIN check and
        /// the upgrade follow.
        func asked(_ client: Child) -> Bool {
            while let line = client.readLine() { if line.hasPrefix("ask: ") { return true } }
            return false
        }
        // One whole unlock and upgrade after the PIN is asked, timed: the kills land within it.
        try fresh()
        let calibration = try unlock()
        #expect(asked(calibration))
        let started = VirtualSensor.now()
        let whole = calibration.finish()
        let duration = VirtualSensor.now() - started
        #expect(whole.stdout.contains("result: success"), "\(whole.all)")
        #expect(try Vault.status(store)?.keyslots.map(\.protection) == [.tpm2, .argon2idTPM2])

        var generator = SystemRandomNumberGenerator()
        var (sealed, unsealed) = (0, 0)
        for round in 0..<100 {
            // Stopped before the copy: the calibration's broker may still be finishing its
            // request's bookkeeping (written after the reply), which would land in the new copy.
            broker.stop()
            try fresh()
            try broker.restart()
            let client = try unlock()
            #expect(asked(client), "round \(round)")
            // Most of the window is the sealing itself (the TPM's work before the one rename);
            // a little past its end, so some kills come after the new vault is in place.
            var pause = timespec(tv_sec: 0, tv_nsec: Int.random(in: 0...Int(duration * 1.2e9), using: &generator))
            nanosleep(&pause, nil)
            broker.stop()
            _ = client.finish()
            // Old or new, never in between, and it opens by device and by PIN with its secrets.
            let protections = try #require(try Vault.status(store)).keyslots.map(\.protection)
            switch protections {
            case [.filePermissions, .argon2id]: unsealed += 1
            case [.tpm2, .argon2idTPM2]: sealed += 1
            default: Issue.record("round \(round): torn keyslots \(protections)")
            }
            let check = try Child.run(Paths.torture, ["check", directory, Self.pin], environment: ["FINGERSEAL_TEST_TCTI": swtpm.tcti])
            #expect(check.status == 0 && check.stdout.hasPrefix("0"), "round \(round): \(check.all)")
        }
        #expect(sealed + unsealed == 100)
        print("TPM upgrade crash test: \(sealed) kills after the sealed vault was written, \(unsealed) before it "
              + "(PIN check and upgrade \(Int(duration * 1000)) ms)")
        // Broker restarts after kills on a TPM without a resource manager: leftovers were reclaimed.
        try fresh()
        try broker.restart()
        #expect(try unlock().finish().stdout.contains("result: success"))
    }
}
