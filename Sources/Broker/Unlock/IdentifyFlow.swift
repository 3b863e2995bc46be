import FingerprintFlows
import FingersealCore
import FingersealWire
import FprintKit
import Glibc
import ReaderValues
import SystemKit

/// Touch to sign in (design §3, kiosk): a login host of the system that has no user name yet
/// asks the broker who the finger is. The gallery is the vaults of `identify_group`'s members
/// who opted in (`fingerseal identify on`), each read once through its device slot; the scan
/// is libfprint's identify (on the host for image readers, on the chip for match-on-chip
/// readers). A match is the identified account's finger: its unlock then runs as for a typed
/// user name (`PAMFlows.authenticate`), and the reply names the account for PAM_USER. Nobody
/// found (no match, a cancel, a timeout, a finger that matches more than one account, no
/// reader able to identify) leaves the user name to be asked: the reply names nobody.
enum IdentifyFlow {
    /// The most accounts one identify matches against; beyond it the group is too large for
    /// one scan to be a safe answer (the false-match risk grows with the gallery).
    static let maxAccounts = 1000

    static func authenticate(_ call: Call) throws -> Reply {
        guard call.settings.identify else { return Reply(.notApplicable) }
        if let refusal = PAMFlows.hostAdmission(call) {
            PAMFlows.log(call, refusal)
            return Reply(refusal.outcome)
        }
        guard let group = call.settings.identifyGroup else {
            Syslog.log(.warning, "fingersealed: identify without identify_group=: nobody takes part; the user name is asked")
            return Reply(.unavailable)
        }
        if let stop = call.state.identifyHistory.stop(IdentifyLimits(call.settings), now: SystemClock().now()) {
            call.conversation.info(sentence(stop))
            PAMFlows.log(call, AuthenticationResult(.unavailable, "identify: \(stop) after fingers nobody matched"))
            return Reply(.unavailable)
        }
        let found: Found
        do {
            found = try scan(call, group: group)
        } catch let error as FingersealError {
            // A scan ended by sleep or by another login at the seat is said before the user
            // name is asked; the rest (a cancel, a timeout) goes on to it quietly.
            if ReaderTurns.Interruption.ended(error) { call.conversation.info(error.message) }
            PAMFlows.log(call, AuthenticationResult(error.outcome, "identify: \(error.description)"))
            return Reply(error.outcome)
        }
        return try unlock(call, found)
    }

    /// One account of the gallery: its vault session (read once, opened through the device
    /// slot) and its prints this reader can match.
    struct Member {
        let account: UserAccount
        let session: VaultSession
        let prints: [(finger: String, print: Print)]
    }

    /// The accounts a finger may be identified as: members of `group` (asked of the system's
    /// groups) with a vault that opted in, fingers enrolled and the finger not locked. Vaults
    /// that cannot be read or opened are left out, and logged.
    struct Gallery {
        var accounts: [UserAccount] = []
        var sessions: [UInt32: VaultSession] = [:]

        init(_ call: Call, group: String) {
            let root = call.state.settings.stateDirectory
            let uids = directoryNames(root, onlyDirectories: true).compactMap { name -> UInt32? in
                guard name.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), name.utf8.count <= 10 else { return nil }
                return UInt32(name)
            }.sorted()
            for uid in uids {
                if accounts.count >= IdentifyFlow.maxAccounts {
                    Syslog.log(.warning, "fingersealed: identify: more than \(IdentifyFlow.maxAccounts) accounts take part; the rest are left out")
                    break
                }
                guard uid != 0, let account = (try? UserAccount.withID(uid)) ?? nil,
                      account.isMember(ofGroup: group) else { continue }
                call.state.bookkeeping.settle(uid)
                // An earlier account's vault never takes part: it is set aside here, as at
                // any request for the account (its later reads refuse it anyway).
                let store = call.state.store(for: account, tpm: call.settings.tpmPolicy, read: RequestRead())
                AccountVaults.enforce(store, state: call.state)
                let session = VaultSession(store)
                guard let status = try? session.status(), status.identify, !status.fingerOff, !status.fingers.isEmpty,
                      !status.lockout.counters(for: nil).fingerLocked,
                      PasswordDue.reason(call, status, now: SystemClock().now()) == nil else { continue }
                accounts.append(account)
                sessions[uid] = session
            }
            // Whoever signed in by touch most recently first: a matcher that stops at the first
            // match (libfprint's on the host compares print by print) finds a returning person
            // sooner. The order never decides who is found: a finger matches one account or
            // is refused as ambiguous.
            let recent = call.state.identifyHistory.recency()
            accounts.sort { (recent[$0.uid] ?? 0, $1.uid) > (recent[$1.uid] ?? 0, $0.uid) }
        }

        /// The members' prints this reader can match, each vault opened through its device
        /// slot (its MAC checked, and the opt-in with it).
        func members(for device: LibfprintDevice) -> [Member] {
            accounts.compactMap { account -> Member? in
                guard let session = sessions[account.uid] else { return nil }
                do {
                    let vault = try session.unlockWithDevice()
                    guard try vault.takesPartInIdentify() else { return nil }
                    let prints = try vault.prints().compactMap { entry -> (finger: String, print: Print)? in
                        guard let print = try? entry.template.withUnsafeBytes({ try Print(serialized: $0) }),
                              device.isCompatible(print) else { return nil }
                        return (entry.finger, print)
                    }
                    return prints.isEmpty ? nil : Member(account: account, session: session, prints: prints)
                } catch {
                    Syslog.log(.notice, "fingersealed: identify: the vault of user=\(account.name) is left out: \(error)")
                    return nil
                }
            }
        }
    }

    /// Who the finger was identified as.
    struct Found {
        let member: Member
        let finger: String
    }

    /// The scan: libfprint's identify over every member's prints (the gallery read in the
    /// reader's turn, once the reader is known to identify), up to `max_tries` scans in the
    /// timeout. A match found among more than one account's prints signs nobody in.
    static func scan(_ call: Call, group: String) throws -> Found {
        try call.state.reader.withReader(call) { reader, turn in
            guard case let .libfprint(device) = reader else {
                call.conversation.info(Messages.identifyNotWithFprintd)
                throw FingersealError(.unavailable, Messages.identifyNotWithFprintd, detail: "fprintd has no identify for fingerseal")
            }
            guard device.info.features.contains(.identify) else {
                call.conversation.info(Messages.identifyNotOnThisReader)
                throw FingersealError(.unavailable, Messages.identifyNotOnThisReader, detail: "the reader has no identify")
            }
            let gallery = Gallery(call, group: group)
            guard !gallery.accounts.isEmpty else {
                throw FingersealError(.notEnrolled, Messages.notEnrolled, detail: "nobody in \(group) takes part in identify")
            }
            let members = gallery.members(for: device)
            let entries = members.enumerated().flatMap { index, member in member.prints.map { (member: index, finger: $0.finger, print: $0.print) } }
            guard !entries.isEmpty else {
                throw FingersealError(.noPrints, Messages.noCompatiblePrints, detail: "no print of the gallery fits this reader")
            }
            let settings = ScanSettings(timeout: Double(call.settings.timeout), maxTries: call.settings.maxTries, cancelHint: call.channel.cancelHint)
            let deadline = monotonicSeconds() + settings.timeout
            let limits = IdentifyLimits(call.settings)
            var failures = 0
            var prompted = false
            var stopped: IdentifyHistory.Stop? = nil
            while failures < settings.maxTries {
                let operation: ReaderOperation
                let prints = entries.map(\.print)
                do throws(FprintError) { operation = try device.identify(prints) } catch { throw Fingerprint.translate(error) }
                if !prompted {
                    call.conversation.info(Messages.identifyPrompt(swipe: reader.swipe, cancelHint: settings.cancelHint))
                    prompted = true
                }
                let result = operation.wait(timeout: max(deadline - monotonicSeconds(), 0),
                                            cancelFDs: [call.conversation.cancelFD, turn.stopFD]) { event in
                    call.conversation.readerEvent(event)
                    if case let .hint(hint) = event { call.conversation.info(Fingerprint.describe(hint)) }
                }
                switch result {
                case let .identified(index?) where entries.indices.contains(index):
                    let matched = entries[index]
                    // libfprint names one print; the same template held by another account
                    // (one finger enrolled twice) makes the answer ambiguous.
                    let others = Set(entries.filter { $0.member != matched.member && $0.print.isSame(as: matched.print) }.map(\.member))
                    guard others.isEmpty else {
                        try ambiguous(call, [members[matched.member]] + others.sorted().map { members[$0] })
                    }
                    call.state.identifyHistory.matched(members[matched.member].account.uid)
                    return Found(member: members[matched.member], finger: matched.finger)
                case .identified:
                    failures += 1
                    stopped = call.state.identifyHistory.noMatch(limits, now: SystemClock().now())
                    call.conversation.scanOutcome(.noMatch)
                    if stopped == nil && failures < settings.maxTries { call.conversation.error(Messages.noMatchTryAgain) }
                case .failed(.retry):
                    continue // the hint was shown; not a failed match
                case .failed(.cancelled):
                    if call.conversation.takeCancel() { throw FingersealError(.cancelled, Messages.cancelled) }
                    throw FingersealError(.unavailable, Messages.cancelled, detail: "the reader cancelled the scan")
                case let .failed(error):
                    throw Fingerprint.translate(error)
                default:
                    throw FingersealError(.unavailable, Messages.readerUnexpectedResult)
                }
                if stopped != nil { break }
            }
            call.conversation.error(Messages.identifyNoMatch)
            // A pause is routine; a lock or the day's limit is worth an administrator's look.
            if stopped == .locked || stopped == .dailyLimit {
                Syslog.log(.warning, "fingersealed: identify: touch to sign in "
                           + (stopped == .locked ? "is locked until a sign-in with a user name" : "is off for the day")
                           + " after too many fingers nobody matched")
            }
            throw FingersealError(.noMatch, Messages.identifyNoMatch, detail: "no account matched \(failures) scan(s)")
        }
    }

    /// Why touch to sign in does not run, as the person at the machine is told.
    static func sentence(_ stop: IdentifyHistory.Stop) -> String {
        switch stop {
        case let .paused(seconds): return Messages.identifyPaused(minutes: (seconds + 59) / 60)
        case .locked: return Messages.identifyLocked
        case .dailyLimit: return Messages.identifyDailyLimit
        }
    }

    /// A finger matched more than one account: nobody is signed in, each account's trail
    /// records it, and the user name is asked.
    static func ambiguous(_ call: Call, _ members: [Member]) throws -> Never {
        for member in members {
            member.session.record(.identifyAmbiguous(otherAccounts: members.count - 1))
        }
        call.conversation.error(Messages.identifyAmbiguous)
        throw FingersealError(.unavailable, Messages.identifyAmbiguous,
                              detail: "the finger matched \(members.count) accounts: \(members.map(\.account.name).joined(separator: ", "))")
    }

    /// The identified account's unlock, as for a typed user name, with the finger already
    /// matched; the reply names the account.
    static func unlock(_ call: Call, _ found: Found) throws -> Reply {
        let account = found.member.account
        call.after.actingOn(account.uid)
        let identified = Call(caller: call.caller, request: call.request, channel: call.channel, conversation: call.conversation,
                              state: call.state, account: account, settings: call.settings, given: call.given,
                              after: call.after, applicant: Call.applicant(call.caller, call.channel, account),
                              vaultRead: found.member.session.store.requestRead ?? RequestRead())
        var reply = try PAMFlows.authenticate(identified, identified: (finger: found.finger, session: found.member.session))
        reply.user = account.name
        return reply
    }
}
