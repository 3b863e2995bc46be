import FingerprintFlows
import FingersealCore

/// Through what a request reaches the person, decided once from its command: the module's
/// commands come from PAM hosts, every other from the command line (whatever fields the
/// client filled in). What each channel may ask for, and how it is told things, is said here
/// and nowhere else.
enum Channel {
    /// A PAM host (login, sudo, a lock screen): it shows only what the conversation sends,
    /// Enter alone means "the password instead", and it names no reader, timeout or PIN mode.
    case pamHost(PAMItems)
    /// The command line: it shows the reply's sentence itself, and may name a reader, a
    /// timeout, or the PIN alone.
    case commandLine

    init(_ request: Request) {
        if case .pamHost = Authorization.rule(request.command) {
            self = .pamHost(request.pam ?? PAMItems())
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

    /// The host shows what the conversation sends, never the reply's sentence: what must be
    /// said is sent as it happens.
    var showsOnlyTheConversation: Bool { isPAMHost }

    /// An empty answer to the PIN is the way to the password, not a mistake.
    var emptyAnswerMeansPassword: Bool { isPAMHost }

    /// Says why the finger is not offered when nothing is wrong (no reader): the command line
    /// does; a PAM host goes on to the next module quietly.
    var explainsQuietFallbacks: Bool { !isPAMHost }

    /// How the scan prompt ends: the CLI turns Ctrl-C into a cancel; a PAM host's cancel
    /// leads to the password, said only where the host has a way to it.
    func cancelHint(_ conversation: Conversation) -> ScanHint {
        isPAMHost ? conversation.cancelHint : .pressCtrlC
    }

    /// What the audit trail names it.
    var audited: AuditChannel { isPAMHost ? .pam : .cli }
}
