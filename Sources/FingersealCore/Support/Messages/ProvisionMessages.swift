import Localization

/// The sentences of provisioning (issue 22 §2): a first sign-in with the organisation's
/// account that makes a local account, and the administrator's `fingerseal account`.
extension Messages {
    public static func provisionStart(_ user: String) -> String {
        tr("There is no account %1$s on this computer yet. You can make it now by signing in with your organisation's account.", user)
    }
    public static var provisionWaiting: String { tr("Waiting for you to finish signing in on the other device.") }
    public static func provisionThisComputer(_ name: String) -> String {
        tr("This computer is called %1$s. Approve the sign-in only if you are at this computer and typed your user name here yourself.", name)
    }
    public static var provisionNoAuthTime: String {
        tr("The identity provider did not say when you signed in, so this computer cannot tell that it was you, here, and nothing was made. Ask an administrator.")
    }
    public static var provisionNotFresh: String {
        tr("The code was approved without a new sign-in at the identity provider after it was shown, so nothing was made. Sign out at the identity provider on your other device, then type your user name here again.")
    }
    public static func provisionReservedName(_ name: String) -> String {
        tr("The name %1$s is kept for the system or for administrators on this computer, so no account of that name can be made. Ask an administrator.", name)
    }
    public static var provisionNamesUnchecked: String {
        tr("New accounts cannot be made on this computer now because the names it keeps for administrators could not be read. Ask an administrator.")
    }
    public static var provisionEmailDomainMissing: String {
        tr("New accounts cannot be named after e-mail addresses on this computer because no e-mail domain is set for them. Ask an administrator.")
    }
    public static func provisionEmailUnverified(_ who: String) -> String {
        tr("The identity provider has not verified the e-mail address of %1$s, so it cannot name an account here, and nothing was made.", who)
    }
    public static func provisionEmailOtherDomain(_ who: String) -> String {
        tr("The e-mail address of %1$s is not in a domain this computer makes accounts for, so nothing was made.", who)
    }
    public static func provisionHasAccount(_ who: String) -> String {
        tr("%1$s already has an account made on this computer, so no other was made. Ask an administrator if you need another.", who)
    }
    public static var provisionNotConfigured: String {
        tr("New accounts cannot be made on this computer now because its configuration is incomplete. Ask an administrator.")
    }
    public static var provisionNoReader: String {
        tr("New accounts cannot be made without a fingerprint reader, and none is connected.")
    }
    public static var provisionRateLimited: String {
        tr("Too many new accounts were made on this computer in the last hour, so no account was made. Try again later, or ask an administrator.")
    }
    public static func provisionNotAllowed(_ who: String) -> String {
        tr("%1$s may not make an account on this computer, so nothing was made. Ask an administrator if you think this is wrong.", who)
    }
    public static func provisionNoName(_ who: String, _ claim: String) -> String {
        tr("The identity provider did not say which user name %1$s has here (it sent no %2$s), so nothing was made.", who, claim)
    }
    public static func provisionInvalidName(_ name: String) -> String {
        tr("The user name %1$s that the identity provider gave cannot be used on this computer, so nothing was made.", name)
    }
    public static func provisionClash(_ name: String) -> String {
        tr("The name %1$s is already taken on this computer, so no new account was made. Ask an administrator.", name)
    }
    public static func provisionOtherName(_ who: String, _ name: String, _ typed: String) -> String {
        tr("You signed in as %1$s, whose user name here is %2$s, not %3$s, so nothing was made. Sign in again with the user name %2$s.", who, name, typed)
    }
    public static func provisionCreated(_ name: String) -> String {
        tr("The account %1$s was made. Now choose a PIN and enroll a finger; both are needed to finish.", name)
    }
    public static var provisionEnrollNow: String { tr("Now enroll a finger: you will touch the reader several times.") }
    public static func provisionDone(_ name: String) -> String {
        tr("The account %1$s is ready. From now on, sign in with your finger.", name)
    }
    public static var provisionCodeExpired: String { tr("The sign-in code expired before it was used, so nothing was made.") }
    public static func provisionDoneTouch(_ name: String) -> String {
        tr("The account %1$s is ready. From now on, touch the reader to sign in; you need not type your user name.", name)
    }
    public static var provisionUndone: String { tr("The new account was not finished, so it was removed and nothing was kept.") }
    public static func provisionFailed(_ why: String) -> String { tr("The new account could not be made: %1$s", why) }

    // fingerseal account
    public static var accountNoneProvisioned: String { tr("No account was made by fingerseal on this computer.") }
    public static func accountListed(_ name: String, _ created: String, _ used: String) -> String {
        tr("%1$s: made %2$s, last used %3$s.", name, created, used)
    }
    public static func accountNotProvisioned(_ name: String) -> String {
        tr("%1$s was not made by fingerseal, so fingerseal does not remove it. Use userdel.", name)
    }
    public static func accountRemoved(_ name: String) -> String { tr("The account %1$s and its vault were removed.", name) }
    public static func accountRemoveFailed(_ name: String) -> String {
        tr("The account %1$s could not be removed (it may still be signed in). Its vault and record stay; try again later.", name)
    }
    public static func accountBeingMade(_ name: String) -> String {
        tr("The account %1$s is being made right now. Try again once that has ended.", name)
    }
    public static func accountExpired(_ name: String, _ days: Int) -> String {
        tr("The account %1$s was removed: it was not used for %2$s days.", name, days)
    }
    public static var accountNothingExpired: String { tr("No provisioned account has expired.") }
    public static var accountRootOnly: String { tr("Only root can manage the accounts fingerseal made.") }

    // the audit trail
    public static func auditProvisioned(_ issuer: String) -> String {
        tr("The account was made at its first sign-in with %1$s.", issuer)
    }
    public static func auditProvisioning(_ event: ProvisioningEvent, _ reason: String) -> String {
        switch event {
        case .refused: return tr("A new account was refused: %1$s.", auditReason(AuditReason(word: reason)))
        case .cancelled:
            return tr("A new account was not finished (%1$s), and everything made for it was removed.", auditReason(AuditReason(word: reason)))
        case .removed: return tr("The provisioned account was removed by an administrator.")
        case .expired: return tr("The provisioned account was removed after %1$s days unused.", reason)
        }
    }
}
