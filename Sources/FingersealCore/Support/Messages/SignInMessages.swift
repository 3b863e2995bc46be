import Localization

/// Signing in at the identity provider (the device code, the password, the browser), what an unlock
/// yields from the sign-in, the tokens the service holds, signing out. The sentences only the
/// broker says are in the broker (Sources/Broker/Messages/SignInMessages.swift).
extension Messages {
    public static var signInRequired: String { tr("Your sign-in has ended. Sign in again with: fingerseal login") }
    public static var idpUnreachable: String { tr("The identity provider cannot be reached, and the last sign-in check is too long ago to go on without it.") }
    public static var idpRefused: String { tr("The identity provider did not renew your sign-in. Your sign-in is kept; try again later.") }
    public static var idpRefusedProof: String {
        tr("The identity provider did not accept this computer's proof that it holds your sign-in, most often because the clock is wrong. Your sign-in is kept; check that the clock is right, for example with: timedatectl set-ntp true")
    }
    public static var notSignedIn: String { tr("This account is not signed in to an identity provider. Sign in with: fingerseal login") }
    public static func revokeFailed(_ detail: String) -> String {
        tr("The identity provider could not be told to end the sign-in (%1$s). It is removed here; at the provider it ends when it expires.", embedded(detail))
    }
    public static func identityMismatch(_ who: String, _ user: String) -> String {
        tr("The identity provider signed in %1$s, which is not the account %2$s on this computer, so the sign-in was refused and nothing was stored.", who, user)
    }
    public static func identityClaimMissing(_ who: String, _ claim: String, _ user: String) -> String {
        tr("The identity provider did not say which account %1$s is here (it sent no %2$s for the account %3$s), so the sign-in was refused and nothing was stored.", who, claim, user)
    }
    public static var identityChanged: String { tr("The identity provider now names another account than the one that signed in, so a new sign-in is required. Run: fingerseal login") }
    public static func providerProblem(_ detail: String) -> String { tr("The identity provider cannot be used: %1$s.", embedded(detail)) }
    public static func providerUnreachable(_ detail: String) -> String { tr("The identity provider cannot be reached (%1$s). Check the network and try again.", embedded(detail)) }
    public static var signInRequiredNotice: String { tr("Fingerprint unlock needs a new sign-in. Run: fingerseal login") }
}
