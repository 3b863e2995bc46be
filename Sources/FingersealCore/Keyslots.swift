import SodiumKit
import SystemKit
import Localization

/// One way to obtain the key that wraps the vault's master key. New protectors (TPM2) plug
/// in here without the vault changing.
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

/// The `pin` keyslot: Argon2id of the PIN.
public struct PINKeyslot: Keyslot {
    let pin: SecureBytes
    let cost: PINCost?
    var kind: KeyslotKind { .pin }

    /// `cost` applies to new slots only (existing slots carry their own); nil tunes it to
    /// this machine when a slot is made.
    public init(pin: SecureBytes, cost: PINCost? = nil) {
        self.pin = pin
        self.cost = cost
    }

    func makeSlot(binding: String?) throws -> (KeyslotRecord, SecureBytes) {
        let cost = try self.cost ?? VaultStore.guarded(.measurePINCost) { try PINCost.tuned() }
        let salt = try Sodium.randomBytes(Argon2id.saltLength)
        let slot = KeyslotRecord(kind: .pin, protection: .argon2id, salt: Encoding.base64(salt),
                                 opsLimit: cost.opsLimit, memLimit: cost.memLimit, binding: nil, keyID: nil,
                                 nonce: "", wrappedKey: "")
        return (slot, try derive(salt: salt, cost: cost))
    }

    func wrappingKey(for slot: KeyslotRecord) throws -> SecureBytes {
        guard let saltText = slot.salt, let ops = slot.opsLimit, let mem = slot.memLimit,
              PINCost(opsLimit: ops, memLimit: mem).isAcceptable else {
            throw FingersealError(.vaultUnusable, Messages.vaultDamaged(VaultFiles.vault, tr("the PIN keyslot has unacceptable parameters")))
        }
        let salt = try Encoding.bytes(base64: saltText, file: VaultFiles.vault)
        guard salt.count == Argon2id.saltLength else {
            throw FingersealError(.vaultUnusable, Messages.vaultDamaged(VaultFiles.vault, tr("the PIN keyslot is not valid")))
        }
        return try derive(salt: salt, cost: PINCost(opsLimit: ops, memLimit: mem))
    }

    private func derive(salt: [UInt8], cost: PINCost) throws -> SecureBytes {
        do {
            return try Argon2id.deriveKey(password: pin, salt: salt, opsLimit: cost.opsLimit, memLimit: cost.memLimit,
                                          length: AEAD.keyLength)
        } catch {
            throw FingersealError(.systemError, Messages.systemFailure(.derivePINKey))
        }
    }
}

/// The `device` keyslot: a random key in a 0600 file in the vault directory. Protected by
/// file permissions only (said so in `status`); a TPM2-sealed protector replaces it later.
struct DeviceKeyslot: Keyslot {
    let directory: SafeDirectory
    var kind: KeyslotKind { .device }

    func makeSlot(binding: String?) throws -> (KeyslotRecord, SecureBytes) {
        let key = try SecureBytes.random(count: AEAD.keyLength)
        let keyID = Encoding.hex(try Sodium.randomBytes(8))
        var body = key.copyBytes()
        defer { Sodium.wipe(&body) }
        var file = try Container.encode(.deviceKey, body: body)
        defer { Sodium.wipe(&file) }
        try VaultStore.guarded(.writeDeviceKey) { try directory.replace(VaultFiles.deviceKey(keyID), with: file) }
        let slot = KeyslotRecord(kind: .device, protection: .filePermissions, salt: nil, opsLimit: nil, memLimit: nil,
                                 binding: binding, keyID: keyID, nonce: "", wrappedKey: "")
        return (slot, key)
    }

    func wrappingKey(for slot: KeyslotRecord) throws -> SecureBytes {
        guard let keyID = slot.keyID, VaultFiles.isKeyID(keyID) else {
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
