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

/// A mutex with a condition to wait on (CLOCK_MONOTONIC deadlines): for threads of one
/// process that wait their turn for something another thread gives back.
public final class ThreadCondition: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    private var changed = pthread_cond_t()

    public init() {
        pthread_mutex_init(&mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(&changed, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(&changed)
        pthread_mutex_destroy(&mutex)
    }

    public func locked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return try body()
    }

    /// Inside `locked`: waits until signalled or until `deadline` (`monotonicSeconds()`);
    /// the lock is held again on return.
    public func wait(until deadline: Double) {
        var until = timespec()
        until.tv_sec = Int(deadline)
        until.tv_nsec = Int((deadline - Double(Int(deadline))) * 1e9)
        pthread_cond_timedwait(&changed, &mutex, &until)
    }

    /// Inside `locked`: wakes every waiter.
    public func broadcast() { pthread_cond_broadcast(&changed) }

    /// Inside `locked`: wakes one waiter.
    public func signal() { pthread_cond_signal(&changed) }
}

/// At most `count` at once of something costly (Argon2id's memory): the rest wait their
/// turn, in no particular order, at most as long as they say.
public final class WorkSlots: @unchecked Sendable {
    public struct Busy: Error {}
    private let condition = ThreadCondition()
    private let count: Int
    private var running = 0

    public init(count: Int) { self.count = max(count, 1) }

    /// Runs `body` in a slot; throws `Busy` when none came free within `waitLimit` seconds.
    public func run<T>(waitLimit: Double, _ body: () throws -> T) throws -> T {
        let deadline = monotonicSeconds() + waitLimit
        try condition.locked {
            while running >= count {
                if monotonicSeconds() >= deadline { throw Busy() }
                condition.wait(until: deadline)
            }
            running += 1
        }
        defer {
            condition.locked {
                running -= 1
                condition.broadcast()
            }
        }
        return try body()
    }
}

/// A value shared between threads, reached only under its lock.
public final class LockedValue<Value>: @unchecked Sendable {
    private let lock = ThreadLock()
    private var value: Value

    public init(_ value: Value) { self.value = value }

    public func locked<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        try lock.locked { try body(&value) }
    }
}

/// What a new thread runs.
private final class ThreadBody {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

/// Starts a detached thread running `body` with every signal blocked (the main thread owns
/// signal handling). Returns false when no thread could be started.
@discardableResult
public func startDetachedThread(_ body: @escaping @Sendable () -> Void) -> Bool {
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    defer { pthread_attr_destroy(&attributes) }
    var all = sigset_t()
    sigfillset(&all)
    var previous = sigset_t()
    pthread_sigmask(SIG_BLOCK, &all, &previous)
    defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
    let box = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(&thread, &attributes, { raw in
        guard let raw else { return nil }
        Unmanaged<ThreadBody>.fromOpaque(raw).takeRetainedValue().body()
        return nil
    }, box)
    if rc != 0 { Unmanaged<ThreadBody>.fromOpaque(box).release() }
    return rc == 0
}

