import FingersealWire
import Localization
import SodiumKit
import SystemKit

/// Changes to a vault inside `UnlockedVault.update`.
public struct VaultEditor {
    let vault: UnlockedVault
    var document: VaultDocument
    let directory: SafeDirectory

    public static func isValidName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count) && name.utf8.allSatisfy {
            ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2e || $0 == 0x2d || $0 == 0x5f
        }
    }

    public func secret(_ name: String) throws -> SecureBytes? {
        try vault.open(document, name)
    }

    public mutating func setSecret(_ name: String, _ value: SecureBytes) throws {
        guard VaultEditor.isValidName(name) else { throw FingersealError(.usage, Messages.badSecretName) }
        let sealed = try VaultStore.guarded(.encryptSecret) {
            try AEAD.seal(value, key: vault.masterKey, aad: UnlockedVault.recordAAD(vaultID: vault.vaultID, name: name))
        }
        document.records[name] = SealedRecord(nonce: Encoding.base64(sealed.nonce), ciphertext: Encoding.base64(sealed.ciphertext))
    }

    public mutating func removeSecret(_ name: String) {
        document.records[name] = nil
    }

    public var secretNames: [String] { document.records.keys.sorted() }

    public mutating func setSignIn(_ state: SignInState) {
        document.signIn = state
    }

    public var signIn: SignInState { document.signIn }

    /// Fingerprint unlock for this account, on or off (the person's own switch).
    public mutating func setFingerUnlock(_ on: Bool) {
        document.fingerOff = on ? nil : true
    }

    /// The record that holds the login password for the keyring.
    public static let loginPasswordRecord = "login-password"

    /// Seals the login password for the keyring (`entry`: the password entry it matches).
    public mutating func setLoginPassword(_ password: SecureBytes, entry: String?, at time: Int64) throws {
        try setSecret(VaultEditor.loginPasswordRecord, password)
        document.loginPassword = LoginPasswordRecord(sealedAt: time, entry: entry)
    }

    /// The copy held is still the password, now that the password entry reads `entry`.
    public mutating func confirmLoginPassword(entry: String?) {
        document.loginPassword?.entry = entry
    }

    public mutating func removeLoginPassword() {
        removeSecret(VaultEditor.loginPasswordRecord)
        document.loginPassword = nil
    }

    /// Touch to sign in for this account, on or off.
    public mutating func setIdentify(_ on: Bool) {
        document.identify = on ? true : nil
    }

    public var lastRefreshAt: Int64? { document.lastRefreshAt }

    public var provider: ProviderRecord? { document.provider }

    /// Records a completed sign-in: the new refresh token, its provider, who signed in (when
    /// the provider said), the chain alive; the key its tokens are bound to, when they are
    /// (a new one each sign-in: the previous sign-in's goes).
    public mutating func signedIn(refreshToken: SecureBytes, provider: ProviderRecord, clientSecret: SecureBytes? = nil,
                                  proofKey: SecureBytes? = nil, identity: SignedInIdentity? = nil, at time: Int64) throws {
        document.identity = identity
        try setSecret(TokenChain.refreshTokenRecord, refreshToken)
        if let clientSecret { try setSecret(TokenChain.clientSecretRecord, clientSecret) } else {
            removeSecret(TokenChain.clientSecretRecord)
        }
        if let proofKey, provider.boundToKey { try setSecret(TokenChain.proofKeyRecord, proofKey) } else {
            removeSecret(TokenChain.proofKeyRecord)
        }
        document.provider = provider
        document.signIn = .active
        document.lastRefreshAt = time
    }

    /// Ends the sign-in: the refresh token, the client secret and the provider go; the PIN
    /// and the enrolled fingers stay.
    public mutating func signedOut() {
        removeSecret(TokenChain.refreshTokenRecord)
        removeSecret(TokenChain.clientSecretRecord)
        removeSecret(TokenChain.proofKeyRecord)
        document.provider = nil
        document.identity = nil
        document.signIn = .none
        document.lastRefreshAt = nil
    }

    public var identity: SignedInIdentity? { document.identity }

    /// Who signed in, learnt later (a refresh's verified answer) for a sign-in that had none.
    public mutating func setIdentity(_ identity: SignedInIdentity) {
        document.identity = identity
    }

    /// The identity provider named another account: the chain ends here, and its refresh
    /// token (which is that other account's) goes.
    public mutating func endChain() {
        removeSecret(TokenChain.refreshTokenRecord)
        document.signIn = .required
    }

    public mutating func setLastRefresh(_ time: Int64) {
        document.lastRefreshAt = time
    }

    /// Replaces the PIN slot, and renews the device slot (which also repairs a lost device key).
    /// Each is sealed to the TPM as the policy says, and always when the slot it replaces was.
    public mutating func changePIN(_ pin: PINKeyslot) throws {
        let policy = vault.store.tpm
        let tpm = SlotTPM(policy: policy, sealNew: try VaultTPM.sealsNewSlot(policy, replacing: document.keyslot(.pin)))
        document.setKeyslot(try pin.with(tpm).wrap(vault.masterKey, vaultID: vault.vaultID))
        try renewDeviceSlot(tpm.sealNew ? tpm : nil)
    }

    /// A new device key and slot, bound to the current enrolled set; sealed to the TPM as
    /// `tpm` says, else as the policy says (always when the slot it replaces was).
    mutating func renewDeviceSlot(_ tpm: SlotTPM? = nil) throws {
        let policy = vault.store.tpm
        let placed = try tpm ?? SlotTPM(policy: policy, sealNew: VaultTPM.sealsNewSlot(policy, replacing: document.keyslot(.device)))
        document.setKeyslot(try DeviceKeyslot(directory: directory, tpm: placed).wrap(
            vault.masterKey, vaultID: vault.vaultID, binding: Vault.enrollmentBinding(document)))
    }

    public var fingers: [String] { document.fingers }

    /// Binds the device slot to fprintd's enrolled set as it is now (the PIN confirms it), or
    /// unbinds it (nil). Fingers fingerseal enrolled there are kept track of.
    public mutating func bindFprintd(_ set: FprintdSet?) throws {
        try requirePIN()
        guard document.fprintd != set else { return }
        document.fprintd = set
        try renewDeviceSlot()
    }

    public var fprintd: FprintdSet? { document.fprintd }

    /// Adds (or replaces) the template for `finger` and re-binds the device slot. Needs a
    /// vault opened with the PIN: a finger added without it must never unlock.
    public mutating func enroll(finger: String, template: SecureBytes) throws {
        try requirePIN()
        try setSecret(VaultFiles.printRecord(finger), template)
        if !document.fingers.contains(finger) { document.fingers.append(finger) }
        try renewDeviceSlot()
    }

    /// Removes the template for `finger` (PIN needed) and re-binds the device slot.
    public mutating func forget(finger: String) throws {
        try requirePIN()
        removeSecret(VaultFiles.printRecord(finger))
        document.fingers.removeAll { $0 == finger }
        try renewDeviceSlot()
    }

    private func requirePIN() throws {
        guard vault.unlockedBy == .pin else { throw FingersealError(.usage, Messages.pinNeeded) }
    }
}
