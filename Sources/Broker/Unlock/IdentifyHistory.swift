import FingersealCore
import FoundationEssentials
import Glibc
import SystemKit

/// What touch to sign in allows fingers nobody matched, for the whole machine (issue 31 §4).
/// Every unknown finger at a kiosk is a free guess against the whole gallery (the false-match
/// arithmetic is in the README), so they are budgeted three ways (`identify_*` settings):
/// - `pauseAfter` in a row pause it for `pause` seconds;
/// - `lockAfter` since the last sign-in with a user name lock it until the next one (a
///   stranger at an unattended kiosk cannot go on at the pause's pace all night);
/// - `dailyMax` in 24 hours stop it until the oldest of them is a day old, whatever
///   sign-ins happened meanwhile.
/// Nobody is counted against: no account was claimed.
public struct IdentifyLimits: Equatable, Sendable {
    public var pauseAfter: Int
    public var pause: Int
    public var lockAfter: Int
    public var dailyMax: Int

    init(_ options: Options) {
        pauseAfter = options.identifyPauseAfter
        pause = options.identifyPause
        lockAfter = options.identifyLockAfter
        dailyMax = options.identifyDailyMax
    }
}

/// The budget as it stands, kept in the broker's store (`STATE/identify`), so neither a
/// restart of the broker nor its idle exit forgets it; plus, in memory only, when each
/// account was last found (the gallery's order).
final class IdentifyHistory: @unchecked Sendable {
    /// What is kept on disk. Times are the wall clock's (they must outlive the process).
    struct Budget: Codable, Equatable {
        /// Unknown fingers in a row.
        var inARow = 0
        var pausedUntil: Int64? = nil
        /// Unknown fingers since the last sign-in with a user name.
        var sinceNamedSignIn = 0
        /// When each unknown finger of the last 24 hours came (at most `dailyMax` kept).
        var lastDay: [Int64] = []
    }

    /// Why touch to sign in does not run now.
    enum Stop: Equatable {
        case paused(seconds: Int)
        case locked
        case dailyLimit
    }

    static let fileName = "identify"
    static let fileLimit = 256 << 10
    static let day: Int64 = 86_400

    private let lock = ThreadLock()
    private let directory: String?
    private var budget: Budget
    /// uid → a number that grows with each account found (no clock needed to order them).
    private var found: [UInt32: UInt64] = [:]
    private var counter: UInt64 = 0

    /// `directory`: the store, where the budget is read at start and written at each change
    /// (nil: memory only, for tests of the rule).
    init(directory: String?) {
        self.directory = directory
        budget = directory.flatMap(IdentifyHistory.read) ?? Budget()
    }

    /// Why touch to sign in may not run now, or nil.
    func stop(_ limits: IdentifyLimits, now: Int64) -> Stop? {
        lock.locked { stopLocked(limits, now: now) }
    }

    private func stopLocked(_ limits: IdentifyLimits, now: Int64) -> Stop? {
        if let until = budget.pausedUntil {
            // A clock set back never lengthens a pause beyond its own length.
            let left = min(until - now, Int64(limits.pause))
            if left > 0 { return .paused(seconds: Int(left)) }
        }
        if budget.sinceNamedSignIn >= limits.lockAfter { return .locked }
        if budget.lastDay.filter({ now - $0 < IdentifyHistory.day && $0 <= now }).count >= limits.dailyMax { return .dailyLimit }
        return nil
    }

    /// Counts a finger nobody matched; the stop it starts, if any.
    func noMatch(_ limits: IdentifyLimits, now: Int64) -> Stop? {
        lock.locked {
            budget.inARow += 1
            budget.sinceNamedSignIn += 1
            budget.lastDay = Array((budget.lastDay.filter { now - $0 < IdentifyHistory.day && $0 <= now } + [now]).suffix(limits.dailyMax))
            if budget.inARow >= limits.pauseAfter {
                budget.inARow = 0
                budget.pausedUntil = now + Int64(limits.pause)
            }
            save()
            return stopLocked(limits, now: now)
        }
    }

    /// A touch found its account: the run of unknown fingers ends (the lock and the day's
    /// count stay).
    func matched(_ uid: UInt32) {
        lock.locked {
            if budget.inARow != 0 {
                budget.inARow = 0
                save()
            }
            counter += 1
            if found.count >= IdentifyFlow.maxAccounts, found[uid] == nil,
               let oldest = found.min(by: { $0.value < $1.value })?.key {
                found[oldest] = nil
            }
            found[uid] = counter
        }
    }

    /// Someone signed in with a user name (a finger, the PIN, or a password the broker
    /// checked): a person is at the machine again, and a lock ends.
    func signedInWithName() {
        lock.locked {
            guard budget.sinceNamedSignIn != 0 else { return }
            budget.sinceNamedSignIn = 0
            save()
        }
    }

    /// A lock is waiting for a sign-in with a user name.
    func isLocked(_ limits: IdentifyLimits) -> Bool {
        lock.locked { budget.sinceNamedSignIn >= limits.lockAfter }
    }

    /// A pause is running: the broker stays until it has ended (its idle exit waits).
    func holdsOpenPause(now: Int64) -> Bool {
        lock.locked { budget.pausedUntil.map { $0 > now } ?? false }
    }

    /// When each account was last found, as an order.
    func recency() -> [UInt32: UInt64] {
        lock.locked { found }
    }

    // MARK: the file

    private static func read(_ directory: String) -> Budget? {
        do {
            guard let bytes = try SafeDirectory(path: directory, owner: geteuid()).read(fileName, sizeLimit: fileLimit) else { return nil }
            return try JSONDecoder().decode(Budget.self, from: Data(bytes))
        } catch {
            // A budget that cannot be read starts with a lock: nothing is spared by damage.
            Syslog.log(.warning, "fingersealed: identify: \(directory)/\(fileName) cannot be read (\(error)); touch to sign in "
                       + "stays locked until a sign-in with a user name")
            return Budget(inARow: 0, pausedUntil: nil, sinceNamedSignIn: Int.max / 2, lastDay: [])
        }
    }

    /// Writes the budget (called with the lock held). A failure is logged; memory still
    /// counts for this broker's life.
    private func save() {
        guard let directory else { return }
        do {
            let bytes = Array(try JSONEncoder().encode(budget))
            _ = try SafeDirectory(path: directory, owner: geteuid()).replace(IdentifyHistory.fileName, with: bytes)
        } catch {
            Syslog.log(.warning, "fingersealed: identify: the budget of unknown fingers was not written: \(error)")
        }
    }
}
