import Glibc

/// Errors collected from concurrent work.
final class Failures: @unchecked Sendable {
    private var items: [String] = []
    private let lock = TestLock()
    func add(_ item: String) { lock.with { items.append(item) } }
    var all: [String] { lock.with { items } }
}

final class TestLock: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    init() { pthread_mutex_init(&mutex, nil) }
    deinit { pthread_mutex_destroy(&mutex) }
    func with<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return body()
    }
}
