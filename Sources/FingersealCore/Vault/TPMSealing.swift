import FingersealWire
import Glibc
import SodiumKit
import SystemKit
import TPMKit

/// `tpm=`: whether the keyslots are sealed to the machine's TPM.
public enum TPMMode: String, Sendable {
    /// When one is usable; otherwise the slots are made without it (and `status` says so).
    case auto
    /// Always: no vault is created or unlocked without a usable TPM (kiosks).
    case require
    /// New slots are made without it. A slot already sealed stays sealed: nothing is ever
    /// downgraded to file protection.
    case off
}

/// The TPM settings in force for a vault operation (`Options.tpmPolicy`).
public struct TPMPolicy: Equatable, Sendable {
    public var mode: TPMMode
    /// The TCTI the broker opens (`tpm_tcti=`): root's configuration, never a caller's.
    public var tcti: String
    /// PCRs the device keyslot is bound to (`tpm_pcrs=`).
    public var pcrs: [Int]
    /// Where the operation's storage key comes from: a connection of its own unless the owner
    /// of the store lends one it keeps (the broker's `HeldTPM`). Not a setting: policies that
    /// differ only in it are equal.
    public var keys: any TPMKeySource = FreshTPMKey()

    public static let defaultTCTI = TPMContext.defaultTCTI

    public init(mode: TPMMode, tcti: String = TPMPolicy.defaultTCTI, pcrs: [Int] = []) {
        self.mode = mode
        self.tcti = tcti
        self.pcrs = pcrs
    }

    /// No TPM for new slots (what a store says unless the broker's configuration says more).
    public static let off = TPMPolicy(mode: .off)

    public static func == (a: TPMPolicy, b: TPMPolicy) -> Bool {
        a.mode == b.mode && a.tcti == b.tcti && a.pcrs == b.pcrs
    }

    /// Whether the TPM can be opened and its storage key made now (what `auto` goes by).
    public var usable: Bool { VaultTPM.unusable(self) == nil }

    /// A TCTI configuration as tss2-tctildr takes it ("device:/dev/tpmrm0", "swtpm:port=2321",
    /// "tabrmd:"): printable, no spaces, bounded.
    public static func isValidTCTI(_ text: String) -> Bool {
        text.utf8.count <= 256 && text.contains(":")
            && text.unicodeScalars.allSatisfy { (0x21...0x7e).contains($0.value) }
    }

    /// "7,14" → [7, 14]; "none" or "" → []; nil for anything else.
    public static func pcrs(parsing text: String) -> [Int]? {
        if text.isEmpty || text == "none" { return [] }
        var found: [Int] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let number = Int(part.trimmingSpaces), (0...23).contains(number) else { return nil }
            found.append(number)
        }
        return Array(Set(found)).sorted()
    }
}

/// Lends a vault operation the TPM's storage key (and its salted session) on a connection to
/// `tcti`. The core keeps no connection of its own: a process that wants one kept between
/// operations owns it and lends it through this (the broker's `HeldTPM`).
public protocol TPMKeySource: Sendable {
    /// Runs `body` with a storage key on a connection to `tcti`; every object `body` loads is
    /// flushed by it. Throws the TPM's errors as they came (`TPMError`).
    func withKey<T>(tcti: String, _ body: (HeldStorageKey) throws -> T) throws -> T
}

/// A connection, storage key and session for one operation, closed after it: what tools,
/// tests and every store the broker did not make get.
public struct FreshTPMKey: TPMKeySource {
    public init() {}

    public func withKey<T>(tcti: String, _ body: (HeldStorageKey) throws -> T) throws -> T {
        let key = try HeldStorageKey(TPMContext(tcti: tcti))
        defer { key.close() }
        return try body(key)
    }
}

/// A keyslot's TPM part, as kept in its record (and so covered by the slot's associated data
/// and the vault's MAC).
struct TPMSealedRecord: Codable, Equatable {
    /// The name of the storage key it was sealed under (hex): another name means another TPM,
    /// or this one cleared.
    var parent: String
    var publicArea: String
    var privateArea: String
    /// PCRs it is bound to (device slot only); absent: none.
    var pcrs: [Int]?

    var associatedFields: [String] {
        ["tpm2", parent, publicArea, privateArea, (pcrs ?? []).map(String.init).joined(separator: ",")]
    }

    /// Whether its object counts wrong authValues towards the TPM's dictionary-attack lockout
    /// (a PIN slot sealed before fingerseal kept its PINs out of it). Read from the object's
    /// own public area rather than a field of the record: the record's associated data stays
    /// as it was, and the answer is what the TPM enforces. False when it does not unmarshal
    /// (the unseal that opened the slot already said whether it is usable).
    var isDictionaryProtected: Bool {
        guard let bytes = try? Encoding.bytes(base64: publicArea, file: VaultFiles.vault) else { return false }
        return (try? SealedObject(publicArea: bytes, privateArea: []).isDictionaryProtected()) ?? false
    }
}

/// A vault operation's use of the TPM: every object it loads is flushed before the call
/// returns; the connection, storage key and session come from the policy's `keys` (kept for
/// the next operation when the broker lends its `HeldTPM`).
public enum VaultTPM {
    /// Why the TPM cannot be used, when it cannot (auto decides with this; require refuses).
    static func unusable(_ policy: TPMPolicy) -> FingersealError? {
        do {
            try withStorageKey(policy) { try $0.confirmLoaded() }
            return nil
        } catch let error as FingersealError {
            return error
        } catch {
            return FingersealError(.unavailable, Messages.tpmUnreachable, detail: "\(error)")
        }
    }

    /// Whether a new slot replacing `previous` is sealed to the TPM: always when the old one
    /// was (never downgraded), never with `off`, when usable with `auto`, and with `require`
    /// always, refusing when the TPM cannot be used.
    static func sealsNewSlot(_ policy: TPMPolicy, replacing previous: KeyslotRecord?) throws -> Bool {
        if previous?.tpm != nil { return true }
        switch policy.mode {
        case .off: return false
        case .auto: return unusable(policy) == nil
        case .require:
            if let why = unusable(policy) {
                throw FingersealError(.unavailable, Messages.tpmRequired, detail: why.detail ?? why.message)
            }
            return true
        }
    }

    /// Seals `secret` under the storage key, then unseals it and compares before the caller
    /// may rely on the new object (a TPM that answered but stored something else must not
    /// replace a working slot).
    static func seal(_ secret: SecureBytes, authValue: SecureBytes?, pcrs: [Int], dictionaryProtected: Bool,
                     _ policy: TPMPolicy) throws -> TPMSealedRecord {
        let selection = try selection(pcrs)
        let empty = try SecureBytes(count: 0)
        let auth = authValue ?? empty
        return try withStorageKey(policy) { key in
            let object = try secret.withUnsafeBytes { secretBytes in
                try auth.withUnsafeBytes { try key.seal(secretBytes, authValue: $0, pcrs: selection,
                                                        dictionaryProtected: dictionaryProtected) }
            }
            let unsealed = try auth.withUnsafeBytes { authBytes in
                try key.unseal(object, authValue: authBytes, pcrs: selection) { try SecureBytes(copying: $0) }
            }
            guard unsealed.isEqual(to: secret) else {
                throw FingersealError(.systemError, Messages.tpmSealFailed, detail: "the unsealed secret differs")
            }
            return TPMSealedRecord(parent: Encoding.hex(key.name), publicArea: Encoding.base64(object.publicArea),
                                   privateArea: Encoding.base64(object.privateArea), pcrs: pcrs.isEmpty ? nil : pcrs)
        }
    }

    /// The secret sealed in `record`, in protected memory. `slot` chooses the sentences.
    static func unseal(_ record: TPMSealedRecord, authValue: SecureBytes?, slot: KeyslotKind,
                       _ policy: TPMPolicy) throws -> SecureBytes {
        let object = SealedObject(publicArea: try Encoding.bytes(base64: record.publicArea, file: VaultFiles.vault),
                                  privateArea: try Encoding.bytes(base64: record.privateArea, file: VaultFiles.vault))
        let selection = try selection(record.pcrs ?? [])
        let empty = try SecureBytes(count: 0)
        let auth = authValue ?? empty
        return try withStorageKey(policy, slot: slot) { key in
            guard Encoding.hex(key.name) == record.parent else { throw tpmChanged(slot, detail: "another storage key") }
            return try auth.withUnsafeBytes { authBytes in
                try key.unseal(object, authValue: authBytes, pcrs: selection) { try SecureBytes(copying: $0) }
            }
        }
    }

    /// Whether `record` was sealed under this TPM's storage key, as it is now: nil when it
    /// was; otherwise why not (another TPM, or none reachable).
    static func check(_ record: TPMSealedRecord, slot: KeyslotKind, _ policy: TPMPolicy) -> FingersealError? {
        do {
            return try withStorageKey(policy, slot: slot) { key in
                try key.confirmLoaded()
                return Encoding.hex(key.name) == record.parent ? nil : tpmChanged(slot, detail: "another storage key")
            }
        } catch let error as FingersealError {
            return error
        } catch {
            return FingersealError(.unavailable, Messages.tpmUnreachable, detail: "\(error)")
        }
    }

    /// Lends `body` the storage key (from `policy.keys`: the broker's kept one, or a new one)
    /// and turns the TPM's errors into sentences.
    static func withStorageKey<T>(_ policy: TPMPolicy, slot: KeyslotKind = .device,
                                          _ body: (StorageKey) throws -> T) throws -> T {
        // A missing device node is the common case without a TPM: said without loading a TCTI.
        if policy.tcti.hasPrefix("device:"), access(String(policy.tcti.dropFirst("device:".count)), F_OK) != 0 {
            throw FingersealError(.unavailable, Messages.tpmUnreachable, detail: "no \(policy.tcti.dropFirst("device:".count))")
        }
        do {
            return try policy.keys.withKey(tcti: policy.tcti) { held in
                do {
                    return try body(held.key)
                } catch let error as TPMError where error.isLockout {
                    // Said with the TPM's own interval, read on the same connection.
                    throw translate(error, slot: slot, context: held.context)
                }
            }
        } catch let error as TPMError {
            throw translate(error, slot: slot, context: nil)
        }
    }

    private static func translate(_ error: TPMError, slot: KeyslotKind, context: TPMContext?) -> FingersealError {
        if error.isForeignObject { return tpmChanged(slot, detail: "\(error)") }
        if error.isAuthFailure { return FingersealError(.wrongPIN, Messages.wrongPIN, detail: "the TPM refused the PIN") }
        if error.isLockout {
            let interval = (try? context?.dictionaryAttackState())??.recoveryInterval ?? 0
            return FingersealError(.lockedOut, Messages.tpmLockedOut(seconds: Int(interval)), detail: "\(error)",
                                   cause: .tpmLockedOut)
        }
        if error.isPolicyFailure {
            return FingersealError(.vaultUnusable, Messages.tpmPCRsChanged, detail: "\(error)", cause: .tpmPCRsChanged)
        }
        if case .invalidArgument = error {
            return FingersealError(.vaultUnusable, Messages.tpmKeyslotDamaged, detail: "\(error)")
        }
        return FingersealError(.unavailable, Messages.tpmUnreachable, detail: "\(error)")
    }

    static func tpmChanged(_ slot: KeyslotKind, detail: String) -> FingersealError {
        FingersealError(.vaultUnusable, slot == .pin ? Messages.tpmChangedPIN : Messages.tpmChangedFinger, detail: detail,
                        cause: .tpmChanged)
    }

    private static func selection(_ pcrs: [Int]) throws -> PCRSelection {
        do { return try PCRSelection(pcrs) } catch {
            throw FingersealError(.vaultUnusable, Messages.tpmKeyslotDamaged, detail: "PCR numbers out of range")
        }
    }
}
