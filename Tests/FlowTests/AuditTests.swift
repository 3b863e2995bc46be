import CPAM
@testable import FingersealCore
import FingersealWire
import FoundationEssentials
import Glibc
import PAMKit
import SystemKit
import Testing
@testable import TestSupport

/// The audit trail: the keyed chain, every kind of tampering, crashes, rotation, and the
/// events the real flows record.
@Suite struct AuditTests {
    static let pin = "1357"

    /// A vault made in this process, with a trail recorded here; with `broker`, in a broker's
    /// store (root's vault, where the CLI's commands find it through that broker), else in a
    /// temp directory of its own.
    struct Trail {
        let temp: TempDirectory
        let broker: TestBroker?
        let store: VaultStore
        let vault: UnlockedVault
        var trail: AuditTrail
        var directory: String { store.location.directory }
        var path: String { directory + "/" + AuditFiles.current }
        var olderPath: String { directory + "/" + AuditFiles.older }
        func path(_ chain: AuditChain) -> String { directory + "/" + chain.currentFile }
        func olderPath(_ chain: AuditChain) -> String { directory + "/" + chain.olderFile }

        init(fileLimit: Int? = nil, attemptsFileLimit: Int? = nil, broker withBroker: Bool = false,
             clock: any FingersealCore.Clock = FixedClock(time: 1_800_000_000), limiter: AttemptLimiter? = nil) throws {
            temp = try TempDirectory()
            broker = withBroker ? try TestBroker() : nil
            guard let account = try UserAccount.current() else { throw TestFailure("no account") }
            let directory = broker?.vaultDirectory(uid: account.uid) ?? temp.path + "/fingerseal"
            store = VaultStore(location: VaultLocation(directory: directory, account: account), lockTimeout: 10,
                               attemptLimiter: limiter)
            vault = try Vault.create(store, pin: PINKeyslot(pin: secret(AuditTests.pin), cost: .fastForTests),
                                     clock: FixedClock(time: 1_000_000))
            trail = AuditTrail(store: store, clock: clock, sink: .none)
            if let fileLimit { trail.fileLimit = fileLimit }
            if let attemptsFileLimit { trail.attemptsFileLimit = attemptsFileLimit }
        }

        func record(_ events: [AuditEvent], sourceLocation: SourceLocation = #_sourceLocation) {
            for event in events { #expect(trail.record(event, vault: vault), sourceLocation: sourceLocation) }
        }

        func verify() throws -> AuditVerification { try trail.verify(vault) }

        /// The current file's lines (without newlines), and its incomplete last line if any.
        func lines(_ file: String? = nil) -> [[UInt8]] {
            let bytes = readFile(file ?? path) ?? []
            var lines = bytes.split(separator: 0x0a, omittingEmptySubsequences: false).map(Array.init)
            if lines.last == [] { lines.removeLast() }
            return lines
        }

        func write(_ lines: [[UInt8]], file: String? = nil, newlineAtEnd: Bool = true) {
            var bytes = lines.map { $0 + [0x0a] }.joined().map { $0 }
            if !newlineAtEnd && !bytes.isEmpty { bytes.removeLast() }
            writeFile(file ?? path, bytes)
        }

        /// The CLI through this trail's broker. XDG_STATE_HOME points at the temp directory,
        /// which once held the vault: it changes nothing now.
        /// The client names its zone (UTC), as a person's would: times come without a zone's name.
        func cli(_ arguments: [String]) throws -> Child.Result {
            guard let broker else { throw TestFailure("this trail has no broker") }
            var environment = broker.clientEnvironment
            environment["XDG_STATE_HOME"] = temp.path
            environment["TZ"] = "Etc/UTC"
            return try Child.run(Paths.cli, arguments, environment: environment)
        }

        /// The vault still opens both ways.
        func stillOpens(sourceLocation: SourceLocation = #_sourceLocation) throws {
            _ = try Vault.unlockWithDevice(store)
            _ = try Vault.unlock(store, pin: PINKeyslot(pin: secret(AuditTests.pin), cost: .fastForTests),
                                 ledger: LockoutLedger(store: store, policy: LockoutPolicy(), auditSink: .none))
        }
    }

    /// Six security events, and six attempts: a chain's worth each for the tampering tests.
    static let sixEvents: [AuditEvent] = [
        .signIn(issuer: "https://idp.example.org/o", flow: "device"),
        .unlock(method: .pin, via: .cli),
        .unlock(method: .finger, via: .pam),
        .stepUp(context: "contacts", result: .success),
        .reveal(context: "contacts", fileID: "assignment-7.sealed"),
        .logout,
    ]
    static let sixAttempts: [AuditEvent] = [
        .fallback(reason: .outcome(.noReader)),
        .failure(action: .unlock, reason: .outcome(.wrongPIN)),
        .stepUp(context: "contacts", result: .cancelled),
        .fallback(reason: .outcome(.cancelled)),
        .failure(action: .signOut, reason: .outcome(.wrongPIN)),
        .stepUp(context: "payroll", result: .timedOut),
    ]
    static func six(_ chain: AuditChain) -> [AuditEvent] { chain == .security ? sixEvents : sixAttempts }

    /// Security events and attempts, each to its own chain, listed together in the order they
    /// happened, each numbered in its chain.
    @Test func recordsListsAndVerifies() throws {
        let t = try Trail(broker: true)
        let events: [AuditEvent] = Array(AuditTests.sixEvents.prefix(3)) + Array(AuditTests.sixAttempts.prefix(2)) + [.logout] + [
            .stepUp(context: "contacts", result: .success),
            .reveal(context: "contacts", fileID: "assignment-7.sealed"),
            .lockout(.finger),
            .lockout(.pin),
            .fallback(reason: .unknown("bad\u{1b}[31mred\u{202e}gnp.exe")),
        ]
        t.record(events)
        let verification = try t.verify()
        #expect(verification == AuditVerification(events: 11, problem: nil, interruptedAppend: false))

        let listing = try t.trail.list()
        #expect(listing.unreadableLines == 0)
        #expect(listing.records.map(\.seq) == [1, 2, 3, 1, 2, 4, 5, 6, 7, 8, 3])
        #expect(listing.records.map(\.chain) == [.security, .security, .security, .attempts, .attempts, .security, .security,
                                                  .security, .security, .security, .attempts])
        #expect(listing.records.map(\.event) == ["sign-in", "unlock", "unlock", "fallback", "failure", "logout", "step-up",
                                                  "reveal", "lockout", "lockout", "fallback"])
        #expect(listing.records.map(\.sentence) == [
            "Signed in to https://idp.example.org/o with the device sign-in.",
            "Unlocked with the PIN, using the fingerseal command.",
            "Unlocked with a finger at a system sign-in (PAM).",
            "Moved on to the next way to sign in: no fingerprint reader.",
            "Unlock did not succeed: the PIN was wrong.",
            "Signed out.",
            "Step-up for contacts: success.",
            "Revealed assignment-7.sealed for contacts.",
            "Fingerprint unlock was locked after too many failed scans.",
            "The PIN was locked after too many wrong tries.",
            "Moved on to the next way to sign in: a reason this fingerseal does not know (bad [31mred gnp.exe).",
        ])
        // Each stored line is one JSON object with the fields, chained and sealed.
        let lines = t.lines()
        #expect(lines.count == 8)
        let attempts = t.lines(t.path(.attempts))
        #expect(attempts.count == 3)
        let first = try JSONDecoder().decode(AuditEntry.self, from: Data(lines[0]))
        #expect(first.event == "sign-in" && first.seq == 1 && first.time == 1_800_000_000)
        #expect(first.issuer == "https://idp.example.org/o" && first.flow == "device")
        #expect(first.prev == String(repeating: "0", count: 64))
        let firstMAC = try #require(AuditLine.parse(lines[0][...])).mac
        #expect(String(decoding: lines[0], as: UTF8.self).hasSuffix(#","mac":"\#(Encoding.hex(firstMAC))"}"#))
        let second = try JSONDecoder().decode(AuditEntry.self, from: Data(lines[1]))
        #expect(second.prev == Encoding.hex(firstMAC))
        #expect(listing.records[0].json == String(decoding: lines[0], as: UTF8.self))
        #expect(String(decoding: lines.last ?? [], as: UTF8.self).hasSuffix(#"}"#))
        // An attempt says its chain, and after which security event it came.
        let attempt = try JSONDecoder().decode(AuditEntry.self, from: Data(attempts[0]))
        #expect(attempt.event == "fallback" && attempt.seq == 1 && attempt.trail == "attempts" && attempt.after == 3)
        #expect(attempt.prev == String(repeating: "0", count: 64))

        // The CLI: one sentence per event with its time, JSON Lines, and the verdict.
        let plain = try t.cli(["audit"])
        #expect(plain.status == 0, "\(plain.all)")
        #expect(plain.stdout.split(separator: "\n").first == "Event 1, 2027-01-15T08:00:00Z: Signed in to https://idp.example.org/o with the device sign-in.")
        #expect(plain.stdout.split(separator: "\n").dropFirst(3).first
                == "Attempt 1, 2027-01-15T08:00:00Z: Moved on to the next way to sign in: no fingerprint reader.")
        #expect(!plain.stdout.contains("\u{1b}") && !plain.stdout.contains("\u{202e}"))
        let json = try t.cli(["audit", "--json"])
        #expect(json.status == 0)
        var merged: [[UInt8]] = Array(lines[0..<3])
        merged += attempts[0..<2]
        merged += lines[3...]
        merged += attempts[2...]
        #expect(json.stdout.split(separator: "\n").map { Array($0.utf8) } == merged)
        let verified = try t.cli(["audit", "--verify"])
        #expect(verified.status == 0, "\(verified.all)")
        #expect(verified.stdout == "The audit trail is intact: 11 events.\n")
        let verifiedJSON = try t.cli(["audit", "--verify", "--json"])
        #expect(verifiedJSON.status == 0)
        #expect(verifiedJSON.stdout.contains("\"intact\" : true") && verifiedJSON.stdout.contains("\"events\" : 11"))
        #expect(try Child.run("/bin/ls", ["-A", t.temp.path]).stdout.isEmpty, "nothing where XDG_STATE_HOME points")
    }

    @Test func anEmptyTrailIsIntact() throws {
        let t = try Trail(broker: true)
        #expect(try t.verify() == AuditVerification(events: 0, problem: nil, interruptedAppend: false))
        #expect(try t.trail.list().records.isEmpty)
        let plain = try t.cli(["audit"])
        #expect(plain.status == 0 && plain.stdout == "No events are recorded yet.\n", "\(plain.all)")
        #expect(try t.cli(["audit", "--verify"]).stdout == "The audit trail is intact: 0 events.\n")
    }

    /// Every kind of change to a chain's file, made without the vault key.
    enum Tampering: String, CaseIterable, Sendable {
        case editAField, deleteAMiddleEntry, insertAForgedEntry, duplicateAnEntry, swapTwoEntries, truncateTheTail,
             tearTheLastLine, deleteTheFile, emptyTheFile, bringAnotherVaultsFile, addGarbageLine

        /// What --verify must say about the chain's file: the kind, the line to blame, and
        /// words of the message.
        func expected(_ chain: AuditChain) -> (kind: AuditProblem.Damage, line: Int?, message: String) {
            let (kind, line, message) = expectedForTheSecurityChain
            return (kind, line, message.replacing(AuditFiles.current, with: chain.currentFile))
        }

        private var expectedForTheSecurityChain: (kind: AuditProblem.Damage, line: Int?, message: String) {
            switch self {
            case .editAField: return (.edited, 3, "line 3 of audit.jsonl, event 3, does not match its seal (edited)")
            case .deleteAMiddleEntry: return (.deleted, 3, "event 3 is missing before line 3 of audit.jsonl (deleted)")
            case .insertAForgedEntry: return (.inserted, 3, "line 3 of audit.jsonl was not written by fingerseal (inserted)")
            case .duplicateAnEntry: return (.inserted, 5, "line 5 of audit.jsonl is a second copy of event 2 (inserted)")
            case .swapTwoEntries: return (.reordered, 3, "event 4 on line 3 of audit.jsonl is out of order (reordered)")
            case .truncateTheTail:
                return (.truncated, nil, "audit.jsonl ends at event 4, but the vault recorded 6 (truncated: the last events were cut off)")
            case .tearTheLastLine:
                return (.tornLastLine, 6, "the last line of audit.jsonl, line 6, is incomplete and event 6 is cut off (torn last line)")
            case .deleteTheFile, .emptyTheFile:
                return (.deleted, nil, "the file audit.jsonl is missing or empty, but the vault recorded 6 events (deleted)")
            case .bringAnotherVaultsFile: return (.wrongVault, 1, "line 1 of audit.jsonl belongs to another vault (wrong vault)")
            case .addGarbageLine: return (.edited, 4, "line 4 of audit.jsonl is not an audit entry (edited or damaged)")
            }
        }

        /// Line 3 of each chain's six: a field to change, and another to change with it.
        static func fields(_ chain: AuditChain) -> (from: String, to: String, alsoFrom: String, alsoTo: String) {
            chain == .security ? (#""method":"finger""#, #""method":"pin""#, #""via":"pam""#, #""via":"cli""#)
                : (#""result":"cancelled""#, #""result":"success""#, #""context":"contacts""#, #""context":"payroll""#)
        }

        func apply(_ t: Trail, _ chain: AuditChain) throws {
            let file = t.path(chain)
            var lines = t.lines(file)
            let fields = Tampering.fields(chain)
            switch self {
            case .editAField:
                let text = String(decoding: lines[2], as: UTF8.self)
                #expect(text.contains(fields.from))
                lines[2] = Array(text.replacing(fields.from, with: fields.to).utf8)
            case .deleteAMiddleEntry:
                lines.remove(at: 2)
            case .insertAForgedEntry:
                // A plausible entry 3: right number, right previous MAC, a made-up MAC.
                let text = String(decoding: lines[2], as: UTF8.self)
                lines.insert(Array(text.replacing(fields.from, with: fields.to).replacing(fields.alsoFrom, with: fields.alsoTo).utf8), at: 2)
            case .duplicateAnEntry:
                lines.insert(lines[1], at: 4)
            case .swapTwoEntries:
                lines.swapAt(2, 3)
            case .truncateTheTail:
                lines.removeLast(2)
            case .tearTheLastLine:
                lines[5] = Array(lines[5].prefix(lines[5].count / 2))
                t.write(lines, file: file, newlineAtEnd: false)
                return
            case .deleteTheFile:
                #expect(unlink(file) == 0)
                return
            case .emptyTheFile:
                lines = []
            case .bringAnotherVaultsFile:
                let other = try Trail()
                other.record(AuditTests.six(chain))
                lines = other.lines(other.path(chain))
            case .addGarbageLine:
                lines.insert(Array("not an entry".utf8), at: 3)
            }
            t.write(lines, file: file)
        }
    }

    @Test(arguments: Tampering.allCases, AuditChain.allCases) func tamperingIsDetected(_ tampering: Tampering, _ chain: AuditChain) throws {
        let t = try Trail(broker: true)
        t.record(AuditTests.six(chain))
        #expect(try t.verify().intact)
        try tampering.apply(t, chain)

        let verification = try t.verify()
        let expected = tampering.expected(chain)
        #expect(verification.problem?.kind == expected.kind, "\(String(describing: verification.problem))")
        #expect(verification.problem?.line == expected.line)
        #expect(verification.problem?.message == expected.message)
        let cli = try t.cli(["audit", "--verify"])
        #expect(cli.status == 9, "\(cli.all)")
        #expect(cli.stderr == "fingerseal: error: The audit trail is not intact: \(expected.message).\n", "\(cli.all)")
        #expect(cli.stdout.isEmpty)
        let json = try t.cli(["audit", "--verify", "--json"])
        #expect(json.status == 9)
        #expect(json.stdout.contains("\"problem\" : \"\(expected.kind.rawValue)\""), "\(json.stdout)")

        // The vault is unaffected, recording goes on, and appending never hides the damage.
        try t.stillOpens()
        t.record([chain == .security ? .logout : .fallback(reason: .outcome(.noReader))])
        #expect(try t.verify().problem != nil)
    }

    @Test func aSealFromAnotherKeyIsNotAccepted() throws {
        // Entries re-sealed with the key of another vault but naming this one: edited.
        let t = try Trail()
        t.record(AuditTests.sixEvents)
        let other = try Trail()
        let otherKey = try AuditLine.key(other.vault.masterKey)
        var lines = t.lines()
        let original = try #require(AuditLine.parse(lines[1][...]))
        var entry = original.entry
        entry.method = "finger"
        lines[1] = try AuditLine.seal(entry, key: otherKey).raw
        t.write(lines)
        #expect(try t.verify().problem?.kind == .edited)
        #expect(try t.verify().problem?.line == 2)
    }

    @Test func anInterruptedAppendIsReportedThenRepaired() throws {
        let t = try Trail(broker: true)
        t.record(Array(AuditTests.sixEvents.prefix(3)))
        // What a crash in the middle of writing entry 4 leaves: part of a line, no newline,
        // and the vault's head still at 3.
        let partial = Array(#"{"event":"unlock","method":"pin","prev":"a1b2"#.utf8)
        writeFile(t.path, (readFile(t.path) ?? []) + partial)
        #expect(try t.verify() == AuditVerification(events: 3, problem: nil, interruptedAppend: true))
        let cli = try t.cli(["audit", "--verify"])
        #expect(cli.status == 0, "\(cli.all)")
        #expect(cli.stdout == "The audit trail is intact: 3 events.\n")
        #expect(cli.stderr.contains("append was interrupted"), "\(cli.stderr)")
        #expect(try t.cli(["audit"]).stderr.contains("1 line of the audit trail cannot be read"))

        // The next append removes it.
        t.record([.logout])
        #expect(try t.verify() == AuditVerification(events: 4, problem: nil, interruptedAppend: false))
        #expect(t.lines().count == 4)
        #expect(!(String(decoding: readFile(t.path) ?? [], as: UTF8.self)).contains(#""prev":"a1b2"#), "the torn line is gone (a MAC may hold a1b2 by chance)")
    }

    @Test func anAppendTheVaultDidNotRecordIsAdopted() throws {
        // A crash after the entry was written and synced, before the vault's head moved.
        let t = try Trail()
        t.record(Array(AuditTests.sixEvents.prefix(2)))
        let vaultFile = t.directory + "/" + VaultFiles.vault
        let before = try #require(readFile(vaultFile))
        t.record([.logout])
        writeFile(vaultFile, before)
        #expect(try t.verify() == AuditVerification(events: 3, problem: nil, interruptedAppend: false))
        t.record([.unlock(method: .pin, via: .cli)])
        #expect(try t.verify() == AuditVerification(events: 4, problem: nil, interruptedAppend: false))
        #expect(try t.trail.list().records.map(\.seq) == [1, 2, 3, 4])
    }

    @Test func rotationKeepsTheChainAcrossTwoFiles() throws {
        let t = try Trail(fileLimit: 2000)
        for index in 0..<30 { t.record([index % 2 == 0 ? .unlock(method: .pin, via: .cli) : .logout]) }
        let verification = try t.verify()
        #expect(verification.intact, "\(String(describing: verification.problem))")
        #expect(access(t.olderPath, F_OK) == 0)
        #expect((readFile(t.path) ?? []).count <= 2000 && (readFile(t.olderPath) ?? []).count <= 2000)
        let records = try t.trail.list().records
        #expect(records.count == verification.events)
        #expect(records.count >= 5 && records.count < 30, "older events were rotated out: \(records.count)")
        // Consecutive apart from the rotation entries, and ending with the 30th event.
        #expect(records.last?.event == "logout")
        #expect(zip(records, records.dropFirst()).allSatisfy { $1.seq == $0.seq + 1 || $1.seq == $0.seq + 2 })
        let rotation = try #require(t.lines().first.flatMap { AuditLine.parse($0[...]) })
        #expect(rotation.isRotation)
        // What rotation took is said: the entries before the older file's first.
        let oldestKept = try #require(t.lines(t.olderPath).first.flatMap { AuditLine.parse($0[...]) }).entry.seq
        #expect(oldestKept > 1)
        #expect(verification.rotatedAway == [AuditRotation(chain: .security, through: oldestKept - 1, oldestKept: 1_800_000_000)])

        // The older file belongs to the chain: deleting it, or its start, is noticed.
        let older = try #require(readFile(t.olderPath))
        #expect(unlink(t.olderPath) == 0)
        #expect(try t.verify().problem?.kind == .deleted)
        #expect(try t.verify().problem?.file == AuditFiles.older)
        writeFile(t.olderPath, older)
        t.write(Array(t.lines(t.olderPath).dropFirst()), file: t.olderPath)
        #expect(try t.verify().problem?.kind == .deleted)
        writeFile(t.olderPath, older)
        #expect(try t.verify().intact)

        // A rotation a crash cut short (renamed, no new file yet) is intact and is finished
        // by the next append.
        #expect(rename(t.path, t.olderPath) == 0)
        #expect(try t.verify().intact)
        t.record([.logout])
        let finished = try t.verify()
        #expect(finished.intact, "\(String(describing: finished.problem))")
        #expect(try #require(AuditLine.parse(t.lines()[0][...])).isRotation)
    }

    /// SIGKILL a process that appends in a loop, at 60 random points: the trail is intact
    /// every time (at most an interrupted last line, which the next append removes), holds
    /// every append reported as done and at most one more, and the vault opens.
    @Test func sigkillWhileAppendingNeverBreaksTheChain() throws {
        let temp = try TempDirectory()
        let directory = temp.file("vault")
        #expect(try Child.run(Paths.torture, ["init", directory, VaultTorture.pin]).status == 0)
        let account = try #require(try UserAccount.current())
        let store = VaultStore(location: VaultLocation(directory: directory, account: account), lockTimeout: 30)
        var committed = 0
        var interrupted = 0
        var adopted = 0
        var generator = SystemRandomNumberGenerator()
        for round in 0..<60 {
            let writer = try Child(Paths.torture, ["audit", directory])
            for _ in 0..<Int.random(in: 1...6, using: &generator) {
                guard writer.readLine() == "recorded" else {
                    Issue.record("round \(round): the writer stopped: \(writer.finish().stderr)")
                    return
                }
                committed += 1
            }
            var pause = timespec(tv_sec: 0, tv_nsec: Int.random(in: 0...3_000_000, using: &generator))
            nanosleep(&pause, nil)
            writer.signal(SIGKILL)
            let rest = writer.finish()
            #expect(rest.status == 128 + SIGKILL)
            committed += rest.stdout.split(separator: "\n").count

            let vault = try Vault.unlockWithDevice(store)
            let verification = try AuditTrail(store: store, sink: .none).verify(vault)
            #expect(verification.intact, "round \(round): \(String(describing: verification.problem))")
            #expect(verification.events == committed || verification.events == committed + 1,
                    "round \(round): committed \(committed), found \(verification.events)")
            if verification.interruptedAppend { interrupted += 1 }
            if verification.events == committed + 1 { adopted += 1 }
            committed = max(committed, verification.events)
        }
        let check = try Child.run(Paths.torture, ["check", directory, VaultTorture.pin])
        #expect(check.status == 0, "\(check.all)")
        let vault = try Vault.unlockWithDevice(store)
        let trail = AuditTrail(store: store, sink: .none)
        #expect(trail.record(.logout, vault: vault))
        #expect(try trail.verify(vault) == AuditVerification(events: committed + 1, problem: nil, interruptedAppend: false))
        print("audit crash test: \(committed) appends survived 60 kills; \(adopted) kills fell between an entry and its "
              + "vault update; \(interrupted) interrupted last lines")
    }

    @Test func locksAreRecordedOnceWhenTheyEngage() throws {
        let t = try Trail()
        let ledger = LockoutLedger(store: t.store, policy: LockoutPolicy(maxFingerFailures: 3), clock: StepClock(), auditSink: .none)
        for _ in 0..<5 { try ledger.fingerFailed() }
        // Wrong PINs, each late enough that no delay applies, until the PIN locks, and once more.
        for _ in 0..<(LockoutPolicy.pinMaxFailures + 1) {
            do {
                _ = try Vault.unlock(t.store, pin: PINKeyslot(pin: secret("0000"), cost: .fastForTests), ledger: ledger)
                Issue.record("a wrong PIN opened the vault")
            } catch let error as FingersealError {
                #expect(error.outcome == .wrongPIN || error.outcome == .lockedOut)
            }
        }
        #expect(try ledger.current().pinLocked)
        let records = try t.trail.list().records
        #expect(records.map(\.sentence) == [
            "Fingerprint unlock was locked after too many failed scans.",
            "The PIN was locked after too many wrong tries.",
        ])
        #expect(try t.verify().intact)
    }

    @Test func recordingNeverFailsTheCaller() throws {
        let t = try Trail()
        t.record([.logout])
        // An audit file that is not safe to use: the event is not written, nothing throws,
        // the log says so, and the vault is untouched.
        #expect(unlink(t.path) == 0 && symlink("/etc/passwd", t.path) == 0)
        let logged = LogLines()
        let logging = AuditTrail(store: t.store, sink: .custom { level, line in logged.add("\(level) \(line)") })
        #expect(!logging.record(.unlock(method: .pin, via: .cli), vault: t.vault))
        #expect(logged.all.contains { $0.hasPrefix("notice audit: user ") && $0.hasSuffix(": Unlocked with the PIN, using the fingerseal command.") },
                "\(logged.all)")
        #expect(logged.all.contains { $0.hasPrefix("warning ") && $0.contains("symbolic link") }, "\(logged.all)")
        try t.stillOpens()
        // No vault at all: nothing to write to, and no complaint beyond the event's own line.
        let empty = try TempDirectory()
        let account = try #require(try UserAccount.current())
        let none = AuditTrail(store: VaultStore(location: VaultLocation(directory: empty.file("none"), account: account)),
                              sink: .custom { level, line in logged.add("\(level) \(line)") })
        #expect(!none.record(.logout, vault: nil))
        #expect(logged.all.last?.hasSuffix(": Signed out.") == true)
    }

    @Test func resetRemovesTheTrail() throws {
        let t = try Trail(fileLimit: 600, attemptsFileLimit: 600)
        for _ in 0..<6 { t.record([.logout, .fallback(reason: .outcome(.noReader))]) }
        for chain in AuditChain.allCases { #expect(access(t.olderPath(chain), F_OK) == 0, "\(chain) rotated") }
        #expect(try Vault.reset(t.store))
        for name in AuditFiles.all { #expect(access(t.directory + "/" + name, F_OK) != 0, "\(name) is gone") }
    }

    // MARK: events from the real flows

    /// pam_fingerseal.so as the broker's client (`socket=`) in a real PAM stack, with the
    /// tty item set (the broker scans and asks only where a person can answer):
    /// `authenticateInProcess` through pam_start_confdir, the module alone; `startPamtester`
    /// through pamtester under pam_wrapper, with pam_matrix as the password module after it.
    final class PAMRig {
        static let multiarch = "x86_64-linux-gnu"
        static let wrapper = "/usr/lib/\(multiarch)/libpam_wrapper.so"
        static let matrix = "/usr/lib/\(multiarch)/pam_wrapper/pam_matrix.so"
        static var pamtesterAvailable: Bool { access(wrapper, R_OK) == 0 && access("/usr/bin/pamtester", X_OK) == 0 }
        static let service = "fingerseal-audit-test"
        static let pin = "4826"
        static let tty = "/dev/pts/0"

        let home: CLIHome
        let services: TempDirectory
        let user: UserAccount
        var environment: [String: String]
        var store: VaultStore { VaultStore(location: VaultLocation(directory: home.vaultDirectory, account: user)) }

        /// A vault with the PIN (set with the CLI, as a person would), with finger-a enrolled
        /// when the broker has a reader.
        init(reader: Bool, moduleOptions: String = "pin", brokerEnvironment: [String: String] = [:],
             wrapBroker: (([String]) -> (String, [String]))? = nil) throws {
            home = try CLIHome(reader: reader, brokerEnvironment: brokerEnvironment, wrapBroker: wrapBroker)
            services = try TempDirectory()
            guard let user = try UserAccount.current() else { throw TestFailure("no account") }
            self.user = user
            let set = try home.run(["pin", "set", "--pin-fd", "3"], fd3: PAMRig.pin + "\n")
            #expect(set.status == 0, "\(set.all)")
            if reader { try home.enroll("finger-a", pin: PAMRig.pin) }
            writeFile(services.file("passdb"), Array("\(user.name):secret:\(PAMRig.service)\n".utf8))
            writeFile(services.file(PAMRig.service), Array("""
                auth [success=done default=ignore] \(Paths.module) socket=\(home.broker.socketPath) \(moduleOptions)
                auth required \(PAMRig.matrix) passdb=\(services.file("passdb"))

                """.utf8), mode: 0o644)
            environment = ["PATH": "/usr/bin:/bin", "LD_PRELOAD": PAMRig.wrapper, "PAM_WRAPPER": "1",
                           "PAM_WRAPPER_SERVICE_DIR": services.path]
        }

        /// In this process (pam_start_confdir): the module alone, the PIN answered with `answer`.
        func authenticateInProcess(answer: String?) throws -> Int32 {
            let lines = "auth required \(Paths.module) socket=\(home.broker.socketPath) pin\n"
            writeFile(services.file("in-process"), Array(lines.utf8), mode: 0o644)
            let client = try PAMClient(service: "in-process", user: user.name, configDirectory: services.path) { message in
                if case .promptEchoOff = message { return answer }
                return nil
            }
            _ = client.setItem(.tty, PAMRig.tty)
            return client.authenticate()
        }

        /// pamtester, its prompts answered with `answers`, one per line; `wrap` puts it in
        /// a syslog capture.
        func startPamtester(answers: [String], wrap: (([String]) -> (String, [String]))? = nil) throws -> Child {
            let command = ["/usr/bin/pamtester", "-I", "tty=\(PAMRig.tty)", PAMRig.service, user.name, "authenticate"]
            let (path, arguments) = wrap?(command) ?? (command[0], Array(command.dropFirst()))
            return try Child(path, arguments, environment: environment, stdin: Array(answers.map { $0 + "\n" }.joined().utf8),
                             terminal: .leader)
        }

        /// Failed matches recorded in the vault's lockout counters.
        func failedScans() throws -> Int {
            try LockoutLedger(store: store, policy: LockoutPolicy()).current().fingerFailures
        }

        /// Sends `misses` non-matching scans, each only after the previous one was counted:
        /// the virtual driver may drop a command queued while an action is ending.
        func miss(_ misses: Int) throws {
            let sensor = try #require(home.sensor)
            let before = try failedScans()
            for miss in 1...misses {
                try VirtualSensor.send("SCAN stranger", to: sensor)
                let deadline = VirtualSensor.now() + 20
                while try failedScans() < before + miss && VirtualSensor.now() < deadline {
                    var pause = timespec(tv_sec: 0, tv_nsec: 5_000_000)
                    nanosleep(&pause, nil)
                }
                #expect(try failedScans() >= before + miss, "miss \(miss) was not counted in time")
            }
        }

        /// The trail's sentences, as `fingerseal audit` lists them (without the times).
        func sentences() throws -> [String] {
            let listed = try home.run(["audit"])
            #expect(listed.status == 0, "\(listed.all)")
            return listed.stdout.split(separator: "\n").map { $0.split(separator: ": ", maxSplits: 1).last.map(String.init) ?? "" }
        }
    }

    /// The PAM module (in this process, PIN through the conversation): an unlock by PIN, a
    /// wrong PIN, and a skipped PIN, each recorded by the broker.
    @Test func thePAMModuleRecordsPINUnlocksAndFailures() throws {
        let rig = try PAMRig(reader: false)
        #expect(try rig.authenticateInProcess(answer: PAMRig.pin) == PAM_SUCCESS)
        #expect(try rig.authenticateInProcess(answer: "0000") == PAM_AUTH_ERR)
        #expect(try rig.authenticateInProcess(answer: "") == PAM_AUTHINFO_UNAVAIL)
        #expect(try rig.sentences() == [
            "Unlocked with the PIN at a system sign-in (PAM).",
            "Unlock did not succeed: the PIN was wrong.",
            "Moved on to the next way to sign in: cancelled.",
        ])
        #expect(try AuditTrail(store: rig.store, sink: .none).verify(Vault.unlockWithDevice(rig.store)).intact)
        let verified = try rig.home.run(["audit", "--verify"])
        #expect(verified.status == 0 && verified.stdout == "The audit trail is intact: 3 events.\n", "\(verified.all)")
    }

    /// Through pamtester with the broker's virtual reader: a match, then failed matches, the
    /// PIN fallback and the PIN unlock, each recorded by the broker.
    @Test(.enabled(if: PAMRig.pamtesterAvailable)) func thePAMFingerprintPathRecordsMatchesAndFallbacks() throws {
        let rig = try PAMRig(reader: true)
        let matching = try rig.startPamtester(answers: [])
        try VirtualSensor.send("SCAN finger-a", to: try #require(rig.home.sensor))
        let matched = matching.finish()
        #expect(matched.status == 0, "\(matched.all)")
        let missing = try rig.startPamtester(answers: [PAMRig.pin])
        try rig.miss(3)
        let missed = missing.finish()
        #expect(missed.status == 0, "\(missed.all)")
        #expect(missed.all.contains("The fingerprint did not match."), "\(missed.all)")
        #expect(try rig.sentences() == [
            "Unlocked with a finger at a system sign-in (PAM).",
            "Fingerprint scan did not succeed: too many failed tries.",
            "Moved on to the next way to sign in: too many failed tries.",
            "Unlocked with the PIN at a system sign-in (PAM).",
        ])
        #expect(try rig.home.run(["audit", "--verify"]).status == 0)
    }

    /// Each event also goes to syslog at LOG_AUTHPRIV as one sentence, from the broker (which
    /// records them all now): for the CLI's refused sign-in, and for pamtester's failed scans
    /// and PIN unlock.
    @Test(.enabled(if: SyslogCapture.availableAnywhere && PAMRig.pamtesterAvailable)) func eventsGoToSyslog() throws {
        let captureDirectory = try TempDirectory()
        let capture = try SyslogCapture(directory: captureDirectory.path)
        let rig = try PAMRig(reader: true, wrapBroker: capture.wrap)
        rig.environment["PAM_WRAPPER_USE_SYSLOG"] = "1" // pam_wrapper's pam_syslog goes to syslog, not stderr
        let user = rig.user.name
        // The CLI: a sign-in that cannot reach its provider is a recorded failure.
        let login = try rig.home.run(["login", "--issuer", "http://127.0.0.1:9", "--client-id", "x", "--flow", "password",
                                      "--password-fd", "3"], fd3: "pw\n")
        #expect(login.status == 8, "\(login.all)")
        // The module (PIN) after failed scans, through pamtester.
        let child = try rig.startPamtester(answers: [PAMRig.pin], wrap: capture.wrap)
        try rig.miss(3)
        let pam = child.finish()
        #expect(pam.status == 0, "\(pam.all)")
        // The broker answers first and records the unlock right after; the user's next request
        // (this listing) starts once it is written, and logged.
        let sentences = try rig.sentences()
        let log = capture.messages()
        func logged(_ text: String) -> Bool {
            // <facility*8+severity>: LOG_AUTHPRIV (10) and LOG_NOTICE (5) is 85.
            log.contains { $0.hasPrefix("<85>") && $0.contains(text) }
        }
        // A refused sign-in is logged, not recorded: the vault is left as it was.
        #expect(logged("fingersealed["), "\(log)")
        #expect(logged("audit: user \(user): Sign-in did not succeed: not available."), "\(log)")
        #expect(logged("Fingerprint scan did not succeed"), "\(log)")
        #expect(logged("Unlocked with the PIN at a system sign-in (PAM)."), "\(log)")
        #expect(!sentences.contains { $0.hasPrefix("Sign-in did not succeed") })
        #expect(!log.contains { $0.contains(PAMRig.pin) }, "no PIN in the log: \(log)")
    }

    /// Each event also goes to the journal (issue 23 §5), to a real systemd-journald beside the
    /// broker: a MESSAGE_ID per kind of event and the account, the PAM service, the method and
    /// the outcome as fields, what `journalctl MESSAGE_ID=…` finds, and never the PIN.
    @Test(.enabled(if: JournalCapture.available && PAMRig.pamtesterAvailable)) func eventsGoToTheJournal() throws {
        let captureDirectory = try TempDirectory()
        let journal = try JournalCapture(directory: captureDirectory.path)
        let rig = try PAMRig(reader: true, wrapBroker: journal.wrap)
        let user = rig.user.name
        // The module: three missed scans, then the PIN, through pamtester.
        let child = try rig.startPamtester(answers: [PAMRig.pin])
        try rig.miss(3)
        let pam = child.finish()
        #expect(pam.status == 0, "\(pam.all)")
        let unlocks = try journal.entries("MESSAGE_ID=" + AuditMessageID.unlock)
        let unlock = try #require(unlocks.last, "\(unlocks)")
        #expect(unlock["FINGERSEAL_USER"] == user && unlock["FINGERSEAL_UID"] == String(rig.user.uid), "\(unlock)")
        #expect(unlock["FINGERSEAL_SERVICE"] == PAMRig.service && unlock["FINGERSEAL_CHANNEL"] == "pam", "\(unlock)")
        #expect(unlock["FINGERSEAL_METHOD"] == "pin" && unlock["FINGERSEAL_OUTCOME"] == "success", "\(unlock)")
        #expect(unlock["SYSLOG_IDENTIFIER"] == "fingersealed" && unlock["PRIORITY"] == "6", "\(unlock)")
        #expect(unlock["MESSAGE"]?.contains("Unlocked with the PIN at a system sign-in (PAM).") == true, "\(unlock)")
        let fallback = try #require(try journal.entries("MESSAGE_ID=" + AuditMessageID.fallback).last)
        #expect(fallback["FINGERSEAL_OUTCOME"]?.isEmpty == false && fallback["FINGERSEAL_SERVICE"] == PAMRig.service, "\(fallback)")

        // A reveal from the command line: its own id finds it, with the context and the file's id.
        let files = try TempDirectory()
        let plain = files.file("plain"), sealed = files.file("assignment.sealed")
        writeFile(plain, Array("health details\n".utf8))
        let seal = try rig.home.run(["seal", "--context", "assignments", "--out", sealed, plain])
        #expect(seal.status == 0, "\(seal.all)")
        let revealed = try rig.home.run(["reveal", "--no-notice", "--pin-fd", "3", sealed], fd3: PAMRig.pin + "\n")
        #expect(revealed.status == 0 && revealed.stdout == "health details\n", "\(revealed.all)")
        let reveals = try journal.entries("MESSAGE_ID=" + AuditMessageID.reveal)
        #expect(reveals.count == 1, "\(reveals)")
        let reveal = try #require(reveals.first)
        #expect(reveal["FINGERSEAL_CONTEXT"] == "assignments" && reveal["FINGERSEAL_USER"] == user, "\(reveal)")
        #expect(reveal["FINGERSEAL_CHANNEL"] == "cli" && reveal["FINGERSEAL_SERVICE"] == nil && reveal["PRIORITY"] == "5", "\(reveal)")
        #expect(reveal["FINGERSEAL_FILE"]?.isEmpty == false, "\(reveal)")

        // Nothing of the PIN, nor of the sealed content, in anything fingersealed sent.
        let everything = try journal.entries("SYSLOG_IDENTIFIER=fingersealed", atLeast: 4)
        #expect(everything.count >= 4, "\(everything)")
        for entry in everything {
            #expect(!entry.values.contains { $0.contains(PAMRig.pin) || $0.contains("health details") }, "\(entry)")
        }
    }
}

/// A clock that moves on a day at every reading: no PIN delay ever applies.
final class StepClock: Clock, @unchecked Sendable {
    private var time: Int64 = 1_000_000
    func now() -> Int64 {
        time += 86_400
        return time
    }
}

/// Log lines a test sink collects.
final class LogLines: @unchecked Sendable {
    private(set) var all: [String] = []
    func add(_ line: String) { all.append(line) }
}

/// `fingerseal login`, `unlock --pin-fd 3` and `logout` against the local IdP record a
/// sign-in, an unlock and a sign-out, and the CLI verifies them.
@Suite(.enabled(if: LocalIdP.available)) struct AuditCLIFlowTests {
    @Test func loginUnlockAndLogoutAreRecorded() throws {
        let idp = try LocalIdP()
        let home = try CLIHome()
        let login = try LocalIdP.passwordLogin(idp, home)
        #expect(login.status == 0, "\(login.all)")
        let unlock = try home.run(["unlock", "--pin-fd", "3"], fd3: "2580\n")
        #expect(unlock.status == 0, "\(unlock.all)")
        let wrong = try home.run(["unlock", "--pin-fd", "3"], fd3: "0000\n")
        #expect(wrong.status == 1, "\(wrong.all)")
        let logout = try home.run(["logout", "--pin-fd", "3"], fd3: "2580\n")
        #expect(logout.status == 0, "\(logout.all)")

        let listed = try home.run(["audit"])
        #expect(listed.status == 0, "\(listed.all)")
        let sentences = listed.stdout.split(separator: "\n").map { $0.split(separator: ": ", maxSplits: 1).last.map(String.init) ?? "" }
        #expect(sentences == [
            "Signed in to \(idp.issuer) with the password sign-in.",
            "Unlocked with the PIN, using the fingerseal command.",
            "Unlock did not succeed: the PIN was wrong.",
            "Signed out.",
        ], "\(listed.stdout)")
        let verified = try home.run(["audit", "--verify"])
        #expect(verified.status == 0 && verified.stdout == "The audit trail is intact: 4 events.\n", "\(verified.all)")
        let json = try home.run(["audit", "--json"])
        let events = try json.stdout.split(separator: "\n").map { try JSONDecoder().decode(AuditEntry.self, from: Data($0.utf8)) }
        #expect(events.map(\.event) == ["sign-in", "unlock", "failure", "logout"])
        #expect(events.first?.flow == "password" && events.count == 4 && events[1].method == "pin" && events[1].via == "cli")
        // No secret in the trail.
        let file = String(decoding: readFile(home.vaultDirectory + "/audit.jsonl") ?? [], as: UTF8.self)
        #expect(file.contains("sign-in") && !file.contains("wonderland-7") && !file.contains("2580"))
    }

    @Test func aFingerUnlockIsRecorded() throws {
        let s = try TokenCLITests.SignedIn()
        #expect(try s.unlock().status == 0)
        let listed = try s.run(["audit"])
        #expect(listed.stdout.hasSuffix(": Unlocked with a finger, using the fingerseal command.\n"), "\(listed.stdout)")
        #expect(try s.run(["audit", "--verify"]).status == 0)
    }
}

/// The journal catalog (systemd/fingerseal.catalog) explains every MESSAGE_ID the broker
/// sends, and nothing else, and journalctl accepts it into a temporary root.
@Suite struct JournalCatalogTests {
    @Test func catalogExplainsEveryEvent() throws {
        let text = String(decoding: try #require(readFile(Paths.packageRoot + "/systemd/fingerseal.catalog")), as: UTF8.self)
        let ids = text.split(separator: "\n").filter { $0.hasPrefix("-- ") }.map { String($0.dropFirst(3)) }
        #expect(Set(ids) == Set(AuditMessageID.byEvent.values) && ids.count == AuditMessageID.byEvent.count, "\(ids)")
        #expect(AuditMessageID.byEvent["reveal"] == AuditMessageID.reveal)
        guard access("/bin/journalctl", X_OK) == 0 else { return }
        let root = try TempDirectory()
        let catalogs = root.file("usr/lib/systemd/catalog")
        #expect(try Child.run("/bin/mkdir", ["-p", catalogs]).status == 0)
        writeFile(catalogs + "/fingerseal.catalog", Array(text.utf8))
        let update = try Child.run("/bin/journalctl", ["--root=" + root.path, "--update-catalog"])
        #expect(update.status == 0 && update.stderr.isEmpty, "\(update.all)")
        let listed = try Child.run("/bin/journalctl", ["--root=" + root.path, "--list-catalog"])
        #expect(listed.stdout.split(separator: "\n").filter { $0.contains("fingerseal:") }.count == ids.count, "\(listed.all)")
    }
}

/// Typed audit words (issue 34 §5): every action and reason the broker can record has a
/// sentence of its own, and a stored word reads back as the reason that wrote it.
@Suite struct AuditWordsTests {
    static var reasons: [AuditReason] {
        Outcome.allCases.map(AuditReason.outcome) + FingersealError.Cause.allCases.map(AuditReason.cause)
            + AuditReason.Refusal.allCases.map(AuditReason.refusal)
    }

    @Test func everyReasonHasItsOwnWordsAndReadsBack() {
        let sentences = Self.reasons.map(Messages.auditReason)
        for (reason, sentence) in zip(Self.reasons, sentences) {
            #expect(AuditReason(word: reason.word) == reason, "\(reason.word)")
            // Never a camelCase name; a plain word ("cancelled") may be its own sentence.
            #expect((reason.word.allSatisfy(\.isLowercase) || !sentence.contains(reason.word)) && !sentence.isEmpty,
                    "\(reason.word) is said as \(sentence)")
        }
        #expect(Set(sentences).count == sentences.count, "two reasons are said alike")
        #expect(Set(Self.reasons.map(\.word)).count == Self.reasons.count, "two reasons share a word")
    }

    @Test func everyActionHasItsOwnSentence() {
        let sentences = AuditAction.allCases.map { Messages.auditFailure($0, "x") }
        #expect(Set(sentences).count == AuditAction.allCases.count)
        #expect(!sentences.contains(Messages.auditFailureOfUnknownAction("identify", "x")), "each action is said as itself")
    }
}
