import CGio

/// GLib's main loop on the agent's main thread: the session bus and the dialog run on it;
/// other threads (one per broker exchange) hand work to it with `post`.
public enum MainLoop {
    private final class Work {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// The loop `run` runs; made on first use, from the main thread.
    nonisolated(unsafe) private static var loop: OpaquePointer? = nil

    /// Iterates the default context until `quit`.
    public static func run() {
        guard let made = g_main_loop_new(nil, 0) else { return }
        loop = made
        g_main_loop_run(made)
        loop = nil
        g_main_loop_unref(made)
    }

    /// Ends `run` (from the main thread, or through `post`).
    public static func quit() {
        if let loop { g_main_loop_quit(loop) }
    }

    /// Runs `work` on the main thread, soon; from any thread.
    public static func post(_ work: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Work(work)).toOpaque()
        fs_main_post({ raw in
            guard let raw else { return 0 }
            Unmanaged<Work>.fromOpaque(raw).takeRetainedValue().body()
            return 0 // G_SOURCE_REMOVE
        }, box)
    }

    /// Runs `work` once, `seconds` from now, on the main thread; the id cancels it.
    @discardableResult
    public static func after(_ seconds: Double, _ work: @escaping () -> Void) -> UInt32 {
        let box = Unmanaged.passRetained(Work(work)).toOpaque()
        return g_timeout_add_full(0, UInt32(max(seconds, 0) * 1000), { raw in
            guard let raw else { return 0 }
            Unmanaged<Work>.fromOpaque(raw).takeUnretainedValue().body()
            return 0 // G_SOURCE_REMOVE: then the destroy notify below releases the box
        }, box, { raw in
            guard let raw else { return }
            Unmanaged<Work>.fromOpaque(raw).release()
        })
    }

    /// Cancels a timer `after` gave, unless it ran already.
    public static func cancel(_ id: UInt32) {
        if id != 0 { g_source_remove(id) }
    }

    /// Calls `work` on the main thread whenever `fd` becomes readable, until the id is
    /// cancelled (`cancel`) or `work` returns false.
    @discardableResult
    public static func whenReadable(_ fd: Int32, _ work: @escaping () -> Bool) -> UInt32 {
        final class Watch {
            let body: () -> Bool
            init(_ body: @escaping () -> Bool) { self.body = body }
        }
        let box = Unmanaged.passRetained(Watch(work)).toOpaque()
        return g_unix_fd_add_full(0, fd, G_IO_IN, { _, _, raw in
            guard let raw else { return 0 }
            return Unmanaged<Watch>.fromOpaque(raw).takeUnretainedValue().body() ? 1 : 0
        }, box, { raw in
            guard let raw else { return }
            Unmanaged<Watch>.fromOpaque(raw).release()
        })
    }
}

/// A value that only the main thread touches, carried through `MainLoop.post` from another
/// thread and back without being used there.
public struct MainOnly<Value>: @unchecked Sendable {
    public let value: Value
    public init(_ value: Value) { self.value = value }
}
