import FingersealCore
import Glibc
import IdentityClient
import JOSEKit

/// A provisioning sign-in a stranger cannot relay (issue 31 §2; RFC 8628 §5.4 and the OAuth
/// working group's cross-device flows security BCP). The attack: someone at the kiosk types
/// the name of a member who has no account here yet and sends the code to that member, who
/// approves it on their own phone, already signed in at the provider. So the sign-in asks the
/// provider for a fresh authentication and checks that one happened after the code was shown
/// (`auth_time`), tells the person which computer asks, and waits only a short time.
extension Provisioning {
    /// How far before the code was asked for a provider's `auth_time` may lie: clocks differ.
    static let authTimeSkew: Int64 = 60

    /// This computer's name as the person is told it: the administrator's, else the host name.
    static func deviceName(_ options: Options) -> String {
        if let name = options.provisionDeviceName { return name }
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The device authorization request's parameters beyond the scope: OIDC's request for a
    /// fresh sign-in (Core 3.1.2.1; providers that do not know them ignore them, RFC 6749
    /// §3.1), and this computer's name under the parameter the administrator named.
    static func deviceParameters(_ options: Options, deviceName: String) -> [(name: String, value: String)] {
        var parameters: [(name: String, value: String)] = []
        if options.provisionReauthenticate { parameters += [("max_age", "0"), ("prompt", "login")] }
        if let parameter = options.provisionDeviceNameParameter { parameters.append((parameter, deviceName)) }
        return parameters
    }

    /// The tokens with an ID token: as the grant gave them, or, where it gave none (oauthlib's
    /// device grant is not OIDC-aware), after one refresh, whose ID token keeps the time of
    /// the original authentication (OIDC Core 12.2). A refresh that rotates hands back the
    /// new refresh token; one that does not keeps the first.
    static func withIDToken(_ tokens: TokenSet, _ client: OAuthClient) throws(TokenFailure) -> TokenSet {
        guard tokens.idToken == nil, client.metadata.jwksURI != nil, let refreshToken = tokens.refreshToken else { return tokens }
        let refreshed = try client.refresh(refreshToken)
        return TokenSet(accessToken: refreshed.accessToken, refreshToken: refreshed.refreshToken ?? refreshToken,
                        expiresIn: refreshed.expiresIn, scope: refreshed.scope, idToken: refreshed.idToken,
                        boundToKey: refreshed.boundToKey)
    }

    /// `auth_time` as the provider signed it: from the verified ID token only (a userinfo
    /// answer, which `verifiedIdentity` falls back to, is not where OIDC puts it).
    static func signedAuthTime(_ claims: IDTokenClaims, _ tokens: TokenSet, _ client: OAuthClient) -> Int64? {
        tokens.idToken != nil && client.metadata.jwksURI != nil ? claims.authTime : nil
    }

    enum Freshness: Equatable {
        case fresh
        /// The provider did not say when the person authenticated.
        case missing
        /// Before the code was asked for: a session the approving device already had.
        case stale
    }

    /// Whether the person authenticated at the provider after the code was asked for (at
    /// `codeIssuedAt`, this computer's clock), within `authTimeSkew`.
    static func freshness(authTime: Int64?, codeIssuedAt: Int64) -> Freshness {
        guard let authTime else { return .missing }
        return authTime >= codeIssuedAt - authTimeSkew ? .fresh : .stale
    }
}
