import FingerprintFlows
import FingersealCore
import FingersealWire
import SystemKit

/// One unlock, as its edge asked for it. PAM's `auth`, `unlock`, `token`, `step-up` and
/// `reveal` each build one (what their channel may ask is decided there, once) and render its
/// result; `UnlockFlow` runs it without looking at how it was asked.
struct UnlockRequest {
    /// What the unlock is for.
    enum Purpose: Equatable {
        /// A PAM host's authentication (a login, sudo, a lock screen).
        case authenticate
        /// The vault opened for a fresh access token (`unlock`, `token`).
        case accessToken
        /// A confirmation for a context (`step-up`, `reveal`): nothing is refreshed.
        case confirmation
    }

    /// What the unlock does with the sign-in.
    enum TokenPolicy: Equatable {
        /// Nothing: a confirmation only.
        case none
        /// A refresh when signed in; a token problem lets the stack go on to the password.
        case whenSignedIn
        /// A token or nothing (`require_token`, the CLI's `unlock` and `token`): the sign-in is
        /// checked before the finger is asked for, and a token problem denies.
        case required
    }

    /// A step-up confirmation the request accepts, or makes.
    struct Confirmation {
        let context: String
        /// Whose confirmations of the context count: the session's own (nil), or only those
        /// made with one application's grant key (`GrantName`).
        var scope: [UInt8]? = nil
        /// Only a new PIN counts (`--fresh`): no confirmation held is accepted.
        let fresh: Bool
        /// The oldest confirmation accepted, in seconds (a stack's `ttl=`); nil, any held.
        let acceptsWithin: Int?
        /// How long a confirmation this request makes lasts.
        let lasts: Int
        /// The connection that also holds it (`step-up CONTEXT -- COMMAND`).
        let holder: UInt64?
    }

    var purpose: Purpose
    var confirmation: Confirmation?
    var tokens: TokenPolicy
    /// Touch to sign in matched this finger of the account already: no scan is asked for.
    var identified: String? = nil
    /// Whether a finger is asked for at all (an application may allow only the PIN or the
    /// password).
    var finger = true
    /// When the PIN may open the vault.
    var pin: PINUse
    /// The account password may open the vault, checked by the broker (an application's
    /// dialog): after the PIN is skipped, or instead of it.
    var password = false
    /// The reader named on the command line; nil, the broker's choice.
    var deviceID: String?
    var scan: ScanSettings
    /// The client takes a typed PIN while the reader waits (a terminal).
    var pinWhileScanning: Bool
    /// A PAM stack's `prompt=`; nil for the command line. How a PAM host is offered the scan
    /// (how its prompt ends, a question while the reader waits) the channel decides from it
    /// once a scan is about to start (`FingerOrPIN`): the host's place on its terminal is read
    /// from /proc then, not for every request.
    var pamPrompt: PromptStyle?
    /// What the confirmations, the token's lifetime and the offline grace are judged by.
    var clock: any Clock = SystemClock()

    /// When the PIN may open the vault: never (a PAM stack without `pin`), when the finger
    /// cannot (the CLI, and PAM with `pin`), or only the PIN (`--pin`, `--pin-fd`, `--fresh`).
    enum PINUse { case never, fallback, only }
}

/// How an unlock ended: the outcome and its sentence, what opened the vault, the token.
struct UnlockResult {
    var outcome: Outcome
    /// The sentence for the person when it did not succeed; empty when nothing is to be said.
    var sentence: String = ""
    /// What the log says (never a secret).
    var detail: String
    /// What opened the vault, when it was opened.
    var unlocked: Unlocked? = nil
    /// A confirmation held in this session answered: nothing was asked.
    var held: Grant? = nil
    /// The vault the request opened (a held confirmation's through the device slot).
    var vault: UnlockedVault? = nil
    var token: AccessToken? = nil
    /// The token is the session's, kept from an earlier unlock (offline within the grace).
    var cachedToken = false
    /// How the refresh went, when there was one.
    var refresh: TokenRefresh? = nil

    /// The error the unlock stopped at, as it was thrown.
    private var failure: FingersealError? = nil

    /// The sentence is the token step's, which a PAM host is told in the conversation (what
    /// the unlock itself had to say was said as it happened).
    var sentenceIsTheToken: Bool { refresh != nil && !sentence.isEmpty }

    /// What lies behind a failure (the TPM's states), as the unlock threw it.
    var cause: FingersealError.Cause? { failure?.cause }

    var auditReason: AuditReason { cause.map(AuditReason.cause) ?? .outcome(outcome) }

    init(_ error: FingersealError) {
        outcome = error.outcome
        sentence = error.message
        detail = error.description
        failure = error
    }

    init(_ unlocked: Unlocked) {
        outcome = .success
        detail = unlocked.method == .pin ? "PIN" : "matched \(unlocked.finger ?? "a finger")"
        self.unlocked = unlocked
        vault = unlocked.vault
    }

    init(held: Grant, context: String, vault: UnlockedVault?) {
        outcome = .success
        detail = "step-up for \(context) held (\(held.method))"
        self.held = held
        self.vault = vault
    }

    /// The error the request ends with, for the edges that answer by throwing.
    var error: FingersealError? {
        outcome == .success ? nil : failure ?? FingersealError(outcome, sentence)
    }

    /// The vault a confirmation opened, for the commands that change it next; the error the
    /// request ended with otherwise.
    func confirmedVault() throws -> UnlockedVault {
        if let error { throw error }
        guard let vault else { throw FingersealError(.systemError, Messages.systemFailure(.finishRequest)) }
        return vault
    }

    /// How the request was answered, for the reply: finger, pin, password, or held.
    var method: String? {
        if held != nil { return "held" }
        return unlocked?.method.rawValue
    }

    /// How it was confirmed; nil when nothing was asked (a confirmation held answered).
    var askedWith: UnlockMethod? { unlocked?.method }
}

extension AuditEvent {
    /// What the session agent said of the application a request came from.
    init(asking application: Application, succeeded: Bool) {
        self = .application(busName: application.busName, executable: application.executable, appID: application.appID,
                            name: application.name, succeeded: succeeded)
    }
}

/// The unlock (design §3), written once for every channel and purpose: a confirmation held in
/// this session, else the vault read once, the finger (the PIN as the request allows), the
/// token step, the audit trail and what the session keeps. Success only ever comes from a
/// match, a correct PIN, or a confirmation held in a session of the account's own.
enum UnlockFlow {
    /// `session`: the request's vault session, when the edge read the vault already.
    static func run(_ call: Call, _ request: UnlockRequest, session given: VaultSession? = nil) -> UnlockResult {
        let session = given ?? VaultSession(call.store)
        if let held = heldConfirmation(call, request, session) { return held }
        var result: UnlockResult
        var unlocked: Unlocked? = nil
        do {
            let opened = try unlock(call, request, session)
            unlocked = opened
            result = UnlockResult(opened)
            if request.tokens != .none { try refresh(call, request, session, &result) }
        } catch {
            let failure = error as? FingersealError
                ?? FingersealError(.systemError, Messages.systemFailure(.finishRequest), detail: "\(error)")
            result = UnlockResult(failure)
            result.unlocked = unlocked
            result.vault = unlocked?.vault
        }
        record(call, request, result, session)
        keep(call, request, result)
        return result
    }

    /// A confirmation made in this session (within the request's own limit) answers at once;
    /// a held confirmation that needs the vault opens it through the device slot, or asks.
    private static func heldConfirmation(_ call: Call, _ request: UnlockRequest, _ session: VaultSession) -> UnlockResult? {
        guard let wanted = request.confirmation, !wanted.fresh, let key = call.grantSession,
              let held = call.state.sessions.grant(key, GrantName(wanted), now: request.clock.now(),
                                                   madeWithin: wanted.acceptsWithin.map(Int64.init)) else { return nil }
        // A PAM host needs only the answer; the command line's step-up and reveal the vault.
        guard request.purpose == .confirmation else { return UnlockResult(held: held, context: wanted.context, vault: nil) }
        guard let vault = try? session.unlockWithDevice() else { return nil }
        return UnlockResult(held: held, context: wanted.context, vault: vault)
    }

    /// The vault, read once; the sign-in checked first where only a token will do; then a
    /// finger or the PIN.
    private static func unlock(_ call: Call, _ request: UnlockRequest, _ session: VaultSession) throws -> Unlocked {
        // Damaged, tampered or unsafe files: nothing touched, the password next.
        guard let status = try session.status() else { throw FingersealError(.noVault, Messages.noVault) }
        // Say "sign in first" before asking for a finger that could not help.
        if request.tokens == .required, let unrefreshable = TokenRefresh(without: status.signIn) {
            let verdict = unrefreshable.verdict(required: true)
            throw FingersealError(verdict.outcome, verdict.sentence, detail: verdict.detail)
        }
        if let wanted = request.confirmation, request.purpose == .confirmation {
            call.conversation.info(Messages.stepUpPrompt(call.shownContext(wanted.context)))
        }
        let unlocked: Unlocked
        if let reason = PasswordDue.reason(call, status, now: request.clock.now()) {
            unlocked = try PasswordDue.unlock(call, reason, session: session)
        } else {
            unlocked = try FingerOrPIN.open(call, request, session: session, status: status)
        }
        session.opened(unlocked.vault)
        return unlocked
    }

    /// The token step after an unlock: the refresh the vault's sign-in allows, judged by the
    /// one table (`TokenRefresh.verdict`). Offline within the grace, `token` and `unlock` use
    /// the session's token while it is valid.
    private static func refresh(_ call: Call, _ request: UnlockRequest, _ session: VaultSession,
                                _ result: inout UnlockResult) throws {
        guard let unlocked = result.unlocked, let status = try session.status() else { return }
        let refresh = try TokenRefresh(without: status.signIn)
            ?? TokenRefreshing.refresh(call, unlocked.vault, clock: request.clock)
        let now = request.clock.now()
        let verdict = refresh.verdict(required: request.tokens == .required)
        result.refresh = refresh
        result.outcome = verdict.outcome
        result.sentence = verdict.sentence
        result.detail += verdict.detail.isEmpty ? "" : "; " + verdict.detail
        if case let .refreshed(tokens) = refresh {
            // A bound token keeps its key beside it: proofs for it need no new finger.
            let key = tokens.boundToKey ? try? unlocked.vault.secret(TokenChain.proofKeyRecord).map(ProofKeyMaterial.decode) : nil
            result.token = AccessToken(tokens, issuedAt: now, proofKey: key)
        } else if verdict.outcome == .success, request.purpose == .accessToken,
                  let held = call.state.sessions.token(call.session), held.isValid(at: now) {
            result.token = held
            result.cachedToken = true
        }
    }

    /// The audit trail of one unlock (design §3: every unlock, fallback, lockout and failure),
    /// written with the vault the request opened. Failures are persisted before the answer; a
    /// success's entries after it (`AfterReply`). What says nothing to the person (no vault,
    /// not enrolled, remote) records nothing; nor does a confirmation held (nothing asked).
    private static func record(_ call: Call, _ request: UnlockRequest, _ result: UnlockResult, _ session: VaultSession) {
        guard result.held == nil else { return }
        var events: [AuditEvent] = []
        if let unlocked = result.unlocked {
            if request.purpose != .confirmation {
                events.append(.unlock(method: unlocked.method, via: call.channel.audited))
            }
            if result.outcome != .success {
                events.append(.failure(action: .tokenRefresh, reason: result.auditReason))
            }
        } else if let failed = failureEvent(request, result) {
            events.append(failed)
        }
        if let wanted = request.confirmation, result.outcome != .usage {
            events.append(.stepUp(context: wanted.context, result: result.outcome))
        }
        if let application = call.channel.application, !events.isEmpty {
            events.insert(AuditEvent(asking: application, succeeded: result.outcome == .success), at: 0)
        }
        if result.outcome == .success {
            call.after.add { session.record(events) }
        } else {
            session.record(events)
        }
    }

    /// What a request that never opened the vault records: a PAM host's fallback to the
    /// password or its failure, the command line's failure.
    private static func failureEvent(_ request: UnlockRequest, _ result: UnlockResult) -> AuditEvent? {
        if [.usage, .noVault].contains(result.outcome) { return nil }
        switch request.purpose {
        case .confirmation:
            return nil // the step-up entry says it
        case .accessToken:
            return .failure(action: .unlock, reason: result.auditReason)
        case .authenticate:
            switch result.outcome.pamReturn {
            case .authInfoUnavailable:
                // The stack moves on to the password module.
                if [.notEnrolled, .remoteSession].contains(result.outcome) { return nil }
                return .fallback(reason: result.auditReason)
            case .ignore, .userUnknown, .success:
                return nil
            case .authError, .maxTries, .serviceError, .incomplete:
                return .failure(action: .unlock, reason: result.auditReason)
            }
        }
    }

    /// What the session keeps of a success: the fresh token (for this session, and through a
    /// ticket for the one a login opens), and a new confirmation, only in a session of the
    /// account's own.
    private static func keep(_ call: Call, _ request: UnlockRequest, _ result: UnlockResult) {
        guard result.outcome == .success, result.held == nil else { return }
        if let token = result.token, !result.cachedToken { call.state.sessions.setToken(call.session, token) }
        if let wanted = request.confirmation, let unlocked = result.unlocked, let key = call.grantSession {
            let now = request.clock.now()
            call.state.sessions.setGrant(key, GrantName(wanted),
                                         Grant(method: unlocked.method.rawValue, madeAt: now,
                                               expiresAt: now + Int64(min(max(wanted.lasts, 1), StepUp.maxTTL)),
                                               holder: wanted.holder))
        }
    }
}
