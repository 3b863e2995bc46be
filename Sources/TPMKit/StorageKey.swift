import CTSS2
import Glibc

/// PCRs of the SHA-256 bank a sealed object is bound to; empty: bound to none.
public struct PCRSelection: Equatable, Sendable {
    /// PCR numbers, ascending, each in 0...23.
    public let indices: [Int]

    public init(_ indices: [Int]) throws(TPMError) {
        guard indices.allSatisfy({ (0...23).contains($0) }) else {
            throw .invalidArgument("PCR numbers go from 0 to 23")
        }
        self.indices = Array(Set(indices)).sorted()
    }

    public static let none = PCRSelection(checked: [])
    private init(checked: [Int]) { indices = checked }

    public var isEmpty: Bool { indices.isEmpty }
    var mask: UInt32 { indices.reduce(0) { $0 | (1 << UInt32($1)) } }
}

/// A sealed object as it is kept outside the TPM: its public part, and its private part,
/// which the TPM encrypted and MAC'd under the storage key it was made under. Neither is
/// secret: only that TPM, with that storage key, can load it.
public struct SealedObject: Equatable, Sendable {
    /// A marshalled TPM2B_PUBLIC.
    public let publicArea: [UInt8]
    /// A marshalled TPM2B_PRIVATE.
    public let privateArea: [UInt8]

    public init(publicArea: [UInt8], privateArea: [UInt8]) {
        self.publicArea = publicArea
        self.privateArea = privateArea
    }

    /// Whether a wrong authValue for this object counts towards the TPM's dictionary-attack
    /// lockout (TPMA_OBJECT_NODA clear), read from its public area. The TPM's name for the
    /// object covers that area, so the attribute cannot differ from what the TPM enforces.
    public func isDictionaryProtected() throws(TPMError) -> Bool {
        let area = try Marshalling.publicArea(publicArea)
        return area.publicArea.objectAttributes & fs_tpma_object_noda == 0
    }
}

extension TPMContext {
    /// Creates the storage key and its salted session (`HeldStorageKey`), lends them to
    /// `body`, and flushes both after it, whatever happens.
    ///
    /// `StorageKey` must not escape `body`.
    public func withStorageKey<T>(_ body: (StorageKey) throws -> T) throws -> T {
        let held = try HeldStorageKey(self)
        defer { held.close() }
        return try body(held.key)
    }

    func createPrimary() throws(TPMError) -> ESYS_TR {
        var template = TPM2B_PUBLIC()
        fs_tpm_srk_template(&template)
        var sensitive = TPM2B_SENSITIVE_CREATE()
        var outside = TPM2B_DATA()
        var creationPCR = TPML_PCR_SELECTION()
        var handle = ESYS_TR(ESYS_TR_NONE)
        let rc = Esys_CreatePrimary(esys, ESYS_TR(ESYS_TR_RH_OWNER), ESYS_TR(ESYS_TR_PASSWORD), ESYS_TR(ESYS_TR_NONE),
                                    ESYS_TR(ESYS_TR_NONE), &sensitive, &template, &outside, &creationPCR, &handle,
                                    nil, nil, nil, nil)
        guard rc == TSS2_RC_SUCCESS else { throw .failed(rc) }
        return handle
    }

    /// An authorization session: salted with `salt` (then parameters are encrypted with
    /// AES-128-CFB), or a trial session without either.
    func startSession(_ type: TPM2_SE, salt: ESYS_TR?) throws(TPMError) -> ESYS_TR {
        var symmetric = TPMT_SYM_DEF()
        if salt != nil { fs_tpm_session_symmetric(&symmetric) } else { symmetric.algorithm = TPM2_ALG_ID(TPM2_ALG_NULL) }
        var session = ESYS_TR(ESYS_TR_NONE)
        let rc = Esys_StartAuthSession(esys, salt ?? ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE),
                                       ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE), nil, type, &symmetric,
                                       TPMI_ALG_HASH(TPM2_ALG_SHA256), &session)
        guard rc == TSS2_RC_SUCCESS else { throw .failed(rc) }
        return session
    }

    func setAttributes(_ session: ESYS_TR, _ flags: Int32) throws(TPMError) {
        let rc = Esys_TRSess_SetAttributes(esys, session, TPMA_SESSION(flags), 0xff)
        guard rc == TSS2_RC_SUCCESS else { throw .failed(rc) }
    }

    func name(of handle: ESYS_TR) throws(TPMError) -> [UInt8] {
        var name: UnsafeMutablePointer<TPM2B_NAME>?
        let rc = Esys_TR_GetName(esys, handle, &name)
        guard rc == TSS2_RC_SUCCESS, let name else { throw .failed(rc) }
        defer { Esys_Free(name) }
        let size = min(Int(name.pointee.size), MemoryLayout.size(ofValue: name.pointee.name))
        return withUnsafeBytes(of: &name.pointee.name) { Array($0.prefix(size)) }
    }

    /// Flushes a transient object or session; errors are ignored (the handle is gone either
    /// way when the context closes, and with a resource manager it is flushed for us).
    func flush(_ handle: ESYS_TR) {
        guard handle != ESYS_TR(ESYS_TR_NONE) else { return }
        _ = Esys_FlushContext(esys, handle)
    }

    /// The policy digest of "these PCRs have their present values", from a trial session.
    func pcrPolicyDigest(_ pcrs: PCRSelection) throws(TPMError) -> [UInt8] {
        let trial = try startSession(TPM2_SE(TPM2_SE_TRIAL), salt: nil)
        defer { flush(trial) }
        try policyPCR(trial, pcrs)
        var digest: UnsafeMutablePointer<TPM2B_DIGEST>?
        let rc = Esys_PolicyGetDigest(esys, trial, ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE), &digest)
        guard rc == TSS2_RC_SUCCESS, let digest else { throw .failed(rc) }
        defer { Esys_Free(digest) }
        let size = min(Int(digest.pointee.size), MemoryLayout.size(ofValue: digest.pointee.buffer))
        return withUnsafeBytes(of: &digest.pointee.buffer) { Array($0.prefix(size)) }
    }

    func policyPCR(_ session: ESYS_TR, _ pcrs: PCRSelection) throws(TPMError) {
        var selection = TPML_PCR_SELECTION()
        fs_tpm_pcr_selection(&selection, pcrs.mask)
        var empty = TPM2B_DIGEST()
        let rc = Esys_PolicyPCR(esys, session, ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE),
                                &empty, &selection)
        guard rc == TSS2_RC_SUCCESS else { throw .failed(rc) }
    }
}

/// The storage primary key (the SRK template in the owner hierarchy) and a salted HMAC
/// session that encrypts parameters, on one connection, until `close()` flushes both (or the
/// object goes). Recreated rather than made persistent: nothing is written to the TPM's NV
/// memory, no owner authorization is needed, and a persistent handle someone else put there
/// is never trusted as the key a secret is sealed under.
///
/// Holding one between operations (as the broker does for a while) saves the key's creation
/// and the session's key exchange, which are most of an unseal's cost.
public final class HeldStorageKey {
    public let context: TPMContext
    public let key: StorageKey
    private var open = true

    public init(_ context: TPMContext) throws(TPMError) {
        let primary = try context.reclaimingSpace(holding: []) { () throws(TPMError) in try context.createPrimary() }
        do throws(TPMError) {
            // Salted with the primary: the session key is unknown to anyone watching the bus,
            // so the HMACs reveal nothing of an authValue and encrypted parameters stay secret.
            let session = try context.reclaimingSpace(holding: [primary]) { () throws(TPMError) in
                try context.startSession(TPM2_SE(TPM2_SE_HMAC), salt: primary)
            }
            do throws(TPMError) {
                key = StorageKey(context: context, handle: primary, session: session, name: try context.name(of: primary))
            } catch {
                context.flush(session)
                throw error
            }
        } catch {
            context.flush(primary)
            throw error
        }
        self.context = context
    }

    /// Flushes the session and the key. Idempotent.
    public func close() {
        guard open else { return }
        open = false
        context.flush(key.session)
        context.flush(key.handle)
    }

    deinit { close() }
}

/// The storage primary key and its salted session, lent by `TPMContext.withStorageKey`.
public struct StorageKey {
    let context: TPMContext
    let handle: ESYS_TR
    let session: ESYS_TR
    /// The key's name (its public area's digest): the same for the same TPM until it is
    /// cleared, so it tells whether a sealed object was made on this TPM.
    public let name: [UInt8]

    /// Throws unless the TPM still has this key loaded. A key kept between operations can be
    /// gone (the TPM was reset or cleared, a resource manager dropped it), and what needs no
    /// command of its own (its name, "the TPM is usable") must not be answered from memory.
    public func confirmLoaded() throws(TPMError) {
        var tpmHandle: TPM2_HANDLE = 0
        let rc = Esys_TR_GetTpmHandle(context.esys, handle, &tpmHandle)
        guard rc == TSS2_RC_SUCCESS else { throw .failed(rc) }
        guard try context.loadedHandles().objects.contains(tpmHandle) else {
            throw .commandFailed(code: fs_tpm_rc_handle, message: "the storage key is no longer loaded")
        }
    }

    private static let continueSession = Int32(TPMA_SESSION_CONTINUESESSION)
    private static let encryptCommand = Int32(TPMA_SESSION_DECRYPT)
    private static let encryptResponse = Int32(TPMA_SESSION_ENCRYPT)

    /// Seals `secret` in a new object under this key. It opens with `authValue` (empty: no
    /// secret needed), or, with `pcrs`, only while those PCRs keep their present values.
    /// `dictionaryProtected`: a wrong authValue counts towards the TPM's dictionary-attack
    /// lockout. That is one counter for the whole machine, shared by every account and program
    /// with such objects: whoever exhausts it locks them all out. The secret and the authValue
    /// travel to the TPM encrypted (the session's parameter encryption).
    public func seal(_ secret: UnsafeRawBufferPointer, authValue: UnsafeRawBufferPointer, pcrs: PCRSelection,
                     dictionaryProtected: Bool) throws(TPMError) -> SealedObject {
        let policy = pcrs.isEmpty ? [] : try context.pcrPolicyDigest(pcrs)
        var template = TPM2B_PUBLIC()
        guard fs_tpm_sealed_template(&template, policy, policy.count, dictionaryProtected ? 0 : 1) == 0 else {
            throw .invalidArgument("the policy digest does not fit")
        }
        var sensitive = TPM2B_SENSITIVE_CREATE()
        defer { wipe(&sensitive) }
        guard fs_tpm_sensitive(&sensitive, authValue.baseAddress?.assumingMemoryBound(to: UInt8.self), authValue.count,
                               secret.baseAddress?.assumingMemoryBound(to: UInt8.self), secret.count) == 0 else {
            throw .invalidArgument("the secret or its authValue is too long")
        }
        try context.setAttributes(session, Self.continueSession | Self.encryptCommand | Self.encryptResponse)
        return try create(&sensitive, &template) { _ in }
    }

    /// TPM2_Create under this key with the session's attributes as set; `read` sees the new
    /// object's public area before it is freed. The one call both kinds of object are made by.
    func create(_ sensitive: inout TPM2B_SENSITIVE_CREATE, _ template: inout TPM2B_PUBLIC,
                read: (UnsafeMutablePointer<TPM2B_PUBLIC>) throws(TPMError) -> Void) throws(TPMError) -> SealedObject {
        var outside = TPM2B_DATA()
        var creationPCR = TPML_PCR_SELECTION()
        var outPrivate: UnsafeMutablePointer<TPM2B_PRIVATE>?
        var outPublic: UnsafeMutablePointer<TPM2B_PUBLIC>?
        let rc = Esys_Create(context.esys, handle, session, ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE), &sensitive, &template,
                             &outside, &creationPCR, &outPrivate, &outPublic, nil, nil, nil)
        defer {
            Esys_Free(outPrivate)
            Esys_Free(outPublic)
        }
        guard rc == TSS2_RC_SUCCESS, let outPrivate, let outPublic else { throw .failed(rc) }
        try read(outPublic)
        return SealedObject(publicArea: try Marshalling.publicArea(outPublic), privateArea: try Marshalling.privateArea(outPrivate))
    }

    /// Loads `object` under this key and unseals it with `authValue` (and, when it was sealed
    /// to `pcrs`, a policy session proving them); lends the secret to `body`, then wipes it
    /// and flushes the object. The secret comes back encrypted on the bus.
    ///
    /// Errors to tell apart (`TPMError`): `isForeignObject` (made under another key: the TPM
    /// was cleared or this is another machine), `isAuthFailure` (a wrong authValue, counted by
    /// the TPM when the object is dictionary-protected), `isLockout` (only such objects),
    /// `isPolicyFailure` (the PCRs changed).
    public func unseal<T>(_ object: SealedObject, authValue: UnsafeRawBufferPointer, pcrs: PCRSelection,
                          _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T {
        try withLoaded(object, authValue: authValue) { loaded in
            var policySession = ESYS_TR(ESYS_TR_NONE)
            defer { context.flush(policySession) }
            if !pcrs.isEmpty {
                policySession = try context.reclaimingSpace(holding: [handle, session, loaded]) { () throws(TPMError) in
                    try context.startSession(TPM2_SE(TPM2_SE_POLICY), salt: handle)
                }
                try context.policyPCR(policySession, pcrs)
            }
            let authorizing = pcrs.isEmpty ? session : policySession
            try context.setAttributes(authorizing, Self.continueSession | Self.encryptResponse)
            var data: UnsafeMutablePointer<TPM2B_SENSITIVE_DATA>?
            let rc = Esys_Unseal(context.esys, loaded, authorizing, ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE), &data)
            defer {
                if let data { explicit_bzero(data, MemoryLayout<TPM2B_SENSITIVE_DATA>.size) }
                Esys_Free(data)
            }
            guard rc == TSS2_RC_SUCCESS, let data else { throw TPMError.failed(rc) }
            let size = min(Int(data.pointee.size), MemoryLayout.size(ofValue: data.pointee.buffer))
            return try withUnsafeBytes(of: &data.pointee.buffer) { try body(UnsafeRawBufferPointer(rebasing: $0.prefix(size))) }
        }
    }

    /// Loads `object` under this key with `authValue` set, lends its handle to `body`, then
    /// clears the authValue ESAPI keeps and flushes the object.
    func withLoaded<T>(_ object: SealedObject, authValue: UnsafeRawBufferPointer, _ body: (ESYS_TR) throws -> T) throws -> T {
        var inPublic = try Marshalling.publicArea(object.publicArea)
        var inPrivate = try Marshalling.privateArea(object.privateArea)
        // Loading needs no secret (the parent's authValue is empty, the private part is
        // encrypted already): a password session, no HMACs to compute. A forged answer could
        // only swap the object, and then the command's HMAC, over the name computed here from
        // our public part, fails.
        let loaded = try context.reclaimingSpace(holding: [handle, session]) { () throws(TPMError) -> ESYS_TR in
            var loaded = ESYS_TR(ESYS_TR_NONE)
            let rc = Esys_Load(context.esys, handle, ESYS_TR(ESYS_TR_PASSWORD), ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE),
                               &inPrivate, &inPublic, &loaded)
            guard rc == TSS2_RC_SUCCESS else { throw .failed(rc) }
            return loaded
        }
        var cleared = TPM2B_AUTH()
        defer {
            // ESAPI keeps its own copy of the authValue with the object: overwritten (the
            // whole structure is copied in) before the object goes.
            _ = Esys_TR_SetAuth(context.esys, loaded, &cleared)
            context.flush(loaded)
        }
        var auth = TPM2B_AUTH()
        defer { wipe(&auth) }
        guard fs_tpm_auth(&auth, authValue.baseAddress?.assumingMemoryBound(to: UInt8.self), authValue.count) == 0 else {
            throw TPMError.invalidArgument("the authValue is too long")
        }
        let setAuth = Esys_TR_SetAuth(context.esys, loaded, &auth)
        guard setAuth == TSS2_RC_SUCCESS else { throw TPMError.failed(setAuth) }
        return try body(loaded)
    }
}

extension StorageKey {
    /// A new P-256 signing key under this key, used with `authValue` (DPoP proofs). Its
    /// private part never leaves the TPM unencrypted; what comes back (`SealedObject`) loads
    /// only under this key, on this TPM. Returns its public point too.
    public func createSigningKey(authValue: UnsafeRawBufferPointer) throws(TPMError) -> (key: SealedObject, x: [UInt8], y: [UInt8]) {
        var template = TPM2B_PUBLIC()
        fs_tpm_signing_template(&template)
        var sensitive = TPM2B_SENSITIVE_CREATE()
        defer { wipe(&sensitive) }
        guard fs_tpm_sensitive(&sensitive, authValue.baseAddress?.assumingMemoryBound(to: UInt8.self), authValue.count, nil, 0) == 0 else {
            throw .invalidArgument("the authValue is too long")
        }
        try context.setAttributes(session, Self.continueSession | Self.encryptCommand)
        var x = [UInt8](repeating: 0, count: 32), y = [UInt8](repeating: 0, count: 32)
        let key = try create(&sensitive, &template) { made throws(TPMError) in
            guard fs_tpm_ecc_point(made, &x, &y) == 0 else { throw .invalidArgument("the new key is not a P-256 key") }
        }
        return (key, x, y)
    }

    /// ES256 with `key` (made by `createSigningKey`) over a SHA-256 `digest`: r || s. The
    /// authValue travels in the session's HMAC, never in the clear; the key is flushed after.
    public func sign(_ key: SealedObject, authValue: UnsafeRawBufferPointer, digest: [UInt8]) throws -> [UInt8] {
        guard digest.count == 32 else { throw TPMError.invalidArgument("a SHA-256 digest is 32 bytes") }
        return try withLoaded(key, authValue: authValue) { loaded in
            var input = TPM2B_DIGEST()
            var scheme = TPMT_SIG_SCHEME()
            var ticket = TPMT_TK_HASHCHECK()
            fs_tpm_sign_inputs(&input, digest, &scheme, &ticket)
            try context.setAttributes(session, Self.continueSession)
            var signature: UnsafeMutablePointer<TPMT_SIGNATURE>?
            let rc = Esys_Sign(context.esys, loaded, session, ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE), &input, &scheme, &ticket,
                               &signature)
            defer { Esys_Free(signature) }
            guard rc == TSS2_RC_SUCCESS, let signature else { throw TPMError.failed(rc) }
            var rs = [UInt8](repeating: 0, count: 64)
            guard fs_tpm_ecdsa_rs(signature, &rs) == 0 else { throw TPMError.invalidArgument("the TPM's signature is not ECDSA") }
            return rs
        }
    }
}

/// Wipes a C structure that held a secret (explicit_bzero: not optimised away).
func wipe<T>(_ value: inout T) {
    withUnsafeMutableBytes(of: &value) { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } }
}

/// Sealed objects to and from bytes (tss2-mu), so they can be kept in the vault.
enum Marshalling {
    static func publicArea(_ value: UnsafePointer<TPM2B_PUBLIC>) throws(TPMError) -> [UInt8] {
        try marshal(MemoryLayout<TPM2B_PUBLIC>.size) { Tss2_MU_TPM2B_PUBLIC_Marshal(value, $0, $1, $2) }
    }

    static func privateArea(_ value: UnsafePointer<TPM2B_PRIVATE>) throws(TPMError) -> [UInt8] {
        try marshal(MemoryLayout<TPM2B_PRIVATE>.size) { Tss2_MU_TPM2B_PRIVATE_Marshal(value, $0, $1, $2) }
    }

    static func publicArea(_ bytes: [UInt8]) throws(TPMError) -> TPM2B_PUBLIC {
        var value = TPM2B_PUBLIC()
        try unmarshal(bytes) { Tss2_MU_TPM2B_PUBLIC_Unmarshal($0, $1, $2, &value) }
        return value
    }

    static func privateArea(_ bytes: [UInt8]) throws(TPMError) -> TPM2B_PRIVATE {
        var value = TPM2B_PRIVATE()
        try unmarshal(bytes) { Tss2_MU_TPM2B_PRIVATE_Unmarshal($0, $1, $2, &value) }
        return value
    }

    private static func marshal(_ capacity: Int, _ body: (UnsafeMutablePointer<UInt8>, Int, UnsafeMutablePointer<Int>) -> TSS2_RC)
        throws(TPMError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: capacity)
        var offset = 0
        let rc = buffer.withUnsafeMutableBufferPointer { pointer in
            pointer.baseAddress.map { body($0, capacity, &offset) } ?? fs_tss2_mu_bad_reference
        }
        guard rc == TSS2_RC_SUCCESS else { throw .failed(rc) }
        return Array(buffer.prefix(offset))
    }

    /// The whole of `bytes` must be one value: nothing short, nothing left over.
    private static func unmarshal(_ bytes: [UInt8], _ body: (UnsafePointer<UInt8>, Int, UnsafeMutablePointer<Int>) -> TSS2_RC)
        throws(TPMError) {
        var offset = 0
        let rc = bytes.withUnsafeBufferPointer { pointer in
            pointer.baseAddress.map { body($0, bytes.count, &offset) } ?? fs_tss2_mu_bad_reference
        }
        guard rc == TSS2_RC_SUCCESS, offset == bytes.count else { throw .invalidArgument("a sealed object does not unmarshal") }
    }
}
