import FingersealCore
import SystemKit

/// Work a flow leaves for after its reply, run on the connection's thread right after
/// `conversation.finish(reply)`, whatever the reply was:
/// - `add`: the success-side bookkeeping of an unlock (the audit entry, the failure count's
///   reset), so the person is answered first (failures are persisted before the answer). It
///   counts as pending for the user from the moment it is added, so the user's next request
///   starts only once it is written (`Bookkeeping.settle`).
/// - `hold`: a step-up made for a command, which lasts until the client hangs up.
/// Everything here must be bounded in time.
final class AfterReply: @unchecked Sendable {
    /// The account bookkeeping added now is counted for: the request's, or the one touch to
    /// sign in identified (`actingOn`).
    private var uid: UInt32
    private let pending: Bookkeeping
    private var work: [(uid: UInt32, run: () -> Void)] = []
    private var holding: (() -> Void)? = nil

    init(uid: UInt32, pending: Bookkeeping) {
        self.uid = uid
        self.pending = pending
    }

    func add(_ next: @escaping () -> Void) {
        pending.begin(uid)
        work.append((uid, next))
    }

    /// Bookkeeping added from now on is `uid`'s (touch to sign in found the account).
    func actingOn(_ uid: UInt32) { self.uid = uid }

    func hold(_ until: @escaping () -> Void) { holding = until }

    /// The connection stays open after the reply (a confirmation held for a command).
    var holds: Bool { holding != nil }

    func run() {
        let due = work
        work = []
        for next in due {
            next.run()
            pending.end(next.uid)
        }
        holding?()
        holding = nil
    }
}

/// Bookkeeping written after a reply, counted per user: a request waits (bounded) until the
/// user's earlier requests have written theirs, so it never reads a store that an answered
/// request is still updating.
final class Bookkeeping: @unchecked Sendable {
    private let condition = ThreadCondition()
    private var counts: [UInt32: Int] = [:]
    /// Bookkeeping is a few file writes; a request waits at most this long for it.
    static let settleLimit = 5.0

    func begin(_ uid: UInt32) {
        condition.locked { counts[uid, default: 0] += 1 }
    }

    func end(_ uid: UInt32) {
        condition.locked {
            counts[uid, default: 1] -= 1
            if counts[uid] == 0 { counts[uid] = nil }
            condition.broadcast()
        }
    }

    /// Waits until `uid` has no bookkeeping pending, at most `settleLimit`.
    func settle(_ uid: UInt32) {
        let deadline = monotonicSeconds() + Bookkeeping.settleLimit
        condition.locked {
            while counts[uid] != nil && monotonicSeconds() < deadline { condition.wait(until: deadline) }
        }
    }
}
