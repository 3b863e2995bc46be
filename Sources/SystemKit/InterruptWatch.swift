import CLinux
#if !hasFeature(Embedded)
import Glibc
#endif

/// Turns SIGINT (Ctrl-C) and SIGTERM into a readable descriptor for as long as it lives
/// (the signalfd pattern pam_fprintd uses), so a wait loop can poll it beside its other
/// work. Blocks the signals in the calling thread (threads started afterwards inherit
/// that); on release it swallows any still pending and restores the previous mask.
public final class InterruptWatch {
    public let fd: Int32
    private var previous = sigset_t()
    private var watched = sigset_t()

    public init(signals: [Int32] = [SIGINT, SIGTERM]) throws(SystemError) {
        sigemptyset(&watched)
        for signal in signals { sigaddset(&watched, signal) }
        pthread_sigmask(SIG_BLOCK, &watched, &previous)
        let fd = signalfd(-1, &watched, Int32(SFD_CLOEXEC) | Int32(SFD_NONBLOCK))
        guard fd >= 0 else {
            let code = systemErrno()
            pthread_sigmask(SIG_SETMASK, &previous, nil)
            throw SystemError("signalfd", code: code)
        }
        self.fd = fd
    }

    /// The next signal that arrived, consumed; nil when none is pending.
    public func next() -> Int32? {
        var info = signalfd_siginfo()
        guard read(fd, &info, MemoryLayout<signalfd_siginfo>.size) == MemoryLayout<signalfd_siginfo>.size else { return nil }
        return Int32(info.ssi_signo)
    }

    /// True once one of the signals arrived (consumes it).
    public func fired() -> Bool {
        var info = signalfd_siginfo()
        return read(fd, &info, MemoryLayout<signalfd_siginfo>.size) == MemoryLayout<signalfd_siginfo>.size
    }

    deinit {
        // Consume what is pending so unblocking does not deliver it behind our back.
        var info = signalfd_siginfo()
        while read(fd, &info, MemoryLayout<signalfd_siginfo>.size) > 0 {}
        close(fd)
        pthread_sigmask(SIG_SETMASK, &previous, nil)
    }
}
