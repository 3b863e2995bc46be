import Glibc
import Testing
@testable import FingersealCore
import SodiumKit
import SystemKit
@testable import TestSupport

@Suite struct PINTests {
    @Test func roundTrip() throws {
        let v = try TestVault()
        let created = try v.create(pin: "2468")
        try created.update { try $0.setSecret("refresh-token", secret("rt-1")) }
        let unlocked = try v.unlock(pin: "2468")
        #expect(text(try unlocked.secret("refresh-token")) == "rt-1")
        #expect(try unlocked.secret("absent") == nil)
    }

    @Test func wrongPINIsRejectedAndCounted() throws {
        let v = try TestVault()
        try v.create(pin: "2468")
        expectOutcome(.wrongPIN) { _ = try v.unlock(pin: "1357") }
        #expect(try v.ledger().current().pinFailures == 1)
        _ = try v.unlock(pin: "2468")
        #expect(try v.ledger().current().pinFailures == 0)
    }

    @Test func changeKeepsEverySecretReadable() throws {
        let v = try TestVault()
        let vault = try v.create(pin: "2468")
        let secrets = (0..<10).map { ("secret-\($0)", "value-\($0)-\(String(repeating: "x", count: $0 * 50))") }
        try vault.update { editor in for (name, value) in secrets { try editor.setSecret(name, secret(value)) } }
        let before = try SafeDirectory(path: v.directory, owner: v.store.location.account.uid).entries()
        try v.unlock(pin: "2468").update { try $0.changePIN(PINKeyslot(pin: secret("97531"), cost: .fastForTests)) }
        expectOutcome(.wrongPIN) { _ = try v.unlock(pin: "2468") }
        let byPIN = try v.unlock(pin: "97531")
        let byDevice = try Vault.unlockWithDevice(v.store)
        for (name, value) in secrets {
            #expect(text(try byPIN.secret(name)) == value)
            #expect(text(try byDevice.secret(name)) == value)
        }
        // The old device key file is gone; exactly one remains.
        let after = try SafeDirectory(path: v.directory, owner: v.store.location.account.uid).entries()
        #expect(after.filter { $0.hasPrefix("device-") }.count == 1)
        #expect(Set(after.filter { $0.hasPrefix("device-") }) != Set(before.filter { $0.hasPrefix("device-") }))
    }

    @Test func createRefusesAnExistingVault() throws {
        let v = try TestVault()
        try v.create()
        expectOutcome(.usage) { try v.create() }
    }

    @Test func delaysGrowThenLock() throws {
        let v = try TestVault()
        try v.create(pin: "2468")
        var now: Int64 = 1_000_000
        for _ in 0..<LockoutPolicy.pinFreeTries { expectOutcome(.wrongPIN) { _ = try v.unlock(pin: "0000", at: now) } }
        // Fourth try at once: refused before the PIN is even checked, even if it is right.
        expectOutcome(.lockedOut) { _ = try v.unlock(pin: "2468", at: now) }
        now += LockoutPolicy.pinDelay(afterFailures: LockoutPolicy.pinFreeTries)
        _ = try v.unlock(pin: "2468", at: now)
        #expect(try v.ledger().current() == LockoutState())
        for _ in 0..<LockoutPolicy.pinMaxFailures {
            now += 3600
            expectOutcome(.wrongPIN) { _ = try v.unlock(pin: "0000", at: now) }
        }
        now += 3600
        expectOutcome(.lockedOut) { _ = try v.unlock(pin: "2468", at: now) }
        #expect(try v.ledger().current().pinLocked)
    }

    @Test(arguments: [(0, 0), (2, 0), (3, 5), (4, 10), (5, 20), (8, 160), (9, 300), (50, 300)])
    func delaySchedule(failures: Int, seconds: Int64) {
        #expect(LockoutPolicy.pinDelay(afterFailures: failures) == seconds)
    }

    @Test func fingerFailuresLockUntilPINSuccess() throws {
        let v = try TestVault()
        try v.create(pin: "2468")
        let ledger = v.ledger()
        for attempt in 1...5 { #expect(try ledger.fingerFailed().fingerLocked == (attempt == 5)) }
        #expect(try ledger.current().fingerLocked)
        _ = try v.unlock(pin: "2468")
        #expect(try ledger.current() == LockoutState())
    }

    @Test func pinRules() throws {
        expectOutcome(.usage) { try PINRules.check(secret("123")) }
        expectOutcome(.usage) { try PINRules.check(secret(String(repeating: "9", count: 65))) }
        try PINRules.check(secret("1234"))
    }

    @Test func hostileArgon2ParametersAreRefused() throws {
        let v = try TestVault()
        try v.create()
        // Rewrite the PIN slot with a 1 GiB memory cost and a valid checksum: the MAC cannot
        // be checked before unlocking, so the cost bound must stop it.
        let bytes = try #require(readFile(v.directory + "/vault"))
        var document = try VaultDocument.decode(try Container.decode(.vault, bytes, file: "vault"), file: "vault")
        let index = try #require(document.keyslots.firstIndex { $0.kind == .pin })
        document.keyslots[index].memLimit = 1 << 30
        writeFile(v.directory + "/vault", try Container.encode(.vault, body: try VaultDocument.encode(document)))
        expectOutcome(.vaultUnusable) { _ = try v.unlock(pin: "2468") }
    }

    @Test func tunedCostStaysWithinBudget() throws {
        let cost = try PINCost.tuned()
        #expect(cost.memLimit <= PINCost.maxMemory)
        #expect((2...10).contains(cost.opsLimit))
    }
}

@Suite struct TamperTests {
    @Test func everyByteFlipOfEveryFileIsDetected() throws {
        let v = try TestVault()
        let files = try v.populatedFiles()
        #expect(files.count == 3, "\(files)")
        for name in files {
            let path = v.directory + "/" + name
            let original = try #require(readFile(path))
            for index in original.indices {
                for mask: UInt8 in [0x01, 0xff] {
                    var flipped = original
                    flipped[index] ^= mask
                    writeFile(path, flipped)
                    expectOutcome(.vaultUnusable) { try openEverything(v) }
                    #expect(readFile(path) == flipped, "\(name) was modified while reading")
                }
            }
            writeFile(path, original)
            try openEverything(v)
        }
    }

    @Test func truncatedAndEmptyFilesAreDetected() throws {
        let v = try TestVault()
        for name in try v.populatedFiles() {
            let path = v.directory + "/" + name
            let original = try #require(readFile(path))
            for length in 0..<original.count {
                writeFile(path, Array(original[..<length]))
                do {
                    try openEverything(v)
                    Issue.record("\(name) truncated to \(length) bytes was accepted")
                } catch let error as FingersealError {
                    #expect(error.outcome == .vaultUnusable)
                    if length == 0 { #expect(error.message.contains("empty"), "\(error.message)") }
                    #expect(error.message.contains(name), "\(error.message)")
                }
                #expect(readFile(path)?.count == length)
            }
            writeFile(path, original + [0])
            expectOutcome(.vaultUnusable) { try openEverything(v) }
            writeFile(path, original)
        }
    }

    @Test func editedMetadataWithValidChecksumIsDetectedOnUnlock() throws {
        let v = try TestVault()
        try v.create()
        let bytes = try #require(readFile(v.directory + "/vault"))
        var document = try VaultDocument.decode(try Container.decode(.vault, bytes, file: "vault"), file: "vault")
        document.fingers = ["right-index-finger"]
        document.signIn = .active
        writeFile(v.directory + "/vault", try Container.encode(.vault, body: try VaultDocument.encode(document)))
        expectOutcome(.vaultUnusable) { _ = try v.unlock(pin: "2468") }
        expectOutcome(.vaultUnusable) { _ = try Vault.unlockWithDevice(v.store) }
    }

    @Test func recordsSwappedBetweenNamesAreDetected() throws {
        let v = try TestVault()
        let vault = try v.create()
        try vault.update { editor in
            try editor.setSecret("a", secret("alpha"))
            try editor.setSecret("b", secret("beta"))
        }
        let opened = try v.unlock(pin: "2468")
        let bytes = try #require(readFile(v.directory + "/vault"))
        var document = try VaultDocument.decode(try Container.decode(.vault, bytes, file: "vault"), file: "vault")
        (document.records["a"], document.records["b"]) = (document.records["b"], document.records["a"])
        // Re-sign as if the attacker had the MAC key: only the per-record AAD is left to catch it.
        let signed = try UnlockedVault.sign(document, masterKey: opened.masterKey)
        writeFile(v.directory + "/vault", try Container.encode(.vault, body: try VaultDocument.encode(signed)))
        expectOutcome(.vaultUnusable) { _ = try opened.secret("a") }
    }

    /// Reads every file the way the product does.
    func openEverything(_ v: TestVault) throws {
        _ = try Vault.status(v.store)
        _ = try v.ledger().current()
        _ = try Vault.unlockWithDevice(v.store).secret("refresh-token")
    }
}

@Suite struct UnsafeFileTests {
    static let isRoot = geteuid() == 0

    func expectRefused(_ v: TestVault, _ fragment: String, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            _ = try Vault.status(v.store)
            _ = try Vault.unlockWithDevice(v.store)
            Issue.record("unsafe vault was used", sourceLocation: sourceLocation)
        } catch let error as FingersealError {
            #expect(error.outcome == .vaultUnusable, sourceLocation: sourceLocation)
            #expect(error.message.contains(fragment), "\(error.message)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test(.enabled(if: isRoot, "chown needs root")) func wrongOwnerOfFile() throws {
        let v = try TestVault()
        for name in try v.populatedFiles() {
            let path = v.directory + "/" + name
            #expect(chown(path, 4242, 4242) == 0)
            expectRefused(v, "owned by uid 4242")
            #expect(chown(path, v.store.location.account.uid, v.store.location.account.gid) == 0)
        }
    }

    @Test(.enabled(if: isRoot, "chown needs root")) func wrongOwnerOfDirectory() throws {
        let v = try TestVault()
        _ = try v.populatedFiles()
        #expect(chown(v.directory, 4242, 4242) == 0)
        expectRefused(v, "owned by uid 4242")
    }

    @Test func groupOrWorldWritable() throws {
        let v = try TestVault()
        for name in try v.populatedFiles() {
            let path = v.directory + "/" + name
            for mode: mode_t in [0o620, 0o602] {
                #expect(chmod(path, mode) == 0)
                expectRefused(v, "writable by group or others")
            }
            #expect(chmod(path, 0o600) == 0)
        }
        #expect(chmod(v.directory, 0o770) == 0)
        expectRefused(v, "writable by group or others")
    }

    @Test func symlinkInPlaceOfFile() throws {
        let v = try TestVault()
        for name in try v.populatedFiles() {
            let path = v.directory + "/" + name
            let aside = v.temp.file("aside-" + name)
            #expect(rename(path, aside) == 0)
            #expect(symlink(aside, path) == 0)
            expectRefused(v, "symbolic link")
            #expect(unlink(path) == 0)
            #expect(rename(aside, path) == 0)
        }
    }

    @Test func symlinkInPlaceOfDirectory() throws {
        let v = try TestVault()
        _ = try v.populatedFiles()
        let aside = v.temp.file("real-vault")
        #expect(rename(v.directory, aside) == 0)
        #expect(symlink(aside, v.directory) == 0)
        expectRefused(v, "symbolic link")
    }

    @Test func fifoInPlaceOfVaultDoesNotHang() throws {
        let v = try TestVault()
        _ = try v.populatedFiles()
        #expect(unlink(v.directory + "/vault") == 0)
        #expect(mkfifo(v.directory + "/vault", 0o600) == 0)
        expectRefused(v, "not a regular file")
    }
}

/// Root touching a user's vault does it with the user's filesystem ids.
@Suite(.enabled(if: geteuid() == 0, "needs root")) struct PrivilegeTests {
    func nobody() throws -> UserAccount {
        try #require(try UserAccount.named("nobody"))
    }

    @Test func rootCreatesFilesOwnedByTheUser() throws {
        let temp = try TempDirectory()
        let user = try nobody()
        #expect(chown(temp.path, user.uid, user.gid) == 0)
        let store = VaultStore(location: VaultLocation(directory: temp.path + "/vault", account: user))
        try Vault.create(store, pin: PINKeyslot(pin: secret("2468"), cost: .fastForTests))
            .update { try $0.setSecret("refresh-token", secret("rt")) }
        for name in try Child.run("/bin/ls", ["-A", temp.path + "/vault"]).stdout.split(separator: "\n") {
            var info = stat()
            #expect(lstat(temp.path + "/vault/" + name, &info) == 0)
            #expect(info.st_uid == user.uid && info.st_gid == user.gid, "\(name) owned by \(info.st_uid)")
        }
        #expect(text(try Vault.unlockWithDevice(store).secret("refresh-token")) == "rt")
        // The identity is restored afterwards: this thread creates root-owned files again.
        writeFile(temp.file("after"), [1])
        var info = stat()
        #expect(stat(temp.file("after"), &info) == 0 && info.st_uid == 0)
    }

    @Test func rootCannotBeTrickedIntoADirectoryTheUserCannotWrite() throws {
        let temp = try TempDirectory()
        let user = try nobody()
        // Parent owned by root 0755: as the user, creating the vault there must fail, cleanly.
        let store = VaultStore(location: VaultLocation(directory: temp.path + "/vault", account: user))
        expectOutcome(.vaultUnusable) { _ = try Vault.create(store, pin: PINKeyslot(pin: secret("2468"), cost: .fastForTests)) }
        #expect(readFile(temp.path + "/vault/vault") == nil)
    }

    @Test func rootOwnedFileInAUsersVaultIsRefused() throws {
        let temp = try TempDirectory()
        let user = try nobody()
        #expect(chown(temp.path, user.uid, user.gid) == 0)
        let store = VaultStore(location: VaultLocation(directory: temp.path + "/vault", account: user))
        _ = try Vault.create(store, pin: PINKeyslot(pin: secret("2468"), cost: .fastForTests))
        #expect(chown(temp.path + "/vault/vault", 0, 0) == 0)
        expectOutcome(.vaultUnusable) { _ = try Vault.status(store) }
    }
}

@Suite struct EnrollmentGuardTests {
    @Test func aFingerAloneCannotChangeTheEnrolledSet() throws {
        let v = try TestVault()
        let vault = try v.create()
        try vault.update { try $0.enroll(finger: "right-index-finger", template: secret("template-a")) }
        let byDevice = try Vault.unlockWithDevice(v.store)
        expectOutcome(.usage) { try byDevice.update { try $0.enroll(finger: "left-index-finger", template: secret("b")) } }
        expectOutcome(.usage) { try byDevice.update { try $0.forget(finger: "right-index-finger") } }
        #expect(try byDevice.enrolledFingers() == ["right-index-finger"])
    }

    @Test func enrollingRebindsTheDeviceSlot() throws {
        let v = try TestVault()
        try v.create().update { try $0.enroll(finger: "right-index-finger", template: secret("template-a")) }
        // The device slot opens the vault with the new set, and is bound to it.
        let byDevice = try Vault.unlockWithDevice(v.store)
        #expect(text(try byDevice.prints().first?.template) == "template-a")
        let bytes = try #require(readFile(v.directory + "/vault"))
        let document = try VaultDocument.decode(try Container.decode(.vault, bytes, file: "vault"), file: "vault")
        #expect(document.keyslot(.device)?.binding == Vault.enrollmentBinding(document))
        #expect(Vault.enrollmentBinding(document) != Vault.enrollmentBinding(
            VaultDocument(format: 1, vaultID: document.vaultID, createdAt: 0, generation: 0, keyslots: [], records: [:],
                          signIn: .none, fingers: [], mac: "")))
    }
}
