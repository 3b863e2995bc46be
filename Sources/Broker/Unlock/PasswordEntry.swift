import FingersealCore

/// The account password in place of a finger or the PIN, for an application's dialog only:
/// checked by the broker itself with PAM (`AccountPassword`, the `fingerseal-verify`
/// service, its tries counted per account as for a PIN reset), then the vault opened through
/// its device slot, as after a match.
enum PasswordEntry {
    static func unlock(_ call: Call, session: VaultSession) throws -> Unlocked {
        guard call.channel.skippedPIN == .accountPassword else {
            throw FingersealError(.usage, Messages.passwordOnlyForApplications)
        }
        guard try session.status() != nil else { throw FingersealError(.noVault, Messages.noVault) }
        try AccountPassword.check(call, why: Messages.passwordInstead)
        return Unlocked(vault: try session.unlockWithDevice(), method: .password, finger: nil)
    }
}
