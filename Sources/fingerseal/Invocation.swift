import FingersealWire
import Glibc
import Localization
import SharedMessages
import SodiumKit

/// One run of a command: the request for the broker, and what stays on this side of the
/// socket (design §2: the CLI parses, asks the broker, and renders).
struct Invocation {
    /// What the CLI does itself once the broker said yes.
    enum AfterSuccess {
        case nothing
        /// The reply's access token on standard output (`unlock --print-token`, `token`).
        case printToken
        /// `unlock --exec`: replace this process with the command, the token on a descriptor.
        case exec([String])
        /// `step-up CONTEXT -- COMMAND`: run it while the connection (and so the
        /// confirmation) lasts, and exit with its status.
        case run([String])
    }

    var request: Request
    /// The request's options, typed and checked as the broker checks them.
    var given: RequestOptions
    var socketPath: String
    /// Where answers come from instead of the terminal.
    var pinFD: Int32? = nil
    var passwordFD: Int32? = nil
    /// --client-secret-file, read as the user before anything is sent.
    var clientSecret: SecureBytes? = nil
    /// --events-fd: the broker's reader events go there.
    var eventsFD: Int32? = nil
    var openBrowser = true
    /// Streamed to the broker after the request (`seal`'s plaintext, `reveal`'s sealed file).
    var payload: SecureBytes? = nil
    /// Where the broker's `data` goes.
    var target = DataTarget.standardOutput
    var afterSuccess = AfterSuccess.nothing
    /// Where the broker's `doctor` findings go (nil: shown as sentences).
    var findings: FindingSink? = nil

    /// Types and checks the options routed to the broker (`RequestOptions`, as the broker
    /// will), keeps the rest, then lets the command lay out its positionals and local files
    /// (last: it may create the output file).
    init(_ spec: CommandSpec, _ command: Command, _ parsed: ParsedArguments) throws(CLIError) {
        request = Request(command)
        // Presentation only (Request.language); "C" when the environment names none, so the
        // broker answers in English like this side rather than in the system's default.
        request.language = Invocation.languagePreference ?? "C"
        request.timeZone = ClientTimeZone.name(tz: Invocation.environment("TZ"))
        var values = parsed.wireValues(spec.options)
        socketPath = parsed.value(CommandSpec.socket) ?? Invocation.environment("FINGERSEAL_SOCKET") ?? defaultBrokerSocket
        pinFD = parsed.descriptor(Commands.pinFD)
        passwordFD = parsed.descriptor(Commands.passwordFD)
        eventsFD = parsed.descriptor(Commands.eventsFD)
        request.wantsEvents = eventsFD != nil
        openBrowser = !parsed.has(Commands.noBrowser)
        if let path = parsed.value(Commands.clientSecretFile) { clientSecret = try LocalFiles.readClientSecret(path) }
        // What the broker must know of the local options, never their values: answers come
        // from a descriptor (a new PIN is asked once, the PIN without a scan first), and a
        // client secret can be given.
        if pinFD != nil { values.set(field: Option.pinFD.field, "1") }
        if clientSecret != nil { values.set(field: Option.clientSecret.field, "1") }
        do throws(OptionError) {
            given = try RequestOptions(command, decoding: values, arguments: parsed.positionals)
        } catch {
            throw CLIError(.usage, error.message)
        }
        request.options = given.values
        // The PIN may be typed while the reader waits only where someone can type it.
        request.answersWhileScanning = pinFD == nil && Invocation.hasTerminal()

        if let shape = spec.shape {
            try shape(parsed, &self)
        } else if spec.arguments.isEmpty, let first = parsed.positionals.first {
            throw CLIError(.usage, Strings.unexpectedArgument(String(first.prefix(64))))
        } else {
            request.arguments = parsed.positionals
        }
    }

    /// A terminal to type on: /dev/tty opens, and standard input is a terminal (not a pipe a
    /// script feeds).
    static func hasTerminal() -> Bool {
        guard isatty(STDIN_FILENO) == 1 else { return false }
        let fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { return false }
        close(fd)
        return true
    }

    /// What the environment asks for, gettext's way (`Localization.preference`).
    static var languagePreference: String? { Localization.preference(environment) }

    static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        let text = String(cString: value)
        return text.isEmpty ? nil : text
    }
}

/// Collects the findings the broker sends (`doctor`), for the command to render with its own.
final class FindingSink {
    var findings: [Finding] = []
}
