import Glibc

/// A held `flock`. Released when the value is dropped.
public final class FileLock {
    private let file: FileDescriptor

    init(_ file: FileDescriptor, exclusive: Bool, timeout: Double, subject: String) throws {
        self.file = file
        let operation = (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB
        let deadline = monotonicSeconds() + timeout
        var pause = 0.001
        // flock has no timeout; poll with a short growing pause so every wait stays bounded.
        while flock(file.rawValue, operation) != 0 {
            let code = errno
            if code == EINTR { continue }
            if code != EWOULDBLOCK { throw SystemError("lock", subject, code: code) }
            if monotonicSeconds() >= deadline { throw SystemError("lock", subject, code: ETIMEDOUT) }
            var interval = timespec(tv_sec: 0, tv_nsec: Int(pause * 1e9))
            _ = nanosleep(&interval, nil)
            pause = min(pause * 2, 0.05)
        }
    }

    deinit {
        _ = flock(file.rawValue, LOCK_UN)
    }
}
