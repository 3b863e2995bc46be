import FingersealCore

/// The password rule at an unlock (`PasswordRule`, issue 23 §1): after a restart, or after a
/// while without it, the account password comes before a finger or the PIN. A PAM host goes
/// on to its stack's password module (the module hands that password back at setcred, and
/// the broker checks it itself: `PAMFlows.passwordUsed`); the command line and applications
/// are asked for it here, and once the broker has checked it, the vault opens through its
/// device slot, as after a match. Nothing a caller sends spares it: the boot and the time
/// are the broker's, the time of the last password is its own record.
enum PasswordDue {
    /// Why the account password is needed before anything else, or nil.
    static func reason(_ call: Call, _ status: VaultStatus, now: Int64) -> PasswordRule.Reason? {
        PasswordRule(call.options).due(status.lockout.passwordSeen, boot: call.state.bootID, now: now)
    }

    /// When the account password is next needed under the rule of `options` (default: the
    /// request's), for `status` and `doctor`; nil when no rule is in force.
    static func next(_ call: Call, _ status: VaultStatus, options: Options? = nil) -> PasswordRule.Next? {
        PasswordRule(options ?? call.options).next(status.lockout.passwordSeen, boot: call.state.bootID, now: SystemClock().now())
    }

    static func unlock(_ call: Call, _ reason: PasswordRule.Reason, session: VaultSession) throws -> Unlocked {
        let sentence = Messages.passwordDue(reason)
        if call.channel.isPAMHost {
            call.conversation.info(sentence)
            throw FingersealError(.unavailable, sentence, cause: reason == .afterBoot ? .passwordAfterBoot : .passwordAfter)
        }
        try AccountPassword.check(call, why: sentence)
        return Unlocked(vault: try session.unlockWithDevice(), method: .password, finger: nil)
    }
}
