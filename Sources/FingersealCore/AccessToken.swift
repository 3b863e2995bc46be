import SodiumKit

/// An access token with its expiry, as kept for a login session (`$XDG_RUNTIME_DIR/
/// fingerseal/access-token`, tmpfs) and as `fingerseal-scan` hands it to the module:
///
///     v1 EXPIRES_AT\n TOKEN\n
///
/// EXPIRES_AT is seconds since the epoch; TOKEN is 1 to `maxToken` visible ASCII characters
/// (RFC 6749 A.12 VSCHAR). The bytes live in secure memory.
public struct AccessTokenFile {
    public static let maxToken = 16 * 1024
    public static let maxSize = maxToken + 32

    public let token: SecureBytes
    public let expiresAt: Int64

    public init(token: SecureBytes, expiresAt: Int64) {
        self.token = token
        self.expiresAt = expiresAt
    }

    /// Lifetime assumed when a provider does not say (RFC 6749 leaves `expires_in` optional).
    public static let assumedLifetime: Int64 = 300

    public init(_ tokens: TokenSet, issuedAt now: Int64) {
        // Bounded, whatever the provider said: a day at most is kept for a session.
        let lifetime = min(max(Int64(tokens.expiresIn ?? Int(AccessTokenFile.assumedLifetime)), 0), 86_400)
        self.init(token: tokens.accessToken, expiresAt: max(now, 0) + lifetime)
    }

    /// Valid for at least `margin` more seconds.
    public func isValid(at now: Int64, margin: Int64 = 30) -> Bool {
        expiresAt > now &+ margin
    }

    /// The file's bytes, in secure memory.
    public func encoded() throws -> SecureBytes {
        let header = Array("v1 \(expiresAt)\n".utf8)
        let bytes = try SecureBytes(capacity: header.count + token.count + 1)
        for byte in header { bytes.append(byte) }
        token.withUnsafeBytes { for byte in $0 { bytes.append(byte) } }
        bytes.append(0x0a)
        return bytes
    }

    /// Parses the file's bytes; nil for anything not exactly in the format.
    public static func parse(_ bytes: UnsafeRawBufferPointer) -> AccessTokenFile? {
        guard bytes.count <= maxSize, bytes.count > 5, bytes[0] == 0x76, bytes[1] == 0x31, bytes[2] == 0x20,
              let newline = bytes.firstIndex(of: 0x0a), newline < bytes.count - 1, bytes[bytes.count - 1] == 0x0a else { return nil }
        let digits = bytes[3..<newline]
        // Canonical decimal only (no leading zero), so a file has exactly one spelling.
        guard (1...18).contains(digits.count), digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              digits.first != 0x30 || digits.count == 1,
              let expiresAt = Int64(String(decoding: digits, as: UTF8.self)) else { return nil }
        let token = bytes[(newline + 1)..<(bytes.count - 1)]
        guard isValidToken(token), let secure = try? SecureBytes(copying: token) else { return nil }
        return AccessTokenFile(token: secure, expiresAt: expiresAt)
    }

    /// RFC 6749 A.12/A.17: 1*VSCHAR, bounded.
    public static func isValidToken(_ token: some Collection<UInt8>) -> Bool {
        (1...maxToken).contains(token.count) && token.allSatisfy { $0 >= 0x20 && $0 <= 0x7e }
    }
}

/// How the token step after a successful finger or PIN went, as `fingerseal-scan` reports it
/// to the module and `Authentication` turns it into an outcome.
public enum TokenStep: String, Codable, Sendable {
    /// A fresh access token; the rotated refresh token is sealed.
    case refreshed
    /// The IdP is unreachable, within the offline grace.
    case offline
    /// The vault was never signed in to an IdP: there is no token to refresh.
    case notSignedIn
    /// The chain is over (invalid_grant now or before): `fingerseal login` is needed.
    case signInRequired
    /// Unreachable, and the last refresh is older than the offline grace. The token is kept.
    case unreachable
    /// A refusal or an answer that is not a token. The token is kept.
    case failed

    /// What a successful unlock becomes after this token step (design §2, step 9): a token
    /// problem denies when `requireToken` is set, else it falls back to the next module.
    public func applied(to unlock: AuthenticationResult, requireToken: Bool, prompter: Prompter) -> AuthenticationResult {
        guard unlock.outcome == .success else { return unlock }
        switch self {
        case .refreshed:
            return unlock.replacing(.success, unlock.detail + "; token refreshed")
        case .offline:
            return unlock.replacing(.success, unlock.detail + "; identity provider unreachable, within the offline grace")
        case .notSignedIn:
            if requireToken {
                prompter.error(Messages.notSignedIn)
                return unlock.replacing(.signInRequired, unlock.detail + "; require_token and not signed in")
            }
            return unlock
        case .signInRequired:
            prompter.error(Messages.signInRequired)
            return unlock.replacing(requireToken ? .signInRequired : .unavailable, unlock.detail + "; sign-in required")
        case .unreachable, .failed:
            prompter.error(self == .unreachable ? Messages.idpUnreachable : Messages.idpRefused)
            return unlock.replacing(requireToken ? .tokenUnavailable : .unavailable,
                                    unlock.detail + (self == .unreachable ? "; identity provider unreachable beyond the offline grace"
                                                                              : "; identity provider gave no token"))
        }
    }
}
