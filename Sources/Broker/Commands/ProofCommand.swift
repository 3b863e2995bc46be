import FingersealCore
import FingersealWire
import IdentityClient
import JOSEKit
import SharedMessages
import SodiumKit

/// `proof METHOD URL` (and the agent's MakeProof): a DPoP proof (RFC 9449 §4.2, §7) for one
/// request with the session's current access token, signed by the sign-in's key. The key
/// came with the token from the unlock that refreshed it, so no finger is asked for while the
/// token is valid, and it never leaves the broker: only the proof does.
enum ProofCommand {
    struct ProofReport: Encodable {
        let proof: String
        /// Until when the token the proof is for is valid (`ath` names that one token).
        let expiresAt: Int64
    }

    static func proof(_ call: Call) throws -> Reply {
        let given = call.options(for: ProofOptions.self)
        // ProofOptions.validate checked both when the call was made; the URL's parts are JOSEKit's.
        let method = call.request.arguments[0], url = call.request.arguments[1]
        guard DPoPProof.targetURI(url) != nil else { throw FingersealError(.usage, OptionError.proofNeedsMethodAndURL.message) }
        let now = SystemClock().now()
        guard let held = call.state.sessions.token(call.session), held.isValid(at: now, margin: 0) else {
            throw FingersealError(.tokenUnavailable, Messages.noTokenForProof)
        }
        guard let key = held.proofKey else { throw FingersealError(.unavailable, Messages.tokenNotBound) }
        // Counted where a signature would be made: a refusal above costs the TPM nothing.
        guard call.state.proofBudget.take(call.account.uid) else { throw FingersealError(.unavailable, Messages.proofsTooFast) }
        let proof: String
        do {
            let signer = try ProofSigners.signer(key, tpm: call.state.tpmPolicy(call.settings))
            let jti = try Sodium.randomBytes(16)
            proof = try held.token.withUnsafeBytes { token in
                try DPoPProof.make(signer: signer, method: method, url: url, now: now, jti: jti, nonce: given.nonce, accessToken: token)
            }
        } catch ProofKeyError.otherTPM {
            throw FingersealError(.signInRequired, Messages.proofKeyOfAnotherTPM)
        } catch {
            throw FingersealError(.systemError, Messages.proofFailed, detail: "\(error)")
        }
        if call.json {
            try call.printJSON(ProofReport(proof: proof, expiresAt: held.expiresAt))
        } else {
            call.conversation.output(proof)
        }
        return Reply(.success, expiresAt: held.expiresAt)
    }
}
