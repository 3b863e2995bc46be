import CLinux
import FingersealCore
import Glibc
import Localization
import SystemKit
import SystemdKit

/// How the broker runs.
public struct BrokerSettings: Sendable {
    /// Where the store lives: one directory per uid (root, 0700).
    public var stateDirectory: String
    /// The configuration file (`--config`); nil: /etc/fingerseal/fingerseal.conf, or the
    /// older /etc/security/fingerseal.conf when that does not exist.
    public var configPath: String? = nil
    /// Exit after this many seconds without a connection (socket activation restarts it).
    public var idleExit: Double?
    /// The language of a request that names none (a PAM environment without LANG): the
    /// system's default, /etc/default/locale (`BrokerSettings.systemLanguage`).
    public var defaultLanguage: String? = nil
    /// Where the broker's own PAM service (`fingerseal-verify`) is read from (`--pam-dir`);
    /// nil: the system's /etc/pam.d. The broker's command line only, for tests and
    /// containers: no caller names it.
    public var pamServiceDirectory: String? = nil

    public init(stateDirectory: String, idleExit: Double? = nil) {
        self.stateDirectory = stateDirectory
        self.idleExit = idleExit
    }

    /// The system's default language from /etc/default/locale (what update-locale writes):
    /// its LANGUAGE, else LC_ALL, LC_MESSAGES, LANG. Nil when the file says none.
    public static func systemLanguage(file: String = "/etc/default/locale") -> String? {
        guard let raw = try? syscall("open", file, { open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) }),
              let bytes = try? FileDescriptor(owning: raw).readAll(limit: 16384, subject: file) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let trimmed = String(line.drop(while: { $0 == " " || $0 == "\t" }))
            guard !trimmed.hasPrefix("#"), let equals = trimmed.firstIndex(of: "=") else { continue }
            var value = String(trimmed[trimmed.index(after: equals)...])
            while let last = value.last, last == " " || last == "\t" || last == "\r" { value.removeLast() }
            if value.count >= 2, let first = value.first, first == "\"" || first == "'", value.last == first {
                value = String(value.dropFirst().dropLast())
            }
            values[String(trimmed[..<equals])] = value
        }
        return Localization.preference { values[$0] }
    }
}


/// The accept loop: one thread per connection (`ConnectionThreads`), bounded in number overall and per principal
/// (a user, with the setuid hosts they start; or the system's own hosts), with room kept for
/// the system's hosts, so a hostile or stuck client never stops the broker from serving
/// everyone else, and no user's connections keep a login screen from being answered.
public final class Server: @unchecked Sendable {
    public static let maxConnections = 64
    public static let maxPerPrincipal = 16
    /// Connections only root's own hosts outside any login (login screens, login, sshd) may
    /// use: all the users together hold at most `maxConnections - reservedForSystem`.
    public static let reservedForSystem = 16
    /// A client must send its request this soon after connecting.
    static let requestLimit = 5.0
    /// How often sessions that ended lose their grants and tokens.
    static let sweepInterval = 5.0

    let listener: Listener
    let state: BrokerState
    private let lock = ThreadLock()
    private var active = 0
    private var perPrincipal: [Principal: Int] = [:]
    private var lastActivity = monotonicSeconds()
    private var lastSweep = monotonicSeconds()
    /// What connections are served on: threads kept parked between connections.
    private let threads = ConnectionThreads()

    public init(listener: Listener, settings: BrokerSettings) throws {
        self.listener = listener
        self.state = try BrokerState(settings: settings)
    }

    /// Serves until idle for `settings.idleExit` seconds (never, when nil), or until `stopFD`
    /// (a signalfd for SIGTERM and SIGINT) is readable.
    public func run(stopFD: Int32? = nil) {
        ServiceManager.notify("READY=1\nSTATUS=Waiting for requests.")
        defer { threads.stop() }
        while true {
            var fds = [pollEntry(listener.fd)]
            if let stopFD { fds.append(pollEntry(stopFD)) }
            // A second at most: the sweeps and the idle exit below run between connections.
            let waited = waitReady(&fds, until: monotonicSeconds() + 1)
            if case let .failed(code) = waited {
                Syslog.log(.warning, "fingersealed: poll failed: \(code)")
                return
            }
            if fds.count > 1 && fds[1].revents != 0 {
                ServiceManager.notify("STOPPING=1")
                state.reader.closeIfIdle(after: 0)
                // Counted attempts live in memory: written now, or never.
                state.recordAttemptCounts(state.attemptLimiter.takeAll())
                state.tpm.closeNow()
                return
            }
            let now = SystemClock().now()
            if monotonicSeconds() - lastSweep >= Server.sweepInterval {
                state.sessions.sweep(now: now)
                lastSweep = monotonicSeconds()
            }
            if waited == .timedOut {
                state.reader.closeIfIdle(after: ReaderTurns.idleLimit)
                state.tpm.closeIfIdle()
                state.recordAttemptCounts(state.attemptLimiter.takeEnded(now: now))
                // Not while an attempt window is open: the next broker would start counting anew.
                if let idle = state.settings.idleExit, !state.attemptLimiter.holdsOpenWindows(now: now),
                   lock.locked({ active == 0 && monotonicSeconds() - lastActivity >= idle }) {
                    ServiceManager.notify("STOPPING=1\nSTATUS=Idle; exiting until the next request.")
                    state.tpm.closeNow()
                    return
                }
                continue
            }
            recordEndedAttemptCounts(now: now)
            let fd = accept4(listener.fd, nil, nil, Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue))
            guard fd >= 0 else { continue }
            let connection = WireConnection(owning: fd)
            let caller: Caller
            do { caller = try Caller.of(socket: fd) } catch { continue } // a peer that is gone already
            let principal = caller.principal
            let admitted = lock.locked { () -> Bool in
                lastActivity = monotonicSeconds()
                let users = active - perPrincipal[.system, default: 0]
                let room = principal == .system ? active < Server.maxConnections
                                                : users < Server.maxConnections - Server.reservedForSystem
                guard room, perPrincipal[principal, default: 0] < Server.maxPerPrincipal else { return false }
                active += 1
                perPrincipal[principal, default: 0] += 1
                return true
            }
            guard admitted else {
                // Said, not reset: the connection reads the request away before it closes.
                Conversation(connection: connection, wantsEvents: false, graphical: false)
                    .finish(Reply(.unavailable, Messages.brokerBusy))
                continue
            }
            let done: @Sendable () -> Void = { [self] in
                lock.locked {
                    active -= 1
                    perPrincipal[principal, default: 1] -= 1
                    if perPrincipal[principal] == 0 { perPrincipal[principal] = nil }
                    lastActivity = monotonicSeconds()
                }
            }
            let started = threads.run { [self] in
                serve(connection, caller)
                done()
            }
            if !started {
                Conversation(connection: connection, wantsEvents: false, graphical: false).finish(Reply(.unavailable, Messages.brokerBusy))
                done()
            }
        }
    }

    /// While requests keep coming (no idle tick), counts of ended attempt windows are
    /// written on a thread of their own, counted as active so an idle exit waits for it.
    private func recordEndedAttemptCounts(now: Int64) {
        let ended = state.attemptLimiter.takeEnded(now: now)
        guard !ended.isEmpty else { return }
        lock.locked { active += 1 }
        let started = startThread { [self] in
            state.recordAttemptCounts(ended)
            lock.locked { active -= 1 }
        }
        if !started {
            state.recordAttemptCounts(ended)
            lock.locked { active -= 1 }
        }
    }

    /// One connection: its request, the flow, the result.
    func serve(_ connection: WireConnection, _ caller: Caller) {
        // Until the request names its language, the system's.
        Localization.adopt(Localization.language(state.settings.defaultLanguage))
        let request: Request
        do {
            guard case let .message(.request(first)) = try connection.receive(until: monotonicSeconds() + Server.requestLimit,
                                                                               ClientMessage.decode) else { return }
            request = first
        } catch .protocolError(.badVersion(let version)) {
            Conversation(connection: connection, wantsEvents: false, graphical: false)
                .finish(Reply(.usage, Messages.wrongProtocol(Int(version))))
            return
        } catch {
            Syslog.log(.notice, "fingersealed: dropped a client (\(caller)) that sent no valid request: \(error)")
            return
        }
        // Every sentence of this request in the language it asked for (presentation only).
        Localization.adopt(Localization.language(request.language ?? state.settings.defaultLanguage))
        let conversation = Conversation(connection: connection, wantsEvents: request.wantsEvents,
                                        graphical: request.pam?.isGraphical ?? false)
        Dispatcher.handle(request, from: caller, conversation: conversation, state: state)
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
func startThread(_ body: @escaping @Sendable () -> Void) -> Bool {
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    defer { pthread_attr_destroy(&attributes) }
    var all = sigset_t()
    sigfillset(&all)
    var previous = sigset_t()
    pthread_sigmask(SIG_BLOCK, &all, &previous)
    defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
    // A thread started for a request (a background scan) speaks the request's language.
    let language = Localization.current
    let box = Unmanaged.passRetained(ThreadBody {
        Localization.adopt(language)
        body()
    }).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(&thread, &attributes, { raw in
        guard let raw else { return nil }
        Unmanaged<ThreadBody>.fromOpaque(raw).takeRetainedValue().body()
        return nil
    }, box)
    if rc != 0 { Unmanaged<ThreadBody>.fromOpaque(box).release() }
    return rc == 0
}
