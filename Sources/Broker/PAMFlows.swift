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
        // No person can answer (a mail or VPN server using common-auth): no scan, no PIN.
        guard isInteractive(call, pam) else {
            log(call, AuthenticationResult(.unavailable, "no person to answer (no tty, no display, no login session)"))
            return Reply(.unavailable)
        }
        // stepup=CONTEXT: a confirmation held in this session answers at once, for the
        // requests the fingerprint would be offered to (not remote unless allowed, only_group).
        if let context = options.stepUp, !request.isRemote || options.allowRemote,
           options.onlyGroup.map({ call.account.isMember(ofGroup: $0) }) ?? true,
           let held = call.state.sessions.grant(call.session, context, now: SystemClock().now()) {
            log(call, AuthenticationResult(.success, "step-up for \(context) held (\(held.method))"))
            return Reply(.success)
        }
        var accessToken: AccessToken? = nil
        let scan: Authentication.FingerprintStep = { store, ledger, status in
            let result = Unlocking.scan(call, store: store, ledger: ledger, via: .pam)
            guard case let .matched(vault, finger) = result else {
                if case let .failed(failure) = result { return failure }
                return AuthenticationResult(.systemError, "scan")
            }
            // Only a signed-in vault talks to the identity provider (and writes the vault).
            guard status.signIn == .active else { return AuthenticationResult(.success, "matched \(finger)") }
            let (step, token) = Unlocking.refresh(vault, options)
            accessToken = token
            return AuthenticationResult(.success, "matched \(finger)", tokenStep: step)
        }
        let refreshAfterPIN = { () -> TokenStep in
            guard let vault = try? Vault.unlockWithDevice(call.store) else { return .failed }
            let (step, token) = Unlocking.refresh(vault, options)
            accessToken = token
            return step
        }
        var authentication = Authentication(request: request, prompter: call.conversation,
                                            locate: { [state = call.state] in state.store(for: $0) })
        authentication.auditSink = .syslog
        let result = authentication.run(fingerprint: scan, refreshAfterPIN: refreshAfterPIN) {
            // The PIN goes from the packet straight into secure memory.
            (try? call.conversation.askSecret(.pin, Messages.enterPIN)) ?? nil
        }
        log(call, result)
        var reply = Reply(result.outcome)
        if result.outcome == .success, let accessToken {
            // For this session (sudo in a terminal) and for the one the login opens.
            call.state.sessions.setToken(call.session, accessToken)
            reply.ticket = call.state.sessions.makeTicket(uid: call.account.uid, token: accessToken)
        }
        if let context = options.stepUp {
            let store = call.store
            AuditTrail(store: store).record(.stepUp(context: context, result: result.outcome), vault: try? Vault.unlockWithDevice(store))
            if result.outcome == .success {
                call.state.sessions.setGrant(call.session, context, Grant(method: (result.method ?? .finger).rawValue,
                                                                           expiresAt: SystemClock().now() + Int64(options.stepUpTTL),
                                                                           holder: nil))
            }
        }
        return reply
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

    /// Hands the access token authentication obtained to the session now opening.
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
