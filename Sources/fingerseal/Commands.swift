import FingersealCore
import FoundationEssentials
import Glibc
import SodiumKit

/// The command tree. Each command's `run` is a small function below.
enum Commands {
    static let pinFD = OptionSpec.value("--pin-fd", "N", "Read PINs from file descriptor N, one per line, instead of the terminal.")
    static let json = OptionSpec.flag("--json", "Print machine-readable JSON.")

    static let root = CommandSpec(
        name: "fingerseal",
        summary: "Unlock your identity-provider sign-in with a fingerprint, with a PIN as fallback.",
        options: [.flag("--version", "Show the version.")],
        subcommands: [status, login] + tokenCommands + stepUpCommands + [pin, reset] + readerCommands + [audit],
        discussion: "Exit codes are listed in the README; 0 always means success."
    )

    static let status = CommandSpec(
        name: "status", summary: "Show whether fingerseal is set up, and how your vault is protected.",
        options: [json], run: runStatus)

    static let pin = CommandSpec(
        name: "pin", summary: "Set or change the PIN that unlocks your vault when a fingerprint cannot.",
        subcommands: [
            CommandSpec(name: "set", summary: "Set up fingerseal with a new PIN (creates your vault).",
                        options: [pinFD], discussion: "With --pin-fd, the first line is the new PIN.", run: runPINSet),
            CommandSpec(name: "change", summary: "Change the PIN. The current PIN is needed.",
                        options: [pinFD], discussion: "With --pin-fd, the first line is the current PIN, the second the new one.",
                        run: runPINChange),
        ])

    static let reset = CommandSpec(
        name: "reset", summary: "Delete your vault: PIN, enrolled fingers and sign-in.",
        options: [.flag("--yes", "Do not ask to type yes (the PIN is still needed)."), pinFD],
        discussion: "Needs the PIN. A forgotten PIN: delete the vault directory that fingerseal status shows.",
        run: runReset)

    // MARK: status

    struct StatusReport: Encodable {
        struct Slot: Encodable {
            let kind: String
            let protection: String
            let usable: Bool
            let description: String
        }
        struct Lockout: Encodable {
            let fingerFailures: Int
            let fingerLocked: Bool
            let pinFailures: Int
            let pinLocked: Bool
        }
        let vault: Bool
        let directory: String
        var enabledSince: String? = nil
        var pinSet: Bool? = nil
        var keyslots: [Slot]? = nil
        var fingers: [String]? = nil
        var signIn: String? = nil
        var issuer: String? = nil
        var clientId: String? = nil
        var lockout: Lockout? = nil
    }

    static func describe(_ slot: VaultStatus.Slot) -> String {
        switch (slot.kind, slot.protection) {
        case (.pin, _): return "protected by the PIN (Argon2id)"
        case (.device, .filePermissions):
            return slot.usable ? "device key protected by file permissions only"
                               : "device key protected by file permissions only; the key is missing or damaged"
        case (.device, .argon2id): return "device key"
        }
    }

    static func describe(_ state: SignInState) -> String {
        switch state {
        case .none: return "not signed in"
        case .active: return "signed in"
        case .required: return "sign-in required; run: fingerseal login"
        }
    }

    static func runStatus(_ arguments: ParsedArguments, _ context: Context) throws {
        let (store, _) = try context.vault()
        guard let status = try Vault.status(store) else {
            if arguments.has("--json") {
                try printJSON(StatusReport(vault: false, directory: store.location.directory), context)
            }
            throw FingersealError(.noVault, Messages.noVault)
        }
        if arguments.has("--json") {
            var report = StatusReport(vault: true, directory: status.directory)
            report.enabledSince = isoTimestamp(status.createdAt)
            report.pinSet = status.pinSet
            report.keyslots = status.keyslots.map {
                .init(kind: $0.kind.rawValue, protection: $0.protection.rawValue, usable: $0.usable, description: describe($0))
            }
            report.fingers = status.fingers
            report.signIn = status.signIn.rawValue
            report.issuer = status.provider?.issuer
            report.clientId = status.provider?.clientID
            report.lockout = .init(fingerFailures: status.lockout.fingerFailures, fingerLocked: status.lockout.fingerLocked,
                                   pinFailures: status.lockout.pinFailures, pinLocked: status.lockout.pinLocked)
            try printJSON(report, context)
            return
        }
        var lines = [
            "Vault: \(status.directory)",
            "Enabled since: \(isoTimestamp(status.createdAt))",
            "PIN: " + (status.pinSet ? "set" : "not set"),
            "Keyslots:",
        ]
        lines += status.keyslots.map { "  \($0.kind.rawValue): \(describe($0))" }
        lines.append("Fingers enrolled: " + (status.fingers.isEmpty ? "none" : status.fingers.joined(separator: ", ")))
        lines.append("Sign-in: " + describe(status.signIn) + (status.provider.map { " (\($0.issuer), client \($0.clientID))" } ?? ""))
        lines.append("Fingerprint lock: " + (status.lockout.fingerLocked
            ? "locked after too many failed scans; a PIN or password success unlocks it"
            : "not locked; failed scans in a row: \(status.lockout.fingerFailures)"))
        lines.append("PIN lock: " + (status.lockout.pinLocked
            ? "locked after too many wrong PINs; sign in again to unlock it"
            : "not locked; wrong PINs in a row: \(status.lockout.pinFailures)"))
        context.output.out(lines.joined(separator: "\n"))
    }

    static func printJSON(_ value: some Encodable, _ context: Context) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        context.output.out(String(decoding: try encoder.encode(value), as: UTF8.self))
    }

    // MARK: pin

    /// Where PINs come from: the terminal, or lines on a descriptor.
    struct PINSource {
        let fd: Int32?

        init(_ arguments: ParsedArguments) throws {
            guard let number = try arguments.integer("--pin-fd") else { fd = nil; return }
            guard number <= Int(Int32.max), fcntl(Int32(number), F_GETFD) != -1 else {
                throw FingersealError(.usage, "File descriptor \(number) is not open.")
            }
            fd = Int32(number)
        }

        func read(_ prompt: String) throws -> SecureBytes {
            let pin = try fd.map { try SecretInput.readLine(fd: $0) } ?? SecretInput.prompt(prompt)
            if pin.count == 0 { throw FingersealError(.usage, Messages.pinEmptyInput) }
            return pin
        }

        /// A new PIN, checked against the rules; asked twice on a terminal.
        func readNew() throws -> SecureBytes {
            let pin = try read(Messages.enterNewPIN)
            try PINRules.check(pin)
            if fd == nil {
                let again = try read(Messages.repeatNewPIN)
                guard pin.isEqual(to: again) else { throw FingersealError(.usage, Messages.pinMismatch) }
            }
            return pin
        }
    }

    static func runPINSet(_ arguments: ParsedArguments, _ context: Context) throws {
        let source = try PINSource(arguments)
        let (store, _) = try context.vault()
        if try Vault.status(store) != nil { throw FingersealError(.usage, Messages.vaultExists) }
        let pin = try source.readNew()
        _ = try Vault.create(store, pin: PINKeyslot(pin: pin))
        context.output.out(Messages.pinSet)
    }

    /// The vault opened with the PIN (asked on the terminal or read from --pin-fd); lockout
    /// rules apply.
    static func unlockWithPIN(_ source: PINSource, _ store: VaultStore, _ options: Options,
                              prompt: String = Messages.enterPIN) throws -> UnlockedVault {
        guard try Vault.status(store) != nil else { throw FingersealError(.noVault, Messages.noVault) }
        let pin = try source.read(prompt)
        return try Vault.unlock(store, pin: PINKeyslot(pin: pin), ledger: LockoutLedger(store: store, options: options))
    }

    static func runPINChange(_ arguments: ParsedArguments, _ context: Context) throws {
        let source = try PINSource(arguments)
        let (store, options) = try context.vault()
        let vault = try unlockWithPIN(source, store, options, prompt: Messages.enterOldPIN)
        let new = try source.readNew()
        try vault.update { try $0.changePIN(PINKeyslot(pin: new)) }
        context.output.out(Messages.pinChanged)
    }

    // MARK: reset

    static func runReset(_ arguments: ParsedArguments, _ context: Context) throws {
        let pins = try PINSource(arguments)
        let (store, options) = try context.vault()
        let damaged: Bool
        do {
            guard try Vault.status(store) != nil else {
                context.output.out(Messages.resetNothing)
                return
            }
            damaged = false
        } catch let error as FingersealError where error.outcome == .vaultUnusable {
            // A damaged vault protects nothing and cannot check a PIN: confirmation is enough.
            context.output.note(error.message)
            damaged = true
        }
        if !arguments.has("--yes") {
            let answer = try SecretInput.prompt(Messages.resetConfirm, echo: true)
            guard answer.copyBytes() == Array("yes".utf8) else { throw FingersealError(.cancelled, Messages.resetCancelled) }
        }
        if !damaged {
            // A sensitive operation: the PIN itself, never a finger or a held confirmation.
            do {
                _ = try unlockWithPIN(pins, store, options)
            } catch let error as FingersealError where [.wrongPIN, .lockedOut].contains(error.outcome) {
                context.output.note(Messages.pinForReset)
                throw error
            }
        }
        _ = try Vault.reset(store)
        context.output.out(Messages.resetDone)
    }
}
