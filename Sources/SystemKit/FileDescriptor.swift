import Glibc

/// Owns one open file descriptor and closes it exactly once.
public final class FileDescriptor {
    public let rawValue: Int32

    public init(owning rawValue: Int32) {
        self.rawValue = rawValue
    }

    deinit {
        // close() must not be retried on EINTR on Linux: the descriptor is already gone.
        _ = Glibc.close(rawValue)
    }

    public func status() throws -> stat {
        var info = stat()
        _ = try syscall("fstat") { fstat(rawValue, &info) }
        return info
    }

    public func sync() throws {
        _ = try syscall("fsync") { fsync(rawValue) }
    }

    /// Reads to end of file, refusing to read more than `limit` bytes.
    public func readAll(limit: Int, subject: String) throws -> [UInt8] {
        var result: [UInt8] = []
        // No bigger than a read over the limit needs: a /proc value of a few bytes costs no
        // 16 KiB buffer to clear.
        var chunk = [UInt8](repeating: 0, count: min(16384, max(limit, 0) + 1))
        while true {
            let count = try chunk.withUnsafeMutableBytes { buffer in
                try syscall("read", subject) { read(rawValue, buffer.baseAddress, buffer.count) }
            }
            if count == 0 { break }
            if result.count + count > limit { throw SystemError("read", subject, code: EFBIG) }
            result.append(contentsOf: chunk[0..<count])
        }
        return result
    }

    /// Up to `count` bytes from `offset` (fewer at end of file), without moving the offset.
    public func readBytes(at offset: Int, count: Int, subject: String) throws -> [UInt8] {
        var result = [UInt8](repeating: 0, count: max(count, 0))
        var filled = 0
        while filled < result.count {
            let got = try result.withUnsafeMutableBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return try syscall("read", subject) { pread(rawValue, base + filled, buffer.count - filled, off_t(offset + filled)) }
            }
            if got == 0 { break }
            filled += got
        }
        result.removeSubrange(filled...)
        return result
    }

    /// Cuts the file to `length` bytes.
    public func truncate(to length: Int, subject: String) throws {
        _ = try syscall("truncate", subject) { ftruncate(rawValue, off_t(length)) }
    }

    public func writeAll(_ bytes: [UInt8], subject: String) throws {
        try bytes.withUnsafeBytes { try writeAll($0, subject: subject) }
    }

    /// Writes every byte (secrets too: no copy is made).
    public func writeAll(_ buffer: UnsafeRawBufferPointer, subject: String) throws {
        guard let base = buffer.baseAddress else { return }
        var offset = 0
        while offset < buffer.count {
            offset += try syscall("write", subject) { write(rawValue, base + offset, buffer.count - offset) }
        }
    }
}
