import FingersealWire
import Localization
import SodiumKit
import SystemKit

/// Opening, creating and deleting a user's vault.
public enum Vault {
    static let masterKeyLength = 32

    /// The vault's state, or nil when there is none. Throws if a file is damaged or unsafe.
    /// `checkingSlots`: also try each device slot's key (what `status` reports); a flow
    /// that is about to open the vault anyway learns that from opening it.
    public static func status(_ store: VaultStore, checkingSlots: Bool = false) throws -> VaultStatus? {
        try status(store, checkingSlots: checkingSlots, keeping: nil)
    }

    /// The status, keeping the snapshot it was read from for a request's later steps.
    static func status(_ store: VaultStore, checkingSlots: Bool, keeping kept: ((VaultSnapshot) -> Void)?) throws -> VaultStatus? {
        let result = try store.withDirectory(exclusive: false) { directory -> VaultStatus? in
            guard let snapshot = try store.readSnapshot(directory) else { return nil }
            kept?(snapshot)
            let document = snapshot.document
            let lockout = try LockoutLedger(store: store, policy: LockoutPolicy()).read(directory)
            let slots = document.keyslots.map { slot -> VaultStatus.Slot in
                VaultStatus.Slot(kind: slot.kind, protection: slot.protection,
                                 state: checkingSlots ? state(of: slot, directory, store.tpm) : .usable,
                                 pcrs: slot.tpm?.pcrs ?? [], insideTPMLockout: slot.tpm?.isDictionaryProtected ?? false)
            }
            return VaultStatus(directory: store.location.directory, createdAt: document.createdAt, keyslots: slots,
                               fingers: document.fingers, fprintd: document.fprintd, identity: document.identity,
                               signIn: document.signIn, provider: document.provider,
                               lastRefreshAt: document.lastRefreshAt, lockout: lockout, identify: document.identify ?? false,
                               fingerOff: document.fingerOff ?? false, keyring: document.loginPassword != nil)
        }
        return result ?? nil
    }

    /// Creates a vault with a new master key, a PIN slot and a device slot, both sealed to the
    /// TPM when the store's policy says so (`tpm=require` refuses without one). Refuses if a
    /// vault exists.
    public static func create(_ store: VaultStore, pin: PINKeyslot, clock: any Clock = SystemClock()) throws -> UnlockedVault {
        let tpm = SlotTPM(policy: store.tpm, sealNew: try VaultTPM.sealsNewSlot(store.tpm, replacing: nil))
        let masterKey = try VaultStore.guarded(.createKey) { try SecureBytes.random(count: masterKeyLength) }
        let document = try store.withDirectory(create: true, exclusive: true) { directory -> VaultDocument in
            if try store.readDocument(directory) != nil { throw FingersealError(.usage, Messages.vaultExists) }
            return try writeNew(store, directory, masterKey: masterKey, pin: pin, tpm: tpm, clock: clock)
        }
        guard let document else { throw FingersealError(.noVault, Messages.noVault) }
        return UnlockedVault(store: store, vaultID: document.vaultID, masterKey: masterKey, unlockedBy: .pin)
    }

    /// Replaces a vault that can no longer be opened because the TPM its slots are sealed to
    /// is gone (cleared, replaced, the disk moved): its lockout record and audit trail go
    /// first, then a new vault with `pin` is renamed over it, so a crash leaves the old vault
    /// (which opened nothing) or the new one. The caller checked the account password.
    /// Returns the new vault and the old one's id (for the audit trail).
    public static func replace(_ store: VaultStore, pin: PINKeyslot,
                               clock: any Clock = SystemClock()) throws -> (vault: UnlockedVault, previous: String?) {
        let tpm = SlotTPM(policy: store.tpm, sealNew: try VaultTPM.sealsNewSlot(store.tpm, replacing: nil))
        let masterKey = try VaultStore.guarded(.createKey) { try SecureBytes.random(count: masterKeyLength) }
        let replaced = try store.withDirectory(create: true, exclusive: true) { directory -> (VaultDocument, String?) in
            let previous = try? store.readDocument(directory)
            for name in AuditFiles.all + [VaultFiles.lockout] {
                try VaultStore.guarded(.deleteOldVault) { try directory.remove(name) }
            }
            return (try writeNew(store, directory, masterKey: masterKey, pin: pin, tpm: tpm, clock: clock), previous?.vaultID)
        }
        guard let (document, previous) = replaced else { throw FingersealError(.noVault, Messages.noVault) }
        return (UnlockedVault(store: store, vaultID: document.vaultID, masterKey: masterKey, unlockedBy: .pin), previous)
    }

    private static func writeNew(_ store: VaultStore, _ directory: SafeDirectory, masterKey: SecureBytes, pin: PINKeyslot,
                                 tpm: SlotTPM, clock: any Clock) throws -> VaultDocument {
        let vaultID = Encoding.hex(try Sodium.randomBytes(16))
        var document = VaultDocument(format: VaultDocument.currentFormat, vaultID: vaultID, createdAt: clock.now(),
                                     generation: 0, keyslots: [], records: [:], signIn: .none, fingers: [], mac: "")
        document.owner = try store.binding(directory)
        document.setKeyslot(try pin.with(tpm).wrap(masterKey, vaultID: vaultID))
        document.setKeyslot(try DeviceKeyslot(directory: directory, tpm: tpm).wrap(masterKey, vaultID: vaultID,
                                                                                   binding: enrollmentBinding(document)))
        let sealed = try UnlockedVault.sign(document, masterKey: masterKey)
        try store.writeDocument(sealed, directory)
        return sealed
    }

    /// Unlocks with the PIN, counting the try before checking it (lockout and delays apply;
    /// a try the TPM's lockout refused unchecked is not counted). Then, where the TPM is to
    /// be used and a slot is not sealed to it yet (a vault from before there was one, or
    /// `tpm_pcrs` changed), seals it: `sealedToTPM` on the result says which slots were. A
    /// PIN slot sealed inside the TPM's dictionary-attack lockout is sealed again outside it
    /// (`pinLeftTPMLockout`).
    public static func unlock(_ store: VaultStore, pin: PINKeyslot, ledger: LockoutLedger) throws -> UnlockedVault {
        guard let status = try status(store) else { throw FingersealError(.noVault, Messages.noVault) }
        return try unlock(store, status: status, read: nil, pin: pin, ledger: ledger)
    }

    static func unlock(_ store: VaultStore, status: VaultStatus, read: VaultSnapshot?, pin: PINKeyslot,
                       ledger: LockoutLedger) throws -> UnlockedVault {
        // tpm=require: a PIN slot not yet sealed opens only when it can be sealed right after.
        if store.tpm.mode == .require, status.keyslots.contains(where: { $0.kind == .pin && !$0.protection.sealedToTPM }),
           let why = VaultTPM.unusable(store.tpm) {
            throw FingersealError(.unavailable, Messages.tpmRequired, detail: why.detail ?? why.message)
        }
        try ledger.beginPINAttempt()
        let vault: UnlockedVault
        do {
            vault = try unlock(store, slot: .pin, read: read) { _ in try pin.with(SlotTPM(policy: store.tpm, sealNew: false)) }
        } catch let error as FingersealError where error.outcome == .wrongPIN {
            ledger.pinRejected()
            throw error
        } catch let error as FingersealError where error.cause == .tpmLockedOut {
            ledger.pinNotChecked()
            throw error
        }
        try ledger.pinSucceeded()
        do {
            (vault.sealedToTPM, vault.pinLeftTPMLockout) = try sealToTPMIfDue(vault, pin: pin)
        } catch let error as FingersealError where store.tpm.mode != .require {
            // The old slots still open the vault; the next PIN tries again.
            Syslog.log(.warning, "fingerseal: user \(store.location.account.name): the vault was not sealed to the TPM: \(error)")
        }
        if !vault.sealedToTPM.isEmpty {
            AuditTrail(store: store).record(.sealedToTPM(slots: vault.sealedToTPM.map(\.rawValue)), vault: vault)
        }
        if vault.pinLeftTPMLockout { AuditTrail(store: store).record(.pinLeftTPMLockout, vault: vault) }
        return vault
    }

    /// Seals the slots of a vault just opened with `pin` that the policy wants sealed and are
    /// not (or whose PCR binding no longer matches `tpm_pcrs` or the PCRs' values), and seals
    /// a PIN slot made inside the TPM's dictionary-attack lockout again outside it, in one
    /// vault write: the old slots open the vault until the new ones, each sealed, unsealed
    /// and compared, are renamed into place. Returns the slots sealed anew, and whether the
    /// PIN slot left the lockout.
    static func sealToTPMIfDue(_ vault: UnlockedVault, pin: PINKeyslot) throws -> (sealed: [KeyslotKind], pinLeftLockout: Bool) {
        let policy = vault.store.tpm
        let (pinSlot, deviceSlot) = try vault.withDocument(exclusive: false) { document, _ in
            (document.keyslot(.pin), document.keyslot(.device))
        }
        // Whatever tpm= says: the slot is sealed already and stays sealed, only outside the
        // lockout every account shares. The PIN just opened it, so the TPM is not locked out.
        let pinLeavesLockout = pinSlot?.tpm?.isDictionaryProtected == true
        var pinDue = false
        var deviceDue = false
        if policy.mode != .off {
            pinDue = pinSlot != nil && pinSlot?.tpm == nil
            if let sealed = deviceSlot?.tpm {
                let pcrs = sealed.pcrs ?? []
                deviceDue = pcrs != policy.pcrs || (!pcrs.isEmpty
                    && (try? VaultTPM.unseal(sealed, authValue: nil, slot: .device, policy)) == nil
                    && VaultTPM.check(sealed, slot: .device, policy) == nil)
            } else {
                deviceDue = true
            }
            if pinDue || deviceDue, try !VaultTPM.sealsNewSlot(policy, replacing: nil) { (pinDue, deviceDue) = (false, false) }
        }
        guard pinDue || deviceDue || pinLeavesLockout else { return ([], false) }
        let tpm = SlotTPM(policy: policy, sealNew: true)
        let pinSealed = try vault.update { editor -> Bool in
            if deviceDue { try editor.renewDeviceSlot(tpm) }
            // Only the slot this PIN opened: a PIN changed meanwhile keeps its own slot.
            guard pinDue || pinLeavesLockout, let current = editor.document.keyslot(.pin), current == pinSlot else { return false }
            var sealing = try pin.with(tpm, keepingSaltOf: current)
            sealing.dictionaryProtected = false
            editor.document.setKeyslot(try sealing.wrap(vault.masterKey, vaultID: vault.vaultID))
            return true
        }
        return ((pinDue && pinSealed ? [.pin] : []) + (deviceDue ? [.device] : []), pinLeavesLockout && pinSealed)
    }

    /// Unlocks through the device slot (after a fingerprint match). With `tpm=require`, a
    /// device slot not sealed to the TPM is refused (the PIN seals it).
    public static func unlockWithDevice(_ store: VaultStore) throws -> UnlockedVault {
        try unlockWithDevice(store, read: nil)
    }

    static func unlockWithDevice(_ store: VaultStore, read: VaultSnapshot?) throws -> UnlockedVault {
        try unlock(store, slot: .device, read: read) { DeviceKeyslot(directory: $0, tpm: SlotTPM(policy: store.tpm, sealNew: false)) }
    }

    /// What `status` says of a slot: whether its key can be had now (a device slot is opened;
    /// a sealed PIN slot's storage key is compared, since its secret needs the PIN).
    private static func state(of slot: KeyslotRecord, _ directory: SafeDirectory, _ policy: TPMPolicy) -> VaultStatus.SlotState {
        let problem: FingersealError?
        switch (slot.kind, slot.tpm) {
        case (.pin, nil): return .usable
        case let (.pin, sealed?): problem = VaultTPM.check(sealed, slot: .pin, policy)
        case (.device, _):
            do {
                _ = try DeviceKeyslot(directory: directory, tpm: SlotTPM(policy: policy, sealNew: false)).wrappingKey(for: slot)
                return .usable
            } catch let error as FingersealError {
                problem = error
            } catch {
                return .keyMissing
            }
        }
        guard let problem else { return .usable }
        switch problem.cause {
        case .tpmChanged?: return .tpmChanged
        case .tpmPCRsChanged?: return .pcrsChanged
        default: return slot.tpm == nil ? .keyMissing : .tpmUnreachable
        }
    }

    /// `read`: what this request read of the vault already, used when the file is still it.
    private static func unlock(_ store: VaultStore, slot kind: KeyslotKind, read: VaultSnapshot?,
                               _ keyslot: (SafeDirectory) throws -> any Keyslot) throws -> UnlockedVault {
        let opened = try store.withDirectory(exclusive: false) { directory -> UnlockedVault in
            let current = try read.flatMap { try $0.isCurrent(directory) ? $0 : nil }
            guard let snapshot = try current ?? store.readSnapshot(directory) else { throw FingersealError(.noVault, Messages.noVault) }
            let document = snapshot.document
            guard let slot = document.keyslot(kind) else {
                throw FingersealError(kind == .pin ? .noPIN : .vaultUnusable,
                                      kind == .pin ? Messages.noVault : Messages.noDeviceSlot)
            }
            if kind == .device && slot.binding != enrollmentBinding(document) {
                throw FingersealError(.vaultUnusable, Messages.noDeviceSlot, detail: "device slot bound to another enrolled set")
            }
            if kind == .device && store.tpm.mode == .require && slot.tpm == nil {
                throw FingersealError(.vaultUnusable, Messages.tpmRequiredNotSealed, detail: "tpm=require, device slot not sealed",
                                      cause: .tpmNotSealed)
            }
            guard let masterKey = try keyslot(directory).unwrap(slot, vaultID: document.vaultID, file: VaultFiles.vault) else {
                throw kind == .pin ? FingersealError(.wrongPIN, Messages.wrongPIN)
                                   : FingersealError(.vaultUnusable, Messages.noDeviceSlot, detail: "device key does not open the vault")
            }
            if snapshot.verifiedVaultID != document.vaultID {
                try UnlockedVault.verify(document, masterKey: masterKey)
                snapshot.verifiedVaultID = document.vaultID
            }
            return UnlockedVault(store: store, vaultID: document.vaultID, masterKey: masterKey, unlockedBy: kind, read: snapshot)
        }
        guard let opened else { throw FingersealError(.noVault, Messages.noVault) }
        // A vault from before vaults recorded their account is bound now, by the account that
        // opened it: the read above refused it if it could be another's.
        if store.judgesOwner && opened.read?.document.owner == nil { try opened.bindIfUnbound() }
        return opened
    }

    /// Deletes every vault file. Returns false when there was no vault.
    public static func reset(_ store: VaultStore) throws -> Bool {
        let removed = try store.withDirectory(exclusive: true) { directory -> Bool in
            let names = try VaultStore.guarded(.listVault) { try directory.entries() }
            let ours = names.filter {
                $0 == VaultFiles.vault || $0 == VaultFiles.lockout || AuditFiles.all.contains($0)
                    || ($0.hasPrefix(VaultFiles.deviceKeyPrefix) && $0.hasSuffix(VaultFiles.deviceKeySuffix))
            }
            // The vault file first: once it is gone, nothing else can be unlocked.
            for name in ours.filter({ $0 == VaultFiles.vault }) + ours.filter({ $0 != VaultFiles.vault }) {
                try VaultStore.guarded(.deleteVault) { try directory.remove(name) }
            }
            return ours.contains(VaultFiles.vault)
        }
        return removed ?? false
    }

    /// The digest the device slot is bound to: the enrolled fingers and their sealed
    /// templates, and fprintd's enrolled set where fprintd holds the templates. Changing the enrolled set without the PIN leaves the device slot unable to
    /// unlock (like iOS's biometryCurrentSet).
    static func enrollmentBinding(_ document: VaultDocument) -> String {
        var entries = document.fingers.sorted().map { finger in
            finger + "=" + (document.records[VaultFiles.printRecord(finger)]?.ciphertext ?? "")
        }
        // fprintd's set, when bound: a vault without one keeps the binding it always had.
        if let set = document.fprintd { entries.append("fprintd=" + set.digest) }
        let digest = (try? GenericHash.hash(Array(entries.joined(separator: "\n").utf8), length: 16)) ?? []
        return Encoding.hex(digest)
    }
}
