@testable import FingersealCore
import FingersealWire
import FoundationEssentials
import Glibc
import Localization
import SystemKit
import Testing
@testable import TestSupport
import ZoneInfo

/// The audit trail's two chains, what `verify` says of rotation, and the broker's count of
/// attempts, each on its own (a vault in a temp directory, clocks the test moves).
@Suite struct AuditChainTests {
    typealias Trail = AuditTests.Trail
    static let start: Int64 = 1_800_000_000
    static let cancelled = AuditEvent.stepUp(context: "contacts", result: .cancelled)

    /// The security chain has what needs a finger, the PIN or the account password (or is
    /// rare by nature); the attempts' chain what anyone running as the user can cause.
    @Test func eachEventGoesToItsChain() throws {
        let security: [AuditEvent] = [
            .signIn(issuer: "https://idp.example.org/o", flow: "device"), .unlock(method: .finger, via: .pam),
            .stepUp(context: "contacts", result: .success), .reveal(context: "contacts", fileID: "f"), .lockout(.pin), .logout,
            .pinReset, .fprintdSetConfirmed(fingers: 2), .sealedToTPM(slots: ["pin"]), .vaultReplacedAfterTPMChange(previous: "v"),
        ]
        let attempts: [AuditEvent] = [
            .fallback(reason: .outcome(.noReader)), .failure(action: .unlock, reason: .outcome(.wrongPIN)),
        ] + [Outcome.cancelled, .noMatch, .wrongPIN, .timedOut, .lockedOut, .noPIN].map { .stepUp(context: "contacts", result: $0) }
        #expect(security.allSatisfy { $0.chain == .security } && attempts.allSatisfy { $0.chain == .attempts })

        let t = try Trail()
        t.record(security + attempts)
        let stored = { (chain: AuditChain) in
            t.lines(t.path(chain)).compactMap { AuditLine.parse($0[...])?.entry.event }
        }
        #expect(stored(.security) == security.map { $0.entry(time: 0, vault: "").event })
        #expect(stored(.attempts) == attempts.map { $0.entry(time: 0, vault: "").event })
        #expect(try t.verify() == AuditVerification(events: security.count + attempts.count, problem: nil, interruptedAppend: false))
    }

    /// The attack on one trail, without a broker: a reveal, then attempts enough to rotate
    /// the attempts' chain many times over. The reveal stays, the security file is not
    /// touched, and each attempts file stays within its limit.
    @Test func noNumberOfAttemptsRotatesASecurityEventAway() throws {
        let t = try Trail(attemptsFileLimit: 3000)
        t.record([.reveal(context: "contacts", fileID: "assignment-7.sealed")])
        let securityFile = readFile(t.path(.security))
        for _ in 0..<150 { t.record([AuditChainTests.cancelled]) }
        #expect(readFile(t.path(.security)) == securityFile)
        for chain in [t.path(.attempts), t.olderPath(.attempts)] { #expect((readFile(chain) ?? []).count <= 3000) }
        let records = try t.trail.list().records
        #expect(records.first?.event == "reveal" && records.first?.chain == .security)
        let verification = try t.verify()
        #expect(verification.intact, "\(String(describing: verification.problem))")
        #expect(verification.rotatedAway.map(\.chain) == [.attempts])
        #expect((verification.rotatedAway.first?.through ?? 0) > 100)
    }

    /// Lines and files are sealed under a key per chain: moved from one chain to the other,
    /// they do not verify.
    @Test func aLineOrAFileOfOneChainDoesNotVerifyInTheOther() throws {
        let t = try Trail()
        t.record(AuditTests.sixEvents + AuditTests.sixAttempts)
        #expect(try t.verify().intact)
        let security = t.lines(t.path(.security)), attempts = t.lines(t.path(.attempts))

        var mixed = security
        mixed[2] = attempts[2]
        t.write(mixed, file: t.path(.security))
        let moved = try t.verify().problem
        #expect(moved?.kind == .edited && moved?.file == AuditFiles.current && moved?.line == 3, "\(String(describing: moved))")

        t.write(attempts, file: t.path(.security))
        t.write(security, file: t.path(.attempts))
        let swapped = try t.verify().problem
        #expect(swapped?.kind == .edited && swapped?.file == AuditFiles.current && swapped?.line == 1, "\(String(describing: swapped))")

        // The security chain back: the attempts' file is still the wrong one.
        t.write(security, file: t.path(.security))
        #expect(try t.verify().problem?.file == AuditFiles.attempts)
        t.write(attempts, file: t.path(.attempts))
        #expect(try t.verify().intact)
    }

    /// `audit --verify` says, for each chain, which entries rotation took and from when the
    /// oldest kept one is, in the local time the CLI shows elsewhere; with --json, per chain.
    @Test func verifySaysWhatRotationTookFromEachChain() throws {
        let t = try Trail(fileLimit: 2000, attemptsFileLimit: 2000, broker: true)
        for _ in 0..<30 { t.record([.unlock(method: .pin, via: .cli), .fallback(reason: .outcome(.noReader))]) }
        let verification = try t.verify()
        #expect(verification.intact, "\(String(describing: verification.problem))")
        func oldest(_ chain: AuditChain) throws -> UInt64 {
            try #require(t.lines(t.olderPath(chain)).first.flatMap { AuditLine.parse($0[...]) }).entry.seq
        }
        let events = try oldest(.security) - 1, attempts = try oldest(.attempts) - 1
        #expect(verification.rotatedAway == [AuditRotation(chain: .security, through: events, oldestKept: AuditChainTests.start),
                                             AuditRotation(chain: .attempts, through: attempts, oldestKept: AuditChainTests.start)])
        let utc = try Zone.named("Etc/UTC")
        let when = Localization.with(zone: utc) { Localization.localTime(AuditChainTests.start) }
        let cli = try t.cli(["audit", "--verify"])
        #expect(cli.status == 0, "\(cli.all)")
        #expect(cli.stdout == """
            The audit trail is intact: \(verification.events) events.
            Events 1 to \(events) were rotated away; the oldest kept is from \(when).
            Attempts 1 to \(attempts) were rotated away; the oldest attempt kept is from \(when).

            """, "\(cli.all)")
        let json = try t.cli(["audit", "--verify", "--json"])
        #expect(json.status == 0)
        #expect(json.stdout.contains("\"trail\" : \"security\"") && json.stdout.contains("\"trail\" : \"attempts\"")
                && json.stdout.contains("\"through\" : \(attempts)") && json.stdout.contains("\"oldest_kept\" : \"2027-01-15T08:00:00Z\""),
                "\(json.stdout)")
    }

    /// The limiter: `perWindow` attempts written per window, the rest counted with no vault or
    /// file write, security events written all along, and the count written as one entry with
    /// the next attempt after the window.
    @Test func attemptsBeyondTheAllowanceAreCountedThenWrittenAsOne() throws {
        let clock = ManualClock(AuditChainTests.start)
        let limiter = AttemptLimiter(policy: .init(perWindow: 3, window: 600))
        let t = try Trail(clock: clock, limiter: limiter)
        for _ in 0..<3 {
            clock.time += 1
            #expect(t.trail.record(AuditChainTests.cancelled, vault: nil))
        }
        let vaultFile = t.directory + "/" + VaultFiles.vault
        let (vault, attempts) = (readFile(vaultFile), readFile(t.path(.attempts)))
        for _ in 0..<7 {
            clock.time += 1
            #expect(t.trail.record(AuditChainTests.cancelled, vault: nil))
        }
        clock.time += 1
        t.trail.record(.failure(action: .unlock, reason: .outcome(.wrongPIN)), vault: nil)
        #expect(readFile(vaultFile) == vault && readFile(t.path(.attempts)) == attempts, "counting wrote nothing")
        let pending = try #require(limiter.pending(uid: t.store.location.account.uid, now: clock.time))
        #expect(pending.tally.total == 8 && pending.tally.first == AuditChainTests.start + 4 && pending.until == AuditChainTests.start + 601)
        // A security event in the middle of it is written at once.
        t.trail.record(.reveal(context: "contacts", fileID: "f"), vault: nil)
        #expect(try t.trail.list().records.last?.event == "reveal")

        // The window over: the next attempt writes the count first, then itself.
        clock.time = AuditChainTests.start + 601
        t.trail.record(AuditChainTests.cancelled, vault: nil)
        #expect(limiter.pending(uid: t.store.location.account.uid, now: clock.time) == nil)
        let records = try t.trail.list().records
        #expect(records.map(\.event) == ["step-up", "step-up", "step-up", "reveal", "attempts-counted", "step-up"])
        #expect(records.map(\.seq) == [1, 2, 3, 1, 4, 5])
        let from = isoTimestamp(AuditChainTests.start + 4), to = isoTimestamp(AuditChainTests.start + 11)
        #expect(records[4].sentence == "8 more attempts, from \(from) to \(to), were counted and not listed one by one. "
                + "7 times: Step-up for contacts: cancelled. 1 time: Unlock did not succeed: the PIN was wrong.")
        let count = try JSONDecoder().decode(AuditEntry.self, from: Data(records[4].json.utf8))
        #expect(count.since == AuditChainTests.start + 4 && count.until == AuditChainTests.start + 11 && count.other == nil)
        #expect(count.counts?.map(\.count) == [7, 1] && count.trail == "attempts" && count.after == 1)
        #expect(try t.verify() == AuditVerification(events: 6, problem: nil, interruptedAppend: false))
    }

    /// What the broker does with the counts: none taken while the window is open (and the
    /// window keeps an idle broker running); taken once it ended, or all of them when the
    /// broker stops; and written to the account's trail.
    @Test func theBrokerTakesCountsWhenTheirWindowEndsOrItStops() throws {
        let clock = ManualClock(AuditChainTests.start)
        let limiter = AttemptLimiter(policy: .init(perWindow: 1, window: 600))
        let t = try Trail(clock: clock, limiter: limiter)
        for _ in 0..<5 { t.trail.record(AuditChainTests.cancelled, vault: nil) }
        #expect(limiter.holdsOpenWindows(now: clock.time))
        #expect(limiter.takeEnded(now: clock.time + 599).isEmpty)
        let ended = limiter.takeEnded(now: clock.time + 600)
        #expect(ended.map(\.tally.total) == [4] && ended.first?.account == t.store.location.account)
        #expect(!limiter.holdsOpenWindows(now: clock.time) && limiter.takeAll().isEmpty, "taken once")
        for count in ended { #expect(t.trail.record(count.tally)) }

        for _ in 0..<3 { t.trail.record(AuditChainTests.cancelled, vault: nil) }
        let stopping = limiter.takeAll()
        #expect(stopping.map(\.tally.total) == [2] && !limiter.holdsOpenWindows(now: clock.time))
        for count in stopping { #expect(t.trail.record(count.tally)) }
        let records = try t.trail.list().records
        #expect(records.map(\.event) == ["step-up", "attempts-counted", "step-up", "attempts-counted"])
        #expect(try t.verify().intact)
    }

    /// Windows are per account; a clock set back ends the window (nothing is held longer).
    @Test func eachAccountHasItsOwnWindow() throws {
        let limiter = AttemptLimiter(policy: .init(perWindow: 2, window: 600))
        let alice = UserAccount(name: "a", uid: 70001, gid: 70001, home: "/"), bob = UserAccount(name: "b", uid: 70002, gid: 70002, home: "/")
        let entry = AuditChainTests.cancelled.entry(time: AuditChainTests.start, vault: "")
        func admit(_ account: UserAccount, at time: Int64 = AuditChainTests.start) -> AttemptLimiter.Admission {
            limiter.admit(entry, account: account, now: time)
        }
        #expect(admit(alice) == .record(closing: nil) && admit(alice) == .record(closing: nil))
        #expect(admit(alice) == .counted(first: true, until: AuditChainTests.start + 600))
        #expect(admit(alice) == .counted(first: false, until: AuditChainTests.start + 600))
        #expect(admit(bob) == .record(closing: nil), "bob's allowance is his own")
        guard case let .record(closing?) = admit(alice, at: AuditChainTests.start - 5) else {
            Issue.record("a clock set back must end the window and hand over its count")
            return
        }
        #expect(closing.total == 2)
    }

    /// However many kinds, the count fits one line: kinds beyond its share are `other`.
    @Test func aCountOfManyKindsFitsOneLine() throws {
        let clock = ManualClock(AuditChainTests.start)
        let limiter = AttemptLimiter(policy: .init(perWindow: 1, window: 600))
        let t = try Trail(clock: clock, limiter: limiter)
        for index in 0..<41 {
            let context = String(repeating: "c", count: 60) + String(index + 1000)
            t.trail.record(.stepUp(context: context, result: .cancelled), vault: nil)
        }
        clock.time += 600
        #expect(t.trail.record(AuditChainTests.cancelled, vault: nil))
        let lines = t.lines(t.path(.attempts))
        #expect(lines.count == 3 && lines.allSatisfy { $0.count <= AuditFiles.maxLine })
        let count = try #require(AuditLine.parse(lines[1][...])).entry
        let named = count.counts?.count ?? 0
        #expect(named > 0 && named < 40 && Int(count.other ?? 0) == 40 - named, "\(named) named, \(count.other ?? 0) other")
        #expect(try t.trail.list().records[1].sentence.contains("other kinds of attempt."))
        #expect(try t.verify().intact)
    }
}

/// The attack of issue 19, item 9, through a broker in the foreground: code running as a user
/// (fs-alice, made with useradd), with no finger and no PIN, sends thousands of cancelled
/// step-ups from several processes at once, to push a recorded reveal out of the trail.
@Suite struct AuditFloodTests {
    static let pin = "8642"
    /// As long as a context may be: the longest lines, the fewest step-ups to fill 2 MiB.
    static let context = "flood-" + String(repeating: "x", count: 58)
    static let processes = 8
    static let perProcess = 1000

    @Test func cancelledStepUpsCannotPushARevealOutOfTheTrail() throws {
        let alice = TestUsers.alice
        try #require(TestUsers.ensure(alice))
        let account = try #require(getpwnam(alice)?.pointee)
        let rig = try ReaderBroker(driver: "none", reader: false)
        let asAlice = ["HOME": "/nonexistent"]
        let provisioned = try rig.cli(["pin", "set", "--user", alice, "--pin-fd", "3"], fd3: AuditFloodTests.pin + "\n")
        #expect(provisioned.status == 0, "\(provisioned.all)")

        // A reveal of a sealed file, after a step-up with the PIN: the event to flush out.
        let files = rig.files.file("alice")
        #expect(mkdir(files, 0o700) == 0 && chown(files, account.pw_uid, account.pw_gid) == 0)
        let plain = files + "/plain", sealed = files + "/assignment.sealed"
        writeFile(plain, Array("health details\n".utf8))
        #expect(chown(plain, account.pw_uid, account.pw_gid) == 0)
        let seal = try rig.cli(["seal", "--context", AuditFloodTests.context, "--out", sealed, plain], as: alice, environment: asAlice)
        #expect(seal.status == 0, "\(seal.all)")
        let revealed = try rig.cli(["reveal", "--no-notice", "--pin-fd", "3", sealed], fd3: AuditFloodTests.pin + "\n", as: alice,
                                   environment: asAlice)
        #expect(revealed.status == 0 && revealed.stdout == "health details\n", "\(revealed.all)")

        // The flood: step-ups that ask for the PIN and are cancelled at the prompt (Ctrl-C).
        let started = VirtualSensor.now()
        let flood = try (0..<AuditFloodTests.processes).map { _ in
            try Child(Paths.buildDirectory + "/wire-client", [rig.broker.socketPath, "--as", alice, "--cancel-at-ask", "--repeat",
                                                              String(AuditFloodTests.perProcess), "step-up",
                                                              "arg=\(AuditFloodTests.context)"])
        }
        for child in flood {
            let result = child.finish(limit: 120)
            #expect(result.status == 0 && result.stdout == "results: cancelled=\(AuditFloodTests.perProcess)\n", "\(result.all)")
        }
        let total = AuditFloodTests.processes * AuditFloodTests.perProcess
        print("audit flood: \(total) cancelled step-ups in \(Int((VirtualSensor.now() - started) * 1000)) ms")

        // The reveal is still listed; the first attempts one by one, the rest counted.
        let perWindow = AttemptLimiter.Policy.standard.perWindow
        func listing() throws -> [String] {
            let listed = try rig.cli(["audit"], as: alice, environment: asAlice)
            #expect(listed.status == 0, "\(listed.all)")
            return listed.stdout.split(separator: "\n").map(String.init)
        }
        let during = try rig.cli(["audit"], as: alice, environment: asAlice)
        func isTheReveal(_ line: some StringProtocol) -> Bool {
            line.hasPrefix("Event ") && line.contains(": Revealed ") && line.hasSuffix(" for \(AuditFloodTests.context).")
        }
        #expect(during.stdout.split(separator: "\n").contains { isTheReveal($0) }, "\(during.all)")
        #expect(during.stdout.split(separator: "\n").filter { $0.hasPrefix("Attempt ") }.count == perWindow, "\(during.stdout)")
        #expect(during.stderr.contains("\(total - perWindow) more attempts since "), "\(during.stderr)")
        func verified() throws {
            let verify = try rig.cli(["audit", "--verify"], as: alice, environment: asAlice)
            #expect(verify.status == 0 && verify.stdout.hasPrefix("The audit trail is intact: ")
                    && !verify.stdout.contains("rotated away"), "\(verify.all)")
        }
        try verified()
        let directory = rig.broker.vaultDirectory(uid: account.pw_uid)
        let attemptsSize = AuditFiles.all.dropFirst(2).reduce(0) { $0 + (readFile(directory + "/" + $1) ?? []).count }
        #expect(attemptsSize < 32 << 10, "the attempts' files are bounded: \(attemptsSize) bytes")

        // The broker stops as systemd stops it: the count is written as one entry, listed
        // after a start.
        #expect(rig.broker.terminate() == 0)
        try rig.broker.start()
        let after = try listing()
        #expect(after.contains { isTheReveal($0) }, "\(after)")
        let counted = after.filter { $0.contains("were counted and not listed one by one.") }
        #expect(counted.count == 1 && counted.first?.hasPrefix("Attempt \(perWindow + 1), ") == true, "\(after)")
        #expect(counted.first?.contains(" \(total - perWindow) more attempts, from ") == true, "\(counted)")
        #expect(counted.first?.hasSuffix("\(total - perWindow) times: Step-up for \(AuditFloodTests.context): cancelled.") == true,
                "\(counted)")
        try verified()
    }
}
