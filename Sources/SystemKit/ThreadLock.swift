import Glibc

/// A pthread mutex around shared state that threads of one process touch (the broker's
/// counters and registries, the TPM connection it keeps). Not for waits across processes:
/// those are `FileLock`s.
public final class ThreadLock: @unchecked Sendable {
    private var mutex = pthread_mutex_t()

    public init() { pthread_mutex_init(&mutex, nil) }
    deinit { pthread_mutex_destroy(&mutex) }

    public func locked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return try body()
    }
}
