import CLinux
import FingersealCore
import Glibc
import SodiumKit
import SystemKit

extension Commands {
    static let ttl = OptionSpec.value("--ttl", "SECONDS", "How long the confirmation lasts (default 300, at most 86400).")

    static let stepUpCommands: [CommandSpec] = [
        CommandSpec(
            name: "step-up", summary: "Confirm it is you before a sensitive action; kept per context for this login session.",
            arguments: "CONTEXT [-- COMMAND ...]",
            options: [
                ttl,
                .flag("--fresh", "Ask for the PIN even if a confirmation is held (a finger is not enough)."),
                .flag("--check", "Only say, by the exit status, whether a confirmation is held (0 yes, 1 no)."),
                .flag("--end", "End the confirmation for CONTEXT."),
                json, pinFD, device, timeout, eventsFD,
            ],
            discussion: """
                A confirmation held for CONTEXT in this login session means no prompt. Otherwise it asks for a finger \
                (the PIN may be typed while the reader waits, and is asked when there is no reader or the finger fails). \
                With a COMMAND after --, the confirmation lasts exactly as long as the command, and the exit status is \
                the command's. Confirmations live in memory under $XDG_RUNTIME_DIR and end at logout. \
                Exit status: 0 confirmed, 1 refused, 3 cancelled, 4 timed out, 5 locked.
                """,
            run: runStepUp),
        CommandSpec(
            name: "seal", summary: "Encrypt sensitive data for a context; revealing it needs a confirmation for that context.",
            arguments: "[FILE]",
            options: [.value("--context", "CONTEXT", "The context to seal for. Required."),
                      .value("--out", "FILE", "Write the sealed file here (created 0600) instead of standard output.")],
            discussion: "Reads FILE, or standard input. Sealing needs no confirmation; revealing does.",
            run: runSeal),
        CommandSpec(
            name: "reveal", summary: "Decrypt a sealed file to standard output, after a confirmation for its context.",
            arguments: "FILE",
            options: [.flag("--no-notice", "Do not say on standard error that personal data follows."),
                      ttl, pinFD, device, timeout, eventsFD],
            discussion: "The plaintext goes only to standard output, never to a file. Cancel or failure reveals nothing.",
            run: runReveal),
    ]

    /// The grants of this login session for the user running the command.
    static func grants(_ context: Context) throws -> StepUpGrants {
        guard let account = try VaultStore.guardedLookup({ try UserAccount.withID(geteuid()) }) else {
            throw FingersealError(.unknownUser, Messages.unknownUser)
        }
        let runtime = SessionFiles.runtimeDirectory(for: account, environment: context.environment["XDG_RUNTIME_DIR"])
        return StepUpGrants(account: account, runtimeDirectory: runtime,
                            identity: SessionIdentity.current(sessionVariable: context.environment["XDG_SESSION_ID"]))
    }

    static func ttlSeconds(_ arguments: ParsedArguments) throws -> Int {
        let seconds = try arguments.integer("--ttl") ?? StepUpGrants.defaultTTL
        guard (1...StepUpGrants.maxTTL).contains(seconds) else {
            throw FingersealError(.usage, "The option --ttl takes 1 to \(StepUpGrants.maxTTL) seconds.")
        }
        return seconds
    }

    /// A confirmation for `contextName`: the grant held in this session, or a finger (the PIN
    /// as fallback; only the PIN with `fresh`), which records a new grant. Returns the vault it
    /// opened and, when it asked, how. `device` is the vault already opened through its device
    /// slot, when the caller has it.
    static func stepUp(_ contextName: String, fresh: Bool, ttl: Int, holder: pid_t? = nil,
                       store: VaultStore, options: Options, device: UnlockedVault? = nil,
                       _ arguments: ParsedArguments, _ context: Context) throws -> (vault: UnlockedVault, asked: String?) {
        let grants = try grants(context)
        if !fresh {
            // Opening through the device slot asks nothing; the grant's MAC needs the vault key.
            if let vault = device ?? (try? Vault.unlockWithDevice(store)), grants.valid(contextName, vault: vault) != nil {
                return (vault, nil)
            }
        }
        context.output.note(Messages.stepUpPrompt(contextName))
        let trail = AuditTrail(store: store)
        let unlocked: Unlocked
        do {
            unlocked = fresh ? Unlocked(vault: try unlockWithPIN(try PINSource(arguments), store, options), method: "pin", finger: nil)
                             : try unlockWithFingerOrPIN(arguments, context, store: store, options: options)
        } catch let error as FingersealError {
            if error.outcome != .usage { trail.record(.stepUp(context: contextName, result: error.outcome), vault: nil) }
            throw error
        }
        trail.record(.stepUp(context: contextName, result: .success), vault: unlocked.vault)
        do {
            try grants.grant(contextName, ttl: ttl, method: unlocked.method, holder: holder, vault: unlocked.vault)
        } catch let error as FingersealError where holder == nil && error.outcome == .unavailable {
            context.output.note(error.message) // no memory-backed runtime directory: confirmed, not kept
        }
        return (unlocked.vault, unlocked.method == "pin" ? "your PIN" : "your finger")
    }

    static func runStepUp(_ arguments: ParsedArguments, _ context: Context) throws {
        guard let contextName = arguments.positionals.first else {
            throw FingersealError(.usage, "Say which context to confirm, for example: fingerseal step-up payroll")
        }
        guard StepUpGrants.isValidContext(contextName) else { throw FingersealError(.usage, Messages.badContext) }
        let command = Array(arguments.positionals.dropFirst())
        let modes = ["--check", "--end", "--fresh"].filter { arguments.has($0) }
        if arguments.has("--check") || arguments.has("--end") {
            guard modes.count == 1, command.isEmpty else {
                throw FingersealError(.usage, "Use --check or --end on their own, with only the context.")
            }
        }
        if arguments.has("--end") {
            let ended = try grants(context).end(contextName)
            context.output.out(ended ? Messages.grantEnded(contextName) : Messages.noGrant(contextName))
            return
        }
        if arguments.has("--check") {
            let (store, _) = try context.vault()
            let vault = try Vault.unlockWithDevice(store)
            guard try grants(context).valid(contextName, vault: vault) != nil else {
                throw FingersealError(.noMatch, Messages.noGrant(contextName))
            }
            context.output.out(Messages.grantHeld(contextName))
            return
        }
        let ttl = try ttlSeconds(arguments)
        if command.isEmpty {
            let (store, options) = try context.vault()
            let (_, asked) = try stepUp(contextName, fresh: arguments.has("--fresh"), ttl: ttl, store: store, options: options,
                                        arguments, context)
            context.output.out(asked.map { Messages.steppedUp(contextName, $0, ttl: ttl) } ?? Messages.grantHeld(contextName))
            return
        }
        // The grant lives as long as this process, which lives exactly as long as COMMAND.
        let interrupt = try InterruptWatch(signals: [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD])
        let (store, options) = try context.vault()
        let (_, asked) = try stepUp(contextName, fresh: arguments.has("--fresh"), ttl: StepUpGrants.maxTTL, holder: getpid(),
                                    store: store, options: options, arguments, context)
        // A confirmation that was already held keeps its own expiry; one made for COMMAND ends with it.
        let grants = try grants(context)
        let status: Int32
        do {
            status = try runForeground(command, interrupt: interrupt)
        } catch {
            if asked != nil { _ = try? grants.end(contextName) }
            throw error
        }
        if asked != nil { _ = try? grants.end(contextName) }
        exit(status)
    }

    /// Runs `command` with this terminal, waits for it, passes on SIGTERM, SIGHUP and SIGQUIT,
    /// and returns its exit status (128 + the signal when a signal ended it). Ctrl-C reaches
    /// the command through the terminal; this process waits for it to end.
    static func runForeground(_ command: [String], interrupt: InterruptWatch) throws -> Int32 {
        let child: pid_t
        do {
            child = try spawnProgram(command[0], arguments: command, environment: nil, searchPath: true)
        } catch let error as SystemError {
            throw FingersealError(error.code == ENOENT ? .usage : .systemError,
                                  Messages.cannotRun(command[0], String(cString: strerror(error.code))))
        }
        while true {
            var status: Int32 = 0
            let done = waitpid(child, &status, WNOHANG)
            if done == child {
                let signalled = status & 0x7f
                return signalled == 0 ? (status >> 8) & 0xff : 128 + signalled
            }
            if done < 0 && errno != EINTR { throw FingersealError(.systemError, Messages.systemFailure("wait for \(command[0])")) }
            var watched = pollfd(fd: interrupt.fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&watched, 1, -1)
            if let signal = interrupt.next(), [SIGTERM, SIGHUP, SIGQUIT].contains(signal) { kill(child, signal) }
        }
    }

    // MARK: seal / reveal

    static func runSeal(_ arguments: ParsedArguments, _ context: Context) throws {
        guard let contextName = arguments.values["--context"] else {
            throw FingersealError(.usage, "Say which context to seal for with --context CONTEXT.")
        }
        guard StepUpGrants.isValidContext(contextName) else { throw FingersealError(.usage, Messages.badContext) }
        guard arguments.positionals.count <= 1 else { throw FingersealError(.usage, "Give at most one file to seal.") }
        let input = arguments.positionals.first
        let plaintext = try readSecretInput(input)
        let (store, _) = try context.vault()
        // Sealing reveals nothing, so the vault is opened without asking.
        let sealed = try SealedFile.seal(plaintext, context: contextName, vault: try Vault.unlockWithDevice(store))
        if let out = arguments.values["--out"] {
            let fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                throw FingersealError(.usage, Messages.cannotWrite(out, String(cString: strerror(errno))))
            }
            let file = FileDescriptor(owning: fd)
            try file.writeAll(sealed, subject: out)
            try file.sync()
        } else {
            try FileDescriptor(owning: dup(STDOUT_FILENO)).writeAll(sealed, subject: "standard output")
        }
    }

    /// FILE (or standard input when nil) into secure memory, refusing more than the limit.
    static func readSecretInput(_ path: String?) throws -> SecureBytes {
        let fd = path.map { open($0, O_RDONLY | O_CLOEXEC) } ?? dup(STDIN_FILENO)
        guard fd >= 0 else { throw FingersealError(.usage, Messages.cannotRead(path ?? "standard input")) }
        let file = FileDescriptor(owning: fd)
        var buffer = try SecureBytes(capacity: 64 * 1024)
        var chunk = [UInt8](repeating: 0, count: 65536)
        defer { Sodium.wipe(&chunk) }
        while true {
            let count = read(file.rawValue, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            if count < 0 { throw FingersealError(.usage, Messages.cannotRead(path ?? "standard input")) }
            if count == 0 { return buffer }
            if buffer.count + count > SealedFile.maxPlaintext { throw FingersealError(.usage, Messages.tooLargeToSeal(SealedFile.maxPlaintext)) }
            if buffer.count + count > buffer.capacity {
                // Grow into new secure memory; the old buffer is wiped when released.
                let larger = try SecureBytes(capacity: min(max(buffer.capacity * 2, buffer.count + count), SealedFile.maxPlaintext))
                buffer.withUnsafeBytes { for byte in $0 { larger.append(byte) } }
                buffer = larger
            }
            for byte in chunk[..<count] { buffer.append(byte) }
        }
    }

    static func runReveal(_ arguments: ParsedArguments, _ context: Context) throws {
        guard arguments.positionals.count == 1, let path = arguments.positionals.first else {
            throw FingersealError(.usage, "Say which sealed file to reveal.")
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw FingersealError(.usage, Messages.cannotRead(path)) }
        let file = FileDescriptor(owning: fd)
        guard let bytes = try? file.readAll(limit: SealedFile.maxPlaintext + 4096, subject: path) else {
            throw FingersealError(.usage, Messages.notSealedFile)
        }
        let parsed = try SealedFile.parse(bytes)
        // Another vault's file is refused before anyone is asked for a finger.
        let (store, options) = try context.vault()
        let device = try? Vault.unlockWithDevice(store)
        if let device, !SealedFile.belongs(parsed, to: device) {
            throw FingersealError(.vaultUnusable, Messages.sealedByAnotherVault)
        }
        let (vault, _) = try stepUp(parsed.context, fresh: false, ttl: try ttlSeconds(arguments), store: store, options: options,
                                    device: device, arguments, context)
        let plaintext = try SealedFile.open(parsed, vault: vault)
        AuditTrail(store: vault.store).record(.reveal(context: parsed.context, fileID: parsed.fileID), vault: vault)
        if !arguments.has("--no-notice") { context.output.note(Messages.personalDataFollows) }
        let out = FileDescriptor(owning: dup(STDOUT_FILENO))
        try plaintext.withUnsafeBytes { try out.writeAll($0, subject: "standard output") }
    }
}
