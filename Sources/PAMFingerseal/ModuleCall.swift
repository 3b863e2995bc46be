import FingersealWire
import PAMKit

/// One call into the module: its handle and arguments. Each PAM function is one request to the
/// broker, which decides; the module only gathers the PAM items and keeps the ticket that
/// authentication hands on to the session.
struct ModuleCall {
    let pam: PAMHandle
    let arguments: [String]
    /// The arguments, read once for this call's every step (invalid ones: every request of
    /// the call answers `badConfiguration`).
    let parsed: Result<ModuleOptions, ModuleOptions.Invalid>
    var options: ModuleOptions? { try? parsed.get() }

    /// The PAM data under which authentication keeps the broker's ticket for open_session
    /// (wiped and freed by libpam at pam_end, or when replaced).
    static let ticketData = "fingerseal-ticket"
    /// The PAM data that says this module's authentication succeeded in this transaction
    /// (its `password_used` line then has no password of another module to hand over).
    static let authenticatedData = "fingerseal-authenticated"

    init(pam: PAMHandle, argc: Int32, argv: PAMArguments) {
        self.pam = pam
        var arguments: [String] = []
        if let argv, argc > 0 {
            for index in 0..<Int(argc) {
                if let argument = argv[index] { arguments.append(String(cString: argument)) }
            }
        }
        self.arguments = arguments
        do throws(ModuleOptions.Invalid) { parsed = .success(try ModuleOptions(parsing: arguments)) } catch { parsed = .failure(error) }
    }

    func authenticate() -> Outcome {
        if options?.passwordUsed == true { return passwordUsed() }
        // A ticket from an earlier authentication on this handle must not outlive this one.
        pam.removeData(ModuleCall.ticketData)
        pam.removeData(ModuleCall.authenticatedData)
        if let identified = identify() { return identified }
        return ask(.pamAuthenticate, whenUnreachable: .unavailable) { keep($0) }
    }

    /// After a success (the PAM stack goes on, or the session opens): the broker's ticket, the
    /// login password for the keyring (`keyring_services=`), and the mark that this module
    /// signed the person in.
    private func keep(_ reply: Reply) {
        keepTicket(reply)
        if let authtok = reply.authtok {
            if reply.outcome == .success, !authtok.withUnsafeBytes({ pam.setAuthtok($0) }) {
                pam.log(.warning, "the sealed login password could not be handed on as PAM_AUTHTOK")
            }
            Wire.wipeStorage(authtok)
        }
        if reply.outcome == .success { _ = [UInt8(1)].withUnsafeBytes { pam.setSecretData(ModuleCall.authenticatedData, $0) } }
    }

    /// The `password_used` line, after the password module: when this module did not sign the
    /// person in and a password did (PAM_AUTHTOK, which libpam wipes once authentication
    /// ends), the broker is offered it; it takes it only when it needs it (the password rule,
    /// the keyring's copy) and checks it itself. Never changes the outcome.
    private func passwordUsed() -> Outcome {
        guard !pam.hasData(ModuleCall.authenticatedData), pam.withAuthtok({ $0.count > 0 }) == true else { return .notApplicable }
        _ = ask(.pamPasswordUsed, whenUnreachable: .notApplicable, answering: .fromAuthtok)
        return .notApplicable
    }

    /// pam_chauthtok's update pass, after the password module set the new password: the broker
    /// is offered it the same way (it replaces the keyring's copy). Never fails a change.
    func passwordChanged(updating: Bool) -> Outcome {
        guard updating, pam.withAuthtok({ $0.count > 0 }) == true else { return .notApplicable }
        _ = ask(.pamChauthtok, whenUnreachable: .notApplicable, answering: .fromAuthtok)
        return .notApplicable
    }

    /// With `identify` and no user name yet, the broker identifies the finger: an account
    /// found becomes PAM_USER and its unlock's outcome is the answer. Nil when nobody was
    /// identified (no match, cancel, timeout, no broker): the user name is asked as without it.
    private func identify() -> Outcome? {
        guard options?.identify == true, (pam.item(.user) ?? "").isEmpty else { return nil }
        var identified: Outcome? = nil
        let outcome = ask(.pamIdentify, whenUnreachable: .unavailable) { reply in
            guard let user = reply.user, ModuleCall.isUserName(user) else { return }
            guard pam.setUser(user) else {
                pam.log(.error, "the identified account could not be set as PAM_USER")
                identified = .systemError
                return
            }
            identified = reply.outcome
            keep(reply)
        }
        return identified.map { $0 == .systemError ? $0 : outcome }
    }

    /// A name the broker gave is a name (no control bytes, bounded) before it is PAM_USER.
    private static func isUserName(_ name: String) -> Bool {
        let bytes = name.utf8
        return (1...256).contains(bytes.count) && bytes.allSatisfy { $0 > 0x20 && $0 != 0x7f && $0 != UInt8(ascii: ":") }
    }

    /// Keeps the broker's ticket with the handle, for open_session.
    private func keepTicket(_ reply: Reply) {
        guard let ticket = reply.ticket else { return }
        var bytes = Array(ticket.utf8)
        defer { Wire.wipe(&bytes) }
        if !bytes.withUnsafeBytes({ pam.setSecretData(ModuleCall.ticketData, $0) }) {
            pam.log(.warning, "the broker's ticket could not be kept for the session")
        }
    }

    /// The broker answers notApplicable (PAM_IGNORE) when it has no opinion; without a broker
    /// the module has none either.
    func accountManagement() -> Outcome {
        ask(.pamAccount, whenUnreachable: .notApplicable)
    }

    func openSession() -> Outcome {
        let ticket = pam.withSecretData(ModuleCall.ticketData) { String(decoding: $0, as: UTF8.self) }
        return ask(.pamOpenSession, ticket: ticket?.isEmpty == false ? ticket : nil, whenUnreachable: .notApplicable)
    }

    func closeSession() -> Outcome {
        ask(.pamCloseSession, whenUnreachable: .notApplicable)
    }

    /// The items the broker is told about (it believes them from root callers only).
    private func items(_ command: Command) -> PAMItems {
        // pam.identify goes before any user name: pam_get_user would ask for one.
        PAMItems(user: command == .pamIdentify ? nil : pam.user(), service: pam.item(.service), tty: pam.item(.tty), rhost: pam.item(.rhost),
                 ruser: pam.item(.ruser), xdisplay: pam.item(.xdisplay))
    }

    /// The language of the PAM environment, the way gettext reads an environment (LANGUAGE,
    /// then LC_ALL, LC_MESSAGES, LANG): pam_env sets them from /etc/default/locale or the
    /// user's ~/.pam_environment, a display manager from the login screen's choice. Nil: the
    /// broker uses the system's default. Never the host process's own environment (a root
    /// daemon's), and only ever for the sentences, never an outcome.
    private func language() -> String? {
        let locale = ["LC_ALL", "LC_MESSAGES", "LANG"].lazy.compactMap { pam.environment($0) }.first { !$0.isEmpty }
        if let list = pam.environment("LANGUAGE"), !list.isEmpty, locale != "C", locale != "POSIX" { return list }
        return locale
    }

    /// Sends `command` with the PAM items and every module argument, and returns what the
    /// broker decided; `keep` sees the broker's reply (and only a reply: nothing else is success).
    private func ask(_ command: Command, ticket: String? = nil, whenUnreachable: Outcome,
                     answering: BrokerExchange.Answering = .person, _ keep: (Reply) -> Void = { _ in }) -> Outcome {
        let options: ModuleOptions
        switch parsed {
        case let .success(parsed): options = parsed
        case let .failure(invalid):
            pam.log(.error, "configuration: \(invalid.reason)")
            return .badConfiguration
        }
        var request = Request(command, from: .pamHost(items(command), moduleArguments: arguments))
        request.ticket = ticket
        request.language = language()
        // The PAM environment's TZ (pam_env), else the system's zone: presentation only.
        request.timeZone = ClientTimeZone.name(tz: pam.environment("TZ"))
        let outcome: Outcome
        switch BrokerExchange(pam: pam, options: options, answering: answering).run(request) {
        case .unreachable:
            outcome = whenUnreachable
        case let .failed(failure):
            outcome = failure
        case let .reply(reply):
            keep(reply)
            outcome = reply.outcome
        }
        if options.debug {
            pam.log(.debug, "\(command.rawValue) for user=\(request.origin.pamItems?.user ?? "?"): \(outcome.rawValue)")
        }
        return outcome
    }
}
