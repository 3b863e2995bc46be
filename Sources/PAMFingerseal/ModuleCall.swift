import FingersealWire
import PAMKit

/// One call into the module: its handle and arguments. Each PAM function is one request to the
/// broker, which decides; the module only gathers the PAM items and keeps the ticket that
/// authentication hands on to the session.
struct ModuleCall {
    let pam: PAMHandle
    let arguments: [String]

    /// The PAM data under which authentication keeps the broker's ticket for open_session
    /// (wiped and freed by libpam at pam_end, or when replaced).
    static let ticketData = "fingerseal-ticket"

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

    func authenticate() -> Outcome {
        // A ticket from an earlier authentication on this handle must not outlive this one.
        pam.removeData(ModuleCall.ticketData)
        return ask(.pamAuthenticate, whenUnreachable: .unavailable) { reply in
            guard let ticket = reply.ticket else { return }
            var bytes = Array(ticket.utf8)
            defer { Wire.wipe(&bytes) }
            if !bytes.withUnsafeBytes({ pam.setSecretData(ModuleCall.ticketData, $0) }) {
                pam.log(.warning, "the broker's ticket could not be kept for the session")
            }
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
    private func items() -> PAMItems {
        PAMItems(user: pam.user(), service: pam.item(.service), tty: pam.item(.tty), rhost: pam.item(.rhost),
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
                     _ keep: (Reply) -> Void = { _ in }) -> Outcome {
        let options: ModuleOptions
        do {
            options = try ModuleOptions(parsing: arguments)
        } catch {
            pam.log(.error, "configuration: \(error.reason)")
            return .badConfiguration
        }
        var request = Request(command)
        request.pam = items()
        request.moduleOptions = arguments
        request.ticket = ticket
        request.language = language()
        let outcome: Outcome
        switch BrokerExchange(pam: pam, options: options).run(request) {
        case .unreachable:
            outcome = whenUnreachable
        case let .failed(failure):
            outcome = failure
        case let .reply(reply):
            keep(reply)
            outcome = reply.outcome
        }
        if options.debug {
            pam.log(.debug, "\(command.rawValue) for user=\(request.pam?.user ?? "?"): \(outcome.rawValue)")
        }
        return outcome
    }
}
