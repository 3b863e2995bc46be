import CLinux
import CurlKit
import FingersealCore
import FoundationEssentials
import Glibc
import IdentityClient
import SodiumKit
import SystemKit

extension Commands {
    static let tokenCommands: [CommandSpec] = [
        CommandSpec(
            name: "unlock", summary: "Unlock your sign-in with a finger (or the PIN) and get a fresh access token.",
            arguments: "[--exec COMMAND ...]",
            options: [
                .flag("--print-token", "Write the access token to standard output."),
                .rest("--exec", "COMMAND ...", "Run COMMAND with the access token on an inherited descriptor (see below)."),
                .flag("--pin", "Use the PIN, not a finger."),
                json, pinFD, device, timeout, eventsFD,
            ],
            discussion: """
                While the reader waits you may type your PIN instead; Enter alone goes straight to the PIN. \
                The token is never shown unless asked for. With --exec, COMMAND gets it on the file descriptor \
                named in FINGERSEAL_ACCESS_TOKEN_FD (read it, for example, with: cat <&"$FINGERSEAL_ACCESS_TOKEN_FD"); \
                it is never put in the arguments or the environment, and fingerseal exits with COMMAND's status.
                """,
            run: runUnlock),
        CommandSpec(
            name: "token", summary: "Print the access token of this session while it is valid; otherwise unlock first.",
            options: [.value("--min-valid", "SECONDS", "Unlock again if the token expires sooner than this (default 60)."),
                      json, pinFD, device, timeout, eventsFD],
            run: runToken),
        CommandSpec(
            name: "logout", summary: "Sign out: end the sign-in at the identity provider and remove it from your vault.",
            options: [json, pinFD],
            discussion: "Needs the PIN. Your PIN and enrolled fingers are kept; fingerseal login signs in again.",
            run: runLogout),
    ]

    static let tokenVariable = "FINGERSEAL_ACCESS_TOKEN_FD"

    // MARK: unlock

    struct UnlockReport: Encodable {
        let result: String
        let method: String
        let finger: String?
        /// "refreshed", or "offline" (the IdP is unreachable, within the offline grace).
        let token: String
        let expiresAt: Int64?
        var accessToken: String? = nil
    }

    /// Unlocks and refreshes; returns the token to use (fresh, or while offline the session's
    /// cached one if it is still valid), and what to report.
    static func unlockAndRefresh(_ arguments: ParsedArguments, _ context: Context) throws
        -> (token: AccessTokenFile?, report: UnlockReport) {
        let (store, options) = try context.vault()
        // Say "sign in first" before asking for a finger that could not help.
        guard let status = try Vault.status(store) else { throw FingersealError(.noVault, Messages.noVault) }
        switch status.signIn {
        case .none: throw FingersealError(.signInRequired, Messages.notSignedIn)
        case .required: throw FingersealError(.signInRequired, Messages.signInRequired)
        case .active: break
        }
        let trail = AuditTrail(store: store)
        let unlocked = try recordingFailure("unlock", trail) {
            try unlockWithFingerOrPIN(arguments, context, store: store, options: options)
        }
        trail.record(.unlock(method: unlocked.method == "pin" ? .pin : .finger, via: .cli), vault: unlocked.vault)
        let clock = SystemClock()
        let result = try TokenChain.refresh(unlocked.vault, offlineGrace: options.offlineGrace,
                                            makeClient: OAuthClient.factory(options))
        let session = sessionPlace(context)
        var token: AccessTokenFile? = nil
        if let fresh = try recordingFailure("token refresh", trail, vault: unlocked.vault, { try result.checked() }) {
            let file = AccessTokenFile(fresh, issuedAt: clock.now())
            if let session { _ = try? file.encoded().withUnsafeBytes { try SessionFiles.placeAccessToken($0, for: session.0, runtimeDirectory: session.1) } }
            token = file
        } else if let session, let cached = SessionFiles.readAccessToken(for: session.0, runtimeDirectory: session.1),
                  cached.isValid(at: clock.now()) {
            token = cached
        }
        let report = UnlockReport(result: "unlocked", method: unlocked.method, finger: unlocked.finger,
                                  token: result.step.rawValue, expiresAt: token?.expiresAt)
        return (token, report)
    }

    /// The account and runtime directory of this login session, when there is one.
    static func sessionPlace(_ context: Context) -> (UserAccount, String)? {
        guard let runtime = context.environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/"),
              let account = try? UserAccount.withID(geteuid()) else { return nil }
        return (account, runtime)
    }

    static func runUnlock(_ arguments: ParsedArguments, _ context: Context) throws {
        let exec = arguments.has("--exec")
        if exec && arguments.positionals.isEmpty { throw FingersealError(.usage, "Say which command to run after --exec.") }
        if !exec && !arguments.positionals.isEmpty {
            throw FingersealError(.usage, "The unlock command takes no arguments. To run a command, put it after --exec.")
        }
        if exec && (arguments.has("--print-token") || arguments.has("--json")) {
            throw FingersealError(.usage, "Use --exec on its own, without --print-token or --json.")
        }
        let (token, report) = try unlockAndRefresh(arguments, context)
        let wantsToken = exec || arguments.has("--print-token")
        guard let token else {
            if wantsToken { throw FingersealError(.unavailable, Messages.offlineNoToken) }
            if arguments.has("--json") { return try printJSON(report, context) }
            context.output.out(Messages.unlockedWith(describe(report)))
            context.output.note(Messages.offlineNoToken)
            return
        }
        if exec { try execWithToken(arguments.positionals, token) }
        if arguments.has("--json") {
            var full = report
            if arguments.has("--print-token") { full.accessToken = token.token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }
            return try printJSON(full, context)
        }
        if arguments.has("--print-token") { return try printToken(token) }
        context.output.out(Messages.unlockedWith(describe(report)) + " "
                           + Messages.tokenReady(Int(max(token.expiresAt - SystemClock().now(), 0) / 60)))
    }

    static func describe(_ report: UnlockReport) -> String {
        report.method == "pin" ? "your PIN" : "your finger" + (report.finger.map { " (\($0))" } ?? "")
    }

    /// The token and a newline, straight from secure memory to standard output.
    static func printToken(_ token: AccessTokenFile) throws {
        let out = FileDescriptor(owning: dup(STDOUT_FILENO))
        try token.token.withUnsafeBytes { try out.writeAll($0, subject: "standard output") }
        try out.writeAll([0x0a], subject: "standard output")
    }

    /// Replaces this process with `command`, the token in a sealed memfd on a descriptor named
    /// in FINGERSEAL_ACCESS_TOKEN_FD: never in argv or the environment, and gone with the
    /// command. Returns only by throwing.
    static func execWithToken(_ command: [String], _ token: AccessTokenFile) throws -> Never {
        let fd = memfd_create("fingerseal-access-token", UInt32(MFD_ALLOW_SEALING))
        guard fd >= 0 else { throw FingersealError(.systemError, Messages.systemFailure("hand over the token")) }
        let file = FileDescriptor(owning: fd)
        try token.token.withUnsafeBytes { try file.writeAll($0, subject: "the token descriptor") }
        // Read-only from here on, for the command and anything it starts.
        _ = fcntl(fd, FS_F_ADD_SEALS, FS_F_SEAL_WRITE | FS_F_SEAL_GROW | FS_F_SEAL_SHRINK | FS_F_SEAL_SEAL)
        lseek(fd, 0, SEEK_SET)
        setenv(tokenVariable, "\(fd)", 1)
        let argv = command.map { strdup($0) } + [nil]
        execvp(command[0], argv)
        let code = errno
        argv.forEach { free($0) }
        throw FingersealError(code == ENOENT ? .usage : .systemError, Messages.cannotRun(command[0], String(cString: strerror(code))))
    }

    // MARK: token

    static func runToken(_ arguments: ParsedArguments, _ context: Context) throws {
        let margin = try arguments.integer("--min-valid") ?? 60
        guard margin <= 86_400 else { throw FingersealError(.usage, "The option --min-valid takes at most 86400 seconds.") }
        let now = SystemClock().now()
        var token: AccessTokenFile? = nil
        if let session = sessionPlace(context), let cached = SessionFiles.readAccessToken(for: session.0, runtimeDirectory: session.1),
           cached.isValid(at: now, margin: Int64(margin)) {
            token = cached
        } else {
            token = try unlockAndRefresh(arguments, context).token
        }
        guard let token else { throw FingersealError(.unavailable, Messages.offlineNoToken) }
        if arguments.has("--json") {
            struct TokenReport: Encodable { let accessToken: String; let expiresAt: Int64 }
            return try printJSON(TokenReport(accessToken: token.token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) },
                                             expiresAt: token.expiresAt), context)
        }
        try printToken(token)
    }

    // MARK: logout

    static func runLogout(_ arguments: ParsedArguments, _ context: Context) throws {
        let (store, options) = try context.vault()
        guard let status = try Vault.status(store) else { throw FingersealError(.noVault, Messages.noVault) }
        guard status.signIn != .none, let provider = status.provider else {
            throw FingersealError(.signInRequired, Messages.notSignedIn)
        }
        // A sensitive operation: the PIN, not a finger.
        let vault = try recordingFailure("sign-out", AuditTrail(store: store)) {
            try unlockWithPIN(try PINSource(arguments), store, options)
        }
        var revoked = false
        var warning: String? = nil
        if status.signIn == .active, let refreshToken = try vault.secret(TokenChain.refreshTokenRecord) {
            do throws(TokenFailure) {
                let secret = (try? vault.secret(TokenChain.clientSecretRecord)) ?? nil
                revoked = try OAuthClient(provider: provider, clientSecret: secret, options: options).revoke(refreshToken)
                if !revoked { warning = Messages.notRevocable }
            } catch {
                warning = Messages.revokeFailed("\(error)")
            }
        }
        // The sign-in goes even when the provider could not be told: the user asked for it.
        try vault.update { $0.signedOut() }
        AuditTrail(store: store).record(.logout, vault: vault)
        if let session = sessionPlace(context) { _ = try? SessionFiles.dropAccessToken(for: session.0, runtimeDirectory: session.1) }
        if arguments.has("--json") {
            struct LogoutReport: Encodable { let result: String; let revoked: Bool; let message: String? }
            return try printJSON(LogoutReport(result: "signed-out", revoked: revoked, message: warning), context)
        }
        if let warning { context.output.note(warning) }
        context.output.out(Messages.loggedOut)
    }
}
