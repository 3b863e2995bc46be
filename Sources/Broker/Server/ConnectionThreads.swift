import Glibc
import SystemKit

/// The threads that accept connections and serve them. Every idle thread waits on the
/// listening socket itself, in an epoll set of its own with EPOLLEXCLUSIVE, so a connection
/// wakes exactly one of them, which accepts it and serves it: one wake-up per request, with no
/// hand-over between an accepting thread and a serving one (that second wake-up cost about as
/// much as a whole small request, a PAM authentication for a user with no vault).
///
/// At least one thread always waits, so a connection being served never keeps the next one
/// waiting: the thread that takes the last waiting place starts another first. At most
/// `idleLimit` threads wait; one beyond the first ends after `idleTime` seconds without a
/// connection. A thread scrubs its stack below its frame before it waits again
/// (`fs_scrub_stack_below`): the pages a request of ordinary depth touched are zeroed and kept,
/// deeper ones go back to the kernel, so nothing of a request's frames waits with it, and the
/// next request takes no page faults (giving every page back cost a small request a fifth of
/// its time in faults).
final class ConnectionThreads: @unchecked Sendable {
    /// Serves one accepted connection (its descriptor, owned from then on).
    typealias Serve = @Sendable (Int32) -> Void
    /// Turns one accepted connection away at once (its descriptor, owned from then on): no
    /// thread could be started to wait while this one serves.
    typealias TurnAway = @Sendable (Int32) -> Void

    static let idleLimit = 4
    static let idleTime = 10.0
    /// How deep below a parked thread's frame its stack is zeroed and kept rather than given
    /// back. Measured below the 16 KiB kept as they are: 12 KiB for a PAM request for a user
    /// without a vault, 40 KiB for a finger unlock with a token refresh.
    static let scrubbedStack = 128 << 10

    private let listenerFD: Int32
    private let serve: Serve
    private let turnAway: TurnAway
    private let lock = ThreadLock()
    /// Readable once `stop()` was called: every waiting thread wakes and ends.
    private let stopEvent: EventFD
    private var waiting = 0
    /// Threads between taking a connection off the socket and the end of serving it.
    private var serving = 0
    private var stopped = false

    init(listenerFD: Int32, serve: @escaping Serve, turnAway: @escaping TurnAway) throws {
        self.listenerFD = listenerFD
        self.serve = serve
        self.turnAway = turnAway
        stopEvent = try EventFD(nonBlocking: true)
    }

    /// Starts the first waiting thread; false when it could not be started.
    func start() -> Bool {
        startWaiting()
    }

    /// No connection is accepted from now on, and waiting threads end; connections being
    /// served go on to their end.
    func stop() {
        lock.locked { stopped = true }
        stopEvent.signal()
    }

    /// Stops, as `stop`, only when no connection is being taken or served; false otherwise.
    /// Connections still waiting on the socket stay there for the next broker (socket
    /// activation starts one for them).
    func stopIfIdle() -> Bool {
        let idle = lock.locked { () -> Bool in
            guard serving == 0 else { return false }
            stopped = true
            return true
        }
        if idle { stop() }
        return idle
    }

    /// Counts a new thread as waiting before it starts, so that no other thread starts one
    /// for the same place.
    private func startWaiting() -> Bool {
        lock.locked { waiting += 1 }
        if startThread({ [self] in run() }) { return true }
        lock.locked { waiting -= 1 }
        return false
    }

    /// A thread's life: wait for a connection, take it, serve it; again, until it is no
    /// longer needed or the server stops. It enters counted as waiting.
    private func run() {
        let set: ConnectionWait
        do { set = try ConnectionWait(listener: listenerFD, stop: stopEvent.rawValue) } catch {
            Syslog.log(.warning, "fingersealed: cannot wait for connections: \(error)")
            lock.locked { waiting -= 1 }
            return
        }
        let stack = ThreadStack()
        while let fd = nextConnection(set) {
            // The last waiting place was this thread's: another waits before this one serves.
            let alone = lock.locked { waiting == 0 && !stopped }
            if alone && !startWaiting() {
                // Nobody else could wait: answered at once, and this thread goes on waiting.
                turnAway(fd)
                lock.locked {
                    serving -= 1
                    waiting += 1
                }
                continue
            }
            serve(fd)
            stack.scrub(keeping: ConnectionThreads.scrubbedStack)
            let stays = lock.locked { () -> Bool in
                serving -= 1
                guard !stopped, waiting < ConnectionThreads.idleLimit else { return false }
                waiting += 1
                return true
            }
            guard stays else { return }
        }
    }

    /// The next connection, the thread counted as waiting until then; nil (no longer
    /// counted) when the server stopped, when another thread waits and none came within
    /// `idleTime`, or when waiting fails.
    private func nextConnection(_ set: ConnectionWait) -> Int32? {
        while true {
            let woken = set.wait(milliseconds: Int32(ConnectionThreads.idleTime * 1000))
            // Counted as serving from before the accept, so that an idle stop never comes
            // between taking a connection and serving it.
            let decided = lock.locked { () -> Bool? in
                if stopped { waiting -= 1; return false }
                switch woken {
                case .timedOut where waiting > 1, .failed:
                    waiting -= 1
                    return false
                case .connection:
                    serving += 1
                    return true
                case .timedOut, .other:
                    return nil
                }
            }
            guard let decided else { continue }
            guard decided else {
                if case let .failed(code) = woken { Syslog.log(.warning, "fingersealed: waiting for connections failed: \(code)") }
                return nil
            }
            let fd = set.accept()
            lock.locked {
                if fd != nil { waiting -= 1 } else { serving -= 1 }
            }
            // Taken by another thread (a spurious wake-up) or gone: wait again, still counted.
            if let fd { return fd }
        }
    }
}
