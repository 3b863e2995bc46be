import CLinux
import Glibc

/// One thread's wait for a connection on a listening socket, or for a stop: an epoll set of
/// its own holding the listener with EPOLLEXCLUSIVE (so a connection wakes one waiting
/// thread, not all) and the stop descriptor.
public final class ConnectionWait {
    public let listener: Int32
    private let set: Int32

    public init(listener: Int32, stop: Int32) throws {
        self.listener = listener
        set = try syscall("epoll_create1") { fs_epoll_for_accept(listener, stop) }
    }

    deinit { close(set) }

    public enum Woken: Equatable {
        case connection
        case other
        case timedOut
        case failed(Int32)
    }

    /// Waits up to `milliseconds` for one descriptor of the set.
    public func wait(milliseconds: Int32) -> Woken {
        var ready: Int32 = -1
        let count = fs_epoll_wait_one(set, milliseconds, &ready)
        if count < 0 { return errno == EINTR ? .other : .failed(errno) }
        if count == 0 { return .timedOut }
        return ready == listener ? .connection : .other
    }

    /// Takes the waiting connection, non-blocking and closed on exec; nil when another thread
    /// took it first or it went.
    public func accept() -> Int32? {
        let fd = accept4(listener, nil, nil, Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue))
        return fd >= 0 ? fd : nil
    }
}

/// A thread's stack, scrubbed when the thread parks: what a request left there (a PIN on its
/// way to secure memory, a key's bytes in a frame) does not stay for the next one.
public struct ThreadStack {
    private let low: UInt
    /// Read once, when the thread starts (pthread_getattr_np costs a sched_getaffinity).
    public init() { low = UInt(fs_stack_low()) }

    /// Zeroes the resident pages within `keep` bytes below the caller's frame (they stay, so
    /// the next request takes no page faults for them) and gives everything deeper back.
    public func scrub(keeping keep: Int) { fs_scrub_stack_below(UInt(low), keep) }
}
