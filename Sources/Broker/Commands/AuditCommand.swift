import FingersealCore
import FingersealWire
import Localization

/// audit: both chains of the trail listed in the order they were written, or verified with
/// the vault key.
enum AuditCommand {
    static func audit(_ call: Call) throws -> Reply {
        let store = call.store
        guard try Vault.status(store) != nil else { throw FingersealError(.noVault, Messages.noVault) }
        let trail = AuditTrail(store: store, sink: .none)
        let options = call.options(for: AuditOptions.self)
        if options.verify { return try verify(trail, call, json: options.output.json) }
        let listing = try trail.list()
        if options.output.json {
            for record in listing.records { call.conversation.output(record.json) }
        } else if listing.records.isEmpty {
            call.conversation.output(Messages.auditNone)
        } else {
            for record in listing.records {
                let time = isoTimestamp(record.time)
                call.conversation.output(record.chain == .attempts ? Messages.auditListedAttempt(record.seq, time, record.sentence)
                                                                   : Messages.auditListed(record.seq, time, record.sentence))
            }
        }
        if listing.unreadableLines > 0 { call.conversation.info(Messages.auditUnreadableLines(listing.unreadableLines)) }
        // Not an entry yet: what the broker holds back, said beside the listing.
        if let (tally, until) = store.attemptLimiter?.pending(uid: call.account.uid, now: SystemClock().now()) {
            call.conversation.info(Messages.auditAttemptsPending(tally.total, since: Localization.localTime(tally.first),
                                                                 until: Localization.localTime(until)))
        }
        return Reply(.success)
    }

    struct AuditReport: Encodable {
        struct RotatedAway: Encodable {
            /// "security" or "attempts".
            let trail: String
            /// Entries 1 to `through` are gone.
            let through: UInt64
            let oldestKept: String
        }

        let intact: Bool
        let events: Int
        let interruptedAppend: Bool
        var problem: String? = nil
        var file: String? = nil
        var line: Int? = nil
        var entry: UInt64? = nil
        /// One per chain whose oldest entries were rotated away; empty when none were.
        var rotatedAway: [RotatedAway] = []
        let message: String
    }

    static func verify(_ trail: AuditTrail, _ call: Call, json: Bool) throws -> Reply {
        let verification = try trail.verify(try Vault.unlockWithDevice(trail.store))
        let message = verification.problem.map { Messages.auditTampered($0.message) } ?? Messages.auditIntact(verification.events)
        let rotations = verification.rotatedAway.map {
            Messages.auditRotatedAway(attempts: $0.chain == .attempts, through: $0.through, oldestKept: Localization.localTime($0.oldestKept))
        }
        if json {
            var report = AuditReport(intact: verification.intact, events: verification.events,
                                     interruptedAppend: verification.interruptedAppend, message: message)
            report.problem = verification.problem?.kind.rawValue
            report.file = verification.problem?.file
            report.line = verification.problem?.line
            report.entry = verification.problem?.entry
            report.rotatedAway = verification.rotatedAway.map {
                AuditReport.RotatedAway(trail: $0.chain.rawValue, through: $0.through, oldestKept: isoTimestamp($0.oldestKept))
            }
            try call.printJSON(report)
        }
        if verification.problem != nil { throw FingersealError(.vaultUnusable, message) }
        if !json {
            call.conversation.output(message)
            for rotation in rotations { call.conversation.output(rotation) }
            if verification.interruptedAppend { call.conversation.info(Messages.auditInterruptedAppend) }
        }
        return Reply(.success)
    }
}
