import FingersealCore
import Localization

/// The audit trail: what `fingerseal audit` lists and syslog receives, and what `audit --verify`
/// finds. Only the broker says these; those the core, the flows or the tests say too are public in
/// FingersealCore (Support/Messages/AuditMessages.swift).
extension Messages {
    // Audit trail: what `fingerseal audit` lists and syslog receives (one sentence per event)
    static func auditListed(_ seq: UInt64, _ time: String, _ sentence: String) -> String { tr("Event %1$s, %2$s: %3$s", seq, time, sentence) }
    /// An entry of the attempts' chain, numbered in that chain.
    static func auditListedAttempt(_ seq: UInt64, _ time: String, _ sentence: String) -> String {
        tr("Attempt %1$s, %2$s: %3$s", seq, time, sentence)
    }
    /// Attempts the broker has counted in the open window and not written yet.
    static func auditAttemptsPending(_ total: UInt64, since: String, until: String) -> String {
        trn("%1$s more attempt since %2$s is counted and not listed one by one; the count is recorded as one entry when it ends, at %3$s.",
            "%1$s more attempts since %2$s are counted and not listed one by one; the count is recorded as one entry when it ends, at %3$s.",
            Int(clamping: total), total, since, until)
    }
    static var auditNone: String { tr("No events are recorded yet.") }
    static func auditUnreadableLines(_ count: Int) -> String {
        trn("%1$s line of the audit trail cannot be read. Run: fingerseal audit --verify", "%1$s lines of the audit trail cannot be read. Run: fingerseal audit --verify", count, count)
    }
    static func auditIntact(_ events: Int) -> String { trn("The audit trail is intact: %1$s event.", "The audit trail is intact: %1$s events.", events, events) }
    /// `audit --verify`: what rotation took from a chain (`through` is the last number gone).
    static func auditRotatedAway(attempts: Bool, through: UInt64, oldestKept: String) -> String {
        switch (attempts, through == 1) {
        case (false, true): return tr("Event 1 was rotated away; the oldest kept is from %1$s.", oldestKept)
        case (false, false): return tr("Events 1 to %1$s were rotated away; the oldest kept is from %2$s.", through, oldestKept)
        case (true, true): return tr("Attempt 1 was rotated away; the oldest attempt kept is from %1$s.", oldestKept)
        case (true, false): return tr("Attempts 1 to %1$s were rotated away; the oldest attempt kept is from %2$s.", through, oldestKept)
        }
    }
    static var auditInterruptedAppend: String { tr("Its last line is incomplete because an append was interrupted; it held no recorded event, and the next event recorded removes it.") }
}
