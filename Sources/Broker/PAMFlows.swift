import FingersealCore
import FingersealWire
import SystemKit

/// The PAM module's requests: authenticate, account, open and close a session.
enum PAMFlows {
    /// `auth`: whether fingerseal is for this request at all (`admission`), then the one
    /// unlock flow with the stack's request; a PAM host is told the token step's sentence in
    /// the conversation, and a success's token goes on to the session through a ticket.
    /// `identified`: touch to sign in already matched this account's finger, in the vault
    /// session it read (`IdentifyFlow`).
    static func authenticate(_ call: Call, identified: (finger: String, session: VaultSession)?) throws -> Reply {
        if let refusal = admission(call) {
            log(call, refusal)
            return Reply(refusal.outcome)
        }
        var request = UnlockRequest.forPAMHost(call)
        request.identified = identified?.finger
        let result = UnlockFlow.run(call, request, session: identified?.session)
        if result.sentenceIsTheToken || saysWhatBroke(result, call.conversation) { call.conversation.error(result.sentence) }
        log(call, AuthenticationResult(result.outcome, result.detail))
        var reply = Reply(result.outcome)
        if result.outcome == .success, let token = result.token {
            reply.ticket = call.state.sessions.makeTicket(uid: call.account.uid, token: token)
        }
        reply.authtok = KeyringCommands.handOff(call, result)
        // A provisioned account is in use: its expiry starts again (after the answer). A user
        // name typed and proven ends a lock of touch to sign in (not a touch's own success),
        // before the answer: the next login may be a touch (it writes only when locked).
        if result.outcome == .success {
            let (state, name) = (call.state, call.account.name)
            call.after.add { Provisioning.noteUse(name, state: state) }
            if identified == nil { state.identifyHistory.signedInWithName() }
        }
        return reply
    }

    /// A vault or a system that failed the unlock is said at the end, when the flow did not
    /// say it already: otherwise the person at a login screen is offered the password with no
    /// word of why the finger was not (the log tells the administrator the rest).
    static func saysWhatBroke(_ result: UnlockResult, _ conversation: Conversation) -> Bool {
        [.systemError, .vaultUnusable].contains(result.outcome) && !result.sentence.isEmpty
            && !conversation.lastErrorWas(result.sentence)
    }

    /// What keeps fingerseal out of a request, at once and without a word: a service with a
    /// fingerprint conversation of its own (gdm-password beside gdm-fingerprint, so no host
    /// scans twice or holds the reader against another), no person to answer (a mail or VPN
    /// server using common-auth), an account outside `only_group`, a remote login without
    /// `allow_remote`.
    static func admission(_ call: Call) -> AuthenticationResult? {
        if let refusal = hostAdmission(call) { return refusal }
        if let group = call.settings.onlyGroup, !call.account.isMember(ofGroup: group) {
            return AuthenticationResult(.unavailable, "not a member of \(group)")
        }
        return nil
    }

    /// The part of `admission` that is the host's, whoever the account: what touch to sign
    /// in checks before it knows the account.
    static func hostAdmission(_ call: Call) -> AuthenticationResult? {
        let pam = call.channel.pam ?? PAMItems()
        let options = call.settings
        if options.skipServices.contains(pam.service ?? "") {
            return AuthenticationResult(.notApplicable, "skip_services names this service")
        }
        guard isInteractive(call, pam) else {
            return AuthenticationResult(.unavailable, "no person to answer (no tty, no display, no login session)")
        }
        if call.isRemote && !options.allowRemote { return AuthenticationResult(.remoteSession, "remote session") }
        return nil
    }

    /// A person can answer: a terminal, a display, a caller inside a login session, or a
    /// service the administrator named; never a service named as unattended.
    static func isInteractive(_ call: Call, _ pam: PAMItems) -> Bool {
        isInteractive(call.settings, call.caller, pam)
    }

    static func isInteractive(_ options: Options, _ caller: Caller, _ pam: PAMItems) -> Bool {
        let service = pam.service ?? ""
        if options.unattendedServices.contains(service) { return false }
        if options.interactiveServices.contains(service) { return true }
        if let tty = pam.tty, !tty.isEmpty { return true }
        if let display = pam.xdisplay, !display.isEmpty { return true }
        return caller.inLoginSession
    }

    /// pam.password-used (the `password_used` line after the password module) and
    /// pam.chauthtok (a new password was set): the host's PAM_AUTHTOK, taken only when the
    /// broker needs it (a password rule in force, the keyring's copy) and checked by the broker
    /// itself, so nothing a host claims counts. A checked password starts the password rule's
    /// time again and replaces a keyring copy that differs. At sign-in the check waits until
    /// after the reply (the person's login is not delayed); after a change it is made first.
    static func passwordTaken(_ call: Call, changed: Bool) throws -> Reply {
        // Also while touch to sign in is locked: a password the broker checks ends the lock.
        let identifyLocked = call.state.identifyHistory.isLocked(IdentifyLimits(call.settings))
        guard let status = try? Vault.status(call.store),
              status.keyring || PasswordRule(call.settings).isInForce || call.settings.setsPasswordRuleInSections || identifyLocked else {
            return Reply(.notApplicable)
        }
        guard let password = try call.conversation.askSecret(.accountPassword, "") else { return Reply(.notApplicable) }
        // A host the user runs could otherwise test guesses without a delay.
        let counted = !call.caller.isRoot
        let check = {
            guard AccountPassword.verify(call, password, counted: counted) else { return false }
            if !changed { call.state.identifyHistory.signedInWithName() }
            // The status read above says whether there is a copy: no vault opened without one.
            if status.keyring { KeyringCommands.passwordChecked(call, password) }
            return true
        }
        if !changed {
            call.after.add { _ = check() }
            return Reply(.success)
        }
        guard check() else {
            Syslog.log(.notice, "fingersealed: pam.chauthtok for user=\(call.account.name): the new password is not the account's "
                       + "yet; pam_fingerseal belongs after the module that sets it")
            return Reply(.notApplicable)
        }
        return Reply(.success)
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
    /// As with the audit trail, a success's line is written after the reply (syslog's socket
    /// is no reason to keep a person waiting), anything else's before it.
    static func log(_ call: Call, _ result: AuthenticationResult) {
        let quiet: Set<Outcome> = [.noVault, .remoteSession, .notEnrolled, .notApplicable]
        if quiet.contains(result.outcome) && !call.settings.debug { return }
        let level: Syslog.Level = result.outcome.pamReturn == .authError ? .warning : .notice
        let line = "fingersealed: \(call.request.command.rawValue) \(result.outcome.rawValue) for user=\(call.account.name) "
            + "service=\(call.channel.pam?.service ?? "?") (\(call.caller)): \(result.detail)"
        if result.outcome == .success { call.after.add { Syslog.log(level, line) } } else { Syslog.log(level, line) }
    }
}
