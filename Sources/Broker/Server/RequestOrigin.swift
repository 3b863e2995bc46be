import FingersealCore
import FingersealWire

extension AuditOrigin {
    /// Where a request comes from, for its audit events in the journal: the channel, and the
    /// PAM service a host named (vouched for only when the host runs as root).
    init(_ request: Request, caller: Caller) {
        let channel: AuditChannel = request.application != nil ? .application : request.pam != nil ? .pam : .cli
        self.init(service: request.pam?.service, serviceFromRoot: caller.isRoot, channel: channel)
    }
}
