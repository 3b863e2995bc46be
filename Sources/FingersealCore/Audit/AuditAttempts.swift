import SystemKit

/// How many attempts (`AuditChain.attempts`) an account has written one by one, and the count
/// of the rest. The broker keeps one for all its requests (`VaultStore.attemptLimiter`);
/// tools and tests keep none and write every attempt.
///
/// Per account, a window opens with an attempt and lasts `policy.window` seconds. Its first
/// `policy.perWindow` attempts are written one by one; the rest are only counted, in memory
/// (no file read, no vault write: a flood costs the broker its requests and nothing more),
/// and the count is written as one entry once the window ends: with the account's next
/// attempt, by the broker soon after the end, or when the broker stops.
public final class AttemptLimiter: @unchecked Sendable {
    public struct Policy: Equatable, Sendable {
        /// Attempts written one by one per window.
        public let perWindow: Int
        /// The window's length, seconds.
        public let window: Int64

        public init(perWindow: Int, window: Int64) {
            self.perWindow = max(perWindow, 1)
            self.window = max(window, 1)
        }

        /// 30 in 10 minutes: well above what a person causes (a fallback at each sudo with the
        /// lid closed, a few wrong PINs, a cancelled step-up), so normal use is listed one by
        /// one; a flood writes at most 31 entries per window (4,464 a day, about 1 MiB).
        public static let standard = Policy(perWindow: 30, window: 600)
    }

    public enum Admission: Equatable, Sendable {
        /// Write the attempt, after `closing`: the count of the account's window that ended.
        case record(closing: AttemptTally?)
        /// Counted, not written. `first`: the first held back in this window, which ends at
        /// `until`.
        case counted(first: Bool, until: Int64)
    }

    /// An ended window's count, to be written to the account's trail.
    public struct Ended: Sendable {
        public let account: UserAccount
        public let tally: AttemptTally
    }

    private struct Window {
        let account: UserAccount
        let start: Int64
        var written = 0
        var tally: AttemptTally? = nil
    }

    public let policy: Policy
    private let lock = ThreadLock()
    /// Per uid: at most one per account that made an attempt within the last window.
    private var windows: [UInt32: Window] = [:]

    public init(policy: Policy = .standard) { self.policy = policy }

    /// A clock set back counts as the window's end: nothing is held back for longer than it.
    private func isOpen(_ window: Window, at now: Int64) -> Bool {
        now >= window.start && now &- window.start < policy.window
    }

    private func end(_ window: Window) -> Int64 { window.start &+ policy.window }

    /// Whether `entry`, an attempt of `account` at `now`, is written or counted.
    func admit(_ entry: AuditEntry, account: UserAccount, now: Int64) -> Admission {
        lock.locked {
            var closing: AttemptTally? = nil
            if let window = windows[account.uid], !isOpen(window, at: now) {
                closing = window.tally
                windows[account.uid] = nil
            }
            var window = windows[account.uid] ?? Window(account: account, start: now)
            defer { windows[account.uid] = window }
            // A new window always writes its first attempt, so `closing` is never dropped.
            if window.written < policy.perWindow {
                window.written += 1
                return .record(closing: closing)
            }
            let first = window.tally == nil
            var tally = window.tally ?? AttemptTally(at: now)
            tally.add(entry)
            window.tally = tally
            return .counted(first: first, until: end(window))
        }
    }

    /// Takes out the counts of the windows that ended by `now` (windows that ended with
    /// nothing held back are dropped).
    public func takeEnded(now: Int64) -> [Ended] {
        lock.locked {
            let ended = windows.filter { !isOpen($0.value, at: now) }
            for uid in ended.keys { windows[uid] = nil }
            return ended.values.compactMap { window in window.tally.map { Ended(account: window.account, tally: $0) } }
        }
    }

    /// Takes out every count held, ended or not: the broker is stopping.
    public func takeAll() -> [Ended] {
        lock.locked {
            let all = windows.values.compactMap { window in window.tally.map { Ended(account: window.account, tally: $0) } }
            windows = [:]
            return all
        }
    }

    /// Whether a window is still open. The broker does not exit idle while one is: a restart
    /// would give the account its allowance again.
    public func holdsOpenWindows(now: Int64) -> Bool {
        lock.locked { windows.values.contains { isOpen($0, at: now) } }
    }

    /// What is counted and not written yet for `uid`, and when its window ends.
    public func pending(uid: UInt32, now: Int64) -> (tally: AttemptTally, until: Int64)? {
        lock.locked {
            guard let window = windows[uid], let tally = window.tally else { return nil }
            return (tally, end(window))
        }
    }
}

/// Attempts counted, not written one by one: when the first and the last came, and how many
/// of each kind (`AuditCount`). Kinds are named while their text fits the entry's share of a
/// line (`kindsBudget`); attempts of kinds beyond are counted as `other`.
public struct AttemptTally: Equatable, Sendable {
    public private(set) var first: Int64
    public private(set) var last: Int64
    private(set) var counts: [AuditCount] = []
    public private(set) var other: UInt64 = 0
    private var budgetLeft = AttemptTally.kindsBudget

    /// Bytes of a line the named kinds may take: an entry must stay within
    /// `AuditFiles.maxLine` whatever the kinds' texts (each field at most `maxField`).
    static let kindsBudget = 1200

    init(at time: Int64) {
        first = time
        last = time
    }

    public var total: UInt64 { counts.reduce(other) { $0 &+ $1.count } }

    mutating func add(_ entry: AuditEntry) {
        first = min(first, entry.time)
        last = max(last, entry.time)
        if let index = counts.firstIndex(where: { $0.isKind(of: entry) }) {
            counts[index].count &+= 1
            return
        }
        let kind = AuditCount(entry, count: 1)
        // Twice the text (JSON may escape it) and the member names with the count.
        let cost = 2 * [kind.event, kind.action, kind.reason, kind.context, kind.result].reduce(0) { $0 + ($1?.utf8.count ?? 0) } + 80
        if cost <= budgetLeft {
            budgetLeft -= cost
            counts.append(kind)
        } else {
            other &+= 1
        }
    }

    /// The entry that records it (numbered, chained and sealed by the writer).
    func entry(time: Int64, vault: String) -> AuditEntry {
        var entry = AuditEntry(seq: 0, time: time, vault: vault, event: AuditEntry.counted, prev: "")
        entry.since = first
        entry.until = last
        entry.counts = counts
        entry.other = other > 0 ? other : nil
        return entry
    }
}
