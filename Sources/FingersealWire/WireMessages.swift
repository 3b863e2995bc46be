/// What a client asks the broker for. The broker decides who may ask for what (design §2);
/// nothing here says who the caller is: that comes from the socket.
public enum Command: String, CaseIterable, Sendable {
    // The PAM module (the host is root, or the user for a lock screen).
    case pamAuthenticate = "pam.authenticate"
    case pamAccount = "pam.account"
    case pamOpenSession = "pam.open-session"
    case pamCloseSession = "pam.close-session"
    /// A login host with no user name yet (`identify`): the finger says who it is.
    case pamIdentify = "pam.identify"
    /// The module's `password_used` line, after the stack's password module: the host's
    /// PAM_AUTHTOK is handed over when the broker asks, and the broker checks it itself (the
    /// password rule, the keyring's copy).
    case pamPasswordUsed = "pam.password-used"
    /// After a password change through PAM: the new PAM_AUTHTOK, the same way.
    case pamChauthtok = "pam.chauthtok"
    // The CLI.
    case status, login, unlock, token, logout, audit
    /// A proof of possession (RFC 9449) for a request with the session's access token: the
    /// sign-in's key signs it, without a new finger while that token is valid.
    case proof
    case stepUp = "step-up"
    case seal, reveal
    case pinSet = "pin.set"
    case pinChange = "pin.change"
    /// Touch to sign in for the account, on or off (the PIN confirms it).
    case identifyOn = "identify.on"
    case identifyOff = "identify.off"
    /// Fingerprint unlock for the account, on or off: the person's own switch.
    case fingerOn = "finger.on"
    case fingerOff = "finger.off"
    /// The login password sealed in the vault for the keyring, or removed (issue 23 §1).
    case keyringOn = "keyring.on"
    case keyringOff = "keyring.off"
    /// A forgotten PIN: the account password (root: nothing) and the vault's device slot.
    case pinReset = "pin.reset"
    case reset
    case devices, enroll, fingers, forget, verify, capture, selftest
    /// What only the broker can see of the caller's setup (reader, vault, sign-in, the
    /// identity provider, the clock), as findings.
    case doctor
    /// The accounts provisioning made (issue 22 §2): root only.
    case accountList = "account.list"
    case accountRemove = "account.remove"
    /// Removes provisioned accounts unused for `provision_expire_days` now (the broker also
    /// does it at start and every hour).
    case accountExpire = "account.expire"
    /// A vault set aside (another account holds its uid now), deleted by its id.
    case accountPurge = "account.purge"
    /// What useradd's post hook and userdel's pre hook say (issue 31 §1): an account was
    /// made (a vault already under its uid is an earlier one's), or is being removed (its
    /// vault goes with it).
    case accountUseradd = "account.useradd"
    case accountUserdel = "account.userdel"
}

/// The PAM items a module passes (root callers only are believed about the user).
public struct PAMItems: Equatable, Sendable {
    public var user: String?
    public var service: String?
    public var tty: String?
    public var rhost: String?
    public var ruser: String?
    public var xdisplay: String?

    public init(user: String? = nil, service: String? = nil, tty: String? = nil, rhost: String? = nil,
                ruser: String? = nil, xdisplay: String? = nil) {
        self.user = user
        self.service = service
        self.tty = tty
        self.rhost = rhost
        self.ruser = ruser
        self.xdisplay = xdisplay
    }

    /// A graphical host (a display, or gdm's services): its prompts never say "press Ctrl-C".
    public var isGraphical: Bool {
        if let xdisplay, !xdisplay.isEmpty { return true }
        if let tty, tty.hasPrefix(":") { return true }
        return service?.hasPrefix("gdm-") ?? false
    }
}

/// An application asking through the session agent (`fingerseal-agent`), as the agent says
/// the session bus told it: what the audit trail names as asking, and what the application
/// allows. The agent's claim, never an identity (the caller is the agent's process): the
/// broker decides nothing by it, except that a confirmation made with a grant key is found
/// again only by requests carrying the same key.
public struct Application: Equatable, Sendable {

    /// The application's unique name on the session bus (":1.42").
    public var busName: String
    /// Its executable, as /proc/PID/exe read for the bus's word on its pid.
    public var executable: String?
    /// Inside Flatpak, its application id.
    public var appID: String?
    /// What the application calls itself ("Meander"), for the sentences only.
    public var name: String?
    /// The agent's random handle (32 bytes) for this application's confirmations of one
    /// context: only requests that carry it find them again.
    public var grantKey: [UInt8]?
    /// The ways the application allows; empty means every way.
    public var methods: [UnlockMethod] = []

    public init(busName: String, executable: String? = nil, appID: String? = nil, name: String? = nil,
                grantKey: [UInt8]? = nil, methods: [UnlockMethod] = []) {
        self.busName = busName
        self.executable = executable
        self.appID = appID
        self.name = name
        self.grantKey = grantKey
        self.methods = methods
    }

    /// Whether `method` may be used: allowed by the application (every way when it named none).
    public func allows(_ method: UnlockMethod) -> Bool { methods.allow(method) }
}

/// Where a request comes from, as its client says: one value, so that a request cannot be
/// two of them, and `Command.sender` says which commands each may send. Who the caller is
/// comes from the socket, never from here; a non-root host is believed about nothing it
/// names (design §2).
public enum Origin: Equatable, Sendable {
    /// The PAM module: the host's items and the module's arguments (`name=value`), as the PAM
    /// configuration gives them.
    case pamHost(PAMItems, moduleArguments: [String])
    /// The command line.
    case commandLine
    /// An application, through the session agent.
    case application(Application)

    /// The PAM items, from a PAM host only.
    public var pamItems: PAMItems? {
        if case let .pamHost(items, _) = self { return items }
        return nil
    }

    /// The module's arguments, from a PAM host only.
    public var moduleArguments: [String] {
        if case let .pamHost(_, arguments) = self { return arguments }
        return []
    }

    /// The application, from the session agent only.
    public var application: Application? {
        if case let .application(application) = self { return application }
        return nil
    }
}

/// client → broker: the one request of a connection.
public struct Request: Sendable {
    public var command: Command
    /// Which client sends it and what that client says of its host; decoding refuses an
    /// origin the command does not take.
    public var origin: Origin = .commandLine
    /// The command's options (`RequestOptions` types and checks them), and the positional
    /// arguments of the CLI's command line.
    public var options = OptionValues()
    public var arguments: [String] = []
    /// The client can take a typed answer while the reader waits (a CLI on a terminal).
    public var answersWhileScanning = false
    /// The client wants reader events (`event` messages) as they happen (`--events-fd`).
    public var wantsEvents = false
    /// pam.open-session: what authentication handed back, to find its access token.
    public var ticket: String?
    /// The language the person reads, for the sentences of this request only: a `LANGUAGE`
    /// list (`nb:en`) or a locale name (`nb_NO.UTF-8`); nil, the system's default. The CLI
    /// sends its environment's, the module the PAM environment's. Presentation only: the
    /// broker never lets it change an outcome, a check or anything it records.
    public var language: String?
    /// The person's time zone (`ClientTimeZone`), for the times in the sentences of this
    /// request only; nil, UTC. Presentation only, like `language`.
    public var timeZone: String?

    public init(_ command: Command, from origin: Origin = .commandLine) {
        self.command = command
        self.origin = origin
    }
}

/// client → broker: an answer to the last `ask`. `skip` is an empty answer (Enter alone,
/// or a conversation the host ended).
public struct Answer: Sendable {
    public enum Content: String, Sendable { case secret, text, skip }
    public var kind: Content
    /// Wiped by whoever consumes it.
    public var value: [UInt8]

    public init(_ kind: Content, _ value: [UInt8] = []) {
        self.kind = kind
        self.value = value
    }
}

/// broker → client: a question for the person. `whileScanning`: the reader is armed
/// meanwhile, and the broker may withdraw the question (a `result` or another message
/// follows without waiting for the answer).
public struct Ask: Equatable, Sendable {
    public enum Echo: String, Sendable { case secret, visible }
    /// What is asked for, so a client can answer from where its user pointed it (the CLI's
    /// `--pin-fd`, `--password-fd`, `--client-secret-file`) rather than the terminal.
    public enum Purpose: String, Sendable {
        case pin, newPIN = "new-pin", accountPassword = "account-password", idpPassword = "idp-password"
        case clientSecret = "client-secret", confirm, other
    }
    public var kind: Echo
    public var purpose: Purpose
    public var prompt: String
    public var whileScanning: Bool
    /// What answering with nothing (a skip) turns to, for a client that names it ("Use PIN
    /// instead"); nil: a skip is whatever the request makes of it.
    public var skipsTo: Purpose?

    public init(_ kind: Echo, _ purpose: Purpose, _ prompt: String, whileScanning: Bool = false, skipsTo: Purpose? = nil) {
        self.kind = kind
        self.purpose = purpose
        self.prompt = prompt
        self.whileScanning = whileScanning
        self.skipsTo = skipsTo
    }
}

/// broker → client: how the request ended. `token` (an access token) only for its owner.
public struct Reply: Sendable {
    public var outcome: Outcome
    /// A sentence for the person; empty when there is nothing to say.
    public var message: String
    public var token: [UInt8]?
    public var expiresAt: Int64?
    /// With a token: the scheme a request names it with, Bearer or DPoP (RFC 9449 §7.1: a
    /// DPoP token needs a proof with each request, `Command.proof`).
    public var tokenType: String?
    /// pam.authenticate: hands the session's access token on to pam.open-session.
    public var ticket: String?
    /// How an unlock or a confirmation was made: finger, pin, password, or held (a
    /// confirmation already held answered). For clients that draw their own words.
    public var method: String?
    /// pam.identify: the account the finger was identified as, for PAM_USER; nil when nobody
    /// was (the host then asks for the user name).
    public var user: String?
    /// pam.authenticate, to a root host of a service `keyring_services=` lists: the login
    /// password the account sealed, for PAM_AUTHTOK. Wiped by whoever consumes it.
    public var authtok: [UInt8]?

    public init(_ outcome: Outcome, _ message: String = "", token: [UInt8]? = nil, expiresAt: Int64? = nil,
                ticket: String? = nil, method: String? = nil, user: String? = nil) {
        self.user = user
        self.outcome = outcome
        self.message = message
        self.token = token
        self.expiresAt = expiresAt
        self.ticket = ticket
        self.method = method
    }
}

/// broker → client: one finding of `doctor`: what was checked, how it stands, a sentence
/// saying so, and (unless all is well) the sentence that says how to fix it.
public struct Finding: Equatable, Sendable {
    public enum Status: String, Sendable, CaseIterable {
        case ok, warning, problem
    }
    public var check: String
    public var status: Status
    public var message: String
    public var fix: String

    public init(_ check: String, _ status: Status, _ message: String, fix: String = "") {
        self.check = check
        self.status = status
        self.message = message
        self.fix = fix
    }
}

public enum ClientMessage: Sendable {
    case request(Request)
    case answer(Answer)
    case cancel
    /// A chunk of a payload (`seal`'s input); `end` closes it.
    case data([UInt8], end: Bool)
}

public enum BrokerMessage: Sendable {
    /// Sentences for the person: progress (info) and problems (error), on stderr or in the
    /// PAM conversation.
    case info(String)
    case error(String)
    /// The command's output proper (stdout): text, or JSON with --json.
    case output(String)
    /// A reader event, a scan's outcome or the secret asked next, for clients that draw their
    /// own progress (rigs, the agent).
    case event(ReaderSignal)
    case ask(Ask)
    /// An address the person should open in a browser (the browser sign-in); the CLI runs
    /// xdg-open as the user, the broker never starts programs for a caller.
    case browse(String)
    /// A chunk of a binary result (`reveal`'s plaintext, `seal`'s file, a captured image).
    case data([UInt8], end: Bool)
    /// One finding of `doctor`.
    case finding(Finding)
    case result(Reply)
}

/// Packet kinds.
enum PacketKind: UInt8 {
    case request = 1, answer = 2, cancel = 3, data = 4
    case info = 16, error = 17, output = 18, event = 19, ask = 20, result = 21, browse = 22, finding = 23
}

extension Origin {
    /// The origin a request's fields say: PAM items (with the module's arguments) or an
    /// application, never both; module arguments only with PAM items.
    static func decode(_ fields: WireFields) throws(WireError) -> Origin {
        let arguments = try fields.list("option")
        switch (try fields.flag("pam"), try fields.flag("app")) {
        case (true, true):
            throw .badValue("app")
        case (true, false):
            let items = PAMItems(user: try fields.string("pam.user"), service: try fields.string("pam.service"),
                                 tty: try fields.string("pam.tty"), rhost: try fields.string("pam.rhost"),
                                 ruser: try fields.string("pam.ruser"), xdisplay: try fields.string("pam.xdisplay"))
            return .pamHost(items, moduleArguments: arguments)
        case (false, true):
            guard arguments.isEmpty else { throw .badValue("option") }
            var application = Application(busName: try fields.required("app.bus-name"), executable: try fields.string("app.executable"),
                                          appID: try fields.string("app.id"), name: try fields.string("app.name"),
                                          grantKey: try fields.bytes("app.grant-key"))
            for name in try fields.list("app.method") {
                guard let method = UnlockMethod(rawValue: name) else { throw .badValue("app.method") }
                application.methods.append(method)
            }
            return .application(application)
        case (false, false):
            guard arguments.isEmpty else { throw .badValue("option") }
            return .commandLine
        }
    }
}

extension ClientMessage {
    public func encoded() -> [UInt8] {
        var fields = WireFields()
        switch self {
        case let .request(request):
            fields.add("command", request.command.rawValue)
            switch request.origin {
            case let .pamHost(pam, arguments):
                fields.add("pam", true)
                fields.add("pam.user", pam.user)
                fields.add("pam.service", pam.service)
                fields.add("pam.tty", pam.tty)
                fields.add("pam.rhost", pam.rhost)
                fields.add("pam.ruser", pam.ruser)
                fields.add("pam.xdisplay", pam.xdisplay)
                for argument in arguments { fields.add("option", argument) }
            case let .application(application):
                fields.add("app", true)
                fields.add("app.bus-name", application.busName)
                fields.add("app.executable", application.executable)
                fields.add("app.id", application.appID)
                fields.add("app.name", application.name)
                if let key = application.grantKey { fields.add("app.grant-key", key) }
                for method in application.methods { fields.add("app.method", method.rawValue) }
            case .commandLine:
                break
            }
            request.options.encode(into: &fields)
            for argument in request.arguments { fields.add("arg", argument) }
            fields.add("answers-while-scanning", request.answersWhileScanning)
            fields.add("events", request.wantsEvents)
            fields.add("ticket", request.ticket)
            fields.add("language", request.language)
            fields.add("time-zone", request.timeZone)
            return Wire.encode(kind: PacketKind.request.rawValue, fields)
        case let .answer(answer):
            fields.add("kind", answer.kind.rawValue)
            fields.add("value", answer.value)
            return Wire.encode(kind: PacketKind.answer.rawValue, fields)
        case .cancel:
            return Wire.encode(kind: PacketKind.cancel.rawValue, fields)
        case let .data(bytes, end):
            fields.add("bytes", bytes)
            fields.add("end", end)
            return Wire.encode(kind: PacketKind.data.rawValue, fields)
        }
    }

    public static func decode(_ packet: UnsafeRawBufferPointer) throws(WireError) -> ClientMessage {
        let (rawKind, fields) = try Wire.decode(packet)
        switch PacketKind(rawValue: rawKind) {
        case .request?:
            guard let command = Command(rawValue: try fields.required("command")) else { throw .badValue("command") }
            var request = Request(command, from: try Origin.decode(fields))
            guard command.sender.accepts(request.origin) else { throw .wrongSender(command: command.rawValue) }
            request.options = try OptionValues.decode(fields)
            request.arguments = try fields.list("arg")
            request.answersWhileScanning = try fields.flag("answers-while-scanning")
            request.wantsEvents = try fields.flag("events")
            request.ticket = try fields.string("ticket")
            request.language = try fields.string("language")
            request.timeZone = try fields.string("time-zone")
            return .request(request)
        case .answer?:
            guard let kind = Answer.Content(rawValue: try fields.required("kind")) else { throw .badValue("kind") }
            return .answer(Answer(kind, try fields.bytes("value") ?? []))
        case .cancel?:
            return .cancel
        case .data?:
            return .data(try fields.bytes("bytes") ?? [], end: try fields.flag("end"))
        default:
            throw .unknownKind(rawKind)
        }
    }
}

extension BrokerMessage {
    public func encoded() -> [UInt8] {
        var fields = WireFields()
        let kind: PacketKind
        switch self {
        case let .info(text): kind = .info; fields.add("text", text)
        case let .error(text): kind = .error; fields.add("text", text)
        case let .output(text): kind = .output; fields.add("text", text)
        case let .event(signal): kind = .event; signal.encode(into: &fields)
        case let .browse(url): kind = .browse; fields.add("url", url)
        case let .ask(ask):
            kind = .ask
            fields.add("kind", ask.kind.rawValue)
            fields.add("purpose", ask.purpose.rawValue)
            fields.add("prompt", ask.prompt)
            fields.add("while-scanning", ask.whileScanning)
            fields.add("skips-to", ask.skipsTo?.rawValue)
        case let .data(bytes, end):
            kind = .data
            fields.add("bytes", bytes)
            fields.add("end", end)
        case let .finding(finding):
            kind = .finding
            fields.add("check", finding.check)
            fields.add("status", finding.status.rawValue)
            fields.add("message", finding.message)
            fields.add("fix", finding.fix)
        case let .result(reply):
            kind = .result
            fields.add("outcome", reply.outcome.rawValue)
            fields.add("message", reply.message)
            if let token = reply.token { fields.add("token", token) }
            fields.add("expires-at", reply.expiresAt)
            fields.add("token-type", reply.tokenType)
            fields.add("ticket", reply.ticket)
            fields.add("method", reply.method)
            fields.add("user", reply.user)
            if let authtok = reply.authtok { fields.add("authtok", authtok) }
        }
        return Wire.encode(kind: kind.rawValue, fields)
    }

    public static func decode(_ packet: UnsafeRawBufferPointer) throws(WireError) -> BrokerMessage {
        let (rawKind, fields) = try Wire.decode(packet)
        switch PacketKind(rawValue: rawKind) {
        case .info?: return .info(try fields.required("text"))
        case .error?: return .error(try fields.required("text"))
        case .output?: return .output(try fields.required("text"))
        case .event?: return .event(try ReaderSignal.decode(fields))
        case .ask?:
            guard let kind = Ask.Echo(rawValue: try fields.required("kind")) else { throw .badValue("kind") }
            // An unknown purpose from a newer broker is still a question a person can answer.
            let purpose = Ask.Purpose(rawValue: try fields.string("purpose") ?? "") ?? .other
            return .ask(Ask(kind, purpose, try fields.required("prompt"), whileScanning: try fields.flag("while-scanning"),
                            skipsTo: try fields.string("skips-to").flatMap { Ask.Purpose(rawValue: $0) }))
        case .browse?: return .browse(try fields.required("url"))
        case .data?:
            return .data(try fields.bytes("bytes") ?? [], end: try fields.flag("end"))
        case .finding?:
            guard let status = Finding.Status(rawValue: try fields.required("status")) else { throw .badValue("status") }
            return .finding(Finding(try fields.required("check"), status, try fields.required("message"),
                                    fix: try fields.string("fix") ?? ""))
        case .result?:
            guard let outcome = Outcome(wireName: try fields.required("outcome")) else { throw .badValue("outcome") }
            var reply = Reply(outcome, try fields.string("message") ?? "", token: try fields.bytes("token"),
                              expiresAt: try fields.integer("expires-at"), ticket: try fields.string("ticket"),
                              method: try fields.string("method"), user: try fields.string("user"))
            reply.authtok = try fields.bytes("authtok")
            reply.tokenType = try fields.string("token-type")
            return .result(reply)
        default:
            throw .unknownKind(rawKind)
        }
    }
}
