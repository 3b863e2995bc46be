import SodiumKit
import SystemKit

/// What a PAM `auth` call (and later `fingerseal unlock`) knows about its request.
public struct AuthenticationRequest: Sendable {
    public var user: String?
    public var service: String
    /// PAM_RHOST.
    public var remoteHost: String?
    /// SSH_CONNECTION, SSH_CLIENT or SSH_TTY present in the PAM or process environment.
    public var sshSession: Bool
    public var options: Options

    public init(user: String?, service: String, remoteHost: String?, sshSession: Bool, options: Options) {
        self.user = user
        self.service = service
        self.remoteHost = remoteHost
        self.sshSession = sshSession
        self.options = options
    }

    /// A login from another machine: an rhost that is not this one, or an SSH session.
    public var isRemote: Bool {
        if sshSession { return true }
        guard let host = remoteHost, !host.isEmpty else { return false }
        return !["localhost", "127.0.0.1", "::1"].contains(host)
    }
}

/// How an authentication ended, with what to log (never a secret).
public struct AuthenticationResult: Sendable {
    public let outcome: Outcome
    public let detail: String
    /// After a successful scan: how the token step went (the helper refreshes after a match).
    public var tokenStep: TokenStep?
    /// What opened the vault, when it was opened (kept when the token step changes the outcome).
    public var method: UnlockMethod?
    /// Why the fingerprint gave way to the PIN, when it did (an outcome name).
    public var fallback: String?

    public init(_ outcome: Outcome, _ detail: String, tokenStep: TokenStep? = nil) {
        self.outcome = outcome
        self.detail = detail
        self.tokenStep = tokenStep
    }

    /// Another outcome and detail for the same unlock: the method and fallback stay.
    public func replacing(_ outcome: Outcome, _ detail: String) -> AuthenticationResult {
        var result = AuthenticationResult(outcome, detail)
        result.method = method
        result.fallback = fallback
        return result
    }
}

/// The unlock decision sequence of design §2, steps 1-8. Each step that cannot go on
/// returns an outcome that lets the PAM stack move on to the password module; success only
/// ever comes from a match or a correct PIN.
public struct Authentication {
    public let request: AuthenticationRequest
    public let prompter: Prompter
    public let clock: any Clock
    /// Where audit events are logged (the PAM module: pam_syslog). The audit trail records
    /// them whatever the sink.
    public var auditSink: AuditSink = .none
    /// Where a user's vault is (the broker's store).
    public let locate: @Sendable (UserAccount) -> VaultStore

    /// The fingerprint step: given the user's vault and ledger, scan and return the outcome
    /// (`.success` on a match). Plugged in by whoever owns a reader.
    /// The vault's state is passed along: only a signed-in vault is refreshed after a match.
    public typealias FingerprintStep = (VaultStore, LockoutLedger, VaultStatus) -> AuthenticationResult

    public init(request: AuthenticationRequest, prompter: Prompter, clock: any Clock = SystemClock(),
                locate: @escaping @Sendable (UserAccount) -> VaultStore) {
        self.request = request
        self.prompter = prompter
        self.clock = clock
        self.locate = locate
    }

    /// `readPIN` asks for the PIN (no echo); nil or empty means the user skipped it.
    /// `refreshAfterPIN` refreshes the sealed sign-in after a correct PIN (after a match, the
    /// fingerprint step reports its own token step).
    public func run(fingerprint: FingerprintStep?, refreshAfterPIN: () -> TokenStep = { .failed },
                    readPIN: () -> SecureBytes?) -> AuthenticationResult {
        var store: VaultStore? = nil
        var pinVault: UnlockedVault? = nil
        let result = decide(fingerprint: fingerprint, refreshAfterPIN: refreshAfterPIN, readPIN: readPIN,
                            store: &store, pinVault: &pinVault)
        if let store { audit(result, store, pinVault) }
        return result
    }

    /// The audit trail of one decision (design §2: every unlock, fallback, lockout and
    /// failure is audited). A match is recorded by the fingerprint step, which holds the
    /// vault it opened (fingerseal-scan); an engaged lock by the ledger. Outcomes that say
    /// nothing to the user (no vault, not enrolled, remote) record nothing. Recording never
    /// changes the result.
    private func audit(_ result: AuthenticationResult, _ store: VaultStore, _ pinVault: UnlockedVault?) {
        var events: [AuditEvent] = []
        if let reason = result.fallback { events.append(.fallback(reason: reason)) }
        switch result.outcome.pamReturn {
        case .success:
            if result.method == .pin { events.append(.unlock(method: .pin, via: .pam)) }
        case .authInfoUnavailable:
            // The stack moves on to the password module.
            if ![.noVault, .notEnrolled, .remoteSession].contains(result.outcome) {
                events.append(.fallback(reason: result.outcome.rawValue))
            }
        case .ignore, .userUnknown:
            break
        case .authError, .maxTries, .serviceError, .incomplete:
            events.append(.failure(action: "unlock", reason: result.outcome.rawValue))
        }
        AuditTrail(store: store, clock: clock, sink: auditSink).record(events, vault: pinVault)
    }

    private func decide(fingerprint: FingerprintStep?, refreshAfterPIN: () -> TokenStep, readPIN: () -> SecureBytes?,
                        store resolved: inout VaultStore?, pinVault: inout UnlockedVault?) -> AuthenticationResult {
        let options = request.options
        // 1. The user and their vault.
        guard let name = request.user, !name.isEmpty else { return AuthenticationResult(.unknownUser, "no user name") }
        let account: UserAccount
        do {
            guard let found = try UserAccount.named(name) else { return AuthenticationResult(.unknownUser, "no such user") }
            account = found
        } catch {
            return AuthenticationResult(.systemError, "user lookup failed: \(error)")
        }
        if let group = options.onlyGroup, !account.isMember(ofGroup: group) {
            return AuthenticationResult(.unavailable, "not a member of \(group)")
        }
        // 2. Remote sessions do not get biometrics unless allowed.
        if request.isRemote && !options.allowRemote {
            return AuthenticationResult(.remoteSession, "remote session")
        }
        let status: VaultStatus
        let store: VaultStore
        do {
            store = locate(account)
            guard let found = try Vault.status(store) else { return AuthenticationResult(.noVault, "no vault") }
            status = found
            resolved = store
        } catch let error as FingersealError {
            // Damaged, tampered or unsafe files: say so in the log, touch nothing, fall back.
            return AuthenticationResult(error.outcome, error.description)
        } catch {
            return AuthenticationResult(.systemError, "\(error)")
        }
        let ledger = LockoutLedger(store: store, options: options, clock: clock, auditSink: auditSink)

        // 3-7. The fingerprint, when one is enrolled and a reader step is plugged in.
        var fallbackReason = AuthenticationResult(.notEnrolled, "no finger enrolled")
        if !status.fingers.isEmpty, let fingerprint {
            if status.lockout.fingerLocked {
                prompter.error(Messages.fingerLocked)
                fallbackReason = AuthenticationResult(.lockedOut, "fingerprint locked")
            } else {
                var scanned = fingerprint(store, ledger, status)
                if scanned.outcome == .success {
                    scanned.method = .finger
                    return tokenPolicy(scanned, status) { scanned.tokenStep ?? .failed }
                }
                fallbackReason = scanned
            }
        }

        // 8. The PIN, when the module offers it and one is set.
        guard options.pin, status.pinSet else {
            // Without a PIN step a failed match stays a failure; anything else moves on.
            return fallbackReason
        }
        // The fingerprint was tried (or locked) and gave way to the PIN.
        let fellBack = fallbackReason.outcome == .notEnrolled ? nil : fallbackReason.outcome.rawValue
        func pinResult(_ outcome: Outcome, _ detail: String) -> AuthenticationResult {
            var result = AuthenticationResult(outcome, detail)
            result.fallback = fellBack
            return result
        }
        guard let pin = readPIN(), pin.count > 0 else {
            return pinResult(.cancelled, "PIN skipped; " + fallbackReason.detail)
        }
        do {
            pinVault = try Vault.unlock(store, pin: PINKeyslot(pin: pin), ledger: ledger)
            var unlocked = pinResult(.success, "PIN")
            unlocked.method = .pin
            return tokenPolicy(unlocked, status, refreshAfterPIN)
        } catch let error as FingersealError {
            prompter.error(error.message)
            return pinResult(error.outcome, "PIN: " + error.description)
        } catch {
            return pinResult(.systemError, "PIN: \(error)")
        }
    }

    /// Step 9 of design §2: a vault that is signed in gets its token refreshed, and a token
    /// problem denies (require_token) or falls back. The vault's state decides whether the
    /// IdP is asked at all.
    private func tokenPolicy(_ unlocked: AuthenticationResult, _ status: VaultStatus,
                             _ refresh: () -> TokenStep) -> AuthenticationResult {
        let step: TokenStep
        switch status.signIn {
        case .none: step = .notSignedIn
        case .required: step = .signInRequired
        case .active: step = refresh()
        }
        return step.applied(to: unlocked, requireToken: request.options.requireToken, prompter: prompter)
    }
}
