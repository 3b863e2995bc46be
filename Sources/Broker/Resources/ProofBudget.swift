import SystemKit

/// How fast an account may have proofs signed: each is a TPM command, and the TPM serves
/// every account's unlocks one command at a time. A token bucket per account: a burst of
/// `burst`, then `perSecond`. A program making one proof per API request stays well inside;
/// a loop asking without end is refused before it reaches the TPM.
final class ProofBudget: @unchecked Sendable {
    static let burst = 40.0
    static let perSecond = 20.0
    /// Accounts remembered at once; a full bucket is the same as none, so those go first.
    static let maxAccounts = 4096

    private let lock = ThreadLock()
    private var buckets: [UInt32: (tokens: Double, at: Double)] = [:]

    /// The accounts remembered now.
    var count: Int { lock.locked { buckets.count } }

    /// Takes one proof from `uid`'s budget; false when it is spent.
    func take(_ uid: UInt32, now: Double = monotonicSeconds()) -> Bool {
        lock.locked {
            if buckets[uid] == nil && buckets.count >= ProofBudget.maxAccounts { makeRoom(now) }
            let last = buckets[uid] ?? (ProofBudget.burst, now)
            // A clock that goes back refills nothing, and moves nothing back.
            let at = max(now, last.at)
            let tokens = ProofBudget.refilled(last, now: at)
            buckets[uid] = (tokens >= 1 ? tokens - 1 : tokens, at)
            return tokens >= 1
        }
    }

    private static func refilled(_ bucket: (tokens: Double, at: Double), now: Double) -> Double {
        min(ProofBudget.burst, bucket.tokens + max(now - bucket.at, 0) * ProofBudget.perSecond)
    }

    /// Forgets the full buckets (the same as none), else the one used longest ago. Under the lock.
    private func makeRoom(_ now: Double) {
        buckets = buckets.filter { ProofBudget.refilled($0.value, now: now) < ProofBudget.burst }
        if buckets.count >= ProofBudget.maxAccounts, let oldest = buckets.min(by: { $0.value.at < $1.value.at })?.key {
            buckets[oldest] = nil
        }
    }
}
