#if hasFeature(Embedded)
import CLinux
#else
import Glibc
#endif

// Compiled in both modes: the PAM module builds this file in Embedded Swift (no Glibc overlay,
// the C headers through CLinux), the broker and the CLI in full Swift.

/// Seconds on the monotonic clock, for deadlines that wall-clock changes cannot stretch.
public func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// How a bounded wait on descriptors ended.
public enum PollOutcome: Equatable, Sendable {
    /// At least one descriptor has its `revents` set.
    case ready
    case timedOut
    /// poll(2) failed with this errno (not EINTR, which is retried).
    case failed(Int32)
}

/// A descriptor to wait for: readable unless said otherwise.
public func pollEntry(_ fd: Int32, _ events: Int16 = Int16(POLLIN)) -> pollfd {
    pollfd(fd: fd, events: events, revents: 0)
}

/// The one deadline poll: waits until one of `fds` is ready or the monotonic clock reaches
/// `deadline` (a deadline already passed still looks once, without waiting). EINTR is retried
/// with the time left; no single poll(2) sleeps longer than a minute, so a clock that moves
/// on while the machine sleeps ends the wait soon after; every `revents` is cleared first.
public func waitReady(_ fds: inout [pollfd], until deadline: Double) -> PollOutcome {
    while true {
        let remaining = max(deadline - monotonicSeconds(), 0)
        // Rounded up by hand: `rounded(.up)` is libm's ceil, the only thing the PAM module
        // would load libm for.
        let milliseconds = min(remaining * 1000, 60_000)
        var timeout = Int32(milliseconds)
        if Double(timeout) < milliseconds { timeout += 1 }
        for index in fds.indices { fds[index].revents = 0 }
        let ready = fds.withUnsafeMutableBufferPointer { buffer in
            poll(buffer.baseAddress, nfds_t(buffer.count), timeout)
        }
        if ready > 0 { return .ready }
        if ready < 0 {
            let code = systemErrno()
            if code != EINTR { return .failed(code) }
        } else if remaining == 0 {
            return .timedOut
        }
    }
}

/// errno of the calling thread (Glibc's overlay has `errno`; Embedded Swift has only the C
/// macro, which Swift cannot import).
@inline(__always)
public func systemErrno() -> Int32 {
    #if hasFeature(Embedded)
    return __errno_location().pointee
    #else
    return errno
    #endif
}
