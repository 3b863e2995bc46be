import CTSS2

/// The TPM's dictionary-attack state (TPM2_GetCapability, TPM_PT_LOCKOUT_*).
public struct DictionaryAttackState: Equatable, Sendable {
    /// Authorization failures counted now (`failedTries`).
    public let failures: UInt32
    /// Failures at which the TPM locks out.
    public let maxTries: UInt32
    /// Seconds after which one failure is forgotten (0: lockout disabled).
    public let recoveryInterval: UInt32
    /// Seconds the lockout hierarchy waits after a failure of its own.
    public let lockoutRecovery: UInt32

    public var lockedOut: Bool { maxTries > 0 && failures >= maxTries }
}

extension TPMContext {
    /// The dictionary-attack counters and limits.
    public func dictionaryAttackState() throws(TPMError) -> DictionaryAttackState {
        var found: [UInt32: UInt32] = [:]
        try capability(TPM2_CAP(TPM2_CAP_TPM_PROPERTIES), first: fs_tpm_pt_lockout_counter, count: 4) { data in
            let properties = data.tpmProperties
            withUnsafeBytes(of: properties.tpmProperty) { raw in
                let tagged = raw.bindMemory(to: TPMS_TAGGED_PROPERTY.self)
                for index in 0..<min(Int(properties.count), tagged.count) {
                    found[tagged[index].property] = tagged[index].value
                }
            }
        }
        return DictionaryAttackState(failures: found[fs_tpm_pt_lockout_counter] ?? 0,
                                     maxTries: found[fs_tpm_pt_max_auth_fail] ?? 0,
                                     recoveryInterval: found[fs_tpm_pt_lockout_interval] ?? 0,
                                     lockoutRecovery: found[fs_tpm_pt_lockout_recovery] ?? 0)
    }

    /// TPM2_DictionaryAttackParameters with the lockout hierarchy's (empty) authorization:
    /// for provisioning and tests (a software TPM with a low limit). Also clears nothing.
    public func setDictionaryAttackParameters(maxTries: UInt32, recoveryInterval: UInt32,
                                              lockoutRecovery: UInt32) throws(TPMError) {
        let rc = Esys_DictionaryAttackParameters(esys, ESYS_TR(ESYS_TR_RH_LOCKOUT), ESYS_TR(ESYS_TR_PASSWORD),
                                                 ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE),
                                                 maxTries, recoveryInterval, lockoutRecovery)
        guard rc == TSS2_RC_SUCCESS else { throw .failed(rc) }
    }

    /// The transient objects and loaded sessions the TPM holds, as seen on this connection
    /// (through a resource manager: only this connection's; on a TPM without one: all).
    public func loadedHandles() throws(TPMError) -> (objects: [UInt32], sessions: [UInt32]) {
        (try handles(fs_tpm_hr_transient), try handles(fs_tpm_hr_loaded_session))
    }

    /// Runs `body`; when the TPM is out of room for objects or sessions, flushes every
    /// transient object and session but `holding` and runs it once more. Through a resource
    /// manager this connection sees only its own handles; on a TPM without one (a simulator,
    /// /dev/tpm0) the rest can only be what a killed process left behind, since one
    /// connection is served at a time there.
    func reclaimingSpace<T>(holding: [ESYS_TR], _ body: () throws(TPMError) -> T) throws(TPMError) -> T {
        do {
            return try body()
        } catch where error.isOutOfMemory {
            var ours: Set<UInt32> = []
            for handle in holding {
                var tpmHandle: TPM2_HANDLE = 0
                if Esys_TR_GetTpmHandle(esys, handle, &tpmHandle) == TSS2_RC_SUCCESS { ours.insert(tpmHandle) }
            }
            let (objects, sessions) = try loadedHandles()
            var system: OpaquePointer?
            guard Esys_GetSysContext(esys, &system) == TSS2_RC_SUCCESS, let system else { throw error }
            for leftover in (objects + sessions) where !ours.contains(leftover) {
                _ = Tss2_Sys_FlushContext(system, leftover)
            }
            return try body()
        }
    }

    private func handles(_ first: UInt32) throws(TPMError) -> [UInt32] {
        var found: [UInt32] = []
        try capability(TPM2_CAP(TPM2_CAP_HANDLES), first: first, count: 64) { data in
            let list = data.handles
            withUnsafeBytes(of: list.handle) { raw in
                let handles = raw.bindMemory(to: TPM2_HANDLE.self)
                // The range asked for only: the TPM lists handles from `first` upwards.
                for index in 0..<min(Int(list.count), handles.count) where handles[index] >> 24 == first >> 24 {
                    found.append(handles[index])
                }
            }
        }
        return found
    }

    private func capability(_ kind: TPM2_CAP, first: UInt32, count: UInt32,
                            _ read: (TPMU_CAPABILITIES) -> Void) throws(TPMError) {
        var data: UnsafeMutablePointer<TPMS_CAPABILITY_DATA>?
        let rc = Esys_GetCapability(esys, ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE),
                                    kind, first, count, nil, &data)
        guard rc == TSS2_RC_SUCCESS, let data else { throw .failed(rc) }
        defer { Esys_Free(data) }
        read(data.pointee.data)
    }
}
