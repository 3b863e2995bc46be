import FingersealCore
import JOSEKit
import SodiumKit
import TPMKit

/// The signer for a sealed proof key: the TPM's, or the software key's.
public enum ProofSigners {
    public static func signer(_ material: ProofKeyMaterial, tpm: TPMPolicy) throws -> any ProofSigner {
        switch material {
        case let .tpm(object, x, y, authValue):
            return TPMProofKey(object: object, publicX: x, publicY: y, authValue: authValue, policy: tpm)
        case let .software(der):
            return try der.withUnsafeBytes { try SoftwareProofKey(privateKeyDER: $0) }
        }
    }
}

/// A proof key the TPM holds: each signature is one TPM2_Sign over the proof's SHA-256, with
/// the authValue from the unlocked vault; the private key never leaves the chip.
public struct TPMProofKey: ProofSigner, @unchecked Sendable {
    let object: SealedObject
    public let publicX: [UInt8]
    public let publicY: [UInt8]
    let authValue: SecureBytes
    let policy: TPMPolicy

    public func sign(_ message: [UInt8]) throws(ProofKeyError) -> [UInt8] {
        do {
            return try VaultTPM.sign(object, authValue: authValue, digest: try SHA256.hash(message), policy)
        } catch let error as ProofKeyError {
            throw error
        } catch let error as FingersealError where error.cause == .tpmChanged {
            throw .otherTPM
        } catch {
            throw .failed("the TPM: \(error)")
        }
    }
}
