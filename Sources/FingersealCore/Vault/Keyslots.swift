import FingersealWire
import Localization
import SodiumKit
import SystemKit

/// Where a keyslot's TPM part lives: the TPM `policy` names (to open sealed slots), and
/// whether a new slot is sealed there (`VaultTPM.sealsNewSlot` decides).
struct SlotTPM {
    var policy: TPMPolicy
    var sealNew: Bool

    static let none = SlotTPM(policy: .off, sealNew: false)
}

/// One way to obtain the key that wraps the vault's master key: the PIN (Argon2id, with or
/// without a secret the TPM releases for it) and the device (a key in a file, or sealed to
/// the TPM). The vault is the same whichever protects a slot.
protocol Keyslot {
    var kind: KeyslotKind { get }
    /// A fresh slot's parameters and its wrapping key.
    func makeSlot(binding: String?) throws -> (KeyslotRecord, SecureBytes)
    /// The wrapping key for an existing slot.
    func wrappingKey(for slot: KeyslotRecord) throws -> SecureBytes
}

extension Keyslot {
    /// A new slot record holding `masterKey`, wrapped.
    func wrap(_ masterKey: SecureBytes, vaultID: String, binding: String? = nil) throws -> KeyslotRecord {
        var (slot, key) = try makeSlot(binding: binding)
        let sealed = try AEAD.seal(masterKey, key: key, aad: slot.associatedData(vaultID: vaultID))
        slot.nonce = Encoding.base64(sealed.nonce)
        slot.wrappedKey = Encoding.base64(sealed.ciphertext)
        return slot
    }

    /// The master key, or nil when this slot's key does not open it (wrong PIN, other device).
    func unwrap(_ slot: KeyslotRecord, vaultID: String, file: String) throws -> SecureBytes? {
        let key = try wrappingKey(for: slot)
        let sealed = AEAD.Sealed(nonce: try Encoding.bytes(base64: slot.nonce, file: file),
                                 ciphertext: try Encoding.bytes(base64: slot.wrappedKey, file: file))
        do {
            return try AEAD.open(sealed, key: key, aad: slot.associatedData(vaultID: vaultID))
        } catch SodiumError.authenticationFailed {
            return nil
        } catch is SodiumError {
            throw FingersealError(.vaultUnusable, Messages.vaultDamaged(file, tr("a keyslot is not valid")))
        }
    }
}

/// Argon2id cost, stored in the slot. Reading refuses costs outside these bounds: a hostile
/// vault must not make a PAM host burn gigabytes or minutes.
public struct PINCost: Equatable, Sendable {
    public var opsLimit: UInt64
    public var memLimit: UInt64

    public init(opsLimit: UInt64, memLimit: UInt64) {
        self.opsLimit = opsLimit
        self.memLimit = memLimit
    }

    public static let maxMemory: UInt64 = 64 << 20
    static let opsRange: ClosedRange<UInt64> = 1...20
    static let memoryRange: ClosedRange<UInt64> = (8 << 10)...maxMemory

    var isAcceptable: Bool { PINCost.opsRange.contains(opsLimit) && PINCost.memoryRange.contains(memLimit) }

    /// Test-only cheap cost: never use for a real vault.
    public static let fastForTests = PINCost(opsLimit: 1, memLimit: 8 << 10)

    /// 64 MiB (what a PAM host can afford) with as many passes as fit ~150 ms here, between
    /// 2 and 10 passes, measured once on this machine.
    public static func tuned() throws -> PINCost {
        let probe = try SecureBytes.random(count: 16)
        let salt = try Sodium.randomBytes(Argon2id.saltLength)
        let start = monotonicSeconds()
        _ = try Argon2id.deriveKey(password: probe, salt: salt, opsLimit: 2, memLimit: maxMemory, length: 32)
        let perPass = max((monotonicSeconds() - start) / 2, 0.001)
        let passes = UInt64(min(max((0.15 / perPass).rounded(), 2), 10))
        return PINCost(opsLimit: passes, memLimit: maxMemory)
    }
}

/// PIN rules: what a person can type at a login prompt.
public enum PINRules {
    public static let minimumLength = 4
    public static let maximumLength = 64

    public static func check(_ pin: SecureBytes) throws {
        if pin.count < minimumLength { throw FingersealError(.usage, Messages.pinTooShort(minimumLength)) }
        if pin.count > maximumLength { throw FingersealError(.usage, Messages.pinTooLong(maximumLength)) }
    }
}

/// The `pin` keyslot: Argon2id of the PIN, and where a TPM is used, a random secret sealed
/// to it whose authValue is derived from the PIN.
///
/// With the TPM, the Argon2id result is split by the KDF into two independent subkeys: one
/// goes into the wrapping key, the other is the sealed object's authValue. The TPM (and
/// anyone watching its bus, which the salted session hides anyway) never sees anything of the
/// first. Guessing the PIN then needs this TPM; the disk alone gives nothing to test a guess
/// against.
///
/// The object is outside the TPM's dictionary-attack lockout: that lockout is one counter
/// for the whole machine, so one account's wrong PINs would lock every account out (and
/// every other program's protected objects). Wrong PINs are limited per account by
/// `LockoutLedger`, counted before the TPM is asked.
public struct PINKeyslot: Keyslot {
    let pin: SecureBytes
    let cost: PINCost?
    var tpm = SlotTPM.none
    /// Seal inside the dictionary-attack lockout, as fingerseal did before: only tests make
    /// such a slot now (a vault from then). `Vault.sealToTPMIfDue` reseals one outside it.
    var dictionaryProtected = false
    /// An existing slot's salt and cost, for a slot that changes only its TPM part: the
    /// Argon2id result just computed for it is used again (`derived`), not paid for twice.
    var keeping: (salt: [UInt8], cost: PINCost)? = nil
    private let derived = DerivedPINKeys()
    /// Where Argon2id runs (each takes its memory cost, 64 MiB): the broker's few slots, so
    /// no number of PIN checks at once can take more; nil runs it at once (tools, tests).
    let workSlots: WorkSlots?
    var kind: KeyslotKind { .pin }
    /// The longest a PIN check waits for a slot.
    static let slotWait = 30.0

    /// `cost` applies to new slots only (existing slots carry their own); nil tunes it to
    /// this machine when a slot is made.
    public init(pin: SecureBytes, cost: PINCost? = nil, workSlots: WorkSlots? = nil) {
        self.pin = pin
        self.cost = cost
        self.workSlots = workSlots
    }

    /// Runs an Argon2id computation in a slot when there are slots.
    private func inSlot<T>(_ body: () throws -> T) throws -> T {
        guard let workSlots else { return try body() }
        do {
            return try workSlots.run(waitLimit: PINKeyslot.slotWait, body)
        } catch is WorkSlots.Busy {
            throw FingersealError(.unavailable, Messages.pinChecksBusy)
        }
    }

    /// This PIN with its TPM part placed as `tpm` says.
    func with(_ tpm: SlotTPM, keepingSaltOf slot: KeyslotRecord? = nil) throws -> PINKeyslot {
        var copy = self
        copy.tpm = tpm
        if let slot {
            let (salt, cost) = try parameters(slot)
            copy.keeping = (salt, cost)
        }
        return copy
    }

    func makeSlot(binding: String?) throws -> (KeyslotRecord, SecureBytes) {
        let salt = try keeping?.salt ?? Sodium.randomBytes(Argon2id.saltLength)
        let cost = try keeping?.cost ?? self.cost ?? inSlot { try VaultStore.guarded(.measurePINCost) { try PINCost.tuned() } }
        var slot = KeyslotRecord(kind: .pin, protection: .argon2id, salt: Encoding.base64(salt),
                                 opsLimit: cost.opsLimit, memLimit: cost.memLimit, binding: nil, keyID: nil,
                                 nonce: "", wrappedKey: "")
        let base = try derive(salt: salt, cost: cost)
        guard tpm.sealNew else { return (slot, base) }
        let secret = try VaultStore.guarded(.createKey) { try SecureBytes.random(count: AEAD.keyLength) }
        slot.protection = .argon2idTPM2
        slot.tpm = try VaultTPM.seal(secret, authValue: try authValue(base), pcrs: [], dictionaryProtected: dictionaryProtected,
                                     tpm.policy)
        return (slot, try wrappingKey(base, secret))
    }

    func wrappingKey(for slot: KeyslotRecord) throws -> SecureBytes {
        let (salt, cost) = try parameters(slot)
        let base = try derive(salt: salt, cost: cost)
        switch (slot.protection, slot.tpm) {
        case (.argon2id, nil):
            return base
        case let (.argon2idTPM2, sealed?):
            let secret = try VaultTPM.unseal(sealed, authValue: try authValue(base), slot: .pin, tpm.policy)
            return try wrappingKey(base, secret)
        default:
            throw FingersealError(.vaultUnusable, Messages.vaultDamaged(VaultFiles.vault, tr("the PIN keyslot is not valid")))
        }
    }

    private func parameters(_ slot: KeyslotRecord) throws -> ([UInt8], PINCost) {
        guard let saltText = slot.salt, let ops = slot.opsLimit, let mem = slot.memLimit,
              PINCost(opsLimit: ops, memLimit: mem).isAcceptable else {
            throw FingersealError(.vaultUnusable, Messages.vaultDamaged(VaultFiles.vault, tr("the PIN keyslot has unacceptable parameters")))
        }
        let salt = try Encoding.bytes(base64: saltText, file: VaultFiles.vault)
        guard salt.count == Argon2id.saltLength else {
            throw FingersealError(.vaultUnusable, Messages.vaultDamaged(VaultFiles.vault, tr("the PIN keyslot is not valid")))
        }
        return (salt, PINCost(opsLimit: ops, memLimit: mem))
    }

    /// The two halves the KDF makes of the Argon2id result (libsodium crypto_kdf, one context,
    /// two ids): the TPM's authValue, and the part of the key the TPM never sees.
    private func authValue(_ base: SecureBytes) throws -> SecureBytes {
        try VaultStore.guarded(.deriveKey) { try KeyDerivation.subkey(of: base, id: 2, context: "fspintpm") }
    }

    /// The wrapping key: keyed BLAKE2b of the TPM's secret under the other half.
    private func wrappingKey(_ base: SecureBytes, _ secret: SecureBytes) throws -> SecureBytes {
        try VaultStore.guarded(.deriveKey) {
            try GenericHash.hash(secret: secret, key: try KeyDerivation.subkey(of: base, id: 1, context: "fspintpm"),
                                 length: AEAD.keyLength)
        }
    }

    private func derive(salt: [UInt8], cost: PINCost) throws -> SecureBytes {
        if let known = derived.key(salt: salt, cost: cost) { return known }
        do {
            let key = try inSlot {
                try Argon2id.deriveKey(password: pin, salt: salt, opsLimit: cost.opsLimit, memLimit: cost.memLimit,
                                       length: AEAD.keyLength)
            }
            derived.remember(key, salt: salt, cost: cost)
            return key
        } catch let error as FingersealError {
            throw error
        } catch {
            throw FingersealError(.systemError, Messages.systemFailure(.derivePINKey))
        }
    }
}

/// The Argon2id results one PIN has given, in protected memory, for as long as that
/// `PINKeyslot` lives (one request): sealing an open slot to the TPM needs the same result
/// the unlock just computed.
private final class DerivedPINKeys {
    private var entries: [(salt: [UInt8], cost: PINCost, key: SecureBytes)] = []

    func key(salt: [UInt8], cost: PINCost) -> SecureBytes? {
        entries.first { $0.salt == salt && $0.cost == cost }?.key
    }

    func remember(_ key: SecureBytes, salt: [UInt8], cost: PINCost) {
        entries.append((salt, cost, key))
    }
}

/// The `device` keyslot: a random key sealed to the TPM (with no authValue, and outside the
/// dictionary-attack lockout: a finger match is what stands before it), or without a TPM a
/// 0600 file in the vault directory, protected by file permissions only (said so in `status`).
struct DeviceKeyslot: Keyslot {
    let directory: SafeDirectory
    var tpm = SlotTPM.none
    var kind: KeyslotKind { .device }

    func makeSlot(binding: String?) throws -> (KeyslotRecord, SecureBytes) {
        let key = try SecureBytes.random(count: AEAD.keyLength)
        if tpm.sealNew {
            // In the vault document: it changes together with the vault file's rename.
            let sealed = try VaultTPM.seal(key, authValue: nil, pcrs: tpm.policy.pcrs, dictionaryProtected: false, tpm.policy)
            return (KeyslotRecord(kind: .device, protection: .tpm2, salt: nil, opsLimit: nil, memLimit: nil,
                                  binding: binding, keyID: nil, nonce: "", wrappedKey: "", tpm: sealed), key)
        }
        let keyID = Encoding.hex(try Sodium.randomBytes(8))
        var body = key.copyBytes()
        defer { Sodium.wipe(&body) }
        var file = try Container.encode(.deviceKey, body: body)
        defer { Sodium.wipe(&file) }
        _ = try VaultStore.guarded(.writeDeviceKey) { try directory.replace(VaultFiles.deviceKey(keyID), with: file) }
        let slot = KeyslotRecord(kind: .device, protection: .filePermissions, salt: nil, opsLimit: nil, memLimit: nil,
                                 binding: binding, keyID: keyID, nonce: "", wrappedKey: "")
        return (slot, key)
    }

    func wrappingKey(for slot: KeyslotRecord) throws -> SecureBytes {
        if slot.protection == .tpm2, let sealed = slot.tpm, slot.keyID == nil {
            return try VaultTPM.unseal(sealed, authValue: nil, slot: .device, tpm.policy)
        }
        guard slot.protection == .filePermissions, slot.tpm == nil, let keyID = slot.keyID, VaultFiles.isKeyID(keyID) else {
            throw FingersealError(.vaultUnusable, Messages.vaultDamaged(VaultFiles.vault, tr("the device keyslot is not valid")))
        }
        let name = VaultFiles.deviceKey(keyID)
        guard var file = try VaultStore.guarded(.readDeviceKey, {
            try directory.read(name, sizeLimit: VaultFiles.deviceKeyLimit)
        }) else {
            throw FingersealError(.vaultUnusable, Messages.noDeviceSlot)
        }
        defer { Sodium.wipe(&file) }
        var body = try Container.decode(.deviceKey, file, file: name)
        defer { Sodium.wipe(&body) }
        guard body.count == AEAD.keyLength else {
            throw FingersealError(.vaultUnusable, Messages.vaultDamaged(name, tr("its key has the wrong length")))
        }
        return try SecureBytes(copying: body)
    }
}
