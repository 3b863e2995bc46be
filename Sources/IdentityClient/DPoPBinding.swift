import FingersealCore
import FingersealWire
import JOSEKit
import SodiumKit
import SystemKit

/// A sign-in bound to a key (RFC 9449): every token request carries a proof by `key`, with the
/// server's latest nonce. Shared by the requests of one client; the nonce is the only state.
public final class DPoPBinding: @unchecked Sendable {
    public let key: any ProofSigner
    private let clock: @Sendable () -> Int64
    private let lock = ThreadLock()
    private var nonce: String? = nil

    public init(key: any ProofSigner, clock: @escaping @Sendable () -> Int64 = { SystemClock().now() }) {
        self.key = key
        self.clock = clock
    }

    /// The server's nonce as it last gave one.
    public var currentNonce: String? { lock.locked { nonce } }

    /// Keeps a `DPoP-Nonce` header's value (`ProofRequest.isNonce`); anything else is not a
    /// nonce and is dropped.
    func remember(nonce given: String?) {
        guard let given, ProofRequest.isNonce(given) else { return }
        lock.locked { nonce = given }
    }

    /// A proof for `method` on `url` (with `ath` for a resource request), with the nonce the
    /// server last gave.
    public func proof(method: String, url: String, accessToken: UnsafeRawBufferPointer? = nil) throws(TokenFailure) -> String {
        do {
            let jti = try Sodium.randomBytes(16)
            return try DPoPProof.make(signer: key, method: method, url: url, now: clock(), jti: jti, nonce: currentNonce,
                                      accessToken: accessToken)
        } catch ProofKeyError.otherTPM {
            // A copy of the vault on another computer: the sign-in is not this computer's.
            throw .chainEnded("proof key of another TPM")
        } catch {
            throw .badConfiguration(.proofUnavailable)
        }
    }
}
