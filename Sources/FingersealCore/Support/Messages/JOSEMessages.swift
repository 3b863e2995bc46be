import JOSEErrors
import Localization

/// JOSEKit's refusals in words: short phrases that go inside the token failures' reasons
/// ("the userinfo answer is not valid: %1$s", TokenMessages.swift). JOSEKit itself only says
/// what failed (JOSEError, which the core sees without linking libcrypto).
extension Messages {
    public static func jose(_ problem: JOSEError.Malformation) -> String {
        switch problem {
        case let .tokenTooLarge(limit): tr("the token is larger than %1$s bytes", limit)
        case let .userinfoTooLarge(limit): tr("the userinfo answer is larger than %1$s bytes", limit)
        case let .keySetTooLarge(limit): tr("the key set is larger than %1$s bytes", limit)
        case let .tooManyKeys(limit): tr("the key set has more than %1$s keys", limit)
        case .notSignedJWT: tr("the token is not a signed JWT (three dot-separated parts)")
        case .notBase64URL: tr("the token is not valid base64url")
        case .criticalExtensions: tr("the token header has critical extensions")
        case let .notJSONObject(part): tr("%1$s is not a valid JSON object", jose(part))
        case let .repeatedMember(part): tr("%1$s repeats a member", jose(part))
        }
    }

    public static func jose(_ part: JOSEError.Part) -> String {
        switch part {
        case .claims: tr("the token's claims")
        case .header: tr("the token header")
        case .userinfo: tr("the userinfo answer")
        case .keySet: tr("the key set")
        }
    }

    public static func jose(_ problem: JOSEError.ClaimProblem) -> String {
        switch problem {
        case .missing(.sub): tr("sub is missing")
        case .missing(.iss): tr("iss is missing")
        case .missing(.aud): tr("aud is missing")
        case .missing(.exp): tr("exp is missing")
        case .missing(.iat): tr("iat is missing")
        case .wrongIssuer: tr("iss is not this provider")
        case .notForThisClient: tr("aud does not name this client")
        case .noAuthorizedParty: tr("aud names several clients and azp is missing")
        case .wrongAuthorizedParty: tr("azp is another client")
        case .expired: tr("the token expired")
        case .issuedInTheFuture: tr("the token was issued in the future")
        case .nonceMissing: tr("the nonce is missing")
        case .nonceMismatch: tr("the nonce does not match this sign-in")
        }
    }

    /// Any JOSE refusal as a short phrase.
    public static func jose(_ error: JOSEError) -> String {
        switch error {
        case let .malformed(problem): jose(problem)
        case let .claim(problem): jose(problem)
        case .unsupportedAlgorithm: tr("an algorithm that is not accepted")
        case .unknownKey: tr("an unknown key")
        case .badSignature: tr("a signature that does not verify")
        }
    }
}
