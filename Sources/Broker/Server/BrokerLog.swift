import FingersealCore
import SystemdKit

extension AuditSink {
    /// The broker's log, which every store it makes carries to the core's audit trail: the
    /// journal with each event's fields where journald listens (never waited for), else
    /// syslog(3) at LOG_AUTHPRIV.
    static let brokerLog = AuditSink.journal { Journal.shared.send($0) }
}
