import FingersealWire
import Localization
import SodiumKit
import SystemKit

/// A vault whose master key is in memory. Reads and writes look at the file under the lock,
/// so several processes can each hold one and no update is lost; what is still the file
/// this vault read last (`VaultSnapshot`) is not read or MAC-checked again.
public final class UnlockedVault {
    public let store: VaultStore
    let vaultID: String
    let masterKey: SecureBytes
    /// Which keyslot opened it: changing the enrolled fingers needs `.pin`.
    public let unlockedBy: KeyslotKind
    /// The slots this unlock sealed to the TPM (a PIN unlock of a vault from before there was
    /// a TPM, or with new `tpm_pcrs`).
    public internal(set) var sealedToTPM: [KeyslotKind] = []
    /// Whether this unlock sealed the PIN slot again outside the TPM's dictionary-attack
    /// lockout (a slot made when fingerseal still sealed PINs inside it).
    public internal(set) var pinLeftTPMLockout = false

    /// The file as last read or written by this vault, its MAC checked.
    private(set) var read: VaultSnapshot?

    init(store: VaultStore, vaultID: String, masterKey: SecureBytes, unlockedBy: KeyslotKind, read: VaultSnapshot? = nil) {
        self.store = store
        self.vaultID = vaultID
        self.masterKey = masterKey
        self.unlockedBy = unlockedBy
        self.read = read
    }

    /// The enrolled prints (finger name and serialized template), in enrollment order.
    public func prints() throws -> [(finger: String, template: SecureBytes)] {
        try withDocument(exclusive: false) { document, _ in
            try document.fingers.map { finger in
                guard let template = try open(document, VaultFiles.printRecord(finger)) else {
                    throw FingersealError(.vaultUnusable, Messages.vaultDamaged(VaultFiles.vault, tr("the print for %1$s is missing", finger)))
                }
                return (finger, template)
            }
        }
    }

    public func enrolledFingers() throws -> [String] {
        try withDocument(exclusive: false) { document, _ in document.fingers }
    }

    /// Whether the account takes part in touch to sign in (verified with the vault's MAC).
    public func takesPartInIdentify() throws -> Bool {
        try withDocument(exclusive: false) { document, _ in document.identify ?? false }
    }

    /// The login password sealed for the keyring, and what is known of it; nil when none is.
    public func loginPassword() throws -> (password: SecureBytes, record: LoginPasswordRecord)? {
        try withDocument(exclusive: false) { document, _ in
            guard let record = document.loginPassword,
                  let password = try open(document, VaultEditor.loginPasswordRecord) else { return nil }
            return (password, record)
        }
    }

    /// fprintd's enrolled set the device slot is bound to (verified with the vault's MAC).
    public func fprintdSet() throws -> FprintdSet? {
        try withDocument(exclusive: false) { document, _ in document.fprintd }
    }

    /// A secret by name, in secure memory, or nil when there is none.
    public func secret(_ name: String) throws -> SecureBytes? {
        try withDocument(exclusive: false) { document, _ in try open(document, name) }
    }

    /// Read-modify-write under the exclusive lock.
    public func update<T>(_ change: (inout VaultEditor) throws -> T) throws -> T {
        try withDocument(exclusive: true) { document, directory in
            var editor = VaultEditor(vault: self, document: document, directory: directory)
            let result = try change(&editor)
            if editor.document != document {
                editor.document.generation &+= 1
                let written = try store.writeDocument(try UnlockedVault.sign(editor.document, masterKey: masterKey), directory)
                written.verifiedVaultID = vaultID
                read = written
            }
            return result
        }
    }

    func withDocument<T>(exclusive: Bool, _ body: (VaultDocument, SafeDirectory) throws -> T) throws -> T {
        let result = try store.withDirectory(exclusive: exclusive) { directory -> T in
            if let read, read.verifiedVaultID == vaultID, try read.isCurrent(directory) {
                return try body(read.document, directory)
            }
            guard let snapshot = try store.readSnapshot(directory) else { throw FingersealError(.noVault, Messages.noVault) }
            let document = snapshot.document
            guard document.vaultID == vaultID else { throw FingersealError(.vaultUnusable, Messages.vaultReplaced) }
            try UnlockedVault.verify(document, masterKey: masterKey)
            snapshot.verifiedVaultID = vaultID
            read = snapshot
            return try body(document, directory)
        }
        guard let result else { throw FingersealError(.noVault, Messages.noVault) }
        return result
    }

    func open(_ document: VaultDocument, _ name: String) throws -> SecureBytes? {
        guard let record = document.records[name] else { return nil }
        let sealed = AEAD.Sealed(nonce: try Encoding.bytes(base64: record.nonce, file: VaultFiles.vault),
                                 ciphertext: try Encoding.bytes(base64: record.ciphertext, file: VaultFiles.vault))
        do {
            return try AEAD.open(sealed, key: masterKey, aad: UnlockedVault.recordAAD(vaultID: vaultID, name: name))
        } catch {
            throw FingersealError(.vaultUnusable, Messages.vaultDamaged(VaultFiles.vault, tr("the secret %1$s does not decrypt", name)))
        }
    }

    static func recordAAD(vaultID: String, name: String) -> [UInt8] {
        Array(["fingerseal", "v1", "record", vaultID, name].joined(separator: "\u{1f}").utf8)
    }

    /// A key for one purpose, derived from the master key (libsodium KDF). Ids in use:
    /// 1 the vault MAC, 2 and 5 the audit chains (`AuditLine.key`), 3 step-up grants, 4 sealed data.
    func subkey(id: UInt64, context: String) throws -> SecureBytes {
        try KeyDerivation.subkey(of: masterKey, id: id, context: context)
    }

    static func macKey(_ masterKey: SecureBytes) throws -> SecureBytes {
        try KeyDerivation.subkey(of: masterKey, id: 1, context: "fsvaultm")
    }

    static func sign(_ document: VaultDocument, masterKey: SecureBytes) throws -> VaultDocument {
        var signed = document
        signed.mac = Encoding.hex(try GenericHash.hash(try document.authenticatedBytes(), key: try macKey(masterKey)))
        return signed
    }

    static func verify(_ document: VaultDocument, masterKey: SecureBytes) throws {
        let expected = Encoding.hex(try GenericHash.hash(try document.authenticatedBytes(), key: try macKey(masterKey)))
        guard Sodium.equal(Array(expected.utf8), Array(document.mac.utf8)) else {
            throw FingersealError(.vaultUnusable, Messages.vaultDamaged(VaultFiles.vault, tr("it was modified without the vault key")))
        }
    }
}
