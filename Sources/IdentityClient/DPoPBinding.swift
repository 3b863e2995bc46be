import CurlKit
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

    /// Sends a request (`send` makes a fresh proof each time, with `binding`), and with a binding
    /// once more when the server says it wants its nonce (RFC 9449 §8 at a token endpoint, §9 at
    /// a resource: `asksForNonce` reads which from the answer) and gave one. Each answer's nonce
    /// is kept.
    static func sending(_ binding: DPoPBinding?, _ send: () throws(TokenFailure) -> SecureResponse,
                        asksForNonce: (SecureResponse) -> Bool) throws(TokenFailure) -> SecureResponse {
        guard let binding else { return try send() }
        let first = try send()
        let offered = first.headers["dpop-nonce"]
        binding.remember(nonce: offered)
        guard offered != nil, asksForNonce(first) else { return first }
        let second = try send()
        binding.remember(nonce: second.headers["dpop-nonce"])
        return second
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
