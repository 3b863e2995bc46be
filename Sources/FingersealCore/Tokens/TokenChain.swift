import FingersealWire
import SodiumKit

/// The refresh-token chain in a vault: one refresh at a time, rotation-safe.
public enum TokenChain {
    public static let refreshTokenRecord = "refresh-token"
    /// A confidential client's secret, sealed at sign-in.
    public static let clientSecretRecord = "client-secret"
    /// The key a bound sign-in proves possession of (RFC 9449), sealed at sign-in
    /// (`ProofKeyMaterial`: the TPM's key object and authValue, or a software key's private half).
    public static let proofKeyRecord = "proof-key"

    /// Makes the client for the sign-in the vault holds (its provider; for a confidential
    /// client, its secret; for a bound sign-in, its proof key). Called under the vault lock;
    /// it must not talk to the network.
    public typealias ClientFactory = (ProviderRecord, _ clientSecret: SecureBytes?, _ proofKey: SecureBytes?) throws(TokenFailure)
        -> any TokenClient

    /// What a refresh's answer says of who is signed in, compared with what the vault holds.
    public enum IdentityAfterRefresh: Sendable {
        /// The same account, or nothing to check with.
        case unchanged
        /// First learnt now (a sign-in from before the binding, or one the provider did not
        /// name), or the same account with other details (a new e-mail address).
        case learnt(SignedInIdentity)
        /// Another account than the one that signed in (or, with `user_claim`, not this user's).
        case otherAccount
    }

    /// Checks a refresh's answer (a verified ID token, or userinfo with the fresh access
    /// token); throws when it cannot tell. Called under the vault lock, after the rotated
    /// refresh token is in the update.
    /// `client` is the one that refreshed (a bound sign-in's proves possession of its key,
    /// which userinfo needs too).
    public typealias IdentityCheck = (TokenSet, ProviderRecord, SignedInIdentity?, _ client: any TokenClient) throws(TokenFailure)
        -> IdentityAfterRefresh

    /// Refreshes with the client the vault's sign-in names.
    public static func refresh(_ vault: UnlockedVault, offlineGrace: Int, clock: any Clock = SystemClock(),
                               makeClient: ClientFactory, identity: IdentityCheck? = nil) throws -> TokenRefresh {
        try refresh(vault, offlineGrace: offlineGrace, clock: clock, identity: identity) { editor throws(TokenFailure) in
            guard let provider = editor.provider else { throw .badConfiguration(.noProvider) }
            let secret: SecureBytes?
            do { secret = provider.confidential == true ? try editor.secret(clientSecretRecord) : nil } catch {
                throw .badConfiguration(.clientSecretUnreadable)
            }
            if provider.confidential == true && secret == nil { throw .badConfiguration(.clientSecretMissing) }
            var proofKey: SecureBytes? = nil
            if provider.boundToKey {
                // A bound refresh token is worth nothing without its key: no bearer attempt.
                do { proofKey = try editor.secret(proofKeyRecord) } catch { throw .badConfiguration(.proofUnavailable) }
                if proofKey == nil { throw .badConfiguration(.proofUnavailable) }
            }
            return try makeClient(provider, secret, proofKey)
        }
    }

    /// Refreshes with a given client.
    public static func refresh(_ vault: UnlockedVault, client: any TokenClient, offlineGrace: Int,
                               clock: any Clock = SystemClock(), identity: IdentityCheck? = nil) throws -> TokenRefresh {
        try refresh(vault, offlineGrace: offlineGrace, clock: clock, identity: identity) { _ throws(TokenFailure) in client }
    }

    /// Refreshes under the vault's exclusive lock, so two unlocks (the CLI and PAM at once)
    /// never send the same refresh token: the second waits, then reads the rotated one.
    ///
    /// A response lost after the request left (a timeout, a crash) is handled on purpose: the
    /// vault still holds the token that was sent, and the next unlock sends it once more. An
    /// IdP that did not rotate, or allows a short reuse window, answers normally; one that did
    /// rotate and protects against reuse answers `invalid_grant`, which ends the chain
    /// cleanly (sign-in required) instead of failing silently.
    private static func refresh(_ vault: UnlockedVault, offlineGrace: Int, clock: any Clock, identity: IdentityCheck?,
                                client: (VaultEditor) throws(TokenFailure) -> any TokenClient) throws -> TokenRefresh {
        try vault.update { editor -> TokenRefresh in
            if let unrefreshable = TokenRefresh(without: editor.signIn) { return unrefreshable }
            guard let refreshToken = try editor.secret(refreshTokenRecord) else { return .notSignedIn }
            let tokens: TokenSet
            let tokenClient: any TokenClient
            do throws(TokenFailure) {
                tokenClient = try client(editor)
                tokens = try tokenClient.refresh(refreshToken)
            } catch {
                switch error {
                case .chainEnded:
                    editor.setSignIn(.required)
                    return .signInRequired
                case let .proofRefused(code):
                    return .proofRefused(code)
                case let .unreachable(why):
                    guard let last = editor.lastRefreshAt, clock.now() - last <= Int64(offlineGrace) else {
                        return .unreachable(Messages.reason(why))
                    }
                    return .offline(since: last)
                default:
                    // Garbage or a refusal: the refresh token is kept, unchanged.
                    return .failed(Messages.reason(error))
                }
            }
            if let rotated = tokens.refreshToken { try editor.setSecret(refreshTokenRecord, rotated) }
            editor.setLastRefresh(clock.now())
            // Whatever the identity check says, the rotated token is in this update: it is
            // written, or (another account) the chain ends with it.
            if let identity, let provider = editor.provider {
                do throws(TokenFailure) {
                    switch try identity(tokens, provider, editor.identity, tokenClient) {
                    case .unchanged: break
                    case let .learnt(who): editor.setIdentity(who)
                    case .otherAccount:
                        editor.endChain()
                        return .otherAccount
                    }
                } catch {
                    return .failed("the answer's identity could not be checked: \(Messages.reason(error))")
                }
            }
            return .refreshed(tokens)
        }
        // update() has sealed and fsync'd the rotated token before the caller sees it.
    }
}

/// How a refresh of the sealed sign-in went.
public enum TokenRefresh {
    /// A fresh access token; the rotated refresh token is already sealed and fsync'd.
    case refreshed(TokenSet)
    /// The IdP could not be reached, and the last refresh is within the offline grace.
    case offline(since: Int64)
    /// No sign-in in this vault.
    case notSignedIn
    /// The IdP ended the chain (now or earlier): `fingerseal login` is needed.
    case signInRequired
    /// The refresh named another account: the chain is ended here; `fingerseal login`.
    case otherAccount
    /// Unreachable beyond the offline grace. The refresh token is kept.
    case unreachable(String)
    /// A refusal, or an answer that is not a token. The refresh token is kept.
    case failed(String)
    /// The provider refused this computer's proof of possession (most often a clock far off).
    /// The refresh token is kept.
    case proofRefused(String)

    /// What a vault's sign-in gives without asking the identity provider: nothing to refresh
    /// (never signed in, or the chain ended); nil for an active sign-in, which is refreshed.
    public init?(without signIn: SignInState) {
        switch signIn {
        case .none: self = .notSignedIn
        case .required: self = .signInRequired
        case .active: return nil
        }
    }

    /// The one table of what a refresh means for the unlock before it (every channel, every
    /// purpose): the outcome, the sentence for the person (empty: nothing to say), and what
    /// the log adds. `required`: a token or nothing (`require_token`, the CLI's `unlock` and
    /// `token`); otherwise a token problem lets a PAM stack go on to the password.
    public func verdict(required: Bool) -> (outcome: Outcome, sentence: String, detail: String) {
        switch self {
        case .refreshed:
            return (.success, "", "token refreshed")
        case .offline:
            return (.success, "", "identity provider unreachable, within the offline grace")
        case .notSignedIn:
            return required ? (.signInRequired, Messages.notSignedIn, "not signed in") : (.success, "", "")
        case .signInRequired:
            return (required ? .signInRequired : .unavailable, Messages.signInRequired, "sign-in required")
        case .otherAccount:
            return (required ? .signInRequired : .unavailable, Messages.identityChanged, "the refresh named another account")
        case let .unreachable(why):
            return (required ? .tokenUnavailable : .unavailable, Messages.idpUnreachable,
                    "identity provider unreachable beyond the offline grace: \(why)")
        case let .failed(why):
            return (required ? .tokenUnavailable : .unavailable, Messages.idpRefused, "identity provider gave no token: \(why)")
        case let .proofRefused(code):
            return (required ? .tokenUnavailable : .unavailable, Messages.idpRefusedProof,
                    "identity provider refused this computer's proof: \(code)")
        }
    }

    public var step: TokenStep {
        switch self {
        case .refreshed: return .refreshed
        case .offline: return .offline
        case .notSignedIn: return .notSignedIn
        case .signInRequired, .otherAccount: return .signInRequired
        case .unreachable: return .unreachable
        case .failed, .proofRefused: return .failed
        }
    }

    /// The fresh tokens, nil when offline within the grace; for the rest, the verdict of a
    /// request that needs the token, thrown.
    public func tokens() throws -> TokenSet? {
        if case let .refreshed(tokens) = self { return tokens }
        let verdict = verdict(required: true)
        guard verdict.outcome == .success else { throw FingersealError(verdict.outcome, verdict.sentence, detail: verdict.detail) }
        return nil
    }
}
