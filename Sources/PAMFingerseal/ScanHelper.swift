import FingersealCore
import Glibc
import PAMKit
import SodiumKit
import SystemKit

/// Runs `fingerseal-scan` for the fingerprint and token steps and relays what it says to the
/// PAM conversation. Ctrl-C (SIGINT, through a signalfd while the scan runs) asks it to stop;
/// every wait is bounded; the helper is always reaped.
struct ScanHelper {
    static let defaultPaths = ["/usr/libexec/fingerseal/fingerseal-scan", "/usr/local/libexec/fingerseal/fingerseal-scan"]
    /// Beyond the scan and IdP timeouts: the helper's own start-up, reader open and close.
    static let slack = 10.0

    let options: Options
    let user: String
    let prompter: Prompter

    /// What the helper reported, and the access token it handed over (an AccessTokenFile).
    struct Report {
        var result: AuthenticationResult
        var accessToken: SecureBytes? = nil
    }

    /// Scans (or, with `refreshOnly`, only refreshes the sealed sign-in after a PIN).
    func run(refreshOnly: Bool = false) -> Report {
        guard let path = locate() else { return Report(result: AuthenticationResult(.noReader, "no fingerseal-scan helper installed")) }
        do {
            try vet(path)
        } catch {
            return Report(result: AuthenticationResult(.unavailable, "refusing helper \(path): \(error)"))
        }
        var settings = ["timeout=\(options.timeout)", "max_tries=\(options.maxTries)", "max_fails=\(options.maxFails)",
                        "offline_grace=\(options.offlineGrace)", "connect_timeout=\(options.connectTimeout)",
                        "idp_timeout=\(options.idpTimeout)"]
        if let store = options.store { settings.append("store=\(store)") }
        let interrupt: InterruptWatch
        let child: Subprocess
        do {
            interrupt = try InterruptWatch(signals: [SIGINT])
            // The host's own environment (root-controlled), never the PAM environment a user
            // may influence.
            child = try Subprocess(path: path, arguments: (refreshOnly ? ["--refresh-only"] : []) + ["--token-fd", "3", user] + settings,
                                   environment: environmentEntries(), secondOutput: true)
        } catch {
            return Report(result: AuthenticationResult(.systemError, "could not start \(path): \(error)"))
        }
        defer { child.terminate(grace: 2) }
        var lines = LineReader(fd: child.output.rawValue)
        var deadline = monotonicSeconds() + Double(refreshOnly ? 0 : options.timeout)
            + Double(options.connectTimeout + options.idpTimeout) + ScanHelper.slack
        var cancelled = false
        while true {
            switch lines.next(until: deadline, alsoWatching: cancelled ? nil : interrupt.fd) {
            case .line(let bytes):
                switch ScanMessage.parse(bytes) {
                case .info(let text)?: prompter.info(text)
                case .error(let text)?: prompter.error(text)
                case let .result(outcome, finger, detail, token)?:
                    let result = Outcome(rawValue: outcome) ?? .unavailable
                    if cancelled && result != .success { return Report(result: AuthenticationResult(.cancelled, "cancelled with Ctrl-C")) }
                    if [.noMatch, .triesExhausted, .lockedOut, .timedOut].contains(result) { prompter.error(detail) }
                    var report = Report(result: AuthenticationResult(result, finger.map { "finger \($0): \(detail)" } ?? detail,
                                                                     tokenStep: token))
                    if token == .refreshed, let second = child.secondOutput {
                        report.accessToken = readAccessToken(second.rawValue, until: deadline)
                        // Refreshed (the rotated token is sealed) but not handed over: no token.
                        if report.accessToken == nil { report.result.tokenStep = .failed }
                    }
                    return report
                case nil:
                    return Report(result: AuthenticationResult(.unavailable, "the helper said something unreadable"))
                }
            case .other:
                // Ctrl-C: ask the helper to cancel; it answers with a result soon after.
                _ = interrupt.fired()
                cancelled = true
                child.signal(SIGTERM)
                deadline = min(deadline, monotonicSeconds() + 3)
            case .end:
                return Report(result: AuthenticationResult(cancelled ? .cancelled : .unavailable, "the helper ended without a result"))
            case .timedOut:
                return Report(result: AuthenticationResult(cancelled ? .cancelled : .timedOut, "the helper did not answer in time"))
            }
        }
    }

    /// The AccessTokenFile the helper wrote to its descriptor 3 (it closes it before its
    /// result line), read into secure memory; nil unless it is exactly in the format.
    private func readAccessToken(_ fd: Int32, until deadline: Double) -> SecureBytes? {
        guard let buffer = try? SecureBytes(capacity: AccessTokenFile.maxSize + 1) else { return nil }
        var chunk = [UInt8](repeating: 0, count: 4096)
        defer { Sodium.wipe(&chunk) }
        while buffer.count <= AccessTokenFile.maxSize {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let remaining = deadline - monotonicSeconds()
            guard remaining > 0, poll(&pfd, 1, Int32(min(remaining * 1000, 60_000).rounded(.up))) >= 0 || errno == EINTR else {
                return nil
            }
            if pfd.revents == 0 { continue }
            let count = read(fd, &chunk, chunk.count)
            if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            if count < 0 { return nil }
            if count == 0 { break }
            // Stops at the capacity: an over-long answer then fails the format check.
            for byte in chunk[..<count] { if !buffer.append(byte) { break } }
        }
        let valid = buffer.withUnsafeBytes { AccessTokenFile.parse($0) } != nil
        return valid ? buffer : nil
    }

    private func locate() -> String? {
        if let helper = options.helper { return helper }
        return ScanHelper.defaultPaths.first { access($0, X_OK) == 0 }
    }

    /// A program root runs must be root's: a regular file owned by root, in a root-owned
    /// directory, neither writable by group or others.
    private func vet(_ path: String) throws {
        guard let slash = path.lastIndex(of: "/") else { throw SystemError("open", path, code: ENOENT) }
        let directory = try SafeDirectory(path: slash == path.startIndex ? "/" : String(path[..<slash]), owner: 0)
        guard try directory.openTrusted(String(path[path.index(after: slash)...]), sizeLimit: Int.max) != nil else {
            throw SystemError("open", path, code: ENOENT)
        }
    }
}

/// Lines from a pipe, with a deadline and an optional second descriptor to watch.
struct LineReader {
    let fd: Int32
    private var buffer: [UInt8] = []
    private var ended = false

    init(fd: Int32) { self.fd = fd }

    enum Event { case line([UInt8]), other, end, timedOut }

    mutating func next(until deadline: Double, alsoWatching other: Int32?) -> Event {
        while true {
            if let newline = buffer.firstIndex(of: 0x0a) {
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                return .line(line)
            }
            if ended || buffer.count > ScanMessage.maxLine { return .end }
            let remaining = deadline - monotonicSeconds()
            if remaining <= 0 { return .timedOut }
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
            if let other { fds.append(pollfd(fd: other, events: Int16(POLLIN), revents: 0)) }
            let ready = poll(&fds, nfds_t(fds.count), Int32(min(remaining * 1000, 60_000).rounded(.up)))
            if ready < 0 && errno != EINTR { return .end }
            if fds.count > 1 && fds[1].revents != 0 { return .other }
            if fds[0].revents != 0 {
                var chunk = [UInt8](repeating: 0, count: 4096)
                let count = read(fd, &chunk, chunk.count)
                if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
                if count <= 0 { ended = true; continue }
                buffer += chunk[..<count]
            }
        }
    }
}
