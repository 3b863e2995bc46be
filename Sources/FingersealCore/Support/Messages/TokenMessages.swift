import JOSEErrors
import Localization

/// The reasons a token request failed (`TokenFailure`'s data) in words: short phrases that go
/// inside the broker's sentences ("The identity provider cannot be used: %1$s.") and its log.
/// IdentityClient and the token chain only say what failed.
extension Messages {
    public static func reason(_ why: TokenFailure.Unreachable) -> String {
        switch why {
        case let .answered(status, by: responder): answered(status, by: responder)
        case let .tls(detail): tr("TLS: %1$s", detail)
        case .timedOut: tr("timed out")
        case .couldNotConnect: tr("could not connect")
        case let .transport(detail): detail
        }
    }

    public static func reason(_ problem: TokenFailure.Malformation) -> String {
        switch problem {
        case .discoveryDocument: tr("the discovery document is not valid")
        case .deviceAuthorizationAnswer: tr("the device authorization answer is not valid")
        case let .answerTooLarge(limit): tr("the answer is larger than %1$s bytes", limit)
        case .noSecureMemoryForTokens: tr("no secure memory for the tokens")
        case .tokenAnswer: tr("the token answer is not valid JSON with an access token")
        case .noBearerAccessToken: tr("the token answer has no bearer access token")
        case .refreshTokenInAnswer: tr("the refresh token in the answer is not valid")
        case .idTokenInAnswer: tr("the ID token in the answer is not valid")
        case .negativeLifetime: tr("the token answer has a negative lifetime")
        case let .keySet(error): tr("the provider's key set is not valid: %1$s", jose(error))
        case let .userinfo(error): tr("the userinfo answer is not valid: %1$s", jose(error))
        }
    }

    public static func reason(_ problem: TokenFailure.ConfigurationProblem) -> String {
        switch problem {
        case let .answered(status, by: responder): answered(status, by: responder)
        case let .otherIssuer(stated, asked): tr("the provider says its issuer is %1$s, not %2$s", stated, asked)
        case let .notHTTPS(url): tr("%1$s is not an https URL", url)
        case let .plainHTTP(url): tr("%1$s must use https (plain http is allowed only on loopback)", url)
        case .noAuthorizationEndpoint: tr("the provider offers no authorization endpoint")
        case .authorizationEndpointHasFragment: tr("its authorization endpoint has a fragment")
        case .noUserinfoEndpoint: tr("the provider offers no userinfo endpoint")
        case .noDeviceAuthorization: tr("the provider offers no device authorization")
        case .noTokenEndpoint: tr("the sign-in has no token endpoint; sign in again")
        case .noSecureMemoryForCredentials: tr("no secure memory for the client's credentials")
        case .proofUnavailable: tr("the key that binds the sign-in to this computer would not sign a proof")
        case let .invalidRequest(detail): detail
        case .noProvider: tr("the vault names no identity provider")
        case .clientSecretUnreadable: tr("the client secret in the vault cannot be read")
        case .clientSecretMissing: tr("the client secret is missing")
        case .userMapUnreadable: tr("the user map cannot be read")
        }
    }

    public static func reason(_ rejection: TokenFailure.IdentityRejection) -> String {
        switch rejection {
        case .signedUserinfo: tr("signed userinfo answers are not supported")
        case let .userinfo(problem): tr("the userinfo answer was refused: %1$s", jose(problem))
        case let .idToken(error): idTokenReason(error)
        }
    }

    /// Any failure's reason, for the log: the worded reason, or the failure's own data.
    public static func reason(_ failure: TokenFailure) -> String {
        switch failure {
        case let .unreachable(why): reason(why)
        case let .malformed(problem): reason(problem)
        case let .badConfiguration(problem): reason(problem)
        case let .identityRejected(rejection): reason(rejection)
        case let .proofRefused(code):
            tr("the identity provider refused this computer's proof of possession (%1$s); check that the clock is right, for example with: timedatectl set-ntp true", code)
        case .chainEnded, .credentialsRefused, .clientAuthenticationRequired, .rejected,
             .authorizationPending, .slowDown, .expiredToken, .accessDenied: "\(failure)"
        }
    }

    static func answered(_ status: Int, by responder: TokenFailure.Responder) -> String {
        switch responder {
        case .discovery: tr("discovery answered %1$s", status)
        case .keySet: tr("the key set answered %1$s", status)
        case .provider: tr("the provider answered %1$s", status)
        }
    }

    static func idTokenReason(_ error: JOSEError) -> String {
        switch error {
        case .unsupportedAlgorithm: tr("the ID token is signed with an algorithm that is not accepted")
        case .unknownKey: tr("the ID token is signed with a key the provider does not publish")
        case .badSignature: tr("the ID token's signature does not verify")
        case let .claim(why): tr("the ID token was refused: %1$s", jose(why))
        case let .malformed(why): tr("the ID token is not valid: %1$s", jose(why))
        }
    }
}
