import SodiumKit

/// The refresh-token chain in a vault: one refresh at a time, rotation-safe.
public enum TokenChain {
    public static let refreshTokenRecord = "refresh-token"
    /// A confidential client's secret, sealed at sign-in.
    public static let clientSecretRecord = "client-secret"

    /// Makes the client for the sign-in the vault holds (its provider and, for a confidential
    /// client, its secret). Called under the vault lock; it must not talk to the network.
    public typealias ClientFactory = (ProviderRecord, SecureBytes?) throws(TokenFailure) -> any TokenClient

    public enum Result {
        /// A fresh access token; the rotated refresh token is already sealed and fsync'd.
        case refreshed(TokenSet)
        /// The IdP could not be reached, and the last refresh is within the offline grace.
        case offline(since: Int64)
        /// No sign-in in this vault.
        case notSignedIn
        /// The IdP ended the chain (now or earlier): `fingerseal login` is needed.
        case signInRequired
        /// Unreachable beyond the offline grace. The refresh token is kept.
        case unreachable(String)
        /// A refusal, or an answer that is not a token. The refresh token is kept.
        case failed(String)

        public var step: TokenStep {
            switch self {
            case .refreshed: return .refreshed
            case .offline: return .offline
            case .notSignedIn: return .notSignedIn
            case .signInRequired: return .signInRequired
            case .unreachable: return .unreachable
            case .failed: return .failed
            }
        }

        /// The fresh tokens, nil when offline within the grace; throws for the rest.
        public func checked() throws -> TokenSet? {
            switch self {
            case let .refreshed(tokens): return tokens
            case .offline: return nil
            case .notSignedIn: throw FingersealError(.signInRequired, Messages.notSignedIn)
            case .signInRequired: throw FingersealError(.signInRequired, Messages.signInRequired)
            case let .unreachable(why): throw FingersealError(.unavailable, Messages.idpUnreachable, detail: why)
            case let .failed(why): throw FingersealError(.unavailable, Messages.idpRefused, detail: why)
            }
        }
    }

    /// Refreshes with the client the vault's sign-in names.
    public static func refresh(_ vault: UnlockedVault, offlineGrace: Int, clock: any Clock = SystemClock(),
                               makeClient: ClientFactory) throws -> Result {
        try refresh(vault, offlineGrace: offlineGrace, clock: clock) { editor throws(TokenFailure) in
            guard let provider = editor.provider else { throw .badConfiguration("the vault names no identity provider") }
            let secret: SecureBytes?
            do { secret = provider.confidential == true ? try editor.secret(clientSecretRecord) : nil } catch {
                throw .badConfiguration("the client secret in the vault cannot be read")
            }
            if provider.confidential == true && secret == nil { throw .badConfiguration("the client secret is missing") }
            return try makeClient(provider, secret)
        }
    }

    /// Refreshes with a given client.
    public static func refresh(_ vault: UnlockedVault, client: any TokenClient, offlineGrace: Int,
                               clock: any Clock = SystemClock()) throws -> Result {
        try refresh(vault, offlineGrace: offlineGrace, clock: clock) { _ throws(TokenFailure) in client }
    }

    /// Refreshes under the vault's exclusive lock, so two unlocks (the CLI and PAM at once)
    /// never send the same refresh token: the second waits, then reads the rotated one.
    ///
    /// A response lost after the request left (a timeout, a crash) is handled on purpose: the
    /// vault still holds the token that was sent, and the next unlock sends it once more. An
    /// IdP that did not rotate, or allows a short reuse window, answers normally; one that did
    /// rotate and protects against reuse answers `invalid_grant`, which ends the chain
    /// cleanly (sign-in required) instead of failing silently.
    private static func refresh(_ vault: UnlockedVault, offlineGrace: Int, clock: any Clock,
                                client: (VaultEditor) throws(TokenFailure) -> any TokenClient) throws -> Result {
        try vault.update { editor -> Result in
            if editor.signIn == .required { return .signInRequired }
            guard editor.signIn == .active, let refreshToken = try editor.secret(refreshTokenRecord) else { return .notSignedIn }
            let tokens: TokenSet
            do throws(TokenFailure) {
                tokens = try client(editor).refresh(refreshToken)
            } catch {
                switch error {
                case .chainEnded:
                    editor.setSignIn(.required)
                    return .signInRequired
                case let .unreachable(why):
                    guard let last = editor.lastRefreshAt, clock.now() - last <= Int64(offlineGrace) else {
                        return .unreachable(why)
                    }
                    return .offline(since: last)
                default:
                    // Garbage or a refusal: the refresh token is kept, unchanged.
                    return .failed("\(error)")
                }
            }
            if let rotated = tokens.refreshToken { try editor.setSecret(refreshTokenRecord, rotated) }
            editor.setLastRefresh(clock.now())
            return .refreshed(tokens)
        }
        // update() has sealed and fsync'd the rotated token before the caller sees it.
    }
}
