import FingersealCore
import FingersealWire
import IdentityClient
import SodiumKit

/// unlock, token, logout. The access token goes back only in the reply (`Reply.token`), and
/// in the JSON output where the command line's JSON always carried it.
enum TokenCommands {
    struct UnlockReport: Encodable {
        let result: String
        let method: String
        let finger: String?
        /// "refreshed", or "offline" (the IdP is unreachable, within the offline grace).
        let token: String
        let expiresAt: Int64?
        var accessToken: String? = nil
        /// With the token: Bearer, or DPoP (each request then needs `fingerseal proof`).
        var tokenType: String? = nil
    }

    static func describe(_ unlocked: Unlocked) -> String {
        Messages.unlockedWith(unlocked.method, finger: unlocked.finger)
    }

    static func text(_ token: AccessToken) -> String {
        token.token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// The reply that hands `token` to the client (for --print-token, --exec, token).
    static func handing(_ token: AccessToken, method: UnlockMethod? = nil) -> Reply {
        var reply = Reply(.success, token: token.token.withUnsafeBytes { Array($0) }, expiresAt: token.expiresAt, method: method?.rawValue)
        reply.tokenType = token.scheme
        return reply
    }

    /// The one unlock flow for a token; its failure is the command's error.
    static func unlockAndRefresh(_ call: Call) throws -> (unlocked: Unlocked, step: TokenStep, token: AccessToken?, cached: Bool) {
        let result = UnlockFlow.run(call, try UnlockRequest.forChannel(call, .accessToken))
        if let error = result.error { throw error }
        guard let unlocked = result.unlocked, let refresh = result.refresh else {
            throw FingersealError(.systemError, Messages.systemFailure(.finishRequest))
        }
        return (unlocked, refresh.step, result.token, result.cachedToken)
    }

    // MARK: unlock

    /// `--exec COMMAND` is the client's: it sends the flag, runs COMMAND itself with the
    /// token from the reply, and never sends COMMAND.
    /// What may be combined was checked when the call was made (`UnlockOptions.validate`).
    static func unlock(_ call: Call) throws -> Reply {
        let given = call.options(for: UnlockOptions.self)
        let exec = given.exec
        let (unlocked, step, held, cached) = try unlockAndRefresh(call)
        let report = UnlockReport(result: "unlocked", method: unlocked.method.rawValue, finger: unlocked.finger,
                                  token: step.rawValue, expiresAt: held?.expiresAt)
        let wantsToken = exec || given.printToken
        guard let token = held else {
            if wantsToken { throw FingersealError(.unavailable, Messages.offlineNoToken) }
            if call.json {
                try call.printJSON(report)
                return Reply(.success)
            }
            call.conversation.output(describe(unlocked))
            call.conversation.info(Messages.offlineNoToken)
            return Reply(.success)
        }
        if exec { return handing(token, method: unlocked.method) }
        if call.json {
            var full = report
            if given.printToken {
                full.accessToken = text(token)
                full.tokenType = token.scheme
            }
            try call.printJSON(full)
            return given.printToken ? handing(token, method: unlocked.method) : Reply(.success)
        }
        if given.printToken { return handing(token, method: unlocked.method) }
        let minutes = Int(max(token.expiresAt - SystemClock().now(), 0) / 60)
        call.conversation.output(describe(unlocked) + " "
                                 + (cached ? Messages.cachedTokenReady(minutes) : Messages.tokenReady(minutes)))
        return Reply(.success)
    }

    // MARK: token

    /// The session's token while it is valid for `--min-valid` more seconds (default 60);
    /// otherwise an unlock first.
    static func token(_ call: Call) throws -> Reply {
        let margin = call.options(for: TokenOptions.self).minValid ?? 60
        let now = SystemClock().now()
        let token: AccessToken?
        if let held = call.state.sessions.token(call.session), held.isValid(at: now, margin: Int64(margin)) {
            token = held
        } else {
            token = try unlockAndRefresh(call).token
        }
        guard let token else { throw FingersealError(.unavailable, Messages.offlineNoToken) }
        if call.json {
            struct TokenReport: Encodable { let accessToken: String; let expiresAt: Int64; let tokenType: String }
            try call.printJSON(TokenReport(accessToken: text(token), expiresAt: token.expiresAt, tokenType: token.scheme))
        }
        return handing(token)
    }

    // MARK: logout

    static func logout(_ call: Call) throws -> Reply {
        let store = call.store
        guard let status = try Vault.status(store) else { throw FingersealError(.noVault, Messages.noVault) }
        guard status.signIn != .none, let provider = status.provider else {
            throw FingersealError(.signInRequired, Messages.notSignedIn)
        }
        // A sensitive operation: the PIN, not a finger.
        let vault = try recordingFailure(.signOut, AuditTrail(store: store)) { try PINEntry.unlock(call, store: store) }
        var revoked = false
        var warning: String? = nil
        if status.signIn == .active, let refreshToken = try vault.secret(TokenChain.refreshTokenRecord) {
            do throws(TokenFailure) {
                let secret = (try? vault.secret(TokenChain.clientSecretRecord)) ?? nil
                revoked = try OAuthClient(provider: provider, clientSecret: secret, options: call.settings).revoke(refreshToken)
                if !revoked { warning = Messages.notRevocable }
            } catch {
                warning = Messages.revokeFailed(error)
            }
        }
        // The sign-in goes even when the provider could not be told: the user asked for it.
        try vault.update { $0.signedOut() }
        AuditTrail(store: store).record(.logout, vault: vault)
        // Every session's token came from the sign-in that just ended.
        call.state.sessions.dropTokens(call.account.uid)
        if call.json {
            struct LogoutReport: Encodable { let result: String; let revoked: Bool; let message: String? }
            try call.printJSON(LogoutReport(result: "signed-out", revoked: revoked, message: warning))
            return Reply(.success)
        }
        if let warning { call.conversation.info(warning) }
        call.conversation.output(Messages.loggedOut)
        return Reply(.success)
    }
}
