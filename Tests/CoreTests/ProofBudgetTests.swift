@testable import Broker
import Testing

/// How fast an account may have proofs signed (each is a TPM command): a burst, then a steady
/// rate, per account; one account's loop leaves another's budget whole.
@Suite struct ProofBudgetTests {
    @Test func aBurstThenTheSteadyRatePerAccount() {
        let budget = ProofBudget()
        let start = 1000.0
        let burst = Int(ProofBudget.burst)
        #expect((0..<burst).allSatisfy { _ in budget.take(1000, now: start) }, "a burst is allowed")
        #expect(!budget.take(1000, now: start), "then refused")
        #expect(budget.take(1001, now: start), "another account is not held back")
        // One proof's worth of time later, one more.
        #expect(budget.take(1000, now: start + 1.01 / ProofBudget.perSecond))
        #expect(!budget.take(1000, now: start + 1.01 / ProofBudget.perSecond))
        // A clock that goes back gives nothing.
        #expect(!budget.take(1000, now: start - 10))
        // After a quiet while the burst is back, never more.
        #expect((0..<burst).allSatisfy { _ in budget.take(1000, now: start + 60) })
        #expect(!budget.take(1000, now: start + 60))
    }

    @Test func theAccountsRememberedAreBounded() {
        let budget = ProofBudget()
        for uid in 0..<UInt32(ProofBudget.maxAccounts + 100) { _ = budget.take(uid, now: 0) }
        #expect(budget.count <= ProofBudget.maxAccounts)
    }
}
