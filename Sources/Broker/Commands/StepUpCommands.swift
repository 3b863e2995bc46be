import FingersealCore
import FingersealWire
import SharedMessages
import SodiumKit

/// step-up, seal, reveal. Confirmations live in the broker's memory, keyed by the caller's
/// uid and login session (`call.session`): another session, another user or a broker
/// restart asks again.
enum StepUpCommands {
    /// `--ttl` (default `StepUp.defaultTTL`; its range checked when the call was made): at
    /// most the site's ceiling for anyone other than root (asking for more is a mistake that
    /// names the ceiling; the default simply shrinks to it). An application's confirmation
    /// (through the session agent) is held for its screen: until the application ends its
    /// context or leaves, so by default up to the ceiling, not a clock of its own.
    static func ttlSeconds(_ call: Call, asked: Int?) throws -> Int {
        guard let asked else { return call.stepUpSeconds(call.channel.application != nil ? StepUp.maxTTL : StepUp.defaultTTL) }
        guard call.stepUpSeconds(asked) == asked else { throw FingersealError(.usage, Messages.stepUpCeiling(call.settings.stepUpMaxTTL)) }
        return asked
    }

    /// A confirmation for `context` through the one unlock flow: the grant held in this
    /// session, or a finger (the PIN as fallback; only the PIN with `fresh`), which records a
    /// new grant lasting `ttl` seconds (held by `holder`'s connection as well, when given).
    /// Returns the vault it opened and, when it asked, how.
    /// `maxAge`: the oldest confirmation held that answers (nil: any). An application's
    /// confirmations are kept under its grant key (`Call.grantScope`).
    static func confirm(_ call: Call, _ context: String, fresh: Bool, ttl: Int, maxAge: Int? = nil, holder: UInt64? = nil,
                        session: VaultSession? = nil) throws -> (vault: UnlockedVault, asked: UnlockMethod?) {
        let wanted = UnlockRequest.Confirmation(context: context, scope: try call.grantScope(), fresh: fresh, acceptsWithin: maxAge,
                                                lasts: ttl, holder: holder)
        let result = UnlockFlow.run(call, try UnlockRequest.forChannel(call, .confirmation, confirmation: wanted),
                                    session: session)
        let vault = try result.confirmedVault()
        return (vault, result.askedWith)
    }

    // MARK: step-up

    /// `step-up CONTEXT`. With a command (the client sends the flag `--command` and runs it
    /// itself), a confirmation made here lasts as long as the client's connection: after the
    /// reply, the broker waits for the hang-up and ends it. One that was already held keeps
    /// its own expiry.
    /// A context, and --check or --end alone: checked when the call was made
    /// (`StepUpOptions.validate`).
    static func stepUp(_ call: Call) throws -> Reply {
        let given = call.options(for: StepUpOptions.self)
        guard let context = call.arguments.first else {
            throw FingersealError(.usage, OptionError.stepUpNeedsContext.message)
        }
        guard StepUpRules.isValidContext(context) else { throw FingersealError(.usage, Messages.badContext) }
        guard call.arguments.count == 1 else {
            throw FingersealError(.usage, Messages.commandAfterDashes(context))
        }
        let sessions = call.state.sessions
        let name = GrantName(context, scope: try call.grantScope())
        if given.end {
            let ended = call.grantSession.map { sessions.endGrant($0, name) } ?? false
            call.conversation.output(ended ? Messages.grantEnded(context) : Messages.noGrant(context))
            return Reply(.success)
        }
        if given.check {
            _ = try Vault.unlockWithDevice(call.store)
            guard let key = call.grantSession,
                  sessions.grant(key, name, now: SystemClock().now(), madeWithin: given.maxAge.map(Int64.init)) != nil else {
                throw FingersealError(.noMatch, Messages.noGrant(context))
            }
            call.conversation.output(Messages.grantHeld(context))
            return Reply(.success)
        }
        let ttl = try ttlSeconds(call, asked: given.ttl)
        if !given.command {
            let (_, asked) = try confirm(call, context, fresh: given.fresh, ttl: ttl, maxAge: given.maxAge)
            let shown = call.shownContext(context)
            call.conversation.output(asked.map { Messages.steppedUp(shown, $0, ttl: ttl) } ?? Messages.grantHeld(shown))
            return Reply(.success, method: asked?.rawValue ?? "held")
        }
        // For as long as the command runs, but never past the ceiling (root: a day).
        let longest = call.stepUpSeconds(StepUp.maxTTL)
        let holder = sessions.newHolder()
        let (_, asked) = try confirm(call, context, fresh: given.fresh, ttl: longest, maxAge: given.maxAge, holder: holder)
        if asked != nil, let key = call.grantSession {
            let conversation = call.conversation
            call.after.hold {
                conversation.waitForHangUp(limit: Double(longest))
                _ = sessions.endGrant(key, name, holder: holder)
            }
        }
        return Reply(.success)
    }

    // MARK: seal / reveal

    /// Seals what the client streams after the request (at most `SealedFile.maxPlaintext`)
    /// and sends the sealed file back as data. Sealing reveals nothing: no confirmation. The
    /// vault is opened first: nothing is received for a user who has none.
    static func seal(_ call: Call) throws -> Reply {
        // A context and at most one file: checked when the call was made (`SealOptions.validate`).
        guard let context = call.options(for: SealOptions.self).context else {
            throw FingersealError(.usage, OptionError.sealNeedsContext.message)
        }
        guard StepUpRules.isValidContext(context) else { throw FingersealError(.usage, Messages.badContext) }
        // Sealing reveals nothing, so the vault is opened without asking.
        let vault = try Vault.unlockWithDevice(call.store)
        let payload = try call.conversation.receiveData(limit: SealedFile.maxPlaintext, spare: AEAD.tagLength,
                                                        budget: call.state.payloads, uid: call.caller.uid,
                                                        tooLarge: Messages.tooLargeToSeal(SealedFile.maxPlaintext))
        let header = try SealedFile.seal(inPlace: payload.bytes, context: context, vault: vault)
        header.withUnsafeBytes { call.conversation.data($0, last: false) }
        payload.bytes.withUnsafeBytes { call.conversation.data($0) }
        return Reply(.success)
    }

    /// Reveals a sealed file the client streams after the request, after a confirmation for
    /// its context. The plaintext goes back as data only when every check passed: a cancel
    /// or a failure reveals nothing.
    static func reveal(_ call: Call) throws -> Reply {
        // The client names the file (or not: checked when the call was made) and streams its bytes.
        let given = call.options(for: RevealOptions.self)
        // Nothing is received for a user who has no vault.
        let session = VaultSession(call.store)
        guard try session.status() != nil else { throw FingersealError(.noVault, Messages.noVault) }
        let payload: PayloadBuffer
        do {
            payload = try call.conversation.receiveData(limit: SealedFile.maxPlaintext + SealedFile.overhead,
                                                        budget: call.state.payloads, uid: call.caller.uid,
                                                        tooLarge: Messages.notSealedFile)
        } catch let error as FingersealError where error.outcome == .usage {
            throw FingersealError(.usage, Messages.notSealedFile)
        }
        let parsed = try payload.bytes.withUnsafeBytes { try SealedFile.parse($0) }
        // Another vault's file is refused before anyone is asked for a finger.
        if let device = try? session.unlockWithDevice(), !SealedFile.belongs(parsed, to: device) {
            throw FingersealError(.vaultUnusable, Messages.sealedByAnotherVault)
        }
        let (vault, asked) = try confirm(call, parsed.context, fresh: false, ttl: try ttlSeconds(call, asked: given.ttl),
                                         maxAge: given.maxAge, session: session)
        let plaintext = try SealedFile.open(parsed, inPlace: payload.bytes, vault: vault)
        // Every reveal is in the trail (design §3): one that cannot be recorded is not made.
        guard AuditTrail(store: vault.store).record(.reveal(context: parsed.context, fileID: parsed.fileID), vault: vault) else {
            throw FingersealError(.systemError, Messages.systemFailure(.writeAuditTrail), detail: "reveal not recorded")
        }
        if !given.noNotice { call.conversation.info(Messages.personalDataFollows) }
        payload.bytes.withUnsafeBytes(in: plaintext) { call.conversation.data($0) }
        return Reply(.success, method: asked?.rawValue ?? "held")
    }
}

extension Call {
    /// A context as a sentence may name it: an application's is an identifier of its own (its
    /// dialog shows the program's words for it), so the sentences it gets name none.
    func shownContext(_ context: String) -> String? { channel.application == nil ? context : nil }
}
