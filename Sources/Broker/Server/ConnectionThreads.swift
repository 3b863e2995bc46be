import CLinux
import Glibc
import SystemKit

/// The threads connections are served on, each kept parked a while after its connection for
/// the next one: starting a thread (clone, its TLS, its first run on a core) costs about as
/// much as a whole small request, such as a PAM authentication for a user with no vault.
/// At most `parkedLimit` threads wait, each at most `parkLimit` seconds. A thread gives its
/// stack's deeper pages back to the kernel before it parks (`fs_release_stack_below`, what
/// glibc does for a thread that ends), so nothing of a request's frames waits with it; a
/// request starts afresh in any case (`Server.serve` sets the language, the flow its state).
final class ConnectionThreads: @unchecked Sendable {
    typealias Work = @Sendable () -> Void

    static let parkedLimit = 4
    static let parkLimit = 10.0

    private let condition = ThreadCondition()
    private var parked = 0
    private var handed: [Work] = []
    private var stopped = false

    /// Runs `work` on a parked thread, else on a new one; false when no thread could start.
    func run(_ work: @escaping Work) -> Bool {
        let taken = condition.locked { () -> Bool in
            // Each parked thread takes one; a thread leaving its park (time up, stopped) has
            // stopped counting, under this same lock, before it leaves.
            guard !stopped, parked > handed.count else { return false }
            handed.append(work)
            condition.signal()
            return true
        }
        if taken { return true }
        let first = Handed(work)
        return startThread { [self] in serve(first) }
    }

    /// Parked threads end now, and none parks again (the server stops).
    func stop() {
        condition.locked {
            stopped = true
            condition.broadcast()
        }
    }

    private func serve(_ first: Handed) {
        var work = first.take()
        while true {
            ConnectionThreads.runReleasing(&work)
            fs_release_stack_below()
            work = park()
            if work == nil { return }
        }
    }

    /// Runs the work and lets it go at once: what it holds (the connection, which closes when
    /// released) must not wait with the parked thread.
    private static func runReleasing(_ work: inout Work?) {
        guard let current = work else { return }
        work = nil
        current()
    }

    /// The first work of a new thread, held so that the thread can let it go (`take`).
    private final class Handed: @unchecked Sendable {
        private var work: Work?
        init(_ work: @escaping Work) { self.work = work }
        func take() -> Work? {
            defer { work = nil }
            return work
        }
    }

    /// The next work handed to this thread, or nil when none came within `parkLimit`, the
    /// park is full, or the server stopped.
    private func park() -> Work? {
        condition.locked { () -> Work? in
            guard !stopped, parked < ConnectionThreads.parkedLimit else { return nil }
            parked += 1
            defer { parked -= 1 }
            let deadline = monotonicSeconds() + ConnectionThreads.parkLimit
            while handed.isEmpty && !stopped && monotonicSeconds() < deadline { condition.wait(until: deadline) }
            // Work handed before a stop or the deadline is still done.
            return handed.isEmpty ? nil : handed.removeFirst()
        }
    }
}
