import FingersealWire
/// An error with a sentence for the user and an outcome that decides the PAM code and exit
/// status. `detail` is for logs: file paths, errno, never a secret.
public struct FingersealError: Error, Equatable, CustomStringConvertible, Sendable {
    public let outcome: Outcome
    public let message: String
    public let detail: String?
    /// How long the scan that did not match took, in milliseconds (test rigs time impostors
    /// as well as matches); nil for every other error.
    public var milliseconds: Double? = nil
    /// What lies behind the outcome, where a flow treats it apart (the TPM's states).
    public var cause: Cause? = nil

    /// Causes a flow acts on, beyond the outcome; their names are audit reasons.
    public enum Cause: String, CaseIterable, Sendable {
        /// The TPM a keyslot was sealed to is gone: cleared, replaced, or the disk moved.
        case tpmChanged
        /// The TPM's dictionary-attack lockout refuses the PIN for now (a PIN slot sealed
        /// inside that lockout, not yet sealed again outside it).
        case tpmLockedOut
        /// The device keyslot's PCRs have other values now (firmware or boot chain changed).
        case tpmPCRsChanged
        /// tpm=require, and the device keyslot is not sealed to the TPM yet (the PIN seals it).
        case tpmNotSealed
        /// The broker's own check refused the account password (not a fingerprint's verdict).
        case accountPasswordRefused
        /// The person turned fingerprint unlock off (`fingerseal off`).
        case fingerUnlockOff
        /// The first sign-in after a restart needs the account password (`password_after_boot`).
        case passwordAfterBoot
        /// The account password was not used for `password_after`.
        case passwordAfter
        /// The vault under the account's uid is another account's (`VaultOwnership`).
        case vaultOfAnotherAccount
    }

    public init(_ outcome: Outcome, _ message: String, detail: String? = nil, milliseconds: Double? = nil,
                cause: Cause? = nil) {
        self.outcome = outcome
        self.message = message
        self.detail = detail
        self.milliseconds = milliseconds
        self.cause = cause
    }


    public var description: String {
        guard let detail else { return message }
        return "\(message) (\(detail))"
    }
}
