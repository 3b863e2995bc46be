import CurlKit
import FingerprintFlows
import FingersealCore
import FingersealWire
import IdentityClient
import Localization

/// `doctor`: what only the broker can see of the caller's own setup (the reader it drives,
/// the vault in its store, the sign-in, the identity provider it asks, the clock against the
/// vault), one finding at a time. What any user can see (the socket, PAM, udev, the group,
/// the TPM) the CLI checks itself. Nothing here changes anything, and nothing a caller sends
/// (beyond the usual `--user` for root) changes a verdict.
enum DoctorCommand {
    /// A clock this far behind a time the vault recorded is wrong, not a second's jitter.
    static let clockSlack: Int64 = 300

    static func doctor(_ call: Call) throws -> Reply {
        let say = call.conversation.finding
        if let service = call.options(for: DoctorOptions.self).service { try serviceSettings(call, service).forEach(say) }
        reader(call).forEach(say)
        setAside(call).forEach(say)
        let status: VaultStatus?
        do {
            status = try Vault.status(call.store, checkingSlots: true)
        } catch let error as FingersealError {
            say(Finding("vault", .problem, error.message, fix: Messages.doctorFixVaultUnusable))
            return Reply(.success)
        }
        guard let status else {
            say(Finding("vault", .problem, Messages.doctorNoVault, fix: Messages.doctorFixNoVault))
            provider(call, issuer: call.settings.issuer, signedIn: false).map(say)
            return Reply(.success)
        }
        say(Finding("vault", .ok, Messages.doctorVault(isoTimestamp(status.createdAt))))
        say(status.pinSet ? Finding("pin", .ok, Messages.doctorPINSet)
                          : Finding("pin", .problem, Messages.doctorNoPIN, fix: Messages.doctorFixNoPIN))
        say(sealing(call, status))
        say(fingers(call, status))
        lockout(status.lockout).forEach(say)
        try passwordAndKeyring(call, status).forEach(say)
        say(signIn(call, status))
        binding(call, status).map(say)
        provider(call, issuer: status.provider?.issuer ?? call.settings.issuer, signedIn: status.signIn == .active).map(say)
        say(clock(now: SystemClock().now(), status))
        return Reply(.success)
    }

    /// Vaults set aside (issue 31 §1): to an account, those of an earlier account with its
    /// user id or name; to root asking for itself, how many there are.
    static func setAside(_ call: Call) -> [Finding] {
        guard let vaults = try? AccountStore(root: call.state.settings.stateDirectory).setAsideVaults(), !vaults.isEmpty else { return [] }
        if call.caller.isRoot && call.given.user == nil {
            return [Finding("set-aside", .warning, Messages.doctorSetAsideCount(vaults.count), fix: Messages.doctorFixSetAsideCount)]
        }
        return vaults.filter { $0.uid == call.account.uid || $0.boundName == call.account.name }.map { vault in
            Finding("set-aside", .warning, Messages.doctorSetAside(Localization.localTime(vault.setAsideAt)),
                    fix: Messages.doctorFixSetAside(vault.id))
        }
    }

    /// When the account password is next needed (the rule of `--service NAME`, else the
    /// file's), whether a keyring copy sealed in the vault is handed on anywhere, and whether
    /// a stolen disk gives it up.
    static func passwordAndKeyring(_ call: Call, _ status: VaultStatus) throws -> [Finding] {
        var options = call.settings
        if let service = call.options(for: DoctorOptions.self).service { options = try call.state.systemOptions().0.forService(service) }
        var found: [Finding] = []
        if let next = PasswordDue.next(call, status, options: options) {
            found.append(Finding("password", .ok, Messages.statusPasswordNext(next)))
        }
        if status.keyring {
            found.append(options.keyringServices.isEmpty
                ? Finding("keyring", .warning, Messages.doctorKeyringNoServices, fix: Messages.doctorFixKeyringNoServices)
                : Finding("keyring", .ok, Messages.doctorKeyring(options.keyringServices)))
            // Whoever or whatever allowed it (`--without-tpm`, `keyring_without_tpm=`), what a
            // stolen disk gives up is said each time.
            if !status.sealedToTPM {
                found.append(Finding("keyring-tpm", .warning, Messages.keyringWithoutTPM, fix: Messages.doctorFixKeyringWithoutTPM))
            }
        }
        return found
    }

    /// `--service NAME`: the settings in force for a PAM service that differ from the defaults,
    /// and where each was set (the file's top level, or its `[service NAME]` section), as
    /// `Dispatcher.effectiveOptions` puts them together before a stack's module arguments. A
    /// section's setting that a host running as the user does not get says so.
    static func serviceSettings(_ call: Call, _ service: String) throws -> [Finding] {
        guard Options.isServiceName(service) else {
            throw FingersealError(.usage, Messages.badServiceName(Options.shown(service)))
        }
        let (system, _) = try call.state.systemOptions()
        let origins = system.origins(service: service)
        var found = [Finding("pam-service", .ok, origins.isEmpty ? Messages.doctorServiceDefaults(service)
                                                                 : Messages.doctorServiceSettings(service))]
        for origin in origins {
            let message: String
            if !origin.fromSection {
                message = Messages.doctorSettingFromFile(origin.setting)
            } else if SiteSetting.forUserHosts.contains(origin.name) {
                message = Messages.doctorSettingFromSection(origin.setting, service)
            } else {
                message = Messages.doctorSettingFromSectionRootHosts(origin.setting, service)
            }
            found.append(Finding("setting:" + origin.name, .ok, message))
        }
        return found
    }

    /// The backend and the readers it sees (waiting, bounded, for a scan in progress).
    static func reader(_ call: Call) -> [Finding] {
        do {
            let (backend, devices) = try ReaderCommands.connected(call)
            let named = Finding("reader-backend", .ok,
                                backend == .fprintd ? Messages.doctorBackendFprintd : Messages.doctorBackendDirect)
            guard !devices.isEmpty else {
                return [named, Finding("reader", .problem, Messages.noReader, fix: Messages.doctorFixNoReader)]
            }
            return [named, Finding("reader", .ok, Messages.doctorReaders(devices.map(\.name)))]
        } catch let error as FingersealError where error.message == Messages.fprintdUnavailable {
            return [Finding("reader-backend", .problem, error.message, fix: Messages.doctorFixBackend)]
        } catch let error as FingersealError where error.message == Messages.readerBusy {
            return [Finding("reader", .warning, error.message, fix: Messages.doctorFixReaderBusy)]
        } catch let error as FingersealError {
            return [Finding("reader", .problem, error.message, fix: Messages.doctorFixNoReader)]
        } catch {
            return [Finding("reader", .problem, Messages.doctorReadersFailed,
                            fix: Messages.doctorFixNoReader)]
        }
    }

    /// Which protector the keyslots use, and whether the TPM they are sealed to still opens
    /// them. A slot the TPM no longer opens blocks unlock; file protection only warns (it is
    /// what a machine without a TPM has), except where the configuration requires a TPM.
    static func sealing(_ call: Call, _ status: VaultStatus) -> Finding {
        let check = "tpm-sealing"
        let states = status.keyslots.map(\.state)
        if states.contains(.tpmChanged) {
            return Finding(check, .problem, Messages.doctorTPMChanged, fix: Messages.doctorFixTPMChanged)
        }
        if states.contains(.tpmUnreachable) {
            return Finding(check, .problem, Messages.doctorTPMUnreachable, fix: Messages.doctorFixTPMUnreachable)
        }
        if states.contains(.pcrsChanged) { return Finding(check, .warning, Messages.tpmPCRsChanged, fix: Messages.doctorFixSealNow) }
        if status.keyslots.contains(where: \.insideTPMLockout) {
            return Finding(check, .warning, Messages.doctorPINInsideTPMLockout, fix: Messages.doctorFixSealNow)
        }
        if status.sealedToTPM { return Finding(check, .ok, Messages.doctorSealedToTPM) }
        // Asked on the broker's kept connection, as its vault operations are.
        let policy = call.store.tpm
        switch (policy.mode, policy.usable) {
        case (.off, _): return Finding(check, .warning, Messages.doctorTPMOff, fix: Messages.doctorFixTPMOff)
        case (.auto, true): return Finding(check, .warning, Messages.doctorNotSealedYet, fix: Messages.doctorFixSealNow)
        case (.require, true): return Finding(check, .problem, Messages.doctorNotSealedYet, fix: Messages.doctorFixSealNow)
        case (.auto, false): return Finding(check, .warning, Messages.doctorNoTPM, fix: Messages.doctorFixEnableTPM)
        case (.require, false): return Finding(check, .problem, Messages.tpmRequired, fix: Messages.doctorFixEnableTPM)
        }
    }

    /// The fingers that unlock: fprintd's where it holds them (confirmed by the PIN or not),
    /// else the vault's.
    static func fingers(_ call: Call, _ status: VaultStatus) -> Finding {
        let fprintd: FprintdSet?
        do {
            fprintd = try call.state.reader.fprintdSet(call)
        } catch let error as FingersealError {
            return Finding("fingers", .problem, error.message, fix: Messages.doctorFixBackend)
        } catch {
            return Finding("fingers", .problem, Messages.fprintdUnavailable, fix: Messages.doctorFixBackend)
        }
        if let fprintd {
            if fprintd.fingers.isEmpty { return Finding("fingers", .problem, Messages.doctorNoFingers, fix: Messages.doctorFixEnroll) }
            if Fingerprint.fprintdSetChanged(fprintd, bound: status.fprintd) {
                return Finding("fingers", .problem, Messages.fingersChanged, fix: Messages.doctorFixFingersChanged)
            }
            return Finding("fingers", .ok, Messages.doctorFprintdFingers(fprintd.fingers))
        }
        guard !status.fingers.isEmpty else {
            return Finding("fingers", .problem, Messages.doctorNoFingers, fix: Messages.doctorFixEnroll)
        }
        return Finding("fingers", .ok, Messages.doctorFingers(status.fingers))
    }

    static func lockout(_ state: LockoutState) -> [Finding] {
        var found: [Finding] = []
        if state.fingerLocked {
            found.append(Finding("lockout", .problem, Messages.doctorFingerLocked, fix: Messages.doctorFixFingerLocked))
        }
        if state.pinLocked { found.append(Finding("lockout", .problem, Messages.doctorPINLocked, fix: Messages.doctorFixPINLocked)) }
        return found.isEmpty ? [Finding("lockout", .ok, Messages.doctorNotLocked)] : found
    }

    /// Not signed in blocks nothing unless the administrator requires a token.
    static func signIn(_ call: Call, _ status: VaultStatus) -> Finding {
        switch status.signIn {
        case .none:
            return Finding("sign-in", call.settings.requireToken ? .problem : .warning, Messages.doctorNotSignedIn,
                           fix: Messages.doctorFixSignIn)
        case .required:
            return Finding("sign-in", .problem, Messages.doctorSignInRequired, fix: Messages.doctorFixSignIn)
        case .active:
            let issuer = status.provider?.issuer ?? ""
            return Finding("sign-in", .ok, status.identity.map { Messages.doctorSignedIn($0.display, issuer) }
                           ?? Messages.doctorSignedInTo(issuer))
        }
    }

    /// Whether an active sign-in is bound to this computer (RFC 9449), and by what. Bearer
    /// tokens are a warning unless the administrator chose them (`dpop=off`); a software key is
    /// one only where a TPM is usable now (a new sign-in would give it the key): without one,
    /// the TPM's own finding says what is missing.
    static func binding(_ call: Call, _ status: VaultStatus) -> Finding? {
        guard status.signIn == .active, let provider = status.provider else { return nil }
        switch provider.proofKey {
        case .tpm?: return Finding("binding", .ok, Messages.statusBoundByTPM)
        case .software?:
            guard call.store.tpm.usable else {
                return Finding("binding", .ok, Messages.statusBoundBySoftwareKey)
            }
            return Finding("binding", .warning, Messages.statusBoundBySoftwareKey, fix: Messages.doctorFixSoftwareKey)
        case nil:
            if call.settings.dpop.policy(for: provider.issuer) == .off { return Finding("binding", .ok, Messages.statusBearer) }
            return Finding("binding", .warning, Messages.statusBearer, fix: Messages.doctorFixBearer)
        }
    }

    /// One GET of the issuer's discovery document, bounded by idp_timeout. Unreachable blocks
    /// unlock only where a token is required (otherwise unlock goes on offline).
    static func provider(_ call: Call, issuer: String?, signedIn: Bool) -> Finding? {
        guard let issuer else { return signedIn ? nil : Finding("identity-provider", .ok, Messages.doctorNoProvider) }
        let timeout = Double(call.settings.idpTimeout)
        let http = HTTPClient(configuration: .init(connectTimeout: min(Double(call.settings.connectTimeout), timeout),
                                                   timeout: timeout))
        do throws(TokenFailure) {
            _ = try Discovery.discover(issuer: issuer, http: http)
            return Finding("identity-provider", .ok, Messages.doctorProviderAnswers(issuer))
        } catch {
            return Finding("identity-provider", call.settings.requireToken ? .problem : .warning,
                           Messages.doctorProviderFailed(issuer, error), fix: Messages.doctorFixProvider)
        }
    }

    /// The clock is wrong when it is earlier than times this vault recorded by it (token
    /// expiry and the offline grace are judged by it).
    static func clock(now: Int64, _ status: VaultStatus) -> Finding {
        if now + clockSlack < status.createdAt {
            return Finding("clock", .problem, Messages.doctorClockBeforeVault(isoTimestamp(now), isoTimestamp(status.createdAt)),
                           fix: Messages.doctorFixClock)
        }
        if let refreshed = status.lastRefreshAt, now + clockSlack < refreshed {
            return Finding("clock", .problem, Messages.doctorClockBeforeRefresh(isoTimestamp(now), isoTimestamp(refreshed)),
                           fix: Messages.doctorFixClock)
        }
        return Finding("clock", .ok, Messages.doctorClockPlausible)
    }
}
