import CurlKit
import FingersealCore
import FoundationEssentials
import Glibc
import IdentityClient
import QRKit
import SodiumKit
import SystemKit

extension Commands {
    static let login = CommandSpec(
        name: "login", summary: "Sign in to your identity provider once; fingerseal keeps the sign-in sealed in your vault.",
        options: [
            .value("--issuer", "URL", "The identity provider (its OIDC issuer URL). Required."),
            .value("--client-id", "ID", "The OAuth client id. Required."),
            .value("--client-secret-file", "FILE", "Read a client secret from FILE (confidential clients)."),
            .value("--scope", "SCOPE", "Scopes to ask for (default: openid offline_access)."),
            .value("--flow", "device|password|browser", "How to sign in (default: device)."),
            .value("--user", "NAME", "Password flow: the user name (default: your login name)."),
            .value("--password-fd", "N", "Password flow: read the password from descriptor N instead of the terminal."),
            .flag("--no-qr", "Do not draw the QR code."),
            .flag("--no-browser", "Browser flow: only print the address; do not start a browser."),
            .value("--timeout", "S", "Browser flow: seconds to wait for the browser (default: 300)."),
            .value("--redirect-port", "N", "Browser flow: listen on 127.0.0.1 port N, for providers that match redirect URIs exactly (default: any free port)."),
            pinFD, json,
        ],
        discussion: "A new vault asks for a new PIN; an existing one asks for its PIN. A full sign-in clears every lock.",
        run: { arguments, context in try loggingFailure("sign-in", context) { try runLogin(arguments, context) } })

    static func runLogin(_ arguments: ParsedArguments, _ context: Context) throws {
        guard let issuer = arguments.values["--issuer"], let clientID = arguments.values["--client-id"],
              !issuer.isEmpty, !clientID.isEmpty else {
            throw FingersealError(.usage, "Say which identity provider and client with --issuer URL --client-id ID.")
        }
        let flow = arguments.values["--flow"] ?? "device"
        guard ["device", "password", "browser"].contains(flow) else {
            throw FingersealError(.usage, "The option --flow takes device, password or browser.")
        }
        let scope = arguments.values["--scope"] ?? "openid offline_access"
        let secret = try arguments.values["--client-secret-file"].map(readClientSecret)
        let pins = try PINSource(arguments)
        let (store, options) = try context.vault()

        let http = HTTPClient(configuration: .init(connectTimeout: Double(options.connectTimeout), timeout: Double(options.idpTimeout)))
        let client: OAuthClient
        let tokens: TokenSet
        do {
            client = OAuthClient(metadata: try Discovery.discover(issuer: issuer, http: http), clientID: clientID,
                                 clientSecret: secret, http: http)
            if flow == "password" {
                tokens = try passwordFlow(client, arguments, context)
            } else if flow == "browser" {
                tokens = try browserFlow(client, scope: scope, arguments, context)
            } else {
                tokens = try deviceFlow(client, scope: scope, arguments, context)
            }
        } catch let failure as TokenFailure {
            throw loginError(failure)
        }
        guard let refreshToken = tokens.refreshToken else { throw FingersealError(.unavailable, Messages.noRefreshToken) }

        // Seal it: into the existing vault (its PIN), or a new one (a new PIN).
        let vault: UnlockedVault
        if try Vault.status(store) != nil {
            vault = try unlockWithPIN(pins, store, options)
        } else {
            vault = try Vault.create(store, pin: PINKeyslot(pin: try pins.readNew()))
        }
        let clientSecret = try secret.map { try SecureBytes(copying: Array($0.utf8)) }
        try vault.update {
            try $0.signedIn(refreshToken: refreshToken, provider: client.providerRecord, clientSecret: clientSecret,
                            at: SystemClock().now())
        }
        try LockoutLedger(store: store, options: options).clearAll()
        AuditTrail(store: store).record(.signIn(issuer: issuer, flow: flow), vault: vault)
        context.output.out(Messages.signedIn(issuer))
        if try vault.enrolledFingers().isEmpty { context.output.note(Messages.offerEnroll) }
    }

    static func readClientSecret(_ path: String) throws -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw FingersealError(.usage, "Cannot read the client secret file \(path).") }
        let file = FileDescriptor(owning: fd)
        guard let bytes = try? file.readAll(limit: 4096, subject: path) else {
            throw FingersealError(.usage, "Cannot read the client secret file \(path).")
        }
        // A trailing newline is the editor's, not the secret's.
        var end = bytes.endIndex
        while end > bytes.startIndex, [0x0a, 0x0d, 0x20].contains(bytes[end - 1]) { end -= 1 }
        return String(decoding: bytes[..<end], as: UTF8.self)
    }

    static func passwordFlow(_ client: OAuthClient, _ arguments: ParsedArguments, _ context: Context) throws -> TokenSet {
        let user = try arguments.values["--user"] ?? context.vault().store.location.account.name
        let password: SecureBytes
        if let number = try arguments.integer("--password-fd") {
            guard number <= Int(Int32.max), fcntl(Int32(number), F_GETFD) != -1 else {
                throw FingersealError(.usage, "File descriptor \(number) is not open.")
            }
            password = try SecretInput.readLine(fd: Int32(number))
        } else {
            password = try SecretInput.prompt(Messages.passwordPrompt(user))
        }
        return try client.passwordGrant(username: user, password: password,
                                        scope: arguments.values["--scope"] ?? "openid offline_access")
    }

    /// RFC 8628: show the code (and a QR code), poll at the interval, slow down when asked,
    /// stop on expiry, refusal or Ctrl-C.
    static func deviceFlow(_ client: OAuthClient, scope: String, _ arguments: ParsedArguments,
                           _ context: Context) throws -> TokenSet {
        var authorization = try client.startDeviceAuthorization(scope: scope)
        if arguments.has("--json") {
            struct Prompt: Encodable {
                let verificationUri: String, verificationUriComplete: String?, userCode: String, expiresIn: Int
            }
            let encoder = JSONEncoder()
            encoder.keyEncodingStrategy = .convertToSnakeCase
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let line = try encoder.encode(Prompt(verificationUri: authorization.verificationURI,
                                                 verificationUriComplete: authorization.verificationURIComplete,
                                                 userCode: authorization.userCode, expiresIn: authorization.expiresIn))
            context.output.out(String(decoding: line, as: UTF8.self))
        } else {
            context.output.out(Messages.openAndEnter(authorization.verificationURI, authorization.userCode))
            if !arguments.has("--no-qr"), let target = authorization.verificationURIComplete,
               let code = try? QRCode(text: target) {
                context.output.out(Messages.orScanQR)
                context.output.out(code.renderHalfBlocks())
            }
        }
        context.output.note(Messages.waitingForSignIn)
        let interrupt = try InterruptWatch()
        let deadline = monotonicSeconds() + Double(authorization.expiresIn)
        while monotonicSeconds() < deadline {
            var pfd = pollfd(fd: interrupt.fd, events: Int16(POLLIN), revents: 0)
            if poll(&pfd, 1, Int32(authorization.interval * 1000)) > 0 && interrupt.fired() {
                throw FingersealError(.cancelled, Messages.cancelled)
            }
            do throws(TokenFailure) {
                return try client.pollDevice(authorization)
            } catch {
                switch error {
                case .authorizationPending: continue
                case .slowDown: authorization.interval += 5
                default: throw loginError(error)
                }
            }
        }
        throw FingersealError(.timedOut, Messages.codeExpired)
    }

    static func loginError(_ failure: TokenFailure) -> FingersealError {
        switch failure {
        case .chainEnded: return FingersealError(.noMatch, Messages.credentialsRefused)
        case .accessDenied: return FingersealError(.noMatch, Messages.signInRefused)
        case .expiredToken: return FingersealError(.timedOut, Messages.codeExpired)
        case let .unreachable(why): return FingersealError(.unavailable, Messages.providerUnreachable(why))
        case let .badConfiguration(why): return FingersealError(.badConfiguration, Messages.providerProblem(why))
        case let .malformed(why): return FingersealError(.unavailable, Messages.providerProblem(why))
        case let .rejected(status, code):
            return FingersealError(.unavailable, Messages.providerProblem("it answered \(status)" + (code.map { " \($0)" } ?? "")))
        case .authorizationPending, .slowDown: return FingersealError(.unavailable, Messages.providerProblem("unexpected answer"))
        }
    }
}
