import FingersealCore
import FingersealWire

extension AuditOrigin {
    /// Where a request comes from, for its audit events in the journal: the channel, and the
    /// PAM service a host named (vouched for only when the host runs as root).
    init(_ channel: Channel, caller: Caller) {
        self.init(service: channel.pam?.service, serviceFromRoot: caller.isRoot, channel: channel.audited)
    }
}
