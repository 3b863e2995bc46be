import CTSS2

public enum TPMError: Error, Equatable, Sendable {
    /// The TCTI could not be loaded or could not reach the TPM (no device, nothing listening).
    case tctiUnavailable(code: UInt32, message: String)
    /// The TCTI opened but the ESAPI context could not be set up on it.
    case initializationFailed(code: UInt32, message: String)
    /// The TPM or the TSS rejected a command.
    case commandFailed(code: UInt32, message: String)
    case invalidCount(Int)
    /// A value does not fit the TPM's structures (an authValue or secret too long, a sealed
    /// object that does not unmarshal, a PCR number outside 0...23).
    case invalidArgument(String)

    static func decode(_ rc: TSS2_RC) -> String {
        guard let text = Tss2_RC_Decode(rc) else { return "TSS2_RC 0x\(String(rc, radix: 16))" }
        return String(cString: text)
    }

    static func failed(_ rc: TSS2_RC) -> TPMError { .commandFailed(code: rc, message: decode(rc)) }

    /// The TPM's own response code with the handle, session or parameter number taken out,
    /// when the TPM (directly or through a resource manager) answered it; nil for the TSS's
    /// own errors.
    public var tpmResponse: UInt32? {
        guard case let .commandFailed(code, _) = self else { return nil }
        let layer = code >> TSS2_RC_LAYER_SHIFT
        guard layer == 0 || code & fs_tss2_rc_layer_mask == fs_tss2_resmgr_tpm_layer else { return nil }
        let response = code & 0xFFFF
        // Format one (bit 7): bits 6 and 8-11 name the handle, session or parameter.
        return response & fs_tpm_rc_fmt1 != 0 ? response & 0xBF : response
    }

    /// TPM_RC_LOCKOUT: the dictionary-attack lockout refuses every protected authorization.
    public var isLockout: Bool { tpmResponse == fs_tpm_rc_lockout }
    /// A wrong authValue (TPM_RC_AUTH_FAIL counts towards the lockout, TPM_RC_BAD_AUTH not).
    public var isAuthFailure: Bool { tpmResponse == fs_tpm_rc_auth_fail || tpmResponse == fs_tpm_rc_bad_auth }
    /// The object's policy is not met (its PCRs have other values now).
    public var isPolicyFailure: Bool { tpmResponse == fs_tpm_rc_policy_fail || tpmResponse == fs_tpm_rc_pcr_changed }
    /// The object was not made under this storage key: TPM_RC_INTEGRITY (its private part
    /// does not check out under this parent), or TPM_RC_VALUE/TPM_RC_SIZE on loading it.
    public var isForeignObject: Bool { tpmResponse == fs_tpm_rc_integrity }
    /// Out of room for objects or sessions (TPM_RC_OBJECT_MEMORY, TPM_RC_SESSION_MEMORY): on
    /// a TPM without a resource manager, what a killed process left behind.
    var isOutOfMemory: Bool { tpmResponse == fs_tpm_rc_object_memory || tpmResponse == fs_tpm_rc_session_memory }
}
