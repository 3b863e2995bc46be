import SodiumKit

/// The refresh-token chain in a vault: one refresh at a time, rotation-safe.
public enum TokenChain {
    public static let refreshTokenRecord = "refresh-token"

    public enum Result {
        /// A fresh access token; the rotated refresh token is already sealed and fsync'd.
        case refreshed(TokenSet)
        /// The IdP could not be reached, and the last refresh is within the offline grace.
        case offline(since: Int64)
    }

    /// Refreshes under the vault's exclusive lock, so two unlocks (the CLI and PAM at once)
    /// never send the same refresh token: the second waits, then reads the rotated one.
    ///
    /// A response lost after the request left (a timeout, a crash) is handled on purpose: the
    /// vault still holds the token that was sent, and the next unlock sends it once more. An
    /// IdP that did not rotate, or allows a short reuse window, answers normally; one that did
    /// rotate and protects against reuse answers `invalid_grant`, which ends the chain
    /// cleanly (sign-in required) instead of failing silently.
    public static func refresh(_ vault: UnlockedVault, client: TokenClient, offlineGrace: Int,
                               clock: any Clock = SystemClock()) throws -> Result {
        enum Step { case refreshed(TokenSet), offline(since: Int64), ended }
        let step = try vault.update { editor -> Step in
            if editor.signIn == .required { return .ended }
            guard let refreshToken = try editor.secret(refreshTokenRecord) else { return .ended }
            let tokens: TokenSet
            do throws(TokenFailure) {
                tokens = try client.refresh(refreshToken)
            } catch {
                switch error {
                case .chainEnded:
                    editor.setSignIn(.required)
                    return .ended
                case let .unreachable(why):
                    guard let last = editor.lastRefreshAt, clock.now() - last <= Int64(offlineGrace) else {
                        throw FingersealError(.unavailable, Messages.idpUnreachable, detail: why)
                    }
                    return .offline(since: last)
                default:
                    // Garbage or a refusal: the refresh token is kept, unchanged.
                    throw FingersealError(.unavailable, Messages.idpRefused, detail: "\(error)")
                }
            }
            if let rotated = tokens.refreshToken { try editor.setSecret(refreshTokenRecord, rotated) }
            editor.setLastRefresh(clock.now())
            editor.setSignIn(.active)
            return .refreshed(tokens)
        }
        // update() has sealed and fsync'd the rotated token before anything below runs.
        switch step {
        case let .refreshed(tokens): return .refreshed(tokens)
        case let .offline(since): return .offline(since: since)
        case .ended: throw FingersealError(.signInRequired, Messages.signInRequired)
        }
    }
}
