import FingersealCore
import FingersealWire

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
        PasswordRule(call.settings).due(status.lockout.passwordSeen, boot: call.state.bootID, now: now)
    }

    /// When the account password is next needed under the rule of `options` (default: the
    /// request's), for `status` and `doctor`; nil when no rule is in force.
    static func next(_ call: Call, _ status: VaultStatus, options: Options? = nil) -> PasswordRule.Next? {
        PasswordRule(options ?? call.settings).next(status.lockout.passwordSeen, boot: call.state.bootID, now: SystemClock().now())
    }

    /// The same rule for what the PIN gates (issue 31 §8: enroll, forget, a PIN change,
    /// sign-out, touch to sign in, reset), checked before the PIN is asked: after a restart, a
    /// shell as the user plus the PIN changes nothing until the account password was given.
    /// Root, acting for an account (a kiosk's set-up), is not asked for that account's password.
    static func requireBeforePIN(_ call: Call, _ status: VaultStatus) throws {
        guard !call.caller.isRoot, let reason = reason(call, status, now: SystemClock().now()) else { return }
        try checkPassword(call, reason, Messages.passwordDueBeforePIN(reason))
    }

    static func unlock(_ call: Call, _ reason: PasswordRule.Reason, session: VaultSession) throws -> Unlocked {
        try checkPassword(call, reason, Messages.passwordDue(reason))
        return Unlocked(vault: try session.unlockWithDevice(), method: .password, finger: nil)
    }

    /// The account password, checked here after saying `sentence`; a PAM host is sent on to
    /// its stack's password module with the sentence instead.
    private static func checkPassword(_ call: Call, _ reason: PasswordRule.Reason, _ sentence: String) throws {
        if call.channel.leavesThePasswordToTheStack {
            call.conversation.info(sentence)
            throw FingersealError(.unavailable, sentence, cause: reason == .afterBoot ? .passwordAfterBoot : .passwordAfter)
        }
        try AccountPassword.check(call, why: sentence)
    }
}
