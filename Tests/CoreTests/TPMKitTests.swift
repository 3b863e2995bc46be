import Testing
import Glibc
import Foundation
@testable import TPMKit
import CTSS2
@testable import TestSupport

/// Every test that opens a TPM context in this process, one at a time: the environment check
/// below must not see another test's live context (TSS2_LOG is process-wide).
@Suite(.serialized) enum InProcessTPM {}

extension InProcessTPM {
    @Suite struct TPMKitTests {
        @Test func environmentIsRestoredWhenTheLastContextGoes() throws {
            unsetenv("TSS2_LOG")
            let swtpm = try SwtpmProcess()
            defer { swtpm.stop() }
            do {
                let tpm = try TPMContext(tcti: swtpm.tcti)
                #expect(getenv("TSS2_LOG") != nil, "logs are quiet while a context is alive")
                _ = try tpm.randomBytes(8)
            }
            #expect(getenv("TSS2_LOG") == nil, "the environment is left as it was found")
            _ = try? TPMContext(tcti: "no-such-tcti-fingerseal")
            #expect(getenv("TSS2_LOG") == nil, "also after a failed open")
        }

        @Test func randomBytesFromSwtpm() throws {
            let swtpm = try SwtpmProcess()
            defer { swtpm.stop() }
            let tpm = try TPMContext(tcti: swtpm.tcti)
            let first = try tpm.randomBytes(16)
            let second = try tpm.randomBytes(16)
            #expect(first.count == 16)
            #expect(second.count == 16)
            #expect(first != second)
            // More than one TPM2_GetRandom can return at once, and zero.
            #expect(try tpm.randomBytes(200).count == 200)
            #expect(try tpm.randomBytes(0).isEmpty)
            #expect(throws: TPMError.invalidCount(-1)) { try tpm.randomBytes(-1) }
        }

        @Test func closedPortIsATypedError() throws {
            let port = try BoundSocket(port: 0).port  // bound, never listening, closed at once
            do {
                _ = try TPMContext(tcti: "swtpm:host=127.0.0.1,port=\(port)")
                Issue.record("expected an error")
            } catch let error {
                guard case .tctiUnavailable(let code, let message) = error else {
                    Issue.record("unexpected \(error)")
                    return
                }
                #expect(code != 0)
                #expect(!message.isEmpty)
            }
        }

        @Test func unknownTCTIIsATypedError() {
            #expect {
                _ = try TPMContext(tcti: "no-such-tcti-fingerseal")
            } throws: { error in
                if case TPMError.tctiUnavailable = error { return true }
                return false
            }
        }

        @Test func presenceOnlyLooksAtDev() {
            let expected = access("/dev/tpmrm0", F_OK) == 0 || access("/dev/tpm0", F_OK) == 0
            #expect(TPMContext.isPresent() == expected)
        }
    }
}

extension InProcessTPM {
    /// Sealing under the storage key, against swtpm: round trips, the wrong authValue, the
    /// dictionary-attack lockout, PCR policies, another TPM, and nothing left loaded.
    @Suite struct TPMSealingTests {
        static let secret: [UInt8] = Array(0..<32)

        func seal(_ tpm: TPMContext, auth: [UInt8], pcrs: PCRSelection = .none, protected: Bool = true) throws -> SealedObject {
            try tpm.withStorageKey { key in
                try Self.secret.withUnsafeBytes { secret in
                    try auth.withUnsafeBytes { try key.seal(secret, authValue: $0, pcrs: pcrs, dictionaryProtected: protected) }
                }
            }
        }

        func unseal(_ tpm: TPMContext, _ object: SealedObject, auth: [UInt8], pcrs: PCRSelection = .none) throws -> [UInt8] {
            try tpm.withStorageKey { key in
                try auth.withUnsafeBytes { auth in try key.unseal(object, authValue: auth, pcrs: pcrs) { Array($0) } }
            }
        }

        @Test func sealThenUnsealGivesTheSecretBackAndLeavesNothingLoaded() throws {
            let swtpm = try SwtpmProcess()
            let tpm = try TPMContext(tcti: swtpm.tcti)
            let object = try seal(tpm, auth: Array("auth".utf8))
            #expect(try unseal(tpm, object, auth: Array("auth".utf8)) == Self.secret)
            // The storage key is the same key each time (its name), and nothing stays loaded.
            let first = try tpm.withStorageKey { $0.name }
            #expect(try tpm.withStorageKey { $0.name } == first)
            #expect(first.count == 34)
            let left = try tpm.loadedHandles()
            #expect(left.objects.isEmpty && left.sessions.isEmpty, "\(left)")
        }

        @Test func aWrongAuthValueIsCountedAndTheLockoutIsReported() throws {
            let swtpm = try SwtpmProcess()
            let tpm = try TPMContext(tcti: swtpm.tcti)
            try tpm.setDictionaryAttackParameters(maxTries: 2, recoveryInterval: 600, lockoutRecovery: 600)
            let object = try seal(tpm, auth: Array("right".utf8))
            for expected in 1...2 {
                #expect { try unseal(tpm, object, auth: Array("wrong".utf8)) } throws: { ($0 as? TPMError)?.isAuthFailure == true }
                #expect(try tpm.dictionaryAttackState().failures == UInt32(expected))
            }
            let state = try tpm.dictionaryAttackState()
            #expect(state.lockedOut && state.maxTries == 2 && state.recoveryInterval == 600)
            // Locked out: even the right authValue is refused, and says so.
            #expect { try unseal(tpm, object, auth: Array("right".utf8)) } throws: { ($0 as? TPMError)?.isLockout == true }
            // An object without dictionary-attack protection still opens.
            let device = try seal(tpm, auth: [], protected: false)
            #expect(try unseal(tpm, device, auth: []) == Self.secret)
            let left = try tpm.loadedHandles()
            #expect(left.objects.isEmpty && left.sessions.isEmpty, "\(left)")
        }

        /// fingerseal's PIN objects since issue 19: outside the lockout. A wrong authValue is
        /// refused (TPM_RC_BAD_AUTH) but not counted, and while the lockout lasts (another
        /// program's wrong tries, libtpms's defaults: 3 tries, 1000 s) such an object still
        /// opens, and a new storage key and new objects are made, sealed and unsealed.
        @Test func anObjectOutsideTheLockoutIsNotCountedAndOpensWhileItLasts() throws {
            let swtpm = try SwtpmProcess()
            let tpm = try TPMContext(tcti: swtpm.tcti)
            let defaults = try tpm.dictionaryAttackState()
            #expect(defaults == DictionaryAttackState(failures: 0, maxTries: 3, recoveryInterval: 1000, lockoutRecovery: 1000),
                    "\(defaults)")
            let outside = try seal(tpm, auth: Array("right".utf8), protected: false)
            let inside = try seal(tpm, auth: Array("right".utf8))
            #expect(try outside.isDictionaryProtected() == false)
            #expect(try inside.isDictionaryProtected() == true)
            for _ in 1...5 {
                #expect { try unseal(tpm, outside, auth: Array("wrong".utf8)) } throws: { ($0 as? TPMError)?.isAuthFailure == true }
            }
            #expect(try tpm.dictionaryAttackState().failures == 0, "not counted")
            for _ in 1...3 {
                #expect { try unseal(tpm, inside, auth: Array("wrong".utf8)) } throws: { ($0 as? TPMError)?.isAuthFailure == true }
            }
            #expect(try tpm.dictionaryAttackState().lockedOut)
            #expect { try unseal(tpm, inside, auth: Array("right".utf8)) } throws: { ($0 as? TPMError)?.isLockout == true }
            #expect(try unseal(tpm, outside, auth: Array("right".utf8)) == Self.secret)
            // What a new PIN needs: a new storage key (its template is outside the lockout, its
            // hierarchy's authorization too), an object sealed, then unsealed to compare.
            let fresh = try TPMContext(tcti: swtpm.tcti)
            let made = try seal(fresh, auth: Array("new".utf8), protected: false)
            #expect(try unseal(fresh, made, auth: Array("new".utf8)) == Self.secret)
            #expect(try tpm.dictionaryAttackState().lockedOut, "still locked out")
        }

        /// The README's claim about a thief with the whole computer: where the lockout
        /// hierarchy's authorization is empty (most Linux machines), whoever holds the TPM ends
        /// the lockout with TPM2_DictionaryAttackLockReset, so it never rate-limited them.
        @Test func anEmptyLockoutAuthorizationEndsTheLockoutAtWill() throws {
            let swtpm = try SwtpmProcess()
            let tpm = try TPMContext(tcti: swtpm.tcti)
            let inside = try seal(tpm, auth: Array("right".utf8))
            for _ in 1...3 {
                #expect { try unseal(tpm, inside, auth: Array("wrong".utf8)) } throws: { ($0 as? TPMError)?.isAuthFailure == true }
            }
            #expect(try tpm.dictionaryAttackState().lockedOut)
            try tpm.resetLockoutForTests()
            #expect(try tpm.dictionaryAttackState().failures == 0)
            #expect(try unseal(tpm, inside, auth: Array("right".utf8)) == Self.secret)
        }

        @Test func aPCRPolicyOpensOnlyWithThoseValues() throws {
            let swtpm = try SwtpmProcess()
            let tpm = try TPMContext(tcti: swtpm.tcti)
            let pcrs = try PCRSelection([7, 16])
            let object = try seal(tpm, auth: [], pcrs: pcrs, protected: false)
            #expect(try unseal(tpm, object, auth: [], pcrs: pcrs) == Self.secret)
            try tpm.extendPCR16ForTests()
            #expect { try unseal(tpm, object, auth: [], pcrs: pcrs) } throws: { ($0 as? TPMError)?.isPolicyFailure == true }
            #expect(throws: TPMError.self) { try PCRSelection([24]) }
        }

        @Test func anotherTPMCannotLoadTheObject() throws {
            let here = try SwtpmProcess()
            let there = try SwtpmProcess()
            let object = try seal(try TPMContext(tcti: here.tcti), auth: [])
            let other = try TPMContext(tcti: there.tcti)
            #expect(try other.withStorageKey { $0.name } != (try TPMContext(tcti: here.tcti).withStorageKey { $0.name }))
            #expect { try unseal(other, object, auth: []) } throws: { ($0 as? TPMError)?.isForeignObject == true }
            let left = try other.loadedHandles()
            #expect(left.objects.isEmpty && left.sessions.isEmpty, "\(left)")
        }

        @Test func objectsLeftByAKilledProcessAreReclaimed() throws {
            let swtpm = try SwtpmProcess()
            // Three connections that each leave a storage key loaded (a process killed mid-way on
            // a TPM without a resource manager): the TPM's object memory is then full.
            for _ in 0..<3 { try TPMContext(tcti: swtpm.tcti).leakStorageKeyForTests() }
            let tpm = try TPMContext(tcti: swtpm.tcti)
            #expect(try tpm.loadedHandles().objects.count == 3)
            let object = try seal(tpm, auth: [])
            #expect(try unseal(tpm, object, auth: []) == Self.secret)
            #expect(try tpm.loadedHandles().objects.isEmpty)
        }
    }
}

extension TPMContext {
    /// PCR 16 is the debug PCR, resettable and free for tests: extending it changes its value.
    func extendPCR16ForTests() throws {
        var digests = TPML_DIGEST_VALUES()
        digests.count = 1
        digests.digests.0.hashAlg = TPMI_ALG_HASH(TPM2_ALG_SHA256)
        let rc = Esys_PCR_Extend(esys, ESYS_TR(ESYS_TR_PCR16), ESYS_TR(ESYS_TR_PASSWORD), ESYS_TR(ESYS_TR_NONE),
                                 ESYS_TR(ESYS_TR_NONE), &digests)
        guard rc == TSS2_RC_SUCCESS else { throw TPMError.failed(rc) }
    }

    /// Flushes every transient object and session on the TPM, whoever loaded them (what a
    /// TPM reset, or a resource manager dropping a connection's handles, does to them).
    func flushEverythingForTests() throws {
        let (objects, sessions) = try loadedHandles()
        var system: OpaquePointer?
        guard Esys_GetSysContext(esys, &system) == TSS2_RC_SUCCESS, let system else { throw TPMError.invalidArgument("no SAPI") }
        for handle in objects + sessions { _ = Tss2_Sys_FlushContext(system, handle) }
    }

    /// TPM2_DictionaryAttackLockReset with the lockout hierarchy's authorization empty, as it
    /// is unless someone set one: the failure counter goes to zero.
    func resetLockoutForTests() throws {
        let rc = Esys_DictionaryAttackLockReset(esys, ESYS_TR(ESYS_TR_RH_LOCKOUT), ESYS_TR(ESYS_TR_PASSWORD),
                                                ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE))
        guard rc == TSS2_RC_SUCCESS else { throw TPMError.failed(rc) }
    }

    /// Creates the storage key and never flushes it (what a killed process leaves behind).
    func leakStorageKeyForTests() throws {
        _ = try createPrimary()
    }
}
