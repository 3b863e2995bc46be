import Glibc
import SystemKit
import SystemdKit

/// Who is on the other end of a connection, as the kernel says: never the environment or
/// a field the caller fills in (design §2).
public struct Caller: Sendable, CustomStringConvertible {
    public let pid: pid_t
    /// The effective uid at connect time (SO_PEERCRED): whom the request acts as.
    public let uid: UInt32
    public let gid: UInt32
    /// The groups the caller had when it connected (SO_PEERGROUPS and SO_PEERCRED's gid): a
    /// process that gains a group afterwards (a setgid program exec'd with the socket) does
    /// not lend it to the connection.
    public let groups: [UInt32]
    /// The real uid: for a setuid host (su, pkexec, a setuid copy of pamtester) the person
    /// who started it, where `uid` says root.
    public let realUID: UInt32
    /// The audit login uid (pam_loginuid): who logged in to the caller's session; nil unset.
    public let loginUID: UInt32?
    /// The caller's login session, read from the kernel the first time a flow asks: most
    /// requests (a PAM host asking for a user with no vault) never need it.
    private let login: LoginContext

    /// The caller's login session: the kernel's audit session (pam_loginuid), else logind's,
    /// else the process session, named with its leader's start time so that a new session
    /// that lands on a dead one's number is another session.
    public var session: String { login.session.name }
    /// Who the session belongs to: the audit session's login uid, logind's session user, or
    /// for a process session the caller's real uid. A confirmation counts only in a session of
    /// its own account.
    public var sessionOwner: UInt32 { login.session.owner }
    /// What keeps the session alive, so that its grants and tokens end with it.
    public var liveness: SessionLiveness { login.session.liveness }
    /// The caller is in a login session (audit or logind), not only a process session.
    public var inLoginSession: Bool { login.session.isLogin }
    /// logind says the caller's session is remote (ssh).
    public var remote: Bool { login.remote }
    /// Where the caller stands toward its terminal, and which program it is, as the kernel
    /// says (`TerminalStanding`): read from /proc once, when a scan is about to be offered.
    public var terminalStanding: TerminalStanding { login.terminalStanding }

    public var isRoot: Bool { uid == 0 }

    public var description: String { "uid \(uid) pid \(pid)" }

    /// Whom the connection counts against (connections, the reader's turns): the caller's own
    /// uid; for a root caller the person behind it (a setuid host's real uid, else its login
    /// uid), or the system itself (a display manager, login, sshd: real root in no login).
    public var principal: Principal {
        if !isRoot { return .user(uid) }
        if realUID != 0 { return .user(realUID) }
        if let loginUID { return .user(loginUID) }
        return .system
    }

    /// Reads the peer of a connected socket. The pid is pinned with a pidfd (SO_PEERPIDFD)
    /// where the kernel has it, else by its start time, and checked to still be the same
    /// process after /proc was read, so a reused pid cannot lend another process's identity
    /// or session.
    public static func of(socket fd: Int32) throws -> Caller {
        let credentials = try PeerCredentials.of(socket: fd)
        let pid = credentials.pid
        let handle = ProcessHandle(peerOf: fd)
        let pin = ProcessPin(pid: pid, handle: handle)
        let groups = (credentials.groups ?? []) + [credentials.gid]
        let realUID = handle?.realUID ?? processRealUID(pid) ?? credentials.uid
        let loginUID = readSmall("/proc/\(pid)/loginuid").flatMap(UInt32.init).flatMap { $0 == UInt32.max ? nil : $0 }
        // The process we read about must still be the peer.
        guard pin.isStillThePeer else { throw SystemError("peer", "gone", code: ESRCH) }
        return Caller(pid: pid, uid: credentials.uid, gid: credentials.gid, groups: groups, realUID: realUID,
                      loginUID: loginUID, login: LoginContext(pin: pin, realUID: realUID, loginUID: loginUID))
    }

    /// A caller's login session, as `LoginContext` finds it.
    struct LoginSession {
        let name: String
        let owner: UInt32
        let liveness: SessionLiveness
        let isLogin: Bool
    }

    /// The kernel's and logind's word on the caller's session, each read once, when first
    /// asked, while the process is still pinned.
    final class LoginContext: @unchecked Sendable {
        private let pin: ProcessPin
        private let realUID: UInt32
        private let loginUID: UInt32?
        private let lock = ThreadLock()
        private var logind: String?? = nil
        private var found: LoginSession? = nil
        private var standing: TerminalStanding? = nil

        init(pin: ProcessPin, realUID: UInt32, loginUID: UInt32?) {
            self.pin = pin
            self.realUID = realUID
            self.loginUID = loginUID
        }

        var session: LoginSession {
            lock.locked {
                if let found { return found }
                let pid = pin.pid
                let read = Caller.loginSession(pid, logind: logindSession(), realUID: realUID, loginUID: loginUID)
                var session = LoginSession(name: read.name, owner: read.owner, liveness: read.liveness, isLogin: read.isLogin)
                if !pin.isStillThePeer {
                    // Gone while we read: what was read may be another process's. A session of
                    // its own, already ended, so nothing is kept for it or lent to it.
                    let start = pin.startTime ?? 0
                    session = LoginSession(name: "gone-\(pid)-\(start)", owner: realUID,
                                           liveness: .leader(pid: pid, startTime: start), isLogin: false)
                }
                found = session
                return session
            }
        }

        /// The caller's place on its terminal (`Caller.terminalStanding`).
        var terminalStanding: TerminalStanding {
            lock.locked {
                if let standing { return standing }
                // Read while pinned: a process that is gone now may have been another's pid.
                var read = TerminalStanding.of(pin.pid) ?? .nowhere
                if !pin.isStillThePeer { read = .nowhere }
                standing = read
                return read
            }
        }

        /// logind says the session is remote: asked only where logind knows sessions.
        var remote: Bool {
            lock.locked { logindSession().map(LoginSessions.isRemote) ?? false }
        }

        /// Inside the lock.
        private func logindSession() -> String? {
            if let logind { return logind }
            var read = Caller.logindSession(pin.pid)
            if read != nil && !pin.isStillThePeer { read = nil }
            logind = .some(read)
            return read
        }
    }

    /// One process, whatever later reuses its pid: its pidfd where the kernel has one (kept
    /// open as long as the caller is), else its start time.
    final class ProcessPin: @unchecked Sendable {
        let pid: pid_t
        private let handle: ProcessHandle?
        let startTime: UInt64?

        init(pid: pid_t, handle: ProcessHandle?) {
            self.pid = pid
            self.handle = handle
            startTime = handle == nil ? processStartTime(pid) : nil
        }

        var isStillThePeer: Bool {
            if let handle { return handle.isAlive }
            guard let startTime else { return false }
            return processStartTime(pid) == startTime
        }
    }

    static func loginSession(_ pid: pid_t, logind: String?, realUID: UInt32,
                             loginUID: UInt32?) -> (name: String, owner: UInt32, liveness: SessionLiveness, isLogin: Bool) {
        if let audit = readSmall("/proc/\(pid)/sessionid"), let id = UInt32(audit), id != UInt32.max {
            // The kernel numbers audit sessions once per boot and never again.
            return ("audit-\(id)", loginUID ?? realUID, .audit, true)
        }
        if let logind {
            let owner = LoginSessions.owner(of: logind) ?? uid_t(realUID)
            return ("logind-" + logind, owner, .logind(logind), true)
        }
        // A process session: its number is a pid, which a new session can take once the old
        // leader is gone. The leader's start time makes the name the session's own.
        let sid = getsid(pid)
        if sid > 0, let leaderStart = processStartTime(sid) {
            return ("sid-\(sid)-\(leaderStart)", realUID, .leader(pid: sid, startTime: leaderStart), false)
        }
        // The leader is gone already: a session nobody can come back to, so this process
        // alone (nothing it holds is shared with any other).
        let start = processStartTime(pid) ?? 0
        return ("pid-\(pid)-\(start)", realUID, .leader(pid: pid, startTime: start), false)
    }

    /// logind's session of `pid`, when logind knows one.
    static func logindSession(_ pid: pid_t) -> String? {
        // Without logind (containers, build machines) there is nothing to ask, and asking
        // costs two cgroup files per request.
        guard LoginSessions.available else { return nil }
        return LoginSessions.session(of: pid)
    }

    /// The real uid from the `Uid:` line of /proc/PID/status (real, effective, saved, fs).
    static func processRealUID(_ pid: pid_t) -> UInt32? {
        guard let status = readBytes("/proc/\(pid)/status", limit: 16384) else { return nil }
        // Bytes, not a String split into lines: the file is some 60 lines of ASCII, read for
        // every connection on a kernel without PIDFD_GET_INFO.
        let key: [UInt8] = Array("\nUid:".utf8)
        guard let start = status.firstRange(of: key)?.upperBound else { return nil }
        let digits = status[start...].drop(while: { $0 == 0x20 || $0 == 0x09 }).prefix(while: { $0 >= 0x30 && $0 <= 0x39 })
        return digits.isEmpty ? nil : UInt32(String(decoding: digits, as: UTF8.self))
    }

    static func readBytes(_ path: String, limit: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        return try? FileDescriptor(owning: fd).readAll(limit: limit, subject: path)
    }

    static func readSmall(_ path: String, keepLines: Bool = false, limit: Int = 256) -> String? {
        guard let bytes = readBytes(path, limit: limit) else { return nil }
        if keepLines { return String(decoding: bytes, as: UTF8.self) }
        // The one value of a /proc file such as loginuid: its bytes without the white space.
        return String(decoding: bytes.filter { $0 != 0x20 && $0 != 0x0a && $0 != 0x09 && $0 != 0x0d }, as: UTF8.self)
    }

    /// Whether the caller's process belonged to the group named `name` when it connected.
    public func isInGroup(named name: String) -> Bool {
        guard let id = groupID(named: name) else { return false }
        return groups.contains(id)
    }
}

/// Where a process stands toward its controlling terminal, and which program it runs, as the
/// kernel says in /proc/PID/stat (proc(5)). What Ctrl-C does there follows from it
/// (`Channel.wayToPassword`).
public struct TerminalStanding: Sendable, Equatable {
    /// In the foreground process group of its controlling terminal: Ctrl-C typed there reaches
    /// it, since the kernel sends SIGINT to every process of that group, whether or not the
    /// process leads it (sudo from an interactive shell leads its group; from a script, or
    /// `login` under `sh -c`, it does not).
    public let inForeground: Bool
    /// The program's name as the kernel set it when the process started it (field 2, `comm`:
    /// the executable's file name, cut at 15 bytes). /proc/PID/exe would say more, but the
    /// broker's unit keeps no CAP_SYS_PTRACE, which reading it needs for a setuid host (sudo,
    /// su, polkit's agent helper).
    public let program: String

    /// No terminal, no program known: a process gone, or a file that could not be read.
    public static let nowhere = TerminalStanding(inForeground: false, program: "")
}

extension TerminalStanding {
    /// Read from /proc/PID/stat; nil when it cannot be.
    static func of(_ pid: pid_t) -> TerminalStanding? {
        guard pid > 0, let stat = Caller.readBytes("/proc/\(pid)/stat", limit: 4096) else { return nil }
        return TerminalStanding(stat: stat)
    }

    /// From the text of /proc/PID/stat: the program between the first "(" and the last ")"
    /// (it may hold either itself), then pgrp (5), tty_nr (7) and tpgid (8). In the
    /// foreground: a controlling terminal (tty_nr not 0) whose foreground group (tpgid; -1
    /// without a terminal, which reads as no number) is the process's own group.
    init?(stat: [UInt8]) {
        guard let open = stat.firstIndex(of: 0x28), let close = stat.lastIndex(of: 0x29), open < close,
              let group = statField(5, of: stat), let terminal = statField(7, of: stat) else { return nil }
        let foreground = statField(8, of: stat)
        program = String(decoding: stat[(open + 1)..<close], as: UTF8.self)
        inForeground = terminal != 0 && foreground == group
    }
}

/// Whom a connection or a reader's turn counts against.
public enum Principal: Hashable, Sendable, CustomStringConvertible {
    case user(UInt32)
    /// Root's own hosts outside any login (display managers, login, sshd before login).
    case system

    public var description: String {
        switch self {
        case let .user(uid): return "uid \(uid)"
        case .system: return "the system"
        }
    }
}

/// What a session lasts as long as.
public enum SessionLiveness: Hashable, Sendable {
    /// The kernel's audit session: ended by the host's close_session (ids are never reused).
    case audit
    /// logind's session, as long as logind knows it.
    case logind(String)
    /// A process session, as long as its leader (this very process, by start time) lives.
    case leader(pid: pid_t, startTime: UInt64)

    /// Whether the session may still be in use.
    var isAlive: Bool {
        switch self {
        case .audit: return true
        case let .logind(id):
            guard let state = LoginSessions.state(of: id) else { return false }
            return state != "closing"
        case let .leader(pid, startTime): return processStartTime(pid) == startTime
        }
    }
}

extension Caller {
    /// A caller no connection vouched for, with the ids given, in this process's session: for
    /// in-process tests of the broker's decisions (`@testable`, as the fuzz harness serves a
    /// socketpair), never reached by a connection, which only `of(socket:)` reads.
    init(inProcess uid: UInt32, gid: UInt32, groups: [UInt32] = [], realUID: UInt32? = nil, loginUID: UInt32? = nil) {
        let pin = ProcessPin(pid: getpid(), handle: nil)
        self.init(pid: pin.pid, uid: uid, gid: gid, groups: groups + [gid], realUID: realUID ?? uid, loginUID: loginUID,
                  login: LoginContext(pin: pin, realUID: realUID ?? uid, loginUID: loginUID))
    }
}
