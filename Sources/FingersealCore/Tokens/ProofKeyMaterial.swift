import Localization
import SodiumKit
import TPMKit

/// The key a bound sign-in proves possession of (RFC 9449), as the vault keeps it
/// (`TokenChain.proofKeyRecord`, sealed with the vault's key like every secret there).
public enum ProofKeyMaterial {
    /// Held by the TPM: its object (which loads only under this TPM's storage key), its public
    /// point, and the authValue it signs with, which only the unlocked vault yields.
    case tpm(SealedObject, x: [UInt8], y: [UInt8], authValue: SecureBytes)
    /// A software P-256 key's private half (DER), where there is no TPM to hold one.
    case software(SecureBytes)

    /// Where the key is, as `status` says it.
    public var holder: ProofKeyHolder {
        switch self {
        case .tpm: return .tpm
        case .software: return .software
        }
    }

    /// One byte of kind, then the kind's fields (lengths as two bytes, big-endian).
    public func encoded() throws -> SecureBytes {
        switch self {
        case let .software(der):
            let out = try SecureBytes(capacity: 1 + der.count)
            _ = out.append(1)
            _ = der.withUnsafeBytes { _ = out.append(contentsOf: $0) }
            return out
        case let .tpm(object, x, y, authValue):
            let parts = [object.publicArea, object.privateArea]
            let out = try SecureBytes(capacity: 1 + parts.reduce(0) { $0 + 2 + $1.count } + 64 + 2 + authValue.count)
            _ = out.append(2)
            for part in parts {
                _ = out.append(UInt8(part.count >> 8))
                _ = out.append(UInt8(part.count & 0xff))
                _ = part.withUnsafeBytes { _ = out.append(contentsOf: $0) }
            }
            _ = (x + y).withUnsafeBytes { _ = out.append(contentsOf: $0) }
            _ = out.append(UInt8(authValue.count >> 8))
            _ = out.append(UInt8(authValue.count & 0xff))
            _ = authValue.withUnsafeBytes { _ = out.append(contentsOf: $0) }
            return out
        }
    }

    /// The material `encoded` wrote; throws for anything else (a damaged record).
    public static func decode(_ bytes: SecureBytes) throws -> ProofKeyMaterial {
        let damaged = FingersealError(.vaultUnusable, Messages.vaultDamaged(TokenChain.proofKeyRecord, tr("its contents cannot be read")))
        return try bytes.withUnsafeBytes { raw throws -> ProofKeyMaterial in
            var rest = raw[...]
            guard let kind = rest.popFirst() else { throw damaged }
            func field() throws -> UnsafeRawBufferPointer.SubSequence {
                guard rest.count >= 2 else { throw damaged }
                let length = Int(rest[rest.startIndex]) << 8 | Int(rest[rest.startIndex + 1])
                rest = rest.dropFirst(2)
                guard rest.count >= length else { throw damaged }
                defer { rest = rest.dropFirst(length) }
                return rest.prefix(length)
            }
            switch kind {
            case 1:
                guard !rest.isEmpty, rest.count <= 4096 else { throw damaged }
                return .software(try SecureBytes(copying: UnsafeRawBufferPointer(rebasing: rest)))
            case 2:
                let object = SealedObject(publicArea: Array(try field()), privateArea: Array(try field()))
                guard rest.count >= 64 else { throw damaged }
                let point = Array(rest.prefix(64))
                rest = rest.dropFirst(64)
                let auth = try field()
                guard rest.isEmpty, (16...64).contains(auth.count) else { throw damaged }
                return .tpm(object, x: Array(point.prefix(32)), y: Array(point.suffix(32)),
                            authValue: try SecureBytes(copying: UnsafeRawBufferPointer(rebasing: auth)))
            default:
                throw damaged
            }
        }
    }
}

/// Where a bound sign-in's key is.
public enum ProofKeyHolder: String, Codable, Sendable {
    /// The TPM: it never leaves the chip, and a copy of the vault is worth nothing elsewhere.
    case tpm
    /// Sealed in the vault: a copy of the vault opened with the PIN holds it too.
    case software
}

extension VaultTPM {
    /// A new P-256 signing key held by the TPM `policy` names, with a random authValue of 32
    /// bytes (kept in the vault beside the key's object).
    public static func createProofKey(_ policy: TPMPolicy) throws -> ProofKeyMaterial {
        let authValue = try SecureBytes.random(count: 32)
        let made = try withStorageKey(policy) { key in
            try authValue.withUnsafeBytes { try key.createSigningKey(authValue: $0) }
        }
        return .tpm(made.key, x: made.x, y: made.y, authValue: authValue)
    }

    /// ES256 by a TPM-held proof key over a SHA-256 `digest`: r || s.
    public static func sign(_ object: SealedObject, authValue: SecureBytes, digest: [UInt8], _ policy: TPMPolicy) throws -> [UInt8] {
        try withStorageKey(policy) { key in
            try authValue.withUnsafeBytes { try key.sign(object, authValue: $0, digest: digest) }
        }
    }
}
