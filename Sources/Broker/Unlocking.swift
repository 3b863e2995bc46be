import FingerprintFlows
import FingersealCore
import IdentityClient
import SodiumKit
import SystemKit

/// The unlock steps every flow shares (PAM, unlock, token, step-up): one scan against the
/// user's prints through the broker's reader, and one refresh of the sealed sign-in.
enum Unlocking {
    enum ScanOutcome {
        case matched(UnlockedVault, finger: String)
        case failed(AuthenticationResult)
    }

    /// Scans until a match, the tries are used up, the timeout, or a cancel (a `cancel`
    /// message or a client that leaves). Failed matches are counted and audited; a cancel
    /// or a timeout never is.
    static func scan(_ call: Call, store: VaultStore, ledger: LockoutLedger, via channel: AuditChannel,
                     cancelHint: String? = nil, cancelFD: Int32? = nil) -> ScanOutcome {
        let settings = ScanSettings(timeout: Double(call.options.timeout), maxTries: call.options.maxTries,
                                    cancelHint: cancelHint ?? call.conversation.cancelHint)
        let trail = AuditTrail(store: store)
        do {
            let match = try call.state.reader.withReader(call.conversation, deviceID: call.value("--device")) { reader in
                try Fingerprint.verify(store: store, ledger: ledger, reader: reader, settings: settings,
                                       prompter: call.conversation, cancelFD: cancelFD ?? call.conversation.cancelFD)
            }
            trail.record(.unlock(method: .finger, via: channel), vault: match.vault)
            return .matched(match.vault, finger: match.finger)
        } catch let error as FingersealError {
            var outcome = error.outcome
            if outcome == .cancelled && cancelFD == nil && !call.conversation.takeCancel() { outcome = .unavailable }
            if [.noMatch, .triesExhausted].contains(outcome) {
                trail.record(.failure(action: "fingerprint scan", reason: outcome.rawValue), vault: nil)
            }
            if [.noMatch, .triesExhausted, .lockedOut, .timedOut].contains(outcome) { call.conversation.error(error.message) }
            return .failed(AuthenticationResult(outcome, error.description))
        } catch {
            return .failed(AuthenticationResult(.systemError, "\(error)"))
        }
    }

    /// Refreshes the sealed sign-in: the rotated refresh token is sealed before the access
    /// token is returned. Never throws: a token problem is a step the policy judges.
    static func refresh(_ vault: UnlockedVault, _ options: Options) -> (TokenStep, AccessTokenFile?) {
        do {
            let result = try TokenChain.refresh(vault, offlineGrace: options.offlineGrace, makeClient: OAuthClient.factory(options))
            if case let .refreshed(tokens) = result { return (.refreshed, AccessTokenFile(tokens, issuedAt: SystemClock().now())) }
            return (result.step, nil)
        } catch {
            return (.failed, nil)
        }
    }
}
