import CLinux
import Glibc

/// An eventfd: one thread signals, another polls its descriptor and wakes. Close-on-exec;
/// `nonBlocking` for a counter that is read (`drain`) after a poll said it is readable. Owns
/// its descriptor and closes it once.
public final class EventFD: @unchecked Sendable {
    public let rawValue: Int32

    public init(nonBlocking: Bool = false) throws(SystemError) {
        let flags = Int32(EFD_CLOEXEC) | (nonBlocking ? Int32(EFD_NONBLOCK) : 0)
        let fd = eventfd(0, flags)
        guard fd >= 0 else { throw SystemError("eventfd", code: errno) }
        rawValue = fd
    }

    deinit {
        _ = Glibc.close(rawValue)
    }

    /// Makes the descriptor readable (adds one to the counter); safe from any thread.
    public func signal() {
        var one: UInt64 = 1
        _ = write(rawValue, &one, 8)
    }

    /// Waits until signalled (a blocking counter), then resets it.
    public func wait() {
        var count: UInt64 = 0
        while read(rawValue, &count, 8) < 0 && errno == EINTR {}
    }

    /// Resets the counter; what it held (0 when nothing was signalled, on a nonblocking one).
    @discardableResult
    public func drain() -> UInt64 {
        var count: UInt64 = 0
        return read(rawValue, &count, 8) == 8 ? count : 0
    }
}
