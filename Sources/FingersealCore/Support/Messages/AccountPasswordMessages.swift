import Localization

/// The account password: when its place in the day asks for it, and the service checking it with
/// PAM. The sentences only the broker says are in the broker
/// (Sources/Broker/Messages/AccountPasswordMessages.swift).
extension Messages {
    // The password's place in the day (issue 23 §1).
    public static func passwordDue(_ reason: PasswordRule.Reason) -> String {
        switch reason {
        case .afterBoot:
            return tr("Your account password is needed for the first sign-in after a restart. Your finger works again after that.")
        case .afterTime:
            return tr("Your account password is needed, as it has not been used for a while. Your finger works again after that.")
        }
    }
    /// Before a PIN-gated command (enroll, forget, a PIN change, sign-out, reset).
    public static func passwordDueBeforePIN(_ reason: PasswordRule.Reason) -> String {
        switch reason {
        case .afterBoot:
            return tr("Your account password is needed first, as it was not used since this computer started. The PIN is asked after it.")
        case .afterTime:
            return tr("Your account password is needed first, as it has not been used for a while. The PIN is asked after it.")
        }
    }
    /// `status`: when the account password will next be needed.
    public static func statusPasswordNext(_ next: PasswordRule.Next) -> String {
        switch next {
        case .now(.afterBoot): return tr("Account password: needed at the next sign-in, the first since the restart.")
        case .now(.afterTime): return tr("Account password: needed at the next sign-in, as it has not been used for a while.")
        case let .later(at?, true): return tr("Account password: needed again after the next restart, or on %1$s if that comes first.", Localization.localTime(at))
        case let .later(at?, false): return tr("Account password: needed again on %1$s.", Localization.localTime(at))
        case .later(nil, _): return tr("Account password: needed again after the next restart.")
        }
    }

    // The account password (checked by the service with PAM, service fingerseal-verify).
    public static var accountPasswordRefused: String { tr("The account password was not accepted. Nothing was changed.") }
    public static func accountPasswordWait(_ seconds: Int64) -> String {
        trn("Too many wrong account passwords. Wait %1$s second, then try again.",
            "Too many wrong account passwords. Wait %1$s seconds, then try again.", Int(clamping: seconds), seconds)
    }
}
