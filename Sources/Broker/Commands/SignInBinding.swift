import FingersealCore
import IdentityClient
import JOSEKit
import SodiumKit

/// A sign-in's tokens bound to this computer (RFC 9449, `dpop=`): the key made for it (the
/// TPM's where one is usable, else a software key), and what is sealed once the provider has
/// answered.
enum SignInBinding {
    /// Binds `client` to a new key where the policy and the provider call for one; a provider
    /// without DPoP under `dpop=required` is refused before anyone signs in. Returns the key's
    /// material, to seal with the tokens (nil: bearer).
    static func bind(_ client: inout OAuthClient, _ settings: Options, tpm: TPMPolicy) throws -> ProofKeyMaterial? {
        switch settings.dpop.policy(for: client.metadata.issuer) {
        case .off: return nil
        case .auto: guard client.metadata.supportsDPoP else { return nil }
        case .required:
            guard client.metadata.supportsDPoP else {
                throw FingersealError(.badConfiguration, Messages.dpopNotOffered(client.metadata.issuer))
            }
        }
        let material: ProofKeyMaterial
        do {
            // The TPM's wherever one is usable: `tpm=` governs the keyslots, and a key that
            // never leaves the chip is what makes a copied vault worthless.
            if tpm.usable {
                material = try VaultTPM.createProofKey(tpm)
            } else {
                material = .software(try SoftwareProofKey.generate().withPrivateKeyDER { try SecureBytes(copying: $0) })
            }
            client.binding = DPoPBinding(key: try ProofSigners.signer(material, tpm: tpm))
        } catch {
            throw FingersealError(.systemError, Messages.systemFailure(.makeProofKey), detail: "proof key: \(error)")
        }
        return material
    }

    /// What to seal with the sign-in's tokens: the key's material, and where it is (nil: bearer
    /// tokens, nothing to seal). Tokens the provider did not bind although a proof came are
    /// refused under `dpop=required` (and revoked).
    static func sealed(_ material: ProofKeyMaterial?, _ client: OAuthClient, _ tokens: TokenSet,
                       _ settings: Options) throws -> (bytes: SecureBytes, holder: ProofKeyHolder)? {
        guard let material else { return nil }
        guard tokens.boundToKey else {
            if settings.dpop.policy(for: client.metadata.issuer) == .required {
                if let refreshToken = tokens.refreshToken { _ = try? client.revoke(refreshToken) }
                throw FingersealError(.badConfiguration, Messages.dpopNotBound(client.metadata.issuer))
            }
            return nil
        }
        do {
            return (try material.encoded(), material.holder)
        } catch {
            throw FingersealError(.systemError, Messages.systemFailure(.makeProofKey), detail: "proof key: \(error)")
        }
    }
}
