import FingersealCore
import FingersealWire
import SystemKit

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
        case .proof: return ProofCommand.proof
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
                            account: account, settings: options, given: given, after: work,
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
              application.grantKey.map({ $0.count == 32 }) ?? true, application.methods.count <= UnlockMethod.allCases.count
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
