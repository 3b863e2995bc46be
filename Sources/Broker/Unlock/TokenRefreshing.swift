import CurlKit
import FingersealCore
import IdentityClient
import JOSEKit

/// The refresh of the sealed sign-in after an unlock: the rotated refresh token is sealed
/// before the access token is returned, and each answer's identity is checked.
enum TokenRefreshing {
    /// The refresh, with the identity provider the vault names; throws vault errors. Each
    /// answer's identity is checked against who signed in (and, with `user_claim`, against
    /// the Linux account): another account ends the chain.
    static func refresh(_ call: Call, _ vault: UnlockedVault, clock: any Clock = SystemClock()) throws -> TokenRefresh {
        let options = call.settings
        return try TokenChain.refresh(vault, offlineGrace: options.offlineGrace, clock: clock,
                                      makeClient: OAuthClient.factory(options, tpm: vault.store.tpm), identity: identityAfterRefresh(call))
    }

    /// What a refresh's answer says of who is signed in. With `user_claim`, every refresh is
    /// checked (the ID token, else userinfo: one more request); without it, only an ID token
    /// that came with the answer is (no request beyond a JWKS fetch now and then).
    static func identityAfterRefresh(_ call: Call) -> TokenChain.IdentityCheck {
        let options = call.settings
        let user = call.account.name
        let cache = call.state.jwks
        return { tokens, provider, earlier, client throws(TokenFailure) in
            guard options.userClaim != nil || tokens.idToken != nil else { return .unchanged }
            guard let claims = try IdentityVerification.verifiedIdentity(tokens: tokens, provider: provider, nonce: nil,
                                                                  http: HTTPClient(options: options),
                                                                  cache: cache, now: SystemClock().now(),
                                                                  binding: (client as? OAuthClient)?.binding) else {
                return .unchanged
            }
            let later = SignedInIdentity(claims)
            if let earlier, !IdentityBinding.isSameAccount(later, as: earlier) { return .otherAccount }
            // With user_claim, the answer must still name this user (a sign-in from before
            // the binding, or a provider that renamed the account, included).
            let verdict: IdentityBinding.Verdict
            do { verdict = try IdentityBinding.check(later, user: user, options: options) } catch {
                throw .badConfiguration(.userMapUnreadable)
            }
            guard verdict == .matches else { return .otherAccount }
            if earlier == later { return .unchanged }
            return .learnt(later)
        }
    }
}

extension SignedInIdentity {
    init(_ claims: IDTokenClaims) {
        self.init(subject: claims.subject, preferredUsername: claims.preferredUsername, email: claims.email)
    }
}

