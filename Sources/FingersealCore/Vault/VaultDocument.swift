import FingersealWire
import FoundationEssentials
import Localization
import SodiumKit

/// Whether the IdP sign-in chain is alive.
public enum SignInState: String, Codable, Sendable {
    /// Never signed in.
    case none
    case active
    /// The IdP ended the refresh-token chain; `fingerseal login` is needed.
    case required
}

public enum KeyslotKind: String, Codable, Sendable, CaseIterable {
    case pin, device
}

/// How a keyslot's wrapping key is protected (said plainly in `status` and `doctor`).
public enum KeyslotProtection: String, Codable, Sendable {
    case argon2id
    case filePermissions = "file-permissions"
    /// The PIN slot: Argon2id of the PIN and a secret sealed to the TPM, which opens only for
    /// an authValue derived from the PIN (the TPM counts wrong ones).
    case argon2idTPM2 = "argon2id+tpm2"
    /// The device slot: its key sealed to the TPM (and, with `tpm_pcrs`, to PCR values).
    case tpm2

    /// Whether the TPM holds part of the key.
    public var sealedToTPM: Bool { self == .argon2idTPM2 || self == .tpm2 }
}

/// Which identity provider and client the refresh token belongs to, and the endpoints
/// discovery validated at sign-in: an unlock needs no discovery round trip.
public struct ProviderRecord: Codable, Equatable, Sendable {
    public var issuer: String
    public var clientID: String
    public var tokenEndpoint: String?
    public var revocationEndpoint: String?
    /// A confidential client: its secret is sealed in the vault as `client-secret`.
    public var confidential: Bool?
    /// Where the ID tokens of a refresh are checked (jwks_uri, userinfo_endpoint), so an unlock
    /// needs no discovery round trip. Absent in vaults made before they were kept.
    public var jwksURI: String?
    public var userinfoEndpoint: String?
    /// Where the key is that the provider bound the sign-in's tokens to (RFC 9449): every
    /// refresh carries a proof by it (`TokenChain.proofKeyRecord`). Absent: bearer tokens.
    public var proofKey: ProofKeyHolder?
    public var boundToKey: Bool { proofKey != nil }

    public init(issuer: String, clientID: String, tokenEndpoint: String? = nil, revocationEndpoint: String? = nil,
                confidential: Bool = false, jwksURI: String? = nil, userinfoEndpoint: String? = nil, proofKey: ProofKeyHolder? = nil) {
        self.issuer = issuer
        self.clientID = clientID
        self.tokenEndpoint = tokenEndpoint
        self.revocationEndpoint = revocationEndpoint
        self.confidential = confidential
        self.jwksURI = jwksURI
        self.userinfoEndpoint = userinfoEndpoint
        self.proofKey = proofKey
    }
}

/// The fingers fprintd holds for the user, as the PIN last confirmed them (the fprintd
/// backend: the templates stay with fprintd, the device slot is bound to this set).
public struct FprintdSet: Codable, Equatable, Sendable {
    /// fprintd's finger names, sorted.
    public var fingers: [String]
    /// Digest of the names and, where readable, fprintd's stored prints (`FprintdSet.digest`).
    public var digest: String
    /// The fingers fingerseal itself enrolled at fprintd: the only ones `forget` may delete.
    public var enrolledHere: [String]

    public init(fingers: [String], digest: String, enrolledHere: [String] = []) {
        self.fingers = fingers.sorted()
        self.digest = digest
        self.enrolledHere = enrolledHere.filter { fingers.contains($0) }.sorted()
    }

    /// The digest of an enrolled set: each finger's name and the bytes fprintd stored for it
    /// (empty where they cannot be read), so that re-enrolling a finger under the same name
    /// changes it too.
    public static func digest(fingers: [String], stored: [String: [UInt8]]) -> String {
        var input: [UInt8] = Array("fingerseal fprintd set v1".utf8)
        for finger in fingers.sorted() {
            let bytes = stored[finger] ?? []
            input += [0x1f] + Array(finger.utf8) + [0x1e] + Array(String(bytes.count).utf8) + [0x1e] + bytes
        }
        return Encoding.hex((try? GenericHash.hash(input, length: 16)) ?? [])
    }
}

/// One wrapped copy of the master key.
struct KeyslotRecord: Codable, Equatable {
    var kind: KeyslotKind
    var protection: KeyslotProtection
    /// Argon2id parameters (pin slot).
    var salt: String?
    var opsLimit: UInt64?
    var memLimit: UInt64?
    /// Device slot: digest of the enrolled set this slot was wrapped for.
    var binding: String?
    /// Device slot: names the key file (`device-<keyID>.key`). A new key goes to a new file,
    /// so the switch to it happens atomically with the vault file's rename.
    var keyID: String?
    var nonce: String
    var wrappedKey: String
    /// The part sealed to the TPM (protection `argon2id+tpm2` or `tpm2`).
    var tpm: TPMSealedRecord? = nil

    /// Everything that shapes the slot goes into the AEAD's associated data, so lowered
    /// Argon2 costs, a changed binding or another sealed object make unwrapping fail. (The
    /// TPM's fields are added only when there are some: older slots keep their data.)
    func associatedData(vaultID: String) -> [UInt8] {
        let fields = ["fingerseal", "v1", "keyslot", vaultID, kind.rawValue, protection.rawValue, salt ?? "",
                      opsLimit.map(String.init) ?? "", memLimit.map(String.init) ?? "", binding ?? "", keyID ?? ""]
            + (tpm?.associatedFields ?? [])
        return Array(fields.joined(separator: "\u{1f}").utf8)
    }
}

/// What the vault knows of the login password it holds for the keyring.
public struct LoginPasswordRecord: Codable, Equatable, Sendable {
    public var sealedAt: Int64
    /// A digest of the account's password entry (its hash and last change) when the copy was
    /// last known to be the password; nil where the system keeps none (the copy is then
    /// checked with PAM at each use).
    public var entry: String?

    public init(sealedAt: Int64, entry: String?) {
        self.sealedAt = sealedAt
        self.entry = entry
    }
}

/// An encrypted secret.
struct SealedRecord: Codable, Equatable {
    var nonce: String
    var ciphertext: String
}

/// The vault file's body (JSON inside a `Container`). `mac` authenticates the rest with a
/// key derived from the master key, so metadata cannot be edited without it.
struct VaultDocument: Codable, Equatable {
    static let currentFormat = 1

    var format: Int
    var vaultID: String
    var createdAt: Int64
    /// Bumped on every write; lets a reader tell an update happened.
    var generation: UInt64
    var keyslots: [KeyslotRecord]
    var records: [String: SealedRecord]
    var signIn: SignInState
    var fingers: [String]
    /// Unix time of the last successful refresh (the offline grace counts from it).
    var lastRefreshAt: Int64? = nil
    /// The provider the sign-in was made with.
    var provider: ProviderRecord? = nil
    /// The audit trail's newest entry (see `AuditHead`); nil before the first.
    var auditHead: AuditHead? = nil
    /// The attempts' chain's newest entry (`AuditChain.attempts`); nil before the first.
    var attemptsHead: AuditHead? = nil
    /// fprintd's enrolled set the device slot is bound to; nil when fprintd is not used.
    var fprintd: FprintdSet? = nil
    /// Who the identity provider said signed in, when it said (verified ID token or userinfo).
    var identity: SignedInIdentity? = nil
    /// The account takes part in touch to sign in (`fingerseal identify on`, the PIN
    /// confirmed it); absent: it does not.
    var identify: Bool? = nil
    /// The person turned fingerprint unlock off (`fingerseal off`); absent: it is on.
    var fingerOff: Bool? = nil
    /// The login password is sealed for the keyring (`fingerseal keyring on`); its secret is
    /// the `login-password` record. Absent: it is not.
    var loginPassword: LoginPasswordRecord? = nil
    /// The account that made the vault (`AccountBinding`); absent in a vault made before it
    /// was recorded, until its next open binds it.
    var owner: AccountBinding? = nil
    var mac: String

    func keyslot(_ kind: KeyslotKind) -> KeyslotRecord? {
        keyslots.first { $0.kind == kind }
    }

    mutating func setKeyslot(_ slot: KeyslotRecord) {
        keyslots.removeAll { $0.kind == slot.kind }
        keyslots.append(slot)
        keyslots.sort { $0.kind.rawValue < $1.kind.rawValue }
    }

    /// The bytes the MAC covers: the canonical (sorted-key) encoding with `mac` empty.
    func authenticatedBytes() throws -> [UInt8] {
        var copy = self
        copy.mac = ""
        return try VaultDocument.encode(copy)
    }

    static func encode(_ document: VaultDocument) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array(try encoder.encode(document))
    }

    static func decode(_ body: [UInt8], file: String) throws -> VaultDocument {
        let document: VaultDocument
        do {
            document = try JSONDecoder().decode(VaultDocument.self, from: Data(body))
        } catch {
            throw FingersealError(.vaultUnusable, Messages.vaultDamaged(file, tr("its contents cannot be read")))
        }
        guard document.format == currentFormat else {
            throw FingersealError(.vaultUnusable, Messages.vaultDamaged(file, tr("it has format %1$s, which this fingerseal cannot read", document.format)))
        }
        guard document.vaultID.count == 32, document.vaultID.allSatisfy(\.isHexDigit),
              Set(document.keyslots.map(\.kind)).count == document.keyslots.count else {
            throw FingersealError(.vaultUnusable, Messages.vaultDamaged(file, tr("its contents are not valid")))
        }
        return document
    }
}

public enum Encoding {
    static func base64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }

    static func bytes(base64 text: String, file: String) throws -> [UInt8] {
        guard let data = Data(base64Encoded: text) else {
            throw FingersealError(.vaultUnusable, Messages.vaultDamaged(file, tr("its contents are not valid")))
        }
        return Array(data)
    }

    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes { out.append(digits[Int(byte >> 4)]); out.append(digits[Int(byte & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }
}
