import Localization

/// The keyring, unlocked by the finger (issue 23 §1). The sentences only the broker says are in the
/// broker (Sources/Broker/Messages/KeyringMessages.swift).
extension Messages {
    // The keyring, unlocked by the finger (issue 23 §1).
    public static var keyringNeedsPassword: String { tr("To unlock your keyring with your finger, fingerseal keeps your account password sealed in your vault. Give your account password.") }
    public static var keyringTurnedOn: String { tr("Your account password is sealed in your vault. A finger or PIN at sign-in now unlocks your keyring too.") }
    public static var keyringDropped: String { tr("The account password sealed for your keyring no longer works, so fingerseal removed it. Type your password to unlock the keyring; fingerseal keyring on seals the new one.") }
    /// `keyring on` in a vault a stolen disk opens, neither the person nor the administrator
    /// having said so; `sealable`: a TPM is there, and the next PIN seals the vault to it.
    public static func keyringNeedsTPM(sealable: Bool) -> String {
        sealable
            ? tr("Your vault is not sealed to this computer's TPM yet, so whoever takes the disk could read your account password from it. Enter your PIN once to seal it, for example with: fingerseal step-up --fresh tpm, then run fingerseal keyring on again. To keep it in the vault as it is, run: fingerseal keyring on --without-tpm")
            : tr("Your vault is not sealed to a TPM, so whoever takes this computer's disk could read your account password from it. To keep it in the vault anyway, run: fingerseal keyring on --without-tpm")
    }
    /// The copy is kept in a vault a stolen disk opens (`keyring on`, `status`, `doctor`).
    public static var keyringWithoutTPM: String { tr("Your account password is sealed in a vault that is not sealed to a TPM: whoever takes this computer's disk can read it.") }
    public static var doctorFixKeyringWithoutTPM: String { tr("Where this computer has a TPM, enter your PIN once to seal your vault to it, for example with: fingerseal step-up --fresh tpm. Otherwise run: fingerseal keyring off") }
    public static var statusKeyringOn: String { tr("Keyring: unlocked by your finger or PIN at sign-in (your account password is sealed in the vault).") }
    public static var statusKeyringOff: String { tr("Keyring: not unlocked by fingerseal.") }
}
