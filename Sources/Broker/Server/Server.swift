import FingersealCore
import FingersealWire
import Glibc
import Localization
import SystemdKit
import SystemKit

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
    /// Where the kernel says which boot this is (`--boot-id-file`, for tests that start "after
    /// a restart"); read once, when the broker starts. The broker's command line only.
    public var bootIDPath = "/proc/sys/kernel/random/boot_id"
    /// The Argon2id cost of PIN slots made from now on; nil tunes it to the machine (~150 ms,
    /// 64 MiB). In process only (the fuzz harness, whose millions of requests cannot pay that):
    /// no command line or caller sets it.
    public var pinCost: PINCost? = nil

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


/// The broker's service: connections accepted and served by `ConnectionThreads`, bounded in
/// number overall and per principal (a user, with the setuid hosts they start; or the
/// system's own hosts), with room kept for the system's hosts, so a hostile or stuck client
/// never stops the broker from serving everyone else, and no user's connections keep a login
/// screen from being answered. The main thread keeps time: sweeps, idle readers and TPM,
/// attempt counts, the idle exit, and the stop.
public final class Server: @unchecked Sendable {
    public static let maxConnections = 64
    public static let maxPerPrincipal = 16
    /// Connections only root's own hosts outside any login (login screens, login, sshd) may
    /// use: all the users together hold at most `maxConnections - reservedForSystem`.
    public static let reservedForSystem = 16
    /// A client must send its request this soon after connecting.
    static let requestLimit = 5.0
    /// The longest the start waits for the sleep watch's first try.
    static let sleepWatchLimit = 2.0
    /// How often sessions that ended lose their grants and tokens.
    static let sweepInterval = 5.0

    let listener: Listener
    let state: BrokerState
    private let lock = ThreadLock()
    private var active = 0
    private var perPrincipal: [Principal: Int] = [:]
    private var lastActivity = monotonicSeconds()
    private var lastSweep = monotonicSeconds()
    /// When provisioned accounts were last checked for expiry (nil: not yet, at start).
    private var lastExpiry: Double? = nil
    /// Failed polls of the main loop in a row (the first is logged).
    private var pollFailures = 0
    /// How often they are.
    static let expiryInterval = 3600.0

    public init(listener: Listener, settings: BrokerSettings) throws {
        self.listener = listener
        self.state = try BrokerState(settings: settings)
    }

    /// Serves until idle for `settings.idleExit` seconds (never, when nil), or until `stopFD`
    /// (a signalfd for SIGTERM and SIGINT) is readable. Throws when it cannot start serving.
    public func run(stopFD: Int32? = nil) throws {
        let threads = try ConnectionThreads(listenerFD: listener.fd,
                                            serve: { [self] fd in accepted(fd) },
                                            turnAway: { fd in Server.turnAway(WireConnection(owning: fd)) })
        // Before the first request: half-made accounts of a broker that stopped mid-way go.
        if let options = try? state.systemOptions().0 { AccountCommands.recover(state: state, options: options) }
        guard threads.start() else { throw BrokerStartError("cannot start a thread to serve connections") }
        defer { threads.stop() }
        // Suspend and resume reach the reader from a thread of their own. Ready is said once
        // the watch is in place (or gave up for now), at most a moment later: requests are
        // served meanwhile.
        let sleepWatch = try? SleepWatch(reader: state.reader)
        if let sleepWatch, sleepWatch.start() { sleepWatch.waitForFirstTry(limit: Server.sleepWatchLimit) }
        defer { sleepWatch?.stop() }
        ServiceManager.notify("READY=1\nSTATUS=Waiting for requests.")
        while true {
            var fds = stopFD.map { [pollEntry($0)] } ?? []
            // A second at most between the chores below.
            if case let .failed(code) = waitReady(&fds, until: monotonicSeconds() + 1) {
                // A failed poll (ENOMEM) is a moment of the kernel's, not a reason to stop
                // serving: the connection threads go on, and this loop tries again shortly.
                if pollFailures == 0 { Syslog.log(.warning, "fingersealed: poll failed: \(code); trying again") }
                pollFailures += 1
                var pause = timespec(tv_sec: 0, tv_nsec: 100_000_000)
                nanosleep(&pause, nil)
                continue
            }
            pollFailures = 0
            if fds.first?.revents ?? 0 != 0 {
                ServiceManager.notify("STOPPING=1")
                threads.stop()
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
            if lastExpiry.map({ monotonicSeconds() - $0 >= Server.expiryInterval }) ?? true {
                lastExpiry = monotonicSeconds()
                expireAccounts(now: now)
            }
            state.reader.closeIfIdle(after: ReaderTurns.idleLimit)
            state.tpm.closeIfIdle()
            state.recordAttemptCounts(state.attemptLimiter.takeEnded(now: now))
            // Not while an attempt window is open: the next broker would start counting anew.
            // Nor while touch to sign in is paused: the pause is kept on disk, and the broker
            // that ends it is this one.
            if let idle = state.settings.idleExit, !state.attemptLimiter.holdsOpenWindows(now: now),
               !state.identifyHistory.holdsOpenPause(now: now),
               lock.locked({ active == 0 && monotonicSeconds() - lastActivity >= idle }), threads.stopIfIdle() {
                ServiceManager.notify("STOPPING=1\nSTATUS=Idle; exiting until the next request.")
                state.tpm.closeNow()
                return
            }
        }
    }

    /// Provisioned accounts unused for `provision_expire_days` go, on a thread of their own
    /// (userdel may take a moment; the main thread keeps time).
    private func expireAccounts(now: Int64) {
        guard let options = try? state.systemOptions().0, options.provisionExpireDays > 0 else { return }
        let state = self.state
        startThread { _ = try? AccountCommands.expire(state: state, options: options, now: now) }
    }

    /// One accepted connection, on the thread that accepted it: who is calling, whether there
    /// is room for them, then their request.
    private func accepted(_ fd: Int32) {
        let connection = WireConnection(owning: fd)
        let caller: Caller
        do { caller = try Caller.of(socket: fd) } catch { return } // a peer that is gone already
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
        guard admitted else { return Server.turnAway(connection) }
        let slot = AdmissionSlot { [self] in
            lock.locked {
                active -= 1
                perPrincipal[principal, default: 1] -= 1
                if perPrincipal[principal] == 0 { perPrincipal[principal] = nil }
                lastActivity = monotonicSeconds()
            }
        }
        serve(connection, caller, slot)
        slot.giveBack()
    }

    private static func turnAway(_ connection: WireConnection) { answer(connection, Reply(.unavailable, Messages.brokerBusy)) }

    /// A connection answered before its request is served (busy, a wrong protocol, a request
    /// no client of ours would send). Said, not reset: the connection reads the request away
    /// before it closes.
    private static func answer(_ connection: WireConnection, _ reply: Reply) {
        Conversation(connection: connection, wantsEvents: false).finish(reply)
    }

    /// One connection: its request, the flow, the result.
    func serve(_ connection: WireConnection, _ caller: Caller, _ slot: AdmissionSlot) {
        // Until the request names its language, the system's.
        Localization.adopt(Localization.language(state.settings.defaultLanguage))
        let request: Request
        do {
            guard case let .message(.request(first)) = try connection.receive(until: monotonicSeconds() + Server.requestLimit,
                                                                               ClientMessage.decode) else { return }
            request = first
        } catch .protocolError(.badVersion(let version)) {
            return Server.answer(connection, Reply(.usage, Messages.wrongProtocol(Int(version))))
        } catch .protocolError(.wrongSender(let command)) {
            return Server.answer(connection, Reply(.usage, Messages.notFromThisProgram(command)))
        } catch {
            Syslog.log(.notice, "fingersealed: dropped a client (\(caller)) that sent no valid request: \(error)")
            return
        }
        // Every sentence of this request in the language it asked for (presentation only).
        Localization.adopt(Localization.language(request.language ?? state.settings.defaultLanguage))
        // And every time in it in the person's zone.
        Localization.adopt(zoneNamed: request.timeZone, resolve: RequestZone.resolve)
        let conversation = Conversation(connection: connection, wantsEvents: request.wantsEvents,
                                        announcesTurns: request.origin.application != nil)
        // What its audit events say of where they came from, in the journal.
        AuditOrigin.$current.withValue(AuditOrigin(Channel(request, from: caller), caller: caller)) {
            Dispatcher.handle(request, from: caller, conversation: conversation, state: state, slot: slot)
        }
    }
}

/// A connection's place in the counts that bound each principal: given back once, as its
/// conversation ends (just before the reply goes, unless the request holds the connection for
/// a command), at the latest when its thread is done with it. A client that has its answer
/// and asks again is never refused for the broker's own tidying up after the first.
final class AdmissionSlot {
    private var giveBackNow: (() -> Void)?

    init(_ giveBack: @escaping () -> Void) { giveBackNow = giveBack }

    func giveBack() {
        giveBackNow?()
        giveBackNow = nil
    }
}

/// Starts a detached thread running `body` with every signal blocked, in the language and time
/// zone of the request that starts it (a background scan speaks the request's). False when no thread
/// could be started.
@discardableResult
func startThread(_ body: @escaping @Sendable () -> Void) -> Bool {
    let language = Localization.current, zone = Localization.zone
    return startDetachedThread {
        Localization.adopt(language)
        Localization.adopt(zone: zone)
        body()
    }
}
