import FingersealCore
import SodiumKit
import SystemKit

/// How much payload memory (what `seal` and `reveal` stream in) the broker holds at once: per
/// user and in all. Locked memory is finite (LimitMEMLOCK in the unit), so a caller holds
/// only what it has sent, within its own share, and a user who has used theirs waits for
/// their own requests, not for anyone else's memory.
final class PayloadBudget: @unchecked Sendable {
    /// One largest sealed file while it grows (the old buffer and the new one are both held
    /// for the copy), and no more.
    static let perUser = SealedFile.maxPlaintext / 2 * 3 + (1 << 20)
    /// Two users at their largest at once.
    static let total = 2 * perUser

    private let lock = ThreadLock()
    private var held: [UInt32: Int] = [:]
    private var all = 0

    /// Takes `bytes` for `uid`; false when that would pass the user's share or the total.
    func reserve(_ bytes: Int, for uid: UInt32) -> Bool {
        lock.locked {
            let mine = held[uid, default: 0]
            guard bytes <= PayloadBudget.perUser - mine, bytes <= PayloadBudget.total - all else { return false }
            held[uid] = mine + bytes
            all += bytes
            return true
        }
    }

    func release(_ bytes: Int, for uid: UInt32) {
        lock.locked {
            let left = held[uid, default: 0] - bytes
            held[uid] = left > 0 ? left : nil
            all = max(all - bytes, 0)
        }
    }

    /// What is held now (the benchmarks and tests read it).
    var inUse: Int { lock.locked { all } }
}

/// One request's payload in secure memory, grown as the data arrives (doubling, from a small
/// start) and counted against the budget for as long as it lives.
final class PayloadBuffer {
    private(set) var bytes: SecureBytes
    private let budget: PayloadBudget
    private let uid: UInt32
    /// The most it may hold, and the room kept beyond that (the tag `seal` appends in place).
    private let limit: Int
    private let spare: Int
    static let initialCapacity = 64 * 1024

    init(budget: PayloadBudget, uid: UInt32, limit: Int, spare: Int) throws {
        self.budget = budget
        self.uid = uid
        self.limit = limit
        self.spare = spare
        let first = min(PayloadBuffer.initialCapacity, limit + spare)
        guard budget.reserve(first, for: uid) else { throw FingersealError(.unavailable, Messages.payloadBudgetSpent) }
        do { bytes = try SecureBytes(capacity: first) } catch {
            budget.release(first, for: uid)
            throw FingersealError(.systemError, Messages.secureMemory)
        }
    }

    deinit { budget.release(bytes.capacity, for: uid) }

    /// Appends `chunk`, growing first when it does not fit. Throws `.usage` past the limit and
    /// `.unavailable` when the budget has no room for the growth.
    func append(_ chunk: UnsafeRawBufferPointer, tooLarge: @autoclosure () -> String) throws {
        guard chunk.count <= limit - bytes.count else { throw FingersealError(.usage, tooLarge()) }
        if chunk.count > bytes.capacity - bytes.count {
            let wanted = min(max(bytes.capacity * 2, bytes.count + chunk.count), limit + spare)
            guard budget.reserve(wanted, for: uid) else { throw FingersealError(.unavailable, Messages.payloadBudgetSpent) }
            do {
                let larger = try bytes.grown(toCapacity: wanted)
                budget.release(bytes.capacity, for: uid)
                bytes = larger
            } catch {
                budget.release(wanted, for: uid)
                throw FingersealError(.systemError, Messages.secureMemory)
            }
        }
        bytes.append(contentsOf: chunk)
    }
}
