import CFprint
import CLinux
import Glibc
import ReaderValues
import SystemKit

/// The one thread that makes every libfprint call. libfprint is single-threaded and drives
/// GLib's global default main context; this thread runs that context's loop, and work
/// reaches it as idle sources attached to that context. The thread blocks every signal, so a host's
/// SIGINT or SIGCHLD never lands here. `stop` quits the loop and joins the thread, so a
/// closed reader leaves no thread behind.
final class GLibWorker: @unchecked Sendable {
    private let loop: OpaquePointer
    private var thread: pthread_t
    private var joined = false

    /// Jobs posted and not run yet, oldest first, for every worker (they all drive GLib's one
    /// default context): each idle source runs the oldest. Handed over under a pthread mutex,
    /// not as the source's data: GLib's own lock is a bare futex that ThreadSanitizer cannot
    /// see, so it took every job for a data race (issue 24).
    private static let pending = PendingJobs()

    private final class PendingJobs: @unchecked Sendable {
        private let lock = ThreadLock()
        private var jobs: [() -> Void] = []
        func push(_ job: @escaping () -> Void) { lock.locked { jobs.append(job) } }
        func pop() -> (() -> Void)? { lock.locked { jobs.isEmpty ? nil : jobs.removeFirst() } }
    }

    /// GLib's log lines go to standard error, never standard output: set once, before the
    /// first libfprint call (every one runs on a worker).
    private static let logToStandardError: Void = fs_log_to_stderr()

    /// The worker thread's name (at most 15 bytes: the kernel's limit).
    static let threadName = "fs-libfprint"

    init() throws(FprintError) {
        _ = GLibWorker.logToStandardError
        guard let loop = g_main_loop_new(nil, 0) else { throw FprintError.contextUnavailable }
        self.loop = loop
        var thread = pthread_t()
        // Block all signals in the new thread: it inherits the mask of the creating thread.
        var all = sigset_t(), previous = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_SETMASK, &all, &previous)
        let loopPointer = UnsafeMutableRawPointer(loop)
        let rc = pthread_create(&thread, nil, { argument in
            guard let argument else { return nil }
            // Named, so ps, gdb and the tests can tell the reader's thread from the others.
            fs_name_this_thread(GLibWorker.threadName)
            g_main_loop_run(OpaquePointer(argument))
            return nil
        }, loopPointer)
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        guard rc == 0 else {
            g_main_loop_unref(loop)
            throw FprintError.system(operation: "pthread_create", code: rc)
        }
        self.thread = thread
    }

    /// Runs `body` on the worker thread, soon. Never blocks.
    func post(_ body: @escaping () -> Void) {
        GLibWorker.pending.push(body)
        fs_default_context_post({ _ in
            GLibWorker.pending.pop()?()
            return 0 // G_SOURCE_REMOVE
        }, nil)
    }

    /// Runs `body` on the worker thread and returns its value, waiting at most `timeout`.
    func run<T: Sendable>(timeout: Double, _ body: @escaping () -> T) -> T? {
        guard let results = try? EventQueue<T>() else { return nil }
        post { results.push(body()) }
        return results.next(timeout: timeout)
    }

    /// The worker thread's kernel id (for the tests' check that `stop` joins it), or nil when
    /// the loop does not answer within a second.
    var threadID: pid_t? { run(timeout: 1) { fs_thread_id() } }

    /// How long `stop` waits for the thread to end.
    static let joinLimit = 5.0

    /// Quits the loop and joins the thread, waiting at most `joinLimit`. Idempotent. A thread
    /// that does not end in time (a driver stuck in a callback) is detached, not waited for.
    func stop() {
        guard !joined else { return }
        joined = true
        let loop = self.loop
        post { g_main_loop_quit(loop) }
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        deadline.tv_sec += Int(GLibWorker.joinLimit)
        if pthread_timedjoin_np(thread, nil, &deadline) == 0 {
            g_main_loop_unref(loop)
        } else {
            // The loop may still be running on it: leave the loop alive rather than free it.
            pthread_detach(thread)
        }
    }

    deinit {
        stop()
    }
}
