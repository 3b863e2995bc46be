import Localization

/// The TPM the keyslots are sealed to. The sentences only the broker says are in the broker
/// (Sources/Broker/Messages/TPMMessages.swift).
extension Messages {
    // The TPM the keyslots are sealed to
    public static var tpmUnreachable: String { tr("Fingerseal cannot use this computer's TPM right now, and your vault is sealed to it. Try again; if it keeps failing, run: fingerseal doctor") }
    public static var tpmRequired: String { tr("This computer requires fingerseal to use a TPM (tpm=require), and no usable TPM was found, so the vault cannot be created or unlocked.") }
    public static var tpmRequiredNotSealed: String { tr("This computer requires fingerseal to use a TPM (tpm=require), and the key your finger opens is not sealed to it yet. Enter your PIN once to seal it.") }
    public static var tpmSealFailed: String { tr("The TPM did not give back what was just sealed in it, so nothing was changed.") }
    public static var tpmKeyslotDamaged: String { tr("A keyslot sealed to the TPM is damaged and cannot be opened. Nothing was changed.") }
    public static var tpmChangedFinger: String { tr("Your finger cannot unlock fingerseal any more: the TPM your vault is sealed to is gone (it was cleared or replaced, or the disk was moved to another computer). Set fingerseal up again with your account password: fingerseal pin reset") }
    public static var tpmChangedPIN: String { tr("Your PIN cannot unlock fingerseal any more: the TPM your vault is sealed to is gone (it was cleared or replaced, or the disk was moved to another computer). Set fingerseal up again with your account password: fingerseal pin reset") }
    /// `seconds`: the TPM's lockout interval (one failure is forgotten after it); 0 when the
    /// TPM did not say.
    public static func tpmLockedOut(seconds: Int) -> String {
        guard seconds > 0 else {
            return tr("This computer's TPM refuses PINs for now, after too many wrong ones. It allows another try after its own recovery time; until then, use your finger or your password.")
        }
        let minutes = (seconds + 59) / 60
        return trn("This computer's TPM refuses PINs for now, after too many wrong ones. It allows another try within %1$s minute; until then, use your finger or your password.",
                   "This computer's TPM refuses PINs for now, after too many wrong ones. It allows another try within %1$s minutes; until then, use your finger or your password.",
                   minutes, minutes)
    }
    public static var tpmPCRsChanged: String { tr("Your finger cannot unlock fingerseal until you enter your PIN once: this computer's firmware or boot software changed since the key was sealed to its TPM.") }
}
