import FingerprintFlows
import FingersealCore
import IdentityClient
import SodiumKit
import SystemKit

/// The PAM module's requests: authenticate, account, open and close a session.
enum PAMFlows {
    static func authenticate(_ call: Call) throws -> Reply {
        let pam = call.request.pam ?? PAMItems()
        let options = call.options
        let request = AuthenticationRequest(user: call.account.name, service: pam.service ?? "", remoteHost: pam.rhost,
                                            sshSession: call.caller.remote, options: options)
        // A service with a fingerprint conversation of its own (gdm-password beside
        // gdm-fingerprint): no opinion, at once, so no host scans twice or holds the reader
        // against another.
        if options.skipServices.contains(pam.service ?? "") {
            log(call, AuthenticationResult(.notApplicable, "skip_services names this service"))
            return Reply(.notApplicable)
        }
        // No person can answer (a mail or VPN server using common-auth): no scan, no PIN.
        guard isInteractive(call, pam) else {
            log(call, AuthenticationResult(.unavailable, "no person to answer (no tty, no display, no login session)"))
            return Reply(.unavailable)
        }
        // stepup=CONTEXT ttl=T: a confirmation made in this session within the stack's own T
        // seconds answers at once (whatever its maker asked for), for the requests the
        // fingerprint would be offered to (not remote unless allowed, only_group), and only
        // in a session of the account's own.
        let ttl = call.stepUpSeconds(options.stepUpTTL)
        if let context = options.stepUp, !request.isRemote || options.allowRemote,
           options.onlyGroup.map({ call.account.isMember(ofGroup: $0) }) ?? true, let key = call.grantSession,
           let held = call.state.sessions.grant(key, context, now: SystemClock().now(), madeWithin: Int64(ttl)) {
            log(call, AuthenticationResult(.success, "step-up for \(context) held (\(held.method))"))
            return Reply(.success)
        }
        var accessToken: AccessToken? = nil
        var vault: UnlockedVault? = nil
        let result = decide(call, request, accessToken: &accessToken, vault: &vault)
        audit(call, result, vault)
        log(call, result)
        var reply = Reply(result.outcome)
        if result.outcome == .success, let accessToken {
            // For this session (sudo in a terminal) and for the one the login opens.
            call.state.sessions.setToken(call.session, accessToken)
            reply.ticket = call.state.sessions.makeTicket(uid: call.account.uid, token: accessToken)
        }
        if let context = options.stepUp {
            AuditTrail(store: call.store).record(.stepUp(context: context, result: result.outcome), vault: vault)
            if result.outcome == .success, let key = call.grantSession {
                let now = SystemClock().now()
                call.state.sessions.setGrant(key, context, Grant(method: (result.method ?? .finger).rawValue, madeAt: now,
                                                                 expiresAt: now + Int64(ttl), holder: nil))
            }
        }
        return reply
    }

    /// The decision sequence of design §3 for a PAM host: who, from where, which vault, then
    /// the one unlock flow (a finger; the PIN with `pin`), then the token step. Every way
    /// that cannot go on gives an outcome that lets the stack go on to the password; success
    /// only ever comes from a match or a correct PIN.
    static func decide(_ call: Call, _ request: AuthenticationRequest, accessToken: inout AccessToken?,
                       vault opened: inout UnlockedVault?) -> AuthenticationResult {
        let options = call.options
        if let group = options.onlyGroup, !call.account.isMember(ofGroup: group) {
            return AuthenticationResult(.unavailable, "not a member of \(group)")
        }
        // Remote sessions do not get biometrics unless allowed.
        if request.isRemote && !options.allowRemote { return AuthenticationResult(.remoteSession, "remote session") }
        let store = call.store
        do {
            // Damaged, tampered or unsafe files: logged, nothing touched, the password next.
            guard let status = try Vault.status(store) else { return AuthenticationResult(.noVault, "no vault") }
            // prompt=none: a host that answers every prompt with the typed password (swaylock,
            // i3lock) is never asked, so a password is never counted as a wrong PIN.
            let pin: Unlocking.PINUse = options.pin && options.prompt != .none ? .fallback : .never
            let unlocked = try Unlocking.open(call, store: store, status: status, pin: pin)
            opened = unlocked.vault
            var result = AuthenticationResult(.success, unlocked.method == .pin ? "PIN" : "matched \(unlocked.finger ?? "a finger")")
            result.method = unlocked.method
            // Only a signed-in vault talks to the identity provider (and writes the vault).
            let step: TokenStep
            switch status.signIn {
            case .none: step = .notSignedIn
            case .required: step = .signInRequired
            case .active:
                let (refreshed, token) = Unlocking.refresh(call, unlocked.vault)
                accessToken = token
                step = refreshed
            }
            return step.applied(to: result, requireToken: options.requireToken, prompter: call.conversation)
        } catch let error as FingersealError {
            var result = AuthenticationResult(error.outcome, error.description)
            result.cause = error.cause
            return result
        } catch {
            return AuthenticationResult(.systemError, "\(error)")
        }
    }

    /// The audit trail of one decision (design §3: every unlock, fallback, lockout and failure
    /// is audited; failed scans and the finger's fallbacks are recorded by the flow). What
    /// says nothing to the person (no vault, not enrolled, remote) records nothing. A success
    /// is recorded right after the answer.
    static func audit(_ call: Call, _ result: AuthenticationResult, _ vault: UnlockedVault?) {
        let trail = AuditTrail(store: call.store)
        switch result.outcome.pamReturn {
        case .success:
            if let method = result.method { call.after.add { trail.record(.unlock(method: method, via: .pam), vault: vault) } }
        case .authInfoUnavailable:
            // The stack moves on to the password module.
            if ![.noVault, .notEnrolled, .remoteSession].contains(result.outcome) {
                trail.record(.fallback(reason: result.auditReason), vault: nil)
            }
        case .ignore, .userUnknown:
            break
        case .authError, .maxTries, .serviceError, .incomplete:
            trail.record(.failure(action: "unlock", reason: result.auditReason), vault: nil)
        }
    }

    /// A person can answer: a terminal, a display, a caller inside a login session, or a
    /// service the administrator named; never a service named as unattended.
    static func isInteractive(_ call: Call, _ pam: PAMItems) -> Bool {
        let service = pam.service ?? ""
        if call.options.unattendedServices.contains(service) { return false }
        if call.options.interactiveServices.contains(service) { return true }
        if let tty = pam.tty, !tty.isEmpty { return true }
        if let display = pam.xdisplay, !display.isEmpty { return true }
        return call.caller.inLoginSession
    }

    static func account(_ call: Call) throws -> Reply {
        let result = AccountCheck.run(call.store, prompter: call.conversation)
        log(call, result)
        // Only "sign-in required" is worth saying; the account itself is the password stack's
        // business, so no opinion otherwise.
        return Reply(result.outcome == .success ? .notApplicable : result.outcome)
    }

    /// Hands the access token authentication obtained to the session now opening, only when
    /// it opens for the user who authenticated: sudo (and su, the other way round) change
    /// PAM_USER between the two, and the new user's session never gets another's token. The
    /// authenticated user's own token and grants stay where authentication put them.
    static func openSession(_ call: Call) throws -> Reply {
        guard let ticket = call.request.ticket, let token = call.state.sessions.redeem(ticket, uid: call.account.uid) else {
            return Reply(.notApplicable)
        }
        call.state.sessions.setToken(call.session, token)
        return Reply(.success)
    }

    /// Drops this session's token and grants, and nothing of any other session.
    static func closeSession(_ call: Call) throws -> Reply {
        let dropped = call.state.sessions.dropSession(call.session)
        return Reply(dropped.token || dropped.grants > 0 ? .success : .notApplicable)
    }

    /// One line per decision at LOG_AUTHPRIV; never a secret. Quiet outcomes only with debug.
    static func log(_ call: Call, _ result: AuthenticationResult) {
        let quiet: Set<Outcome> = [.noVault, .remoteSession, .notEnrolled, .notApplicable]
        if quiet.contains(result.outcome) && !call.options.debug { return }
        let level: Syslog.Level = result.outcome.pamReturn == .authError ? .warning : .notice
        Syslog.log(level, "fingersealed: \(call.request.command.rawValue) \(result.outcome.rawValue) for user=\(call.account.name) "
                   + "service=\(call.request.pam?.service ?? "?") (\(call.caller)): \(result.detail)")
    }
}

extension Call {
    /// prompt=combined in a PAM conversation: one PIN prompt, asked while the reader waits.
    var asksCombined: Bool { request.pam != nil && options.prompt == .combined }
}
