import FingersealCore

extension Commands {
    static let audit = CommandSpec(
        name: "audit", summary: "List what happened to your vault (sign-ins, unlocks, lockouts, ...), or verify that the list is intact.",
        options: [
            .flag("--json", "Print each event as one JSON object per line (JSON Lines, not an array), exactly as stored."),
            .flag("--verify", "Check every entry with the vault key and say whether the trail is intact."),
        ],
        discussion: """
            Each event is listed as one sentence with its time (UTC). --verify opens the vault through its device \
            key (no prompt) and names the first entry that was edited, deleted, inserted, reordered or cut off; \
            with --json it prints one JSON object. Exit status: 0 when listed or intact; 9 when the trail was \
            changed or damaged. The listing itself is not verified.
            """,
        run: runAudit)

    static func runAudit(_ arguments: ParsedArguments, _ context: Context) throws {
        let (store, _) = try context.vault()
        guard try Vault.status(store) != nil else { throw FingersealError(.noVault, Messages.noVault) }
        let trail = AuditTrail(store: store, sink: .none)
        if arguments.has("--verify") { return try verifyAudit(trail, arguments, context) }
        let listing = try trail.list()
        if arguments.has("--json") {
            for record in listing.records { context.output.out(record.json) }
        } else if listing.records.isEmpty {
            context.output.out(Messages.auditNone)
        } else {
            for record in listing.records {
                context.output.out(Messages.auditListed(record.seq, isoTimestamp(record.time), record.sentence))
            }
        }
        if listing.unreadableLines > 0 { context.output.note(Messages.auditUnreadableLines(listing.unreadableLines)) }
    }

    struct AuditReport: Encodable {
        let intact: Bool
        let events: Int
        let interruptedAppend: Bool
        var problem: String? = nil
        var file: String? = nil
        var line: Int? = nil
        var entry: UInt64? = nil
        let message: String
    }

    static func verifyAudit(_ trail: AuditTrail, _ arguments: ParsedArguments, _ context: Context) throws {
        let verification = try trail.verify(try Vault.unlockWithDevice(trail.store))
        let message = verification.problem.map { Messages.auditTampered($0.message) } ?? Messages.auditIntact(verification.events)
        if arguments.has("--json") {
            var report = AuditReport(intact: verification.intact, events: verification.events,
                                     interruptedAppend: verification.interruptedAppend, message: message)
            report.problem = verification.problem?.kind.rawValue
            report.file = verification.problem?.file
            report.line = verification.problem?.line
            report.entry = verification.problem?.entry
            try printJSON(report, context)
        }
        if verification.problem != nil { throw FingersealError(.vaultUnusable, message) }
        if !arguments.has("--json") {
            context.output.out(message)
            if verification.interruptedAppend { context.output.note(Messages.auditInterruptedAppend) }
        }
    }

    /// Runs `body`; when it fails (other than a mistake on the command line), records the
    /// failure in the audit trail and rethrows. Recording itself never throws.
    static func recordingFailure<T>(_ action: String, _ trail: AuditTrail, vault: UnlockedVault? = nil,
                                    _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as FingersealError where error.outcome != .usage && error.outcome != .noVault {
            trail.record(.failure(action: action, reason: error.outcome.rawValue), vault: vault)
            throw error
        }
    }

    /// Runs a whole command; when it fails (other than a mistake on the command line), logs
    /// the failure to syslog without recording it in the trail: for commands whose failure
    /// leaves the vault as it was (a refused sign-in).
    static func loggingFailure(_ action: String, _ context: Context, _ body: () throws -> Void) throws {
        do {
            try body()
        } catch let error as FingersealError where error.outcome != .usage {
            if let (store, _) = try? context.vault() {
                AuditTrail(store: store).log(.failure(action: action, reason: error.outcome.rawValue))
            }
            throw error
        }
    }
}
