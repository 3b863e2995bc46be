import FingersealCore
import FingersealWire
import Localization

/// Signing in at the identity provider (the device code, the password, the browser), what an unlock
/// yields from the sign-in, the tokens the service holds, signing out. Only the broker says these;
/// those the core, the flows or the tests say too are public in FingersealCore
/// (Support/Messages/SignInMessages.swift).
extension Messages {
    /// `finger`: nil for the PIN, else the finger's name ("" when fprintd did not say).
    static func unlockedWith(_ method: UnlockMethod, finger: String?) -> String {
        switch method {
        case .pin: return tr("Unlocked with your PIN.")
        case .password: return tr("Unlocked with your password.")
        case .finger:
            guard let finger, !finger.isEmpty else { return tr("Unlocked with your finger.") }
            return tr("Unlocked with your finger (%1$s).", finger)
        }
    }
    static func tokenReady(_ minutes: Int) -> String {
        trn("A fresh access token is ready. It is valid for %1$s more minute.", "A fresh access token is ready. It is valid for %1$s more minutes.", minutes, minutes)
    }
    static var offlineNoToken: String { tr("The identity provider cannot be reached, so there is no fresh access token. The offline grace still allows unlocking.") }
    static var loggedOut: String { tr("Signed out. The sign-in is removed from your vault; your PIN and fingers are kept.") }
    static var notRevocable: String { tr("The identity provider offers no way to end a sign-in early. It is removed here; at the provider it ends when it expires.") }
    static func openAndEnter(_ uri: String, _ code: String) -> String {
        tr("To sign in, open %1$s on any device and enter the code %2$s.", uri, code)
    }
    static var orScanQR: String { tr("Or scan this QR code with your phone:") }
    static var waitingForSignIn: String { tr("Waiting for you to finish signing in. Press Ctrl-C to cancel.") }
    static var codeExpired: String { tr("The sign-in code expired before it was used. Run fingerseal login again.") }
    static var signInRefused: String { tr("The sign-in was refused.") }
    // Tokens bound to this computer (RFC 9449, dpop=).
    static func dpopNotOffered(_ issuer: String) -> String {
        tr("%1$s cannot bind its tokens to this computer, and this computer requires it (dpop=required). Ask the provider's administrator to turn on DPoP, or set dpop=auto.", issuer)
    }
    static func dpopNotBound(_ issuer: String) -> String {
        tr("%1$s gave tokens that are not bound to this computer, and this computer requires it (dpop=required). Nothing was kept; ask the provider's administrator to turn on DPoP for this client.", issuer)
    }
    static var credentialsRefused: String { tr("The identity provider refused the user name or password.") }
    static var noRefreshToken: String { tr("The identity provider issued no refresh token. Ask for the offline_access scope, or ask your administrator to allow refresh tokens for this client.") }
    static func signedIn(_ issuer: String) -> String { tr("Signed in to %1$s. The sign-in is sealed in your vault.", issuer) }
    static func signedInAs(_ who: String) -> String { tr("Signed in as %1$s.", who) }
    static var identityUnknown: String { tr("The identity provider did not say who signed in (no ID token and no userinfo), so the sign-in was refused: this computer requires the account to match.") }
    static var offerEnroll: String { tr("To unlock with your finger from now on, run: fingerseal enroll") }
    static func passwordPrompt(_ user: String) -> String { tr("Password for %1$s: ", user) }
    static func providerAnswered(_ status: Int, _ code: String?) -> String {
        guard let code else { return tr("The identity provider cannot be used: it answered %1$s.", status) }
        return tr("The identity provider cannot be used: it answered %1$s %2$s.", status, embedded(code))
    }
    static var providerUnexpectedAnswer: String { tr("The identity provider cannot be used: unexpected answer.") }
    static func providerEndedSignIn(_ error: String) -> String {
        tr("The identity provider cannot be used: it ended the sign-in with the error %1$s.", embedded(error))
    }
    static var providerSentNothingBack: String {
        tr("The identity provider cannot be used: it sent the browser back with neither a code nor an error.")
    }

    // Browser sign-in (the pages are what the browser shows when it comes back)
    static func redirectPortBusy(_ port: Int) -> String {
        tr("Port %1$s on 127.0.0.1 is in use, so the browser cannot come back to fingerseal. Close what uses it, or choose another port.", port)
    }
    static var openInBrowser: String { tr("Open this address in a browser to sign in:") }
    static var browserTimedOut: String { tr("The browser did not come back in time. Run fingerseal login again.") }
    static var codeNotAccepted: String { tr("The identity provider did not accept the sign-in. Run fingerseal login again.") }
    static var browserPageReceived: String { tr("You can close this window and return to the terminal.") }
    static var browserPageFailed: String { tr("The sign-in did not complete. You can close this window and return to the terminal.") }
    static var browserPageIgnored: String { tr("This page does not belong to the sign-in in progress, so it was ignored.") }
    static var browserPageOtherAccount: String {
        tr("This sign-in belongs to another account on this computer, so this browser cannot complete it. Nothing was changed.")
    }
    static var browserPageUnknownAccount: String {
        tr("Fingerseal could not tell which account on this computer this browser belongs to, so it cannot complete the sign-in. Nothing was changed.")
    }
    static func browserOtherAccountRefused(_ account: String) -> String {
        tr("Another account on this computer (%1$s) tried to complete this sign-in. It was refused; your sign-in goes on.", account)
    }
    static var browserUnknownAccountRefused: String {
        tr("A program on this computer whose account could not be told tried to complete this sign-in. It was refused; your sign-in goes on.")
    }

    // Tokens held by the service
    static func cachedTokenReady(_ minutes: Int) -> String {
        trn("The identity provider cannot be reached, so this session's access token is used. It is valid for %1$s more minute.", "The identity provider cannot be reached, so this session's access token is used. It is valid for %1$s more minutes.", minutes, minutes)
    }
    /// Why the identity provider could not be told to end a sign-in, as words (never an
    /// internal error value).
    static func revokeFailed(_ failure: TokenFailure) -> String {
        let detail: String
        switch failure {
        case .unreachable: detail = tr("it cannot be reached")
        case let .rejected(status, _): detail = tr("it refused the request with HTTP status %1$s", status)
        case .malformed: detail = tr("its answer could not be read")
        case .badConfiguration: detail = tr("its configuration cannot be used")
        case .chainEnded, .credentialsRefused: detail = tr("it no longer knows this sign-in")
        case .clientAuthenticationRequired: return revokeNeedsClientSecret
        case .accessDenied: detail = tr("it refused the request")
        case .authorizationPending, .slowDown, .expiredToken, .identityRejected, .proofRefused: detail = tr("it gave an unexpected answer")
        }
        return revokeFailed(detail)
    }
    static var revokeNeedsClientSecret: String { tr("The identity provider lets only clients with a secret end a sign-in early. It is removed here; at the provider it ends when it expires.") }

    // Sign-in: a confidential client's secret, asked through the client
    static var clientSecretPrompt: String { tr("Client secret: ") }
}
