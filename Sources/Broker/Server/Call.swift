import FingersealCore
import FingersealWire
import SodiumKit
import SystemKit

/// One request in the broker: who asks (from the kernel), for which user and session,
/// through which conversation, with which settings in force. Every flow is a function of it.
struct Call {
    let caller: Caller
    let request: Request
    /// Through what the person is reached, and so what may be asked (`Channel`).
    let channel: Channel
    let conversation: Conversation
    let state: BrokerState
    /// The user acted on.
    let account: UserAccount
    /// The site settings in force for this request (`Options`: the configuration file, its
    /// section for the request's PAM service, the module's arguments; `Dispatcher.effectiveOptions`).
    let settings: Options
    /// The request's options, typed and checked once, when the call was made.
    let given: RequestOptions
    /// Work for after the reply has gone out (see `AfterReply`).
    let after: AfterReply

    /// The caller's vault, with the TPM settings of the configuration.
    var store: VaultStore { state.store(for: account, tpm: settings.tpmPolicy, read: vaultRead) }
    var session: SessionKey { SessionKey(uid: account.uid, session: caller.session, liveness: caller.liveness) }

    /// The session a step-up grant is kept in and looked up from: the caller's, only when it
    /// belongs to the account acted on. User A confirming inside user M's session (su, pkexec)
    /// leaves nothing there for M to use as A.
    var grantSession: SessionKey? { caller.sessionOwner == account.uid ? session : nil }

    /// Another account on whose behalf a root host asks for this one (M running su for B):
    /// the host's real uid (a setuid program), else its login uid, else PAM_RUSER. Nil when it
    /// is the account's owner asking, or a host of the system at the seat (a login screen,
    /// login on a console): their tries are the owner's. Decided once, when the call is made.
    let applicant: UInt32?
    /// What the request has read of the account's vault (its check of whose it is, first).
    let vaultRead: RequestRead

    static func applicant(_ caller: Caller, _ channel: Channel, _ account: UserAccount) -> UInt32? {
        let asking: UInt32?
        if !caller.isRoot {
            asking = caller.uid
        } else if channel.pam == nil {
            asking = nil // root's own command line (--user NAME)
        } else if caller.realUID != 0 {
            asking = caller.realUID
        } else if let loginUID = caller.loginUID {
            asking = loginUID
        } else if let ruser = channel.pam?.ruser, !ruser.isEmpty, ruser.utf8.count <= 256 {
            asking = (try? UserAccount.named(ruser))??.uid
        } else {
            asking = nil
        }
        return asking == account.uid ? nil : asking
    }

    /// A PIN to check or set, its Argon2id run in one of the broker's few slots.
    func pinKeyslot(_ pin: SecureBytes) -> PINKeyslot {
        PINKeyslot(pin: pin, cost: state.settings.pinCost, workSlots: state.pinChecks)
    }

    /// The lockout counters this request's tries count against (`applicant`'s own, when
    /// another account asks).
    func ledger(_ store: VaultStore) -> LockoutLedger {
        LockoutLedger(store: store, options: settings, applicant: applicant)
    }

    /// The caller is not at this computer (logind says the session is remote, or a PAM host
    /// names a remote host): the reader is not used for it unless `allow_remote`.
    var isRemote: Bool {
        LoginOrigin.isRemote(remoteHost: channel.pam?.rhost, sshSession: caller.remote)
    }

    /// How long a confirmation this request makes lasts, and the oldest one it accepts: what
    /// it asks for (`requested`: the CLI's --ttl, a stack's ttl=) but never beyond the site's
    /// ceiling (`stepup_max_ttl`) for anyone other than root. A PAM host a user runs may
    /// shorten a grant, never lengthen one.
    func stepUpSeconds(_ requested: Int) -> Int {
        caller.isRoot ? requested : min(requested, settings.stepUpMaxTTL)
    }

    /// This command's options (`StepUpOptions`, `AuditOptions`, …): its defaults when the
    /// command has another group.
    func options<G: OptionGroup>(for _: G.Type) -> G { given.group(G.self) }
    /// The shared groups: `--json`, and the reader `--device`.
    var json: Bool { given.command.output.json }
    var deviceID: String? { given.command.scan.device }

    /// The client answers from a descriptor (`--pin-fd`): no typing mistake can happen there.
    var answersFromDescriptor: Bool { given.command.answers.pinFromDescriptor }

    /// What an application's confirmations are kept under: a hash of the session agent's
    /// grant key (never the key itself); nil for everyone else. A hash that cannot be made is
    /// an error, never the session's own confirmations.
    func grantScope() throws -> [UInt8]? {
        guard let key = channel.application?.grantKey else { return nil }
        do { return try GenericHash.hash(key) } catch {
            throw FingersealError(.systemError, Messages.systemFailure(.finishRequest), detail: "grant key hash: \(error)")
        }
    }
}
