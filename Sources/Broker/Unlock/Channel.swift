import FingerprintFlows
import FingersealCore

/// Through what a request reaches the person, decided once from its command: the module's
/// commands come from PAM hosts, the session agent's from applications, every other from the
/// command line (whatever fields the client filled in). What each channel may ask for, and
/// how it is told things, is said here and nowhere else.
enum Channel {
    /// A PAM host (login, sudo, a lock screen): it shows only what the conversation sends,
    /// Enter alone means "the password instead", and it names no reader, timeout or PIN mode.
    case pamHost(PAMItems)
    /// The command line: it shows the reply's sentence itself, and may name a reader, a
    /// timeout, or the PIN alone.
    case commandLine
    /// An application, through the session agent (`fingerseal-agent`): a dialog (the agent's
    /// or the application's own) shows the sentences and takes the PIN or the account
    /// password, which the broker checks itself; "use the password instead" is a skipped
    /// answer. What the agent says of the application is its claim, recorded as such.
    case application(Application)

    init(_ request: Request) {
        if case .pamHost = Authorization.rule(request.command) {
            self = .pamHost(request.pam ?? PAMItems())
        } else if let application = request.application {
            self = .application(application)
        } else {
            self = .commandLine
        }
    }

    /// The PAM items, for a PAM host only.
    var pam: PAMItems? {
        if case let .pamHost(items) = self { return items }
        return nil
    }

    var isPAMHost: Bool { pam != nil }

    /// The application the agent asks for.
    var application: Application? {
        if case let .application(application) = self { return application }
        return nil
    }

    /// The host shows what the conversation sends, never the reply's sentence: what must be
    /// said is sent as it happens.
    var showsOnlyTheConversation: Bool { isPAMHost }

    /// What an empty answer to the PIN means.
    enum Skip {
        /// A mistake: the PIN was asked for and nothing came (the command line).
        case mistake
        /// The PAM stack's next module, the password: the request ends as a cancel.
        case stackPassword
        /// The account password, which the broker checks itself (an application's dialog).
        case accountPassword
    }

    var skippedPIN: Skip {
        switch self {
        case .pamHost: return .stackPassword
        case .commandLine: return .mistake
        case .application: return .accountPassword
        }
    }

    /// Says why the finger is not offered when nothing is wrong (no reader): the command line
    /// and applications do; a PAM host goes on to the next module quietly.
    var explainsQuietFallbacks: Bool { !isPAMHost }

    /// How the scan prompt ends: the CLI turns Ctrl-C into a cancel; a PAM host's cancel
    /// leads to the password, said only where the host has a way to it; a dialog shows its
    /// own buttons.
    func cancelHint(_ conversation: Conversation) -> ScanHint {
        switch self {
        case .pamHost: return conversation.cancelHint
        case .commandLine: return .pressCtrlC
        case .application: return .none
        }
    }

    /// What the audit trail names it.
    var audited: AuditChannel {
        switch self {
        case .pamHost: return .pam
        case .commandLine: return .cli
        case .application: return .application
        }
    }
}
