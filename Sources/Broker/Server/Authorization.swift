import FingersealCore
import FingersealWire
import SystemKit

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
        case .status, .login, .unlock, .token, .proof, .logout, .audit, .stepUp, .seal, .reveal, .pinSet, .pinChange, .pinReset,
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
