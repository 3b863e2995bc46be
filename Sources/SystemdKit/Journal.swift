import CSystemd
import Glibc
import SystemKit

/// One entry for the journal: its fields in order ("MESSAGE", "MESSAGE_ID", "PRIORITY", …),
/// and the line syslog gets instead where no journal listens.
public struct JournalEntry: Sendable {
    public var fields: [(name: String, value: String)]
    public var syslogLevel: Syslog.Level
    public var syslogLine: String

    public init(fields: [(name: String, value: String)], syslogLevel: Syslog.Level, syslogLine: String) {
        self.fields = fields
        self.syslogLevel = syslogLevel
        self.syslogLine = syslogLine
    }
}

/// The journal through sd-journal (`sd_journal_sendv`), without ever making a caller wait for
/// it: entries go to a bounded queue that one thread of its own hands to journald. Why the
/// thread: sd-journal's socket is a blocking datagram socket, and a journald that stops
/// reading would block the sender for as long as it does; the person's answer and the next
/// request must not. What the queue cannot hold is counted and said once it drains.
///
/// Where no journald listens (these build machines, containers), syslog(3) as before, at
/// once: sd-journal reports success when the socket is missing, so the socket is looked for
/// first; an entry journald refuses (it stopped since) goes to syslog too.
public final class Journal: @unchecked Sendable {
    public static let shared = Journal()

    /// journald's native socket.
    public static let socketPath = "/run/systemd/journal/socket"
    /// Entries waiting for the thread: a few seconds of a busy machine's events.
    static let queueLimit = 1024

    private let condition = ThreadCondition()
    private var queue: [JournalEntry] = []
    private var sending = false
    private var dropped = 0
    private var threadStarted = false

    /// Whether journald listens (a socket at its path).
    public static var isListening: Bool {
        var info = stat()
        return stat(socketPath, &info) == 0 && (info.st_mode & S_IFMT) == S_IFSOCK
    }

    /// Hands `entry` on without waiting: queued for the journal, or logged to syslog now.
    public func send(_ entry: JournalEntry) {
        guard Journal.isListening else {
            Syslog.log(entry.syslogLevel, entry.syslogLine)
            return
        }
        let queued = condition.locked { () -> Bool in
            if !threadStarted {
                threadStarted = startDetachedThread { [self] in run() }
                if !threadStarted { return false }
            }
            if queue.count >= Journal.queueLimit {
                dropped += 1
                return true
            }
            queue.append(entry)
            condition.signal()
            return true
        }
        if !queued { Syslog.log(entry.syslogLevel, entry.syslogLine) }
    }

    /// Waits at most `limit` seconds for the queue to be handed over (a broker about to exit).
    public func flush(limit: Double) {
        let deadline = monotonicSeconds() + limit
        condition.locked {
            while !queue.isEmpty || sending {
                if monotonicSeconds() >= deadline { return }
                condition.wait(until: min(deadline, monotonicSeconds() + 0.05))
            }
        }
    }

    private func run() {
        while true {
            let (next, lost) = condition.locked { () -> (JournalEntry?, Int) in
                while queue.isEmpty {
                    sending = false
                    condition.broadcast()
                    condition.wait(until: monotonicSeconds() + 60)
                }
                sending = true
                let lost = dropped
                dropped = 0
                return (queue.removeFirst(), lost)
            }
            if lost > 0 {
                Syslog.log(.warning, "fingersealed: \(lost) events were not sent to the journal: it did not keep up")
            }
            guard let next else { continue }
            if Journal.sendv(next.fields) < 0 { Syslog.log(next.syslogLevel, next.syslogLine) }
        }
    }

    /// sd_journal_sendv over "NAME=value" buffers; its return value (negative errno on failure).
    static func sendv(_ fields: [(name: String, value: String)]) -> Int32 {
        let buffers = fields.map { field -> UnsafeMutableBufferPointer<UInt8> in
            let bytes = Array((field.name + "=" + field.value).utf8)
            let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: bytes.count)
            _ = buffer.initialize(from: bytes)
            return buffer
        }
        defer { for buffer in buffers { buffer.deallocate() } }
        var vectors = buffers.map { iovec(iov_base: UnsafeMutableRawPointer($0.baseAddress), iov_len: $0.count) }
        return sd_journal_sendv(&vectors, Int32(vectors.count))
    }
}
