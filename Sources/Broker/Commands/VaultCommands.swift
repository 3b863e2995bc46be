import FingerprintFlows
import FingersealCore
import FingersealWire
import Localization
import SodiumKit

/// status, pin set, pin change, pin reset, reset: the vault itself.
enum VaultCommands {
    // MARK: status

    /// Which protector a slot uses, and whether it can be used now.
    static func describe(_ slot: VaultStatus.Slot, pcrs: [Int]) -> String {
        switch slot.state {
        case .tpmChanged: return Messages.slotTPMChanged
        case .tpmUnreachable: return Messages.slotTPMUnreachable
        case .pcrsChanged: return Messages.slotPCRsChanged
        case .usable, .keyMissing: break
        }
        switch (slot.kind, slot.protection) {
        case (.pin, .argon2idTPM2): return Messages.slotPINTPM
        case (.pin, _): return Messages.slotPIN
        case (.device, .filePermissions):
            return slot.usable ? Messages.slotDeviceFilePermissions : Messages.slotDeviceFilePermissionsBroken
        case (.device, .tpm2): return pcrs.isEmpty ? Messages.slotDeviceTPM : Messages.slotDeviceTPMPCRs(pcrs)
        case (.device, _): return Messages.slotDevice
        }
    }

    /// The sign-in line of `status`, with the provider and client when there is one.
    static func describe(_ state: SignInState, _ provider: (issuer: String, client: String)?) -> String {
        switch (state, provider) {
        case (.none, nil): return Messages.statusNotSignedIn
        case (.active, nil): return Messages.statusSignedIn
        case (.required, nil): return Messages.statusSignInRequired
        case let (.none, provider?): return Messages.statusNotSignedInWith(provider.issuer, provider.client)
        case let (.active, provider?): return Messages.statusSignedInWith(provider.issuer, provider.client)
        case let (.required, provider?): return Messages.statusSignInRequiredWith(provider.issuer, provider.client)
        }
    }

    static func status(_ call: Call) throws -> Reply {
        let store = call.store
        guard let status = try Vault.status(store, checkingSlots: true) else {
            if call.json {
                try call.printJSON(StatusReport(vault: false, directory: store.location.directory))
            }
            throw FingersealError(.noVault, Messages.noVault)
        }
        // Where fprintd holds the fingers: are they the set the PIN last confirmed?
        let fprintd = try? call.state.reader.fprintdSet(call)
        let changed = fprintd.map { Fingerprint.fprintdSetChanged($0, bound: status.fprintd) && !$0.fingers.isEmpty }
        if call.json {
            var report = StatusReport(vault: true, directory: status.directory)
            if let fprintd {
                report.reader = "fprintd"
                report.fprintdFingers = fprintd.fingers
                report.fingersChanged = changed
            }
            report.enabledSince = isoTimestamp(status.createdAt)
            // Read from the audit trail once, for the report and for an application's sentences.
            let verified = lastVerified(store)
            report.lastVerified = verified.map(isoTimestamp)
            report.pinSet = status.pinSet
            report.keyslots = status.keyslots.map { slot in
                .init(kind: slot.kind.rawValue, protection: slot.protection.rawValue,
                      sealedToTpm: slot.protection.sealedToTPM, usable: slot.usable, state: slot.state.rawValue,
                      description: Localization.with(nil) { describe(slot, pcrs: slot.pcrs) })
            }
            report.tpm = call.settings.tpm.rawValue
            report.fingers = status.fingers
            report.identify = status.identify
            report.fingerUnlock = !status.fingerOff
            report.keyring = status.keyring
            report.keyringSealedToTpm = status.keyring ? status.sealedToTPM : nil
            report.password = PasswordDue.next(call, status).map { next in
                switch next {
                case let .now(reason): return .init(neededNow: true, reason: reason.rawValue, neededOn: nil, afterRestart: false)
                case let .later(at, afterRestart): return .init(neededNow: false, reason: nil, neededOn: at.map(isoTimestamp),
                                                                afterRestart: afterRestart)
                }
            }
            report.signIn = status.signIn.rawValue
            if status.signIn != .none, let provider = status.provider {
                report.boundToComputer = provider.boundToKey
                report.proofKey = provider.proofKey?.rawValue
            }
            report.issuer = status.provider?.issuer
            report.clientId = status.provider?.clientID
            report.signedInAs = status.signIn == .none ? nil : status.identity?.display
            report.lockout = .init(fingerFailures: status.lockout.fingerFailures, fingerLocked: status.lockout.fingerLocked,
                                   pinFailures: status.lockout.pinFailures, pinLocked: status.lockout.pinLocked)
            if call.channel.application != nil {
                report.capabilities = capabilities(call, status, fprintd: fprintd)
                let fingers = fprintd?.fingers ?? status.fingers
                report.said = .init(fingerUnlock: status.fingerOff ? Messages.settingFingerUnlockOff : Messages.statusFingerUnlockOn,
                                    enabledSince: Messages.statusEnabledSince(Localization.localTime(status.createdAt)),
                                    enabledSinceUnix: status.createdAt,
                                    lastVerified: Messages.statusLastVerified(verified, now: SystemClock().now()),
                                    lastVerifiedUnix: verified,
                                    fingers: fingersLine(status, fprintd: fprintd),
                                    fingerNames: fingers.map(Messages.fingerName),
                                    password: PasswordDue.next(call, status).map(Messages.statusPasswordNext))
            }
            try call.printJSON(report)
            return Reply(.success)
        }
        // English descriptions in --json (data scripts read); the text in the request's language.
        var lines = [
            Messages.statusVault(status.directory),
            Messages.statusEnabledSince(Localization.localTime(status.createdAt)),
            Messages.statusLastVerified(lastVerified(store), now: SystemClock().now()),
            status.pinSet ? Messages.statusPINSet : Messages.statusPINNotSet,
            Messages.statusKeyslots,
        ]
        lines += status.keyslots.map { "  \($0.kind.rawValue): \(describe($0, pcrs: $0.pcrs))" }
        lines.append(Messages.statusTPM(call.settings.tpm.rawValue))
        lines.append(fingersLine(status, fprintd: fprintd))
        if changed == true { lines.append(Messages.fingersChanged) }
        lines.append(status.fingerOff ? Messages.statusFingerUnlockOff : Messages.statusFingerUnlockOn)
        lines.append(status.identify ? Messages.statusIdentifyOn : Messages.identifyTurnedOff)
        lines.append(status.keyring ? Messages.statusKeyringOn : Messages.statusKeyringOff)
        if status.keyring && !status.sealedToTPM { lines.append(Messages.keyringWithoutTPM) }
        if let next = PasswordDue.next(call, status) { lines.append(Messages.statusPasswordNext(next)) }
        lines.append(describe(status.signIn, status.provider.map { ($0.issuer, $0.clientID) }))
        if status.signIn != .none, let identity = status.identity { lines.append(Messages.signedInAs(identity.display)) }
        if status.signIn != .none, let provider = status.provider {
            switch provider.proofKey {
            case .tpm?: lines.append(Messages.statusBoundByTPM)
            case .software?: lines.append(Messages.statusBoundBySoftwareKey)
            case nil: lines.append(Messages.statusBearer)
            }
        }
        lines.append(status.lockout.fingerLocked ? Messages.statusFingerLocked : Messages.statusFingerNotLocked(status.lockout.fingerFailures))
        lines.append(status.lockout.pinLocked ? Messages.statusPINLocked : Messages.statusPINNotLocked(status.lockout.pinFailures))
        call.conversation.output(lines.joined(separator: "\n"))
        return Reply(.success)
    }

    /// The enrolled fingers, as `status` says them: fprintd's where fprintd holds them.
    static func fingersLine(_ status: VaultStatus, fprintd: FprintdSet?) -> String {
        fprintd.map { Messages.statusFprintdFingers($0.fingers) } ?? Messages.statusFingers(status.fingers)
    }

    /// When the account last confirmed it is them (an unlock, a step-up that succeeded), from
    /// the audit trail as stored; nil when it holds none or cannot be read (status only shows it).
    static func lastVerified(_ store: VaultStore) -> Int64? {
        guard let listing = try? AuditTrail(store: store).list() else { return nil }
        return listing.records.last { $0.chain == .security && ($0.event == "unlock" || $0.event == "step-up") }?.time
    }

    /// What can unlock for an application now: a finger (enrolled, a reader there, not
    /// locked, not turned off, not a remote session), the PIN (set, not locked), the account password.
    static func capabilities(_ call: Call, _ status: VaultStatus, fprintd: FprintdSet?) -> StatusReport.Capabilities {
        let counters = status.lockout.counters(for: call.applicant)
        let remote = call.isRemote && !call.settings.allowRemote
        let reader = remote ? .unknown : call.state.reader.readerState(call)
        let enrolled = !(fprintd?.fingers ?? status.fingers).isEmpty
        var methods: [String] = []
        if enrolled && reader == .present && !counters.fingerLocked && !status.fingerOff && !remote { methods.append("finger") }
        if status.pinSet && !counters.pinLocked { methods.append("pin") }
        methods.append("password")
        return .init(methods: methods, reader: reader.rawValue, remote: call.isRemote)
    }

    // MARK: pin

    /// Creates the vault with a new PIN. A caller other than root gives the account
    /// password first (design §2: creating a vault needs it).
    static func pinSet(_ call: Call) throws -> Reply {
        let store = call.store
        if let status = try Vault.status(store, checkingSlots: true) {
            // A vault its TPM no longer opens is set up again with pin reset, which says how.
            if status.keyslots.contains(where: { $0.state == .tpmChanged }) {
                throw FingersealError(.vaultUnusable, Messages.tpmChangedPIN)
            }
            throw FingersealError(.usage, Messages.vaultExists)
        }
        try AccountPassword.requireUnlessRoot(call)
        let pin = try PINEntry.askNew(call)
        let vault = try Vault.create(store, pin: call.pinKeyslot(pin))
        call.conversation.output(Messages.pinSet)
        // Fingers already enrolled in fprintd (GNOME Settings, KDE) unlock from now on.
        FingerOrPIN.confirmFprintdSet(call, vault)
        return Reply(.success)
    }

    static func pinChange(_ call: Call) throws -> Reply {
        let vault = try PINEntry.unlock(call, store: call.store, prompt: Messages.enterOldPIN)
        let new = try PINEntry.askNew(call)
        try vault.update { try $0.changePIN(call.pinKeyslot(new)) }
        call.conversation.output(Messages.pinChanged)
        return Reply(.success)
    }

    /// A forgotten PIN: the account password (root: nothing), then the vault opened through
    /// its device slot gets a new PIN slot, and the PIN lock is cleared. The enrolled
    /// fingers and the sign-in stay. A vault whose device slot cannot open it can only be
    /// deleted (`fingerseal reset`), except one sealed to a TPM this computer no longer has:
    /// nothing can open that one again, so a new vault with the new PIN replaces it.
    static func pinReset(_ call: Call) throws -> Reply {
        let store = call.store
        guard try Vault.status(store) != nil else { throw FingersealError(.noVault, Messages.noVault) }
        let trail = AuditTrail(store: store)
        try recordingFailure(.pinReset, trail) { try AccountPassword.requireUnlessRoot(call) }
        let vault: UnlockedVault
        do {
            vault = try Vault.unlockWithDevice(store)
        } catch let error as FingersealError where error.cause == .tpmChanged {
            return try replaceAfterTPMChange(call)
        } catch let error as FingersealError where error.outcome == .vaultUnusable {
            throw FingersealError(.vaultUnusable, Messages.pinResetNoDevice, detail: error.description)
        }
        let new = try PINEntry.askNew(call)
        try vault.update { try $0.changePIN(call.pinKeyslot(new)) }
        try LockoutLedger(store: store, options: call.settings).clearAll()
        trail.record(.pinReset, vault: vault)
        call.conversation.output(Messages.pinResetDone)
        return Reply(.success)
    }

    /// The account password was given: a new vault with a new PIN replaces the one its TPM
    /// no longer opens (its secrets are lost with that TPM: the sign-in and the fingers are
    /// set up again). Recorded in the new vault's audit trail.
    static func replaceAfterTPMChange(_ call: Call) throws -> Reply {
        let store = call.store
        let new = try PINEntry.askNew(call)
        let (vault, previous) = try Vault.replace(store, pin: call.pinKeyslot(new))
        call.state.sessions.dropUser(call.account.uid)
        AuditTrail(store: store).record(.vaultReplacedAfterTPMChange(previous: previous ?? "?"), vault: vault)
        call.conversation.output(Messages.vaultReplacedAfterTPMChange)
        FingerOrPIN.confirmFprintdSet(call, vault)
        return Reply(.success)
    }

    // MARK: reset

    /// Deletes the vault. Needs the PIN, or for a damaged vault (which cannot check one) a
    /// typed yes; a caller other than root whose PIN fails may give the account password
    /// instead (a forgotten PIN).
    /// `identify on|off`: whether touch to sign in may find this account (design §3,
    /// kiosk). The PIN confirms it, a finger must be enrolled to turn it on, and the trail
    /// records it. Only the administrator's `identify_group` decides who is in the gallery
    /// at all; this is the account's own consent.
    static func identify(_ call: Call, on: Bool) throws -> Reply {
        let store = call.store
        guard let status = try Vault.status(store) else { throw FingersealError(.noVault, Messages.noVault) }
        if on && status.fingers.isEmpty { throw FingersealError(.notEnrolled, Messages.identifyNeedsFinger) }
        if status.identify == on {
            call.conversation.output(on ? Messages.identifyAlreadyOn : Messages.identifyAlreadyOff)
            return Reply(.success)
        }
        let vault = try recordingFailure(.identify, AuditTrail(store: store)) { try PINEntry.unlock(call, store: store) }
        try vault.update { $0.setIdentify(on) }
        AuditTrail(store: store).record(.identifySetting(on: on), vault: vault)
        call.conversation.output(on ? Messages.identifyTurnedOn : Messages.identifyTurnedOff)
        return Reply(.success)
    }

    /// `on` and `off`: the person's own switch for fingerprint unlock (the phone's settings
    /// toggle). A fresh finger or the PIN confirms it (with fingerprint unlock off, the PIN);
    /// the vault and the enrolled fingers are kept, and the trail records it. While it is
    /// off, every unlock by finger is refused with a sentence (`FingerOrPIN`).
    static func fingerUnlock(_ call: Call, on: Bool) throws -> Reply {
        guard let status = try Vault.status(call.store) else { throw FingersealError(.noVault, Messages.noVault) }
        if status.fingerOff != on {
            call.conversation.output(on ? Messages.fingerUnlockAlreadyOn : Messages.fingerUnlockAlreadyOff)
            return Reply(.success)
        }
        let result = UnlockFlow.run(call, try UnlockRequest.forChannel(call, .confirmation))
        let vault = try result.confirmedVault()
        try vault.update { $0.setFingerUnlock(on) }
        AuditTrail(store: call.store).record(.fingerUnlockSetting(on: on), vault: vault)
        let off = call.channel.application == nil ? Messages.fingerUnlockTurnedOff : Messages.fingerUnlockSwitchedOff
        call.conversation.output(on ? Messages.fingerUnlockTurnedOn : off)
        return Reply(.success, method: result.method)
    }

    static func reset(_ call: Call) throws -> Reply {
        let store = call.store
        let damaged: Bool
        do {
            guard try Vault.status(store) != nil else {
                call.conversation.output(Messages.resetNothing)
                return Reply(.success)
            }
            damaged = false
        } catch let error as FingersealError where error.outcome == .vaultUnusable {
            // A damaged vault protects nothing and cannot check a PIN: confirmation is enough.
            call.conversation.info(error.message)
            damaged = true
        }
        if !call.options(for: ResetOptions.self).yes {
            let answer = try call.conversation.askText(.confirm, Messages.resetConfirm)
            guard answer == "yes" || answer == Messages.confirmWord else {
                throw FingersealError(.cancelled, Messages.resetCancelled)
            }
        }
        if !damaged {
            // A sensitive operation: the PIN itself, never a finger or a held confirmation.
            do {
                _ = try PINEntry.unlock(call, store: store)
            } catch let error as FingersealError
                where [.wrongPIN, .lockedOut].contains(error.outcome) || error.message == Messages.pinEmptyInput {
                guard !call.caller.isRoot else {
                    call.conversation.info(Messages.pinForReset)
                    throw error
                }
                // A forgotten PIN: the account password deletes the vault too.
                call.conversation.error(error.message)
                try AccountPassword.check(call, why: Messages.resetWithAccountPassword)
            }
        }
        _ = try Vault.reset(store)
        // Its tokens and step-ups went with it.
        call.state.sessions.dropUser(call.account.uid)
        call.conversation.output(Messages.resetDone)
        return Reply(.success)
    }
}
