import CurlKit
import FingerprintFlows
import FingersealCore
import FingersealWire
import FoundationEssentials
import Glibc
import IdentityClient
import JOSEKit
import QRKit
import SodiumKit
import SystemKit

/// The first sign-in with the organisation's account (issue 22 §2): a PAM authentication for
/// a user name this machine does not know, in a stack with `provision=idp`, becomes in the
/// same conversation
/// 1. a device sign-in (RFC 8628) at the `[provision]` issuer and client, asking for a fresh
///    sign-in there: the address and the code to type, this computer's name, and (opt-in) a
///    QR code; a short wait (`provision_code_lifetime`);
/// 2. the checks: the person signed in at the provider after the code was shown (the ID
///    token's `auth_time`), the identity carries `provision_require`, its `user_claim` names
///    exactly the name typed (a valid POSIX name, no account or group of that name), it has
///    no account made here yet (`provision_per_subject`), fewer than `provision_per_hour`
///    accounts made in the last hour;
/// 3. a pending record, then the account (useradd: locked password, the configured groups;
///    the home directory comes from pam_mkhomedir in the session stack);
/// 4. a new PIN (asked twice) and the vault with the sign-in sealed in it;
/// 5. one finger enrolled; the record becomes active, and PAM_SUCCESS.
/// A refusal creates nothing; a cancel, a timeout or a failure after step 3 removes
/// everything made (vault, account, record); a crash leaves a pending record that the next
/// broker start removes with what it names (`recover`). The broker does all of it: the
/// module only relays the conversation, as for every request.
struct Provisioning {
    let caller: Caller
    let request: Request
    let channel: Channel
    let conversation: Conversation
    let state: BrokerState
    let options: Options
    /// The configuration file's top level alone: what decides a new account's groups.
    let site: Options
    let given: RequestOptions
    /// The user name typed (PAM_USER), which stays the account's.
    let name: String

    /// The accounts being made now (by any request).
    static let inFlight = NamesInFlight()

    /// Tries at choosing a new PIN (a mismatch, a PIN the rules refuse).
    static let pinTries = 3

    /// The provisioning of `request` when it applies: a root PAM host's authentication in a
    /// stack with `provision=idp`, for a valid name, a person there to answer (not a remote
    /// login, not a service skipped, prompts allowed). Nil otherwise: the name stays unknown,
    /// exactly as without provisioning.
    static func applies(_ request: Request, caller: Caller, channel: Channel, conversation: Conversation,
                        state: BrokerState, given: RequestOptions) throws -> Provisioning? {
        guard request.command == .pamAuthenticate, caller.isRoot, let pam = channel.pam,
              let name = pam.user, AccountName.isValid(name) else { return nil }
        let (options, _) = try Dispatcher.effectiveOptions(request, caller: caller, state: state)
        guard options.provision == .idp else { return nil }
        if options.skipServices.contains(pam.service ?? "") || options.prompt == .none { return nil }
        guard PAMFlows.isInteractive(options, caller, pam) else { return nil }
        if LoginOrigin.isRemote(remoteHost: pam.rhost, sshSession: caller.remote) { return nil }
        return Provisioning(caller: caller, request: request, channel: channel, conversation: conversation, state: state,
                            options: options, site: try state.systemOptions().0, given: given, name: name)
    }

    /// What was made so far, for the undo.
    struct Made {
        var recorded = false
        /// This request's mark in the comment of the account it makes: the undo removes only
        /// an account that carries it.
        var marker: String? = nil
        /// useradd found the name taken: whatever has it now is not this request's.
        var nameTaken = false
        var account: UserAccount? = nil
        var vault = false
        /// Past the checks: an undo is a cancel, not a refusal.
        var started = false
        /// Ends the sign-in at the provider (best effort): nothing of it is kept here.
        var revoke: (() -> Void)? = nil
    }

    /// A refusal: its sentence, and the reason the audit trail gives (`Messages.auditReason`).
    struct Refusal: Error {
        let error: FingersealError
        let reason: AuditReason
    }

    /// Never throws: every end is an outcome and a sentence, and whatever was made is gone
    /// unless the outcome is success.
    func run() -> Reply {
        var made = Made()
        defer { if made.recorded { Provisioning.inFlight.end(name) } }
        do {
            return try provision(&made)
        } catch let refusal as Refusal {
            undo(made, reason: refusal.reason, detail: refusal.error.description)
            return Reply(refusal.error.outcome, refusal.error.message)
        } catch let error as FingersealError {
            // The provider's refusal of the sign-in is no fingerprint's.
            undo(made, reason: error.outcome == .noMatch ? .refusal(.signInRefused) : .outcome(error.outcome), detail: error.description)
            let message = made.started && error.outcome != .cancelled
                ? error.message + " " + Messages.provisionUndone : error.message
            return Reply(error.outcome, message)
        } catch {
            undo(made, reason: .outcome(.systemError), detail: "\(error)")
            return Reply(.systemError, Messages.provisionFailed(Messages.systemFailure(.finishRequest)))
        }
    }

    private func provision(_ made: inout Made) throws -> Reply {
        guard let provider = options.provisionProvider, let requirement = options.provisionRequire,
              let claim = options.userClaim else {
            throw FingersealError(.badConfiguration, Messages.provisionNotConfigured,
                                  detail: "provision=idp needs issuer, client_id, provision_require and user_claim")
        }
        if claim == .emailLocalPart && options.provisionEmailDomains.isEmpty {
            throw refusal(.badConfiguration, Messages.provisionEmailDomainMissing, .refusal(.emailDomainMissing))
        }
        let registry = try ProvisionRegistry(stateDirectory: state.settings.stateDirectory)
        // Before anyone signs in for nothing: a reader to enroll with, room in the hour.
        if state.reader.readerPresent(call(for: placeholder)) == false {
            throw refusal(.noReader, Messages.provisionNoReader, .outcome(.noReader))
        }
        if try registry.locked({ try registry.madeWithinHour(now: SystemClock().now()) }) >= options.provisionPerHour {
            throw refusal(.notPermitted, Messages.provisionRateLimited, .refusal(.rateLimited))
        }
        // The name typed is the account's: a name kept for the system or administrators, or a
        // group of that name (useradd would need the name for the account's own group), is
        // known to be refused before anyone signs in.
        if let refusal = reservedRefusal(name) { throw refusal }
        if SystemAccounts.groupExists(name) { throw refusal(.notPermitted, Messages.provisionClash(name), .refusal(.nameTaken)) }

        // 1. The device sign-in.
        conversation.info(Messages.provisionStart(name))
        let http = HTTPClient(options: options)
        var client: OAuthClient
        let tokens: TokenSet
        let codeIssuedAt: Int64
        var proofKeyMaterial: ProofKeyMaterial? = nil
        do {
            client = OAuthClient(metadata: try Discovery.discover(issuer: provider.issuer, http: http), clientID: provider.clientID,
                                 http: http)
            proofKeyMaterial = try SignInBinding.bind(&client, options, tpm: state.tpmPolicy(options))
            let signedIn = try deviceSignIn(client)
            tokens = try Provisioning.withIDToken(signedIn.tokens, client)
            codeIssuedAt = signedIn.issuedAt
        } catch let failure as TokenFailure {
            throw LoginCommand.loginError(failure)
        } catch let error as FingersealError where error.outcome == .timedOut {
            throw FingersealError(.timedOut, Messages.provisionCodeExpired, detail: error.description)
        }
        guard let refreshToken = tokens.refreshToken else { throw FingersealError(.unavailable, Messages.noRefreshToken) }
        made.revoke = { [client] in _ = try? client.revoke(refreshToken) }
        let proofKey = try SignInBinding.sealed(proofKeyMaterial, client, tokens, options)

        // 2. Who signed in, and may they have an account here, under this name?
        func refuse(_ sentence: String, _ reason: AuditReason.Refusal) -> Refusal {
            refusal(.notPermitted, sentence, .refusal(reason))
        }
        let claims: IDTokenClaims?
        do throws(TokenFailure) {
            claims = try IdentityVerification.verifiedIdentity(tokens: tokens, metadata: client.metadata, clientID: client.clientID,
                                                               nonce: nil, http: client.http, cache: state.jwks,
                                                               now: SystemClock().now(), binding: client.binding)
        } catch {
            throw LoginCommand.loginError(error)
        }
        guard let claims else { throw refuse(Messages.identityUnknown, .identityUnknown) }
        // Whoever approved the code signed in at the provider for it, after it was shown: not
        // a session their phone already had, which is what a relayed code rides on.
        switch Provisioning.freshness(authTime: Provisioning.signedAuthTime(claims, tokens, client), codeIssuedAt: codeIssuedAt) {
        case .fresh: break
        case .missing: throw refuse(Messages.provisionNoAuthTime, .authTimeMissing)
        case .stale: throw refuse(Messages.provisionNotFresh, .authNotFresh)
        }
        let identity = SignedInIdentity(claims)
        guard try carries(requirement, claims, tokens, client) else {
            throw refuse(Messages.provisionNotAllowed(identity.display), .requirement)
        }
        if claim == .emailLocalPart {
            switch Provisioning.emailVerdict(claims, domains: options.provisionEmailDomains) {
            case .accepted: break
            case .unverified: throw refuse(Messages.provisionEmailUnverified(identity.display), .emailUnverified)
            case .otherDomain: throw refuse(Messages.provisionEmailOtherDomain(identity.display), .emailDomain)
            }
        }
        let map = claim == .sub ? try UserMap.load(path: options.userMap) : nil
        guard let mapped = IdentityBinding.mappedName(identity, claim: claim, map: map) else {
            throw refuse(Messages.provisionNoName(identity.display, claim.rawValue), .noName)
        }
        guard AccountName.isValid(mapped) else { throw refuse(Messages.provisionInvalidName(String(mapped.prefix(64))), .invalidName) }
        if mapped != name, let refusal = reservedRefusal(mapped) { throw refusal }
        if try UserAccount.named(mapped) != nil || SystemAccounts.groupExists(mapped) {
            throw refuse(Messages.provisionClash(mapped), .nameTaken)
        }
        guard mapped == name else { throw refuse(Messages.provisionOtherName(identity.display, mapped, name), .otherName) }

        // 3. The record first, then the account: in `provision_groups`, and, where this stack
        // also signs in by touch, in `identify_group` (so the next login is a touch).
        let (groups, touchGroup) = Provisioning.groups(options, site: site)
        if options.identify, touchGroup == nil, let group = options.identifyGroup {
            Syslog.log(.notice, "fingersealed: provisioning \(name): identify_group=\(Options.shown(group)) is not the configuration "
                       + "file's top-level one, so the new account is not put in it")
        }
        let now = SystemClock().now()
        let issuer = client.providerRecord.issuer
        let marker = Encoding.hex(try Sodium.randomBytes(8))
        made.marker = marker
        func record(uid: UInt32?, _ state: ProvisionRecord.State, lastUsed: Int64) -> ProvisionRecord {
            ProvisionRecord(name: name, uid: uid, state: state, issuer: issuer, subject: identity.subject, createdAt: now,
                            lastUsed: lastUsed, marker: marker)
        }
        try registry.locked {
            // Checked again under the lock: another request may have made it meanwhile.
            if try registry.record(name) != nil || UserAccount.named(name) != nil || SystemAccounts.groupExists(name) {
                throw refuse(Messages.provisionClash(name), .nameTaken)
            }
            if try registry.madeWithinHour(now: now) >= options.provisionPerHour {
                throw refuse(Messages.provisionRateLimited, .rateLimited)
            }
            // One account per identity: a second one for the same person is what a stranger
            // with a relayed code would get.
            if try registry.records(issuer: issuer, subject: identity.subject).count >= options.provisionPerSubject {
                throw refuse(Messages.provisionHasAccount(identity.display), .subjectProvisioned)
            }
            try registry.write(record(uid: nil, .pending, lastUsed: now))
            made.recorded = true
            Provisioning.inFlight.begin(name)
        }
        made.started = true
        do {
            try SystemAccounts.create(name, groups: groups, marker: marker)
        } catch is SystemAccounts.NameInUse {
            // Made by someone else since it was checked: theirs, and not for the undo to touch.
            made.nameTaken = true
            throw refuse(Messages.provisionClash(name), .nameTaken)
        } catch {
            throw FingersealError(.systemError, Messages.provisionFailed(Messages.systemFailure(.finishRequest)),
                                  detail: "useradd \(name): \(error)")
        }
        guard let account = try UserAccount.named(name) else {
            throw FingersealError(.systemError, Messages.provisionFailed(Messages.systemFailure(.lookUpAccount)), detail: "no account after useradd")
        }
        made.account = account
        try registry.locked { try registry.write(record(uid: account.uid, .pending, lastUsed: now)) }
        let call = call(for: account)
        let store = call.store

        // 4. The PIN and the vault, with the sign-in sealed in it.
        conversation.info(Messages.provisionCreated(name))
        let pin = try askNewPIN(call)
        made.vault = true
        let vault = try Vault.create(store, pin: call.pinKeyslot(pin))
        try vault.update {
            try $0.signedIn(refreshToken: refreshToken, provider: client.providerRecord(proofKey: proofKey?.holder), proofKey: proofKey?.bytes,
                            identity: identity, at: SystemClock().now())
        }

        // 5. One finger.
        conversation.info(Messages.provisionEnrollNow)
        // Ctrl-C here ends the making of the account, not a way to a password (there is none yet).
        var scan = try call.scanSettings()
        scan.cancelHint = scan.cancelHint == .pressCtrlCForPassword ? .pressCtrlC : .none
        try state.reader.withReader(call) { reader, turn in
            do {
                try Fingerprint.enroll(vault: vault, reader: reader, finger: .rightIndex, settings: scan,
                                       prompter: conversation, cancelFDs: [conversation.cancelFD, turn.stopFD])
            } catch let error as FingersealError {
                throw ReaderCommands.clientCancel(call, error, turn)
            }
        }
        guard try !state.reader.enrolledFingers(call, vault: vault).isEmpty else {
            throw FingersealError(.notEnrolled, Messages.provisionFailed(Messages.noFingerEnrolled))
        }

        // Touch to sign in, where this stack offers it: the person chose the PIN and enrolled
        // the finger in this very conversation, which is what `fingerseal identify on` asks.
        if touchGroup != nil {
            try vault.update { $0.setIdentify(true) }
        }

        // Done: the record is active; from here the account is a normal one.
        try registry.locked {
            try registry.write(record(uid: account.uid, .active, lastUsed: SystemClock().now()))
            try registry.noteMade(now: now)
        }
        AuditTrail(store: store).record([.provisioned(issuer: issuer, subject: identity.subject)]
                                        + (touchGroup != nil ? [.identifySetting(on: true)] : []), vault: vault)
        Syslog.log(.notice, "fingersealed: provisioned account \(name) (uid \(account.uid)) for \(identity.subject) at \(issuer) "
                   + "service=\(channel.pam?.service ?? "?") (\(caller))")
        return Reply(.success, touchGroup != nil ? Messages.provisionDoneTouch(name) : Messages.provisionDone(name))
    }

    /// RFC 8628 in the PAM conversation: the address and the code to type as one sentence,
    /// this computer's name, a QR code only where the administrator opts in, then polling at
    /// the provider's interval for `provision_code_lifetime` at most. While it waits the
    /// module hears from the broker at each poll (an event it ignores), so its bound on
    /// silence holds; the person's cancel, or the host ending the conversation, stops it.
    /// Returns the tokens and when the code was asked for (what `auth_time` is checked against).
    private func deviceSignIn(_ client: OAuthClient) throws -> (tokens: TokenSet, issuedAt: Int64) {
        let deviceName = Provisioning.deviceName(options)
        let issuedAt = SystemClock().now()
        let authorization = try client.startDeviceAuthorization(scope: options.scope,
                                                                parameters: Provisioning.deviceParameters(options, deviceName: deviceName))
        conversation.info(Messages.openAndEnter(authorization.verificationURI, authorization.userCode))
        conversation.info(Messages.provisionThisComputer(deviceName))
        // A link with the code in it opens with one tap wherever it is sent: the easiest thing
        // to relay. Typing the code is the default.
        if options.provisionQR, let target = authorization.verificationURIComplete, let code = try? QRCode(text: target) {
            conversation.info(Messages.orScanQR + "\n" + code.renderHalfBlocks())
        }
        conversation.info(Messages.provisionWaiting)
        let tokens = try LoginCommand.awaitApproval(client, authorization, conversation, limit: Double(options.provisionCodeLifetime),
                                                    keepAlive: true)
        return (tokens, issuedAt)
    }

    /// A new PIN, asked twice; a mismatch or a PIN the rules refuse is said and asked again,
    /// a few times. An empty answer is a cancel.
    private func askNewPIN(_ call: Call) throws -> SecureBytes {
        var tries = 0
        while true {
            do {
                return try PINEntry.askNew(call)
            } catch let error as FingersealError where error.outcome == .usage {
                tries += 1
                if error.message == Messages.pinEmptyInput { throw FingersealError(.cancelled, Messages.cancelled) }
                guard tries < Provisioning.pinTries else { throw error }
                conversation.error(error.message)
            }
        }
    }

    /// Whether the identity carries the required claim value: in the ID token's claims, or,
    /// when the ID token lacks it, in the userinfo answer for the same subject (providers put
    /// groups in one or the other).
    private func carries(_ requirement: ClaimRequirement, _ claims: IDTokenClaims, _ tokens: TokenSet,
                         _ client: OAuthClient) throws -> Bool {
        if Provisioning.values(of: requirement.claim, in: claims).contains(requirement.value) { return true }
        guard tokens.idToken != nil, client.metadata.userinfoEndpoint != nil else { return false }
        do throws(TokenFailure) {
            let info = try client.userInfo(accessToken: tokens.accessToken)
            return info.subject == claims.subject && Provisioning.values(of: requirement.claim, in: info).contains(requirement.value)
        } catch {
            throw LoginCommand.loginError(error)
        }
    }

    /// The values a claim has in the provider's answer (a string, or each of an array's).
    static func values(of claim: String, in claims: IDTokenClaims) -> [String] {
        switch claim {
        case "groups": return claims.groups ?? []
        case "roles": return claims.roles ?? []
        case "sub": return [claims.subject]
        case "email": return claims.email.map { [$0] } ?? []
        case "email_verified": return claims.emailVerified.map { [$0 ? "true" : "false"] } ?? []
        case "preferred_username": return claims.preferredUsername.map { [$0] } ?? []
        case "name": return claims.name.map { [$0] } ?? []
        default: return []
        }
    }

    /// A refusal: said, logged (with `detail`, when there is more to say than the reason),
    /// audited; nothing was made.
    func refusal(_ outcome: Outcome, _ sentence: String, _ reason: AuditReason, detail: String? = nil) -> Refusal {
        Refusal(error: FingersealError(outcome, sentence, detail: "provisioning refused: \(detail ?? reason.word)"), reason: reason)
    }

    /// Ends the sign-in at the provider, then removes whatever `made` says was made, newest
    /// first: the vault (and its directory), the account (only the one made here: its comment
    /// carries this request's marker), the record. Then the event goes to the audit trail (a
    /// refusal or a cancel).
    private func undo(_ made: Made, reason: AuditReason, detail: String) {
        made.revoke?()
        var accountGone = true
        if let account = made.account {
            Provisioning.removeVault(of: account, state: state, options: options)
        }
        // The account only when it is the one this request made: its comment carries this
        // request's marker (and its uid is the one seen after useradd, when one was). useradd
        // may have made it and failed after, or failed first while another took the name:
        // an account of the name that is not this request's is left alone.
        if made.recorded, !made.nameTaken, SystemAccounts.isMade(name, marker: made.marker, uid: made.account?.uid) {
            accountGone = (try? SystemAccounts.remove(name, removeHome: true)) == true
        }
        // An account userdel would not remove keeps its pending record: the next broker start
        // tries again (it has no vault and a locked password meanwhile).
        if made.recorded, accountGone, let registry = try? ProvisionRegistry.existing(stateDirectory: state.settings.stateDirectory) {
            try? registry.locked { try registry.remove(name) }
        }
        let ended = [AuditReason.outcome(.cancelled), .outcome(.timedOut)].contains(reason)
        let event: ProvisioningEvent = made.started || ended ? .cancelled : .refused
        Provisioning.audit(name, .provisioning(event, reason: reason.word))
        Syslog.log(.notice, "fingersealed: provisioning \(name) \(event.rawValue) service=\(channel.pam?.service ?? "?") (\(caller)): \(detail)")
    }

    /// This request as a call for `account`: what the PIN, the vault and the reader flows take.
    func call(for account: UserAccount) -> Call {
        Call(caller: caller, request: request, channel: channel, conversation: conversation, state: state, account: account,
             settings: options, given: given, after: AfterReply(uid: account.uid, pending: state.bookkeeping), applicant: nil,
             vaultRead: RequestRead())
    }

    /// Stands for the account before it exists, only to ask whether a reader is there (which
    /// looks at the caller and the options, never at the account).
    private var placeholder: UserAccount { UserAccount(name: name, uid: UInt32.max - 1, gid: UInt32.max - 1, home: "/nonexistent") }

    // MARK: what other requests and the broker's chores use

    /// The vault of `account` and its directory, gone.
    static func removeVault(of account: UserAccount, state: BrokerState, options: Options) {
        _ = try? AccountStore(root: state.settings.stateDirectory).removeAccount(state.store(for: account, tpm: options.tpmPolicy))
        state.sessions.dropUser(account.uid)
    }

    /// An event of an account that has no vault (any more): to the log, as the audit trail
    /// logs what it cannot record.
    static func audit(_ name: String, _ event: AuditEvent) {
        let account = UserAccount(name: name, uid: UInt32.max - 1, gid: UInt32.max - 1, home: "/nonexistent")
        AuditTrail(store: VaultStore(location: .broker(stateDirectory: "/nonexistent", account: account)), sink: .brokerLog).log(event)
    }

    /// A successful authentication of `name`: when provisioning made it, it was used now.
    static func noteUse(_ name: String, state: BrokerState) {
        // Most accounts were not provisioned: nothing is locked or written for them.
        guard let registry = try? ProvisionRegistry.existing(stateDirectory: state.settings.stateDirectory),
              (try? registry.record(name)) ?? nil != nil else { return }
        try? registry.locked {
            guard var record = try registry.record(name), record.state == .active else { return }
            record.lastUsed = SystemClock().now()
            try registry.write(record)
        }
    }
}
