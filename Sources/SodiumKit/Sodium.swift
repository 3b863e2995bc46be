import CSodium

public enum SodiumError: Error, Equatable, Sendable {
    case unavailable
    case outOfMemory
    case authenticationFailed
    case invalidLength(what: String, expected: Int, actual: Int)
    case derivationFailed
}

/// libsodium's one-time initialisation (thread-safe, idempotent in libsodium itself; the
/// static let makes Swift call it once).
public enum Sodium {
    private static let ready: Bool = sodium_init() >= 0

    public static func ensureReady() throws {
        if !ready { throw SodiumError.unavailable }
    }

    /// Random bytes from the OS CSPRNG.
    public static func randomBytes(_ count: Int) throws -> [UInt8] {
        try ensureReady()
        var bytes = [UInt8](repeating: 0, count: count)
        randombytes_buf(&bytes, count)
        return bytes
    }

    /// Overwrites `bytes` with zeros in a way the compiler may not elide.
    public static func wipe(_ bytes: inout [UInt8]) {
        sodium_memzero(&bytes, bytes.count)
    }

    /// Constant-time comparison.
    public static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return sodium_memcmp(a, b, a.count) == 0
    }

    /// Constant-time comparison of two secrets, in place.
    public static func equal(_ a: SecureBytes, _ b: SecureBytes) -> Bool {
        a.withUnsafeBytes { first in
            b.withUnsafeBytes { second in
                guard first.count == second.count else { return false }
                guard let x = first.baseAddress, let y = second.baseAddress else { return first.count == 0 }
                return sodium_memcmp(x, y, first.count) == 0
            }
        }
    }
}
