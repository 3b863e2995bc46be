import CSodium
import Glibc

/// Secret bytes in `sodium_malloc` memory: guard pages, mlock'ed (kept out of swap),
/// wiped and freed in deinit. Never convert one to a String.
public final class SecureBytes {
    private let pointer: UnsafeMutableRawPointer
    /// Number of meaningful bytes (may be less than the capacity, e.g. a PIN being typed).
    public internal(set) var count: Int
    public let capacity: Int

    public init(capacity: Int) throws {
        try Sodium.ensureReady()
        // sodium_malloc(0) is allowed but returns a pointer we could not index; keep one byte.
        guard let raw = sodium_malloc(max(capacity, 1)) else { throw SodiumError.outOfMemory }
        pointer = raw
        self.capacity = capacity
        self.count = 0
        sodium_memzero(pointer, max(capacity, 1))
    }

    public convenience init(count: Int) throws {
        try self.init(capacity: count)
        self.count = count
    }

    /// Copies `bytes` in. The caller wipes its own copy.
    public convenience init(copying bytes: some Collection<UInt8>) throws {
        try self.init(capacity: bytes.count)
        for (index, byte) in bytes.enumerated() { pointer.storeBytes(of: byte, toByteOffset: index, as: UInt8.self) }
        count = bytes.count
    }

    public static func random(count: Int) throws -> SecureBytes {
        let bytes = try SecureBytes(count: count)
        randombytes_buf(bytes.pointer, count)
        return bytes
    }

    deinit {
        sodium_free(pointer) // wipes before freeing
    }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// The bytes as a typed pointer that is never nil (count may be zero), for C calls.
    func withBytePointer<R>(_ body: (UnsafeMutablePointer<UInt8>, Int) throws -> R) rethrows -> R {
        try body(pointer.assumingMemoryBound(to: UInt8.self), count)
    }

    public func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeMutableRawBufferPointer(start: pointer, count: count))
    }

    /// A copy with room for `newCapacity` bytes (never less than `count`), for a buffer that
    /// grows as data arrives; this one is wiped when it is released.
    public func grown(toCapacity newCapacity: Int) throws -> SecureBytes {
        let larger = try SecureBytes(capacity: max(newCapacity, count))
        if count > 0 { memcpy(larger.pointer, pointer, count) }
        larger.count = count
        return larger
    }

    /// The bytes in `range` (within `count`), lent to `body`.
    public func withUnsafeBytes<R>(in range: Range<Int>, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let clamped = range.clamped(to: 0..<count)
        return try body(UnsafeRawBufferPointer(start: pointer + clamped.lowerBound, count: clamped.count))
    }

    /// Appends one byte if there is room; returns false when full.
    @discardableResult
    public func append(_ byte: UInt8) -> Bool {
        guard count < capacity else { return false }
        pointer.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
        return true
    }

    /// Appends `bytes` if they fit; returns false (appending nothing) when they do not.
    @discardableResult
    public func append(contentsOf bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count <= capacity - count else { return false }
        if let source = bytes.baseAddress, bytes.count > 0 {
            (pointer + count).copyMemory(from: source, byteCount: bytes.count)
        }
        count += bytes.count
        return true
    }

    /// Appends the bytes of `text` (for the public parts of a secret value, such as a
    /// header's name) if they fit.
    @discardableResult
    public func append(_ text: StaticString) -> Bool {
        text.withUTF8Buffer { append(contentsOf: UnsafeRawBufferPointer($0)) }
    }

    /// Drops the last byte (backspace), wiping it.
    public func removeLast() {
        guard count > 0 else { return }
        count -= 1
        pointer.storeBytes(of: 0, toByteOffset: count, as: UInt8.self)
    }

    /// Wipes the content and sets the count to zero.
    public func removeAll() {
        sodium_memzero(pointer, max(capacity, 1))
        count = 0
    }

    /// Constant-time equality of contents.
    public func isEqual(to other: SecureBytes) -> Bool {
        guard count == other.count else { return false }
        return sodium_memcmp(pointer, other.pointer, count) == 0
    }

    /// Base64 (RFC 4648) of the content, in secure memory: the standard alphabet with padding
    /// (HTTP Basic), or base64url without padding (PKCE, JOSE).
    public func base64(urlSafe: Bool) throws -> SecureBytes {
        let variant = urlSafe ? sodium_base64_VARIANT_URLSAFE_NO_PADDING : sodium_base64_VARIANT_ORIGINAL
        let remainder = count % 3
        let length = count / 3 * 4 + (remainder == 0 ? 0 : urlSafe ? remainder + 1 : 4)
        // libsodium writes a NUL after the text: one spare byte of capacity.
        let encoded = try SecureBytes(capacity: length + 1)
        guard sodium_bin2base64(encoded.pointer.assumingMemoryBound(to: CChar.self), length + 1,
                                pointer.assumingMemoryBound(to: UInt8.self), count, variant) != nil else {
            throw SodiumError.invalidLength(what: "base64", expected: length + 1, actual: 0)
        }
        encoded.count = length
        return encoded
    }

    /// The bytes as an ordinary array: only for non-secret values or tests.
    public func copyBytes() -> [UInt8] {
        withUnsafeBytes { Array($0) }
    }
}
