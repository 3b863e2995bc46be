import FingersealCore
import Localization

/// Proofs for requests with a bound access token (`fingerseal proof`, the agent's MakeProof).
extension Messages {
    static var noTokenForProof: String {
        tr("This session holds no access token that is still valid. Run fingerseal unlock or fingerseal token first; the proof is made for the token they give.")
    }
    static var tokenNotBound: String {
        tr("Your sign-in is not bound to this computer, so its access token needs no proof. Send it as a Bearer token.")
    }
    static var proofsTooFast: String { tr("Proofs were asked for faster than this computer allows. Wait a second and try again.") }
    static var proofKeyOfAnotherTPM: String {
        tr("The key of this sign-in belongs to another computer's TPM, so no proof can be made here. Sign in again with fingerseal login.")
    }
    static var proofFailed: String { tr("The proof could not be signed. Try again; fingerseal doctor may say why.") }
}
