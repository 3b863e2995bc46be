import FingerprintFlows
import FingersealCore
import FingersealWire

/// Through what a request reaches the person: its origin (`Request.origin`, which decoding
/// matched to its command) with the host's process. What each channel may ask for, and how it
/// is told things, is said here and nowhere else.
enum Channel {
    /// A PAM host (login, sudo, a greeter, a polkit agent, a lock screen): it shows only what
    /// the conversation sends, Enter alone means "the password instead", and it names no
    /// reader, timeout or PIN mode. `host`: the host's process, which the kernel places on a
    /// terminal or not.
    case pamHost(PAMItems, host: Caller)
    /// The command line: it shows the reply's sentence itself, and may name a reader, a
    /// timeout, or the PIN alone.
    case commandLine
    /// An application, through the session agent (`fingerseal-agent`): a dialog (the agent's
    /// or the application's own) shows the sentences and takes the PIN or the account
    /// password, which the broker checks itself; "use the password instead" is a skipped
    /// answer. What the agent says of the application is its claim, recorded as such.
    case application(Application)

    init(_ request: Request, from caller: Caller) {
        switch request.origin {
        case let .pamHost(items, _): self = .pamHost(items, host: caller)
        case .commandLine: self = .commandLine
        case let .application(application): self = .application(application)
        }
    }

    /// The PAM items, for a PAM host only.
    var pam: PAMItems? {
        if case let .pamHost(items, _) = self { return items }
        return nil
    }

    private var isPAMHost: Bool { pam != nil }

    /// The application the agent asks for.
    var application: Application? {
        if case let .application(application) = self { return application }
        return nil
    }

    /// The host shows what the conversation sends, never the reply's sentence: what must be
    /// said is sent as it happens.
    var showsOnlyTheConversation: Bool { isPAMHost }

    /// The account password is the PAM stack's next module there, never checked by the broker.
    var leavesThePasswordToTheStack: Bool { isPAMHost }

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

    /// How a person at a PAM host turns from the scan to the password.
    enum WayToPassword {
        /// Ctrl-C: the host is in the foreground process group of its terminal (sudo, su,
        /// login, a script's sudo), which only the kernel says, never the host.
        case ctrlC
        /// The host shows the password beside the scan, or ends the conversation for it (a
        /// display, gdm's services).
        case besideTheScan
        /// Neither (greetd's greeters, polkit agents, lock screens): an empty answer to a
        /// question asked while the reader waits.
        case emptyAnswer
    }

    /// The PAM host's way to the password; nil for the command line and applications.
    var wayToPassword: WayToPassword? {
        guard case let .pamHost(items, host) = self else { return nil }
        if items.isGraphical { return .besideTheScan }
        // Read from /proc only here, when a scan is about to be offered.
        return Channel.wayToPassword(graphical: false, host: host.terminalStanding)
    }

    /// The rule, from what the kernel says of the host: the password beside the scan on a
    /// graphical host; Ctrl-C wherever it reaches the host, which is in its terminal's
    /// foreground process group (the kernel sends SIGINT to the whole group); an empty
    /// answer elsewhere, and always at polkit's agent helper, which is in its agent's
    /// foreground group (pkexec's, pkttyagent's) where Ctrl-C ends the agent first.
    static func wayToPassword(graphical: Bool, host: TerminalStanding) -> WayToPassword {
        if graphical { return .besideTheScan }
        if host.program == polkitAgentHelper { return .emptyAnswer }
        return host.inForeground ? .ctrlC : .emptyAnswer
    }

    /// polkit's agent helper as the kernel names its program (`TerminalStanding.program`, 15
    /// bytes of polkit-agent-helper-1), wherever a distribution installs it
    /// (/usr/lib/polkit-1 on Debian, /usr/libexec on Fedora).
    static let polkitAgentHelper = String(decoding: "polkit-agent-helper-1".utf8.prefix(15), as: UTF8.self)

    /// How the scan prompt ends: the CLI turns Ctrl-C into a cancel; a PAM host is told only
    /// the way it has. Where the way is an empty answer, the question asked while the reader
    /// waits says so (`asksWhileScanning`); a scan alone there (`prompt=none`) names only the
    /// reader. A dialog shows its own buttons.
    var cancelHint: ScanHint {
        if case .application = self { return .none }
        switch wayToPassword {
        case nil: return .pressCtrlC
        case .ctrlC?: return .pressCtrlCForPassword
        case .besideTheScan?: return .orUsePassword
        case .emptyAnswer?: return .none
        }
    }

    /// A PAM host is asked one question while the reader waits (the PIN with `pin`, else Enter
    /// once done; Enter alone goes on to the password): with `prompt=combined` and the PIN, and
    /// wherever an empty answer is the only quick way to the password. Never with
    /// `prompt=none`, whose hosts answer every question with the password.
    func asksWhileScanning(_ prompt: PromptStyle, pin: Bool) -> Bool {
        guard let way = wayToPassword, prompt != .none else { return false }
        return way == .emptyAnswer || (prompt == .combined && pin)
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
