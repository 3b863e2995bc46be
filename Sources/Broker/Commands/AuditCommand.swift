import FingersealCore

/// audit: the trail listed, or verified with the vault key.
enum AuditCommand {
    static func audit(_ call: Call) throws -> Reply {
        let store = call.store
        guard try Vault.status(store) != nil else { throw FingersealError(.noVault, Messages.noVault) }
        let trail = AuditTrail(store: store, sink: .none)
        if call.has("--verify") { return try verify(trail, call) }
        let listing = try trail.list()
        if call.has("--json") {
            for record in listing.records { call.conversation.output(record.json) }
        } else if listing.records.isEmpty {
            call.conversation.output(Messages.auditNone)
        } else {
            for record in listing.records {
                call.conversation.output(Messages.auditListed(record.seq, isoTimestamp(record.time), record.sentence))
            }
        }
        if listing.unreadableLines > 0 { call.conversation.info(Messages.auditUnreadableLines(listing.unreadableLines)) }
        return Reply(.success)
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

    static func verify(_ trail: AuditTrail, _ call: Call) throws -> Reply {
        let verification = try trail.verify(try Vault.unlockWithDevice(trail.store))
        let message = verification.problem.map { Messages.auditTampered($0.message) } ?? Messages.auditIntact(verification.events)
        if call.has("--json") {
            var report = AuditReport(intact: verification.intact, events: verification.events,
                                     interruptedAppend: verification.interruptedAppend, message: message)
            report.problem = verification.problem?.kind.rawValue
            report.file = verification.problem?.file
            report.line = verification.problem?.line
            report.entry = verification.problem?.entry
            try call.printJSON(report)
        }
        if verification.problem != nil { throw FingersealError(.vaultUnusable, message) }
        if !call.has("--json") {
            call.conversation.output(message)
            if verification.interruptedAppend { call.conversation.info(Messages.auditInterruptedAppend) }
        }
        return Reply(.success)
    }
}
