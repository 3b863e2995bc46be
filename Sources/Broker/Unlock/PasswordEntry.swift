import FingersealCore
import FingersealWire

/// The account password in place of a finger or the PIN, for an application's dialog only:
/// checked by the broker itself with PAM (`AccountPassword`, the `fingerseal-verify`
/// service, its tries counted per account as for a PIN reset), then the vault opened through
/// its device slot, as after a match.
enum PasswordEntry {
    /// After `why`; with `skipsTo`, nil when the person turned to that way instead.
    static func unlock(_ call: Call, session: VaultSession, why: String = Messages.passwordInstead,
                       skipsTo: Ask.Purpose? = nil) throws -> Unlocked? {
        guard call.channel.skippedPIN == .accountPassword else {
            throw FingersealError(.usage, Messages.passwordOnlyForApplications)
        }
        guard try session.status() != nil else { throw FingersealError(.noVault, Messages.noVault) }
        do {
            try AccountPassword.check(call, why: why, skipsTo: skipsTo)
        } catch let error as FingersealError where error.detail == AccountPassword.skipped {
            return nil
        }
        return Unlocked(vault: try session.unlockWithDevice(), method: .password, finger: nil)
    }
}
