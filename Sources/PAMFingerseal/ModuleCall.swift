import FingersealCore
import Glibc
import PAMKit
import SodiumKit
import SystemKit

/// The PAM conversation as a Prompter.
struct ConversationPrompter: Prompter {
    let pam: PAMHandle
    func info(_ text: String) { pam.info(text) }
    func error(_ text: String) { pam.error(text) }
}

/// One call into the module: its options and its PAM handle.
struct ModuleCall {
    let pam: PAMHandle
    let arguments: [String]

    init(pam: PAMHandle, argc: Int32, argv: PAMArguments) {
        self.pam = pam
        var arguments: [String] = []
        if let argv, argc > 0 {
            for index in 0..<Int(argc) {
                if let argument = argv[index] { arguments.append(String(cString: argument)) }
            }
        }
        self.arguments = arguments
    }

    /// /etc/security/fingerseal.conf, then the module arguments (which win). Invalid values
    /// are logged and end the call with PAM_SERVICE_ERR; unknown names are logged.
    func options() -> Options? {
        do {
            var (options, warnings) = try Options.loadSystem()
            warnings += try options.apply(arguments, source: "module arguments")
            for warning in warnings { pam.log(.warning, warning) }
            return options
        } catch let error as FingersealError {
            pam.log(.error, "configuration: \(error.description)")
        } catch {
            pam.log(.error, "configuration: \(error)")
        }
        return nil
    }

    func request(_ options: Options) -> AuthenticationRequest {
        let ssh = ["SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY"].contains { pam.environment($0) != nil || getenv($0) != nil }
        return AuthenticationRequest(user: pam.user(), service: pam.item(.service) ?? "", remoteHost: pam.item(.rhost),
                                     sshSession: ssh, options: options)
    }

    func accountManagement() -> Outcome {
        guard let options = options() else { return .badConfiguration }
        let request = request(options)
        let result = AccountCheck.run(request, prompter: ConversationPrompter(pam: pam))
        log(result, request, action: "account")
        return result.outcome
    }

    /// The PAM data name under which authentication leaves the fresh access token.
    static let accessTokenData = "fingerseal-access-token"

    /// What both session calls need: the request, the account and its runtime directory.
    private func session(_ action: String, _ work: (UserAccount, String) throws -> Void) -> Outcome {
        guard let options = options() else { return .badConfiguration }
        let request = request(options)
        guard let name = request.user, let account = try? UserAccount.named(name) else { return .unknownUser }
        let runtime = SessionFiles.runtimeDirectory(for: account, environment: pam.environment("XDG_RUNTIME_DIR"))
        do {
            try work(account, runtime)
            return .success
        } catch let error as FingersealError {
            log(AuthenticationResult(error.outcome, error.description), request, action: action)
            return error.outcome
        } catch {
            return .systemError
        }
    }

    /// Places the access token authentication obtained (if it did) for the session.
    func openSession() -> Outcome {
        session("session open") { account, runtime in
            try pam.withSecretData(ModuleCall.accessTokenData) { token in
                if token.count > 0, try !SessionFiles.placeAccessToken(token, for: account, runtimeDirectory: runtime) {
                    pam.log(.notice, "access token not placed: \(runtime) is not in memory")
                }
            }
        }
    }

    /// Drops the session's access token and step-up grants.
    func closeSession() -> Outcome {
        session("session close") { account, runtime in
            _ = try SessionFiles.drop(for: account, runtimeDirectory: runtime)
        }
    }

    /// The step-up grants of the session this PAM call belongs to (`stepup=`).
    private func grants(for account: UserAccount) -> StepUpGrants {
        let runtime = SessionFiles.runtimeDirectory(for: account, environment: pam.environment("XDG_RUNTIME_DIR")
            ?? getenv("XDG_RUNTIME_DIR").map { String(cString: $0) })
        let session = pam.environment("XDG_SESSION_ID") ?? getenv("XDG_SESSION_ID").map { String(cString: $0) }
        return StepUpGrants(account: account, runtimeDirectory: runtime, identity: SessionIdentity.current(sessionVariable: session))
    }

    /// The vault of `request`'s user, opened through its device slot (asks nothing).
    private func deviceVault(_ request: AuthenticationRequest) -> (UserAccount, UnlockedVault)? {
        guard let name = request.user, let account = try? UserAccount.named(name),
              let location = try? VaultLocation.resolve(account: account, options: request.options, stateHome: nil),
              let vault = try? Vault.unlockWithDevice(VaultStore(location: location)) else { return nil }
        return (account, vault)
    }

    func authenticate() -> Outcome {
        guard let options = options() else { return .badConfiguration }
        let request = request(options)
        // stepup=CONTEXT: the user's vault, opened through its device slot once, serves both
        // the held-grant check and recording the new grant.
        let stepUp = options.stepUp.flatMap { context in deviceVault(request).map { (context, $0.0, $0.1) } }
        // A confirmation held for CONTEXT in this session answers at once, for the same
        // requests the fingerprint would be offered to (not remote unless allowed, and
        // only_group), so a grant never widens who gets in.
        if let (context, account, vault) = stepUp, !request.isRemote || options.allowRemote,
           options.onlyGroup.map({ account.isMember(ofGroup: $0) }) ?? true,
           let held = grants(for: account).valid(context, vault: vault) {
            log(AuthenticationResult(.success, "step-up for \(context) held (\(held.method))"), request, action: "authentication")
            return .success
        }
        let result = authenticateNow(options, request)
        if let (context, account, vault) = stepUp {
            AuditTrail(store: vault.store, sink: auditSink).record(.stepUp(context: context, result: result.outcome), vault: vault)
            if result.outcome == .success {
                do {
                    try grants(for: account).grant(context, ttl: options.stepUpTTL, method: (result.method ?? .finger).rawValue,
                                                   vault: vault)
                } catch {
                    pam.log(.notice, "step-up for \(context) confirmed but not kept: \(error)")
                }
            }
        }
        return result.outcome
    }

    private func authenticateNow(_ options: Options, _ request: AuthenticationRequest) -> AuthenticationResult {
        let prompter = ConversationPrompter(pam: pam)
        let helper = ScanHelper(options: options, user: request.user ?? "", prompter: prompter)
        // A token from an earlier call on this handle must not outlive this one.
        _ = pam.setSecretData(ModuleCall.accessTokenData, UnsafeRawBufferPointer(start: nil, count: 0))
        var accessToken: SecureBytes? = nil
        let scan: Authentication.FingerprintStep = { _, _ in
            let report = helper.run()
            accessToken = report.accessToken
            return report.result
        }
        let refreshAfterPIN = { () -> TokenStep in
            let report = helper.run(refreshOnly: true)
            accessToken = report.accessToken
            return report.result.outcome == .success ? report.result.tokenStep ?? .failed : .failed
        }
        var authentication = Authentication(request: request, prompter: prompter)
        authentication.auditSink = auditSink
        let result = authentication.run(fingerprint: scan, refreshAfterPIN: refreshAfterPIN) {
            // The PIN travels from PAM's buffer straight into secure memory.
            pam.withSecretAnswer(Messages.enterPIN) { try? SecureBytes(copying: $0) } ?? nil
        }
        // For open_session: the session's access token (PAM data, wiped by libpam at pam_end).
        if result.outcome == .success, let accessToken {
            _ = accessToken.withUnsafeBytes { pam.setSecretData(ModuleCall.accessTokenData, $0) }
        }
        log(result, request, action: "authentication")
        return result
    }

    /// Audit events go to pam_syslog (LOG_AUTHPRIV), as the module's other lines do.
    var auditSink: AuditSink {
        let handle = BorrowedHandle(pam: pam)
        return .custom { level, message in
            handle.pam.log(level == .notice ? .notice : .warning, message)
        }
    }

    /// One line per decision at LOG_AUTHPRIV: outcome, user, service; never a secret. The
    /// quiet outcomes (no vault, remote) are logged only with `debug`.
    private func log(_ result: AuthenticationResult, _ request: AuthenticationRequest, action: String) {
        let quiet: Set<Outcome> = [.noVault, .remoteSession, .notEnrolled, .notApplicable]
        if quiet.contains(result.outcome) && !request.options.debug { return }
        let level: PAMHandle.LogLevel = result.outcome == .success ? .notice
            : (result.outcome.pamReturn == .authError ? .warning : .notice)
        pam.log(level, "\(action) \(result.outcome.rawValue) for user=\(request.user ?? "?") service=\(request.service): \(result.detail)")
    }
}

/// The PAM handle for the audit sink. The sink runs only inside this call, on this thread
/// (nothing keeps it), so the handle PAM lends for the call is never used after it.
private struct BorrowedHandle: @unchecked Sendable {
    let pam: PAMHandle
}
