import FingersealCore
import SharedMessages
import Glibc
import SodiumKit
import SystemKit

/// One request in the broker: who asks (from the kernel), for which user and session,
/// through which conversation, with which options in force. Every flow is a function of it.
struct Call {
    let caller: Caller
    let request: Request
    /// Through what the person is reached, and so what may be asked (`Channel`).
    let channel: Channel
    let conversation: Conversation
    let state: BrokerState
    /// The user acted on.
    let account: UserAccount
    let options: Options
    /// The request's options, typed and checked once, when the call was made.
    let given: RequestOptions
    /// Work for after the reply has gone out (see `AfterReply`).
    let after: AfterReply

    /// The caller's vault, with the TPM settings of the configuration.
    var store: VaultStore { state.store(for: account, tpm: options.tpmPolicy, read: vaultRead) }
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
        LockoutLedger(store: store, options: options, applicant: applicant)
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
        caller.isRoot ? requested : min(requested, options.stepUpMaxTTL)
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

/// Work a flow leaves for after its reply, run on the connection's thread right after
/// `conversation.finish(reply)`, whatever the reply was:
/// - `add`: the success-side bookkeeping of an unlock (the audit entry, the failure count's
///   reset), so the person is answered first (failures are persisted before the answer). It
///   counts as pending for the user from the moment it is added, so the user's next request
///   starts only once it is written (`Bookkeeping.settle`).
/// - `hold`: a step-up made for a command, which lasts until the client hangs up.
/// Everything here must be bounded in time.
final class AfterReply: @unchecked Sendable {
    /// The account bookkeeping added now is counted for: the request's, or the one touch to
    /// sign in identified (`actingOn`).
    private var uid: UInt32
    private let pending: Bookkeeping
    private var work: [(uid: UInt32, run: () -> Void)] = []
    private var holding: (() -> Void)? = nil

    init(uid: UInt32, pending: Bookkeeping) {
        self.uid = uid
        self.pending = pending
    }

    func add(_ next: @escaping () -> Void) {
        pending.begin(uid)
        work.append((uid, next))
    }

    /// Bookkeeping added from now on is `uid`'s (touch to sign in found the account).
    func actingOn(_ uid: UInt32) { self.uid = uid }

    func hold(_ until: @escaping () -> Void) { holding = until }

    /// The connection stays open after the reply (a confirmation held for a command).
    var holds: Bool { holding != nil }

    func run() {
        let due = work
        work = []
        for next in due {
            next.run()
            pending.end(next.uid)
        }
        holding?()
        holding = nil
    }
}

/// Bookkeeping written after a reply, counted per user: a request waits (bounded) until the
/// user's earlier requests have written theirs, so it never reads a store that an answered
/// request is still updating.
final class Bookkeeping: @unchecked Sendable {
    private let condition = ThreadCondition()
    private var counts: [UInt32: Int] = [:]
    /// Bookkeeping is a few file writes; a request waits at most this long for it.
    static let settleLimit = 5.0

    func begin(_ uid: UInt32) {
        condition.locked { counts[uid, default: 0] += 1 }
    }

    func end(_ uid: UInt32) {
        condition.locked {
            counts[uid, default: 1] -= 1
            if counts[uid] == 0 { counts[uid] = nil }
            condition.broadcast()
        }
    }

    /// Waits until `uid` has no bookkeeping pending, at most `settleLimit`.
    func settle(_ uid: UInt32) {
        let deadline = monotonicSeconds() + Bookkeeping.settleLimit
        condition.locked {
            while counts[uid] != nil && monotonicSeconds() < deadline { condition.wait(until: deadline) }
        }
    }
}

/// Who may ask for what (design §2). This table and nothing else decides it.
enum Authorization {
    enum Rule {
        /// A PAM host: root for any user; a host running as the user (a lock screen) for
        /// that user only.
        case pamHost
        /// The caller's own account; root may name another with --user.
        case ownAccount
        /// Biometric data or reader storage: root, or members of `fingerseal-rig`.
        case rig
        /// The machine's accounts (`fingerseal account`): root only.
        case root
        /// A login host of the system with no user name yet (touch to sign in): root only,
        /// acting as itself until the finger says who it is.
        case seat
    }

    static let rigGroup = "fingerseal-rig"

    static func rule(_ command: Command) -> Rule {
        switch command {
        case .pamAuthenticate, .pamAccount, .pamOpenSession, .pamCloseSession, .pamPasswordUsed, .pamChauthtok: return .pamHost
        case .capture, .selftest: return .rig
        case .accountList, .accountRemove, .accountExpire, .accountPurge, .accountUseradd, .accountUserdel: return .root
        case .pamIdentify: return .seat
        case .status, .login, .unlock, .token, .logout, .audit, .stepUp, .seal, .reveal, .pinSet, .pinChange, .pinReset,
             .identifyOn, .identifyOff, .fingerOn, .fingerOff, .keyringOn, .keyringOff,
             .reset, .devices, .enroll, .fingers, .forget, .verify, .doctor:
            return .ownAccount
        }
    }

    /// The account the request acts on, or why it may not.
    static func account(for request: Request, named user: String?, caller: Caller) throws -> UserAccount {
        let named: String?
        switch rule(request.command) {
        case .pamHost:
            guard let user = request.origin.pamItems?.user, !user.isEmpty else { throw FingersealError(.unknownUser, Messages.unknownUser) }
            named = user
        case .root:
            guard caller.isRoot else { throw FingersealError(.notPermitted, Messages.accountRootOnly) }
            named = user
        case .seat:
            guard caller.isRoot else { throw FingersealError(.notPermitted, Messages.identifyOnlyForSystemHosts) }
            named = nil
        case .ownAccount, .rig:
            named = user
            if named != nil && !caller.isRoot { throw FingersealError(.notPermitted, Messages.onlyRootNamesUser) }
            if request.command == .selftest || request.command == .capture {
                guard caller.isRoot || caller.isInGroup(named: rigGroup) else {
                    throw FingersealError(.notPermitted, Messages.rigOnly(rigGroup))
                }
            }
        }
        let found: UserAccount?
        do {
            if let named {
                guard named.utf8.count <= 256, !named.contains("/") else { throw FingersealError(.unknownUser, Messages.unknownUser) }
                found = try UserAccount.named(named)
            } else {
                found = try UserAccount.withID(caller.uid)
            }
        } catch let error as FingersealError {
            throw error
        } catch {
            throw FingersealError(.systemError, Messages.systemFailure(.lookUpAccount), detail: "\(error)")
        }
        guard let account = found else { throw FingersealError(.unknownUser, Messages.unknownUser) }
        // A caller other than root acts only on its own uid, whatever it names.
        if !caller.isRoot && account.uid != caller.uid { throw FingersealError(.notPermitted, Messages.notYourAccount) }
        return account
    }
}

enum Dispatcher {
    typealias Handler = (Call) throws -> Reply

    static func handler(_ command: Command) -> Handler {
        switch command {
        case .pamAuthenticate: return { try PAMFlows.authenticate($0, identified: nil) }
        case .pamIdentify: return IdentifyFlow.authenticate
        case .pamAccount: return PAMFlows.account
        case .pamOpenSession: return PAMFlows.openSession
        case .pamCloseSession: return PAMFlows.closeSession
        case .pamPasswordUsed: return { try PAMFlows.passwordTaken($0, changed: false) }
        case .pamChauthtok: return { try PAMFlows.passwordTaken($0, changed: true) }
        case .status: return VaultCommands.status
        case .pinSet: return VaultCommands.pinSet
        case .pinChange: return VaultCommands.pinChange
        case .pinReset: return VaultCommands.pinReset
        case .identifyOn: return { try VaultCommands.identify($0, on: true) }
        case .identifyOff: return { try VaultCommands.identify($0, on: false) }
        case .fingerOn: return { try VaultCommands.fingerUnlock($0, on: true) }
        case .fingerOff: return { try VaultCommands.fingerUnlock($0, on: false) }
        case .keyringOn: return KeyringCommands.on
        case .keyringOff: return KeyringCommands.off
        case .reset: return VaultCommands.reset
        case .login: return LoginCommand.login
        case .unlock: return TokenCommands.unlock
        case .token: return TokenCommands.token
        case .logout: return TokenCommands.logout
        case .audit: return AuditCommand.audit
        case .stepUp: return StepUpCommands.stepUp
        case .seal: return StepUpCommands.seal
        case .reveal: return StepUpCommands.reveal
        case .devices: return ReaderCommands.devices
        case .enroll: return ReaderCommands.enroll
        case .fingers: return ReaderCommands.fingers
        case .forget: return ReaderCommands.forget
        case .verify: return ReaderCommands.verify
        case .capture: return ReaderCommands.capture
        case .selftest: return ReaderCommands.selftest
        case .doctor: return DoctorCommand.doctor
        case .accountList: return AccountCommands.list
        case .accountRemove: return AccountCommands.remove
        case .accountExpire: return AccountCommands.expire
        case .accountPurge: return AccountCommands.purge
        case .accountUseradd: return AccountCommands.useradd
        case .accountUserdel: return AccountCommands.userdel
        }
    }

    /// Authorizes, runs the flow, and sends its result. Never throws: every error is an
    /// outcome and a sentence.
    static func handle(_ request: Request, from caller: Caller, conversation: Conversation, state: BrokerState,
                       slot: AdmissionSlot? = nil) {
        let reply: Reply
        var after: AfterReply? = nil
        let channel = Channel(request, from: caller)
        do {
            try refuseControlCharacters(request, from: caller)
            try checkApplication(request)
            let given: RequestOptions
            do throws(OptionError) {
                given = try RequestOptions(request.command, decoding: request.options, arguments: request.arguments)
            } catch {
                throw FingersealError(.usage, error.message)
            }
            let account: UserAccount
            do {
                account = try Authorization.account(for: request, named: given.user, caller: caller)
            } catch let error as FingersealError where error.outcome == .unknownUser {
                // A name this machine does not know, in a stack that provisions (issue 22 §2):
                // the first sign-in with the organisation's account makes it.
                guard let provisioning = try Provisioning.applies(request, caller: caller, channel: channel,
                                                                  conversation: conversation, state: state, given: given) else {
                    throw error
                }
                let provisioned = provisioning.run()
                slot?.giveBack()
                conversation.finish(provisioned)
                return
            }
            state.bookkeeping.settle(account.uid)
            let work = AfterReply(uid: account.uid, pending: state.bookkeeping)
            after = work
            let (options, warnings) = try effectiveOptions(request, caller: caller, state: state)
            // The CLI has always shown what in the configuration it did not understand; a PAM
            // host shows nothing of it, so it goes to the log (a mistyped module argument).
            for warning in warnings {
                if !channel.showsOnlyTheConversation { conversation.info(warning) } else {
                    Syslog.log(.warning, "fingersealed: \(request.command.rawValue) service=\(channel.pam?.service ?? "?"): \(warning)")
                }
            }
            let call = Call(caller: caller, request: request, channel: channel, conversation: conversation, state: state,
                            account: account, options: options, given: given, after: work,
                            applicant: Call.applicant(caller, channel, account), vaultRead: RequestRead())
            // A vault under the account's uid that another account made is set aside first.
            AccountVaults.enforce(call.store, state: state)
            reply = try handler(request.command)(call)
        } catch let error as FingersealError {
            reply = Reply(error.outcome, error.message)
            // A bad setting in a PAM stack shows nowhere else (the host says only PAM_SERVICE_ERR).
            if error.outcome == .notPermitted || error.outcome == .systemError
                || (error.outcome == .badConfiguration && channel.showsOnlyTheConversation) {
                Syslog.log(.warning, "fingersealed: \(request.command.rawValue) from \(caller): \(error.description)")
            }
        } catch {
            reply = Reply(.systemError, Messages.systemFailure(.finishRequest))
            Syslog.log(.warning, "fingersealed: \(request.command.rawValue) from \(caller): \(error)")
        }
        // The place is given back before the reply goes: a client that asks again at once
        // finds it free.
        if !(after?.holds ?? false) { slot?.giveBack() }
        conversation.finish(reply)
        after?.run()
    }

    /// Text with a control character (`Request.fieldWithControlCharacters`: the PAM items,
    /// module arguments, option values, arguments, language, time zone, what the session agent
    /// says of an application) is refused from every caller but a root PAM host, and nothing
    /// of it is logged. A root host (sshd, login, a display manager) passes on what its stack
    /// was given (sshd: a user name off the network) and keeps working as it did; what the
    /// broker logs of its text is escaped (`Syslog.log`).
    static func refuseControlCharacters(_ request: Request, from caller: Caller) throws {
        if caller.isRoot, case .pamHost = request.origin { return }
        guard let field = request.fieldWithControlCharacters else { return }
        throw FingersealError(.usage, Messages.controlCharacters(field))
    }

    /// What the session agent may say of an application (its commands are `Command.sender`'s,
    /// checked as the request was read): every field bounded (they go into the audit trail;
    /// control characters are refused with the rest of the request's text), a grant key of
    /// exactly 32 bytes.
    static func checkApplication(_ request: Request) throws {
        guard let application = request.origin.application else { return }
        let texts = [application.busName, application.executable, application.appID, application.name].compactMap { $0 }
        guard !application.busName.isEmpty, texts.allSatisfy({ $0.utf8.count <= 255 }),
              application.grantKey.map({ $0.count == 32 }) ?? true, application.methods.count <= Application.Method.allCases.count
        else { throw FingersealError(.usage, Messages.badApplication) }
    }

    /// The one order of settings (issue 23 §3): defaults, the system file's top level, its
    /// `[service NAME]` section for the PAM service of a PAM request, then the request's module
    /// arguments (all of them from a root host, presentation only from a host running as the
    /// user), except what the file fixed (`Options.applyArguments`).
    ///
    /// A section is the administrator's, so it reaches hosts running as the user too, but not
    /// all of it: such a host names its PAM service itself (pam_start's first argument), so it
    /// could pick whichever section is loosest (`[service sshd] allow_remote=yes`, a higher
    /// `max_fails`) for its own account. From a section it gets what it could be given as
    /// module arguments (`SiteSetting.forUserHosts`: presentation, skipping); a section's policy
    /// reaches hosts running as root only, whose service name is the system's. What only the
    /// whole machine sets is refused in a section when the file is read (`SiteSetting.fileOnly`).
    static func effectiveOptions(_ request: Request, caller: Caller, state: BrokerState) throws -> (Options, [String]) {
        var (options, warnings) = try state.systemOptions()
        if let service = request.origin.pamItems?.service {
            options = try options.forService(service, only: caller.isRoot ? nil : SiteSetting.forUserHosts)
        }
        let given = request.origin.moduleArguments
        let arguments = caller.isRoot ? given : given.filter { option in
            SiteSetting.forUserHosts.contains(String(option.prefix { $0 != "=" }))
        }
        warnings += try options.applyArguments(arguments, source: "module arguments")
        return (options, warnings)
    }
}
