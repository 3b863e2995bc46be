@testable import Broker
@testable import fingerseal
@testable import FingersealCore
import FingersealWire
import Testing
@testable import TestSupport

/// `doctor`'s clock check, with the clock set where a test cannot set the machine's: a clock
/// behind the vault's own records (the service) or behind this release (the command).
/// libfaketime cannot run Swift programs (CommandLine.arguments comes back empty), so the
/// end-to-end doctor tests keep the real clock and these give each check its times.
@Suite struct DoctorClockTests {
    @Test func theServiceSaysAClockBehindTheVaultIsWrongAndHowToFixIt() throws {
        let vault = try TestVault()
        try vault.create()
        var status = try #require(try Vault.status(vault.store))
        #expect(status.createdAt == 1_000_000)

        let plausible = DoctorCommand.clock(now: 1_000_000 + 86_400, status)
        #expect(plausible.status == .ok && plausible.message.hasPrefix("The system clock is plausible"), "\(plausible)")
        // Within the slack: a second's jitter is not a wrong clock.
        #expect(DoctorCommand.clock(now: 1_000_000 - DoctorCommand.clockSlack, status).status == .ok)

        let behind = DoctorCommand.clock(now: 1_000_000 - 86_400, status)
        #expect(behind.status == .problem, "\(behind)")
        #expect(behind.message.contains("1970-01-11") && behind.message.contains("1970-01-12"), "\(behind.message)")
        #expect(!behind.fix.isEmpty, "the finding says how to fix it")

        status.lastRefreshAt = 5_000_000
        let beforeRefresh = DoctorCommand.clock(now: 2_000_000, status)
        #expect(beforeRefresh.status == .problem && beforeRefresh.message != behind.message, "\(beforeRefresh)")
        #expect(beforeRefresh.fix == behind.fix)
    }

    @Test func theCommandSaysAClockBeforeThisReleaseIsWrong() throws {
        let before = try #require(Doctor.clock(now: Fingerseal.writtenAt - 86_400, checkedByService: true))
        #expect(before.status == .problem && !before.fix.isEmpty, "\(before)")
        // After the release: the service's finding is the one shown; without it, this side's.
        #expect(Doctor.clock(now: Fingerseal.writtenAt + 60, checkedByService: true) == nil)
        #expect(Doctor.clock(now: Fingerseal.writtenAt + 60, checkedByService: false)?.status == .ok)
    }
}
