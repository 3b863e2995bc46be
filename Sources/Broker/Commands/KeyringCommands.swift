import FingersealCore
import FingersealWire
import Glibc
import SodiumKit
import SystemKit

/// The login password sealed for the keyring (issue 23 §1), opt-in per account: `keyring on`
/// seals the account password the broker has just checked; after a finger or PIN match in a
/// root host's stack for a service `keyring_services=` lists, the module hands it on as
/// PAM_AUTHTOK, so pam_gnome_keyring (or pam_kwallet5) further down unlocks the keyring as
/// after a typed password. A password change through PAM replaces the copy; a copy that no
/// longer is the password is dropped at its next use, and the person told once.
enum KeyringCommands {
    /// `keyring on`: the account password, typed now and checked by the broker
    /// (`fingerseal-verify`), sealed in the vault. Only in a vault sealed to the TPM, unless
    /// the person (`--without-tpm`) or the administrator (`keyring_without_tpm=yes`) says so:
    /// elsewhere the device key file beside the vault opens it, and a stolen disk would give
    /// up the password, where it used to hold only a salted hash. Refused before the password
    /// is asked for, so nothing is typed or sealed in vain.
    static func on(_ call: Call) throws -> Reply {
        guard let status = try Vault.status(call.store) else { throw FingersealError(.noVault, Messages.noVault) }
        let withoutTPM = !status.sealedToTPM
        if withoutTPM && !call.options(for: KeyringOnOptions.self).withoutTPM && !call.settings.keyringWithoutTPM {
            // A TPM the vault is not sealed to yet takes it at the next PIN; else only the
            // person's say-so (or the administrator's) lets the copy in.
            let policy = call.store.tpm
            throw FingersealError(.usage, Messages.keyringNeedsTPM(sealable: policy.mode != .off && policy.usable))
        }
        guard let password = try AccountPassword.check(call, why: Messages.keyringNeedsPassword) else {
            throw FingersealError(.usage, Messages.passwordEmptyInput)
        }
        let vault = try Vault.unlockWithDevice(call.store)
        try vault.update { try $0.setLoginPassword(password, entry: PasswordEntryDigest.current(call.account.name), at: SystemClock().now()) }
        AuditTrail(store: call.store).record(.keyring(.on), vault: vault)
        call.conversation.output(Messages.keyringTurnedOn)
        if withoutTPM { call.conversation.info(Messages.keyringWithoutTPM) }
        if call.settings.keyringServices.isEmpty { call.conversation.info(Messages.keyringNoServices) }
        return Reply(.success, method: UnlockMethod.password.rawValue)
    }

    /// `keyring off`: a finger or the PIN confirms it; the copy is removed.
    static func off(_ call: Call) throws -> Reply {
        guard let status = try Vault.status(call.store) else { throw FingersealError(.noVault, Messages.noVault) }
        guard status.keyring else {
            call.conversation.output(Messages.keyringAlreadyOff)
            return Reply(.success)
        }
        let result = UnlockFlow.run(call, try UnlockRequest.forChannel(call, .confirmation))
        let vault = try result.confirmedVault()
        try vault.update { $0.removeLoginPassword() }
        AuditTrail(store: call.store).record(.keyring(.off), vault: vault)
        call.conversation.output(Messages.keyringTurnedOff)
        return Reply(.success, method: result.method)
    }

    /// The password for PAM_AUTHTOK after `result`, a PAM host's success: only to a root host,
    /// for a listed service, after a finger or PIN match (never a confirmation merely held).
    /// A copy the password entry no longer matches is checked with PAM first; one that fails
    /// is dropped, recorded, and said once.
    static func handOff(_ call: Call, _ result: UnlockResult) -> [UInt8]? {
        guard result.outcome == .success, result.unlocked != nil, let vault = result.vault, call.caller.isRoot,
              let service = call.channel.pam?.service, call.settings.keyringServices.contains(service),
              let (password, record) = (try? vault.loginPassword()) ?? nil else { return nil }
        let entry = PasswordEntryDigest.current(call.account.name)
        if entry == nil || entry != record.entry {
            guard AccountPassword.verify(call, password, counted: false) else {
                _ = try? vault.update { $0.removeLoginPassword() }
                AuditTrail(store: call.store).record(.keyring(.dropped), vault: vault)
                call.conversation.info(Messages.keyringDropped)
                return nil
            }
            if entry != record.entry { call.after.add { _ = try? vault.update { $0.confirmLoginPassword(entry: entry) } } }
        }
        return password.withUnsafeBytes { Array($0) }
    }

    /// A password the broker has just checked (a sign-in with it, a change), for an account
    /// whose vault holds a copy: it replaces the copy where that differs. Failures are logged;
    /// the copy is checked again at its next use anyway.
    static func passwordChecked(_ call: Call, _ password: SecureBytes) {
        do {
            let vault = try Vault.unlockWithDevice(call.store)
            guard let (held, record) = try vault.loginPassword() else { return }
            let entry = PasswordEntryDigest.current(call.account.name)
            if Sodium.equal(held, password) {
                if entry != record.entry { try vault.update { $0.confirmLoginPassword(entry: entry) } }
                return
            }
            try vault.update { try $0.setLoginPassword(password, entry: entry, at: SystemClock().now()) }
            AuditTrail(store: call.store).record(.keyring(.updated), vault: vault)
        } catch {
            Syslog.log(.warning, "fingersealed: the keyring's copy of user=\(call.account.name)'s password was not replaced: \(error)")
        }
    }
}

/// A digest of the account's shadow entry (the password hash and the day it last changed):
/// it changes with the password, whoever changed it, and says nothing of the password.
enum PasswordEntryDigest {
    static func current(_ name: String) -> String? {
        ShadowEntry.withPasswordHash(of: name) { hash, lastChange in
            var input = Array("fingerseal password entry v1".utf8) + [0x1f]
            input += Array(hash)
            input += [0x1f] + Array(String(lastChange).utf8)
            defer { Wire.wipe(&input) }
            return (try? GenericHash.hash(input, length: 16)).map(Encoding.hex)
        } ?? nil
    }
}
