import FingersealWire
import SodiumKit
import SystemKit

/// The per-user, tamper-evident audit trail: two chains in the vault directory (`AuditChain`),
/// `audit.jsonl` for security events and `attempts.jsonl` for attempts.
///
/// Each entry is one JSON line whose MAC (keyed BLAKE2b, with a key derived from the vault
/// master key, one key per chain) covers the previous entry's MAC and the entry itself, and
/// the vault document holds each chain's newest entry's number and MAC (`AuditHead`). Without
/// the vault key no one can edit, insert, delete, reorder or cut off entries unnoticed, nor
/// move them from one chain to the other. The store is the broker's: neither the user nor a
/// program running as the user reads the key; only root, who can open the vault through its
/// device slot, could rewrite it all.
///
/// Appends run under the vault's exclusive lock, are fsync'd (and the directory on create),
/// and update the heads in the same vault update. A crash at any instant leaves either the
/// old trail, or the new entry not yet in the head (adopted by the next append), or an
/// incomplete last line after the head (reported by `verify` as an interrupted append and
/// cut off by the next append); the vault itself is never touched by a failed append.
///
/// Attempts pass the store's `AttemptLimiter` when it has one (the broker's): beyond its
/// allowance they are only counted, in memory, and written as one entry when the count ends.
public struct AuditTrail: Sendable {
    public let store: VaultStore
    public let clock: any Clock
    public let sink: AuditSink
    /// Rotate before a chain's current file grows past this (tests use small ones).
    var fileLimit = AuditFiles.fileLimit
    var attemptsFileLimit = AuditFiles.attemptsFileLimit

    /// `sink` nil: the store's (`VaultStore.auditSink`).
    public init(store: VaultStore, clock: any Clock = SystemClock(), sink: AuditSink? = nil) {
        self.store = store
        self.clock = clock
        self.sink = sink ?? store.auditSink
    }

    /// Records `event` and logs it. `vault` nil: the vault is opened through its device slot
    /// (no prompt). Returns whether the event reached the audit file, or was counted.
    ///
    /// Never throws and never traps: an audit problem must not turn an unlock (or anything
    /// else) into a failure. Errors are logged through the sink and otherwise swallowed.
    @discardableResult
    public func record(_ event: AuditEvent, vault: UnlockedVault?) -> Bool {
        record([event], vault: vault)
    }

    /// Records several events in one append (one vault update). An attempt the limiter holds
    /// back is counted instead; when nothing else is due, neither the vault nor a file is
    /// touched.
    @discardableResult
    public func record(_ events: [AuditEvent], vault: UnlockedVault?) -> Bool {
        guard !events.isEmpty else { return true }
        let now = clock.now()
        var batch = AuditBatch()
        for event in events {
            let entry = event.entry(time: now, vault: "")
            guard event.chain == .attempts, let limiter = store.attemptLimiter else {
                batch.add(entry, to: event.chain)
                continue
            }
            switch limiter.admit(entry, account: store.location.account, now: now) {
            case let .record(closing):
                if let closing { batch.add(closing.entry(time: now, vault: ""), to: .attempts) }
                batch.add(entry, to: .attempts)
            case let .counted(first, until):
                // Said once per count: a line per attempt would flood the log instead.
                if first {
                    sink.log(.notice, "audit: user \(store.location.account.name): more than \(limiter.policy.perWindow) attempts "
                             + "since \(isoTimestamp(until &- limiter.policy.window)); until \(isoTimestamp(until)) they are counted, "
                             + "not recorded one by one: " + entry.sentence)
                }
            }
        }
        return write(batch, vault: vault)
    }

    /// Records a count of attempts the limiter held back (the broker's, once the count ended).
    @discardableResult
    public func record(_ tally: AttemptTally) -> Bool {
        var batch = AuditBatch()
        batch.add(tally.entry(time: clock.now(), vault: ""), to: .attempts)
        return write(batch, vault: nil)
    }

    private func write(_ batch: AuditBatch, vault: UnlockedVault?) -> Bool {
        guard !batch.isEmpty else { return true }
        var written = AuditBatch.Written()
        var failure: String? = nil
        do {
            written = try append(batch, vault: vault ?? Vault.unlockWithDevice(store))
        } catch let error as FingersealError where error.outcome == .noVault {
            // No vault: nothing to write to; the log lines below are all there is.
        } catch {
            failure = "\(error)"
        }
        var complete = true
        for chain in AuditChain.allCases {
            let entries = batch[chain]
            let lines = written[chain].filter { !$0.isRotation }
            if lines.count != entries.count { complete = false }
            for (index, entry) in entries.enumerated() {
                log(entry, chain: chain, seq: index < lines.count ? lines[index].entry.seq : nil)
            }
        }
        if let failure {
            sink.log(.warning, "audit: user \(store.location.account.name): the audit trail could not record the event: \(failure)")
        }
        return failure == nil && complete
    }

    /// Logs `event` without recording it in the trail: for what changed nothing in the vault
    /// (a sign-in the identity provider refused leaves the vault byte for byte as it was).
    public func log(_ event: AuditEvent) {
        log(event.entry(time: 0, vault: ""), chain: event.chain, seq: nil)
    }

    /// One plain sentence at LOG_AUTHPRIV, with the entry's number when it was recorded; in
    /// the journal with the event's fields (`AuditJournalRecord`). Called where the append
    /// happened: for an unlock, after the person's answer (`AfterReply`).
    private func log(_ entry: AuditEntry, chain: AuditChain, seq: UInt64?) {
        let number = seq.map { chain == .security ? ", event \($0)" : ", attempt \($0)" } ?? ""
        let line = "audit: user \(store.location.account.name)" + number + ": " + entry.sentence
        sink.log(AuditJournalRecord(entry: entry, chain: chain, seq: seq, account: store.location.account, origin: AuditOrigin.current,
                                    line: line))
    }

    /// Appends `batch` to its chains in one vault update (throwing). Returns the lines
    /// written per chain, a rotation entry first where a file was rotated.
    func append(_ batch: AuditBatch, vault: UnlockedVault) throws -> AuditBatch.Written {
        let chains = AuditChain.allCases.filter { !batch[$0].isEmpty }
        let keys = try VaultStore.guarded(.openAuditTrail) { try chains.map { try AuditLine.key(vault.masterKey, chain: $0) } }
        return try vault.update { editor -> AuditBatch.Written in
            try VaultStore.guarded(.writeAuditTrail) {
                var written = AuditBatch.Written()
                for (chain, key) in zip(chains, keys) {
                    // An attempt says which security event it came after: the merged listing's order.
                    let after = chain == .attempts ? editor.document.auditHead?.seq ?? 0 : nil
                    let entries = batch[chain].map { entry -> AuditEntry in
                        var entry = entry
                        entry.vault = vault.vaultID
                        entry.after = after
                        return entry
                    }
                    var writer = AuditWriter(chain: chain, directory: editor.directory, key: key, vaultID: vault.vaultID,
                                             head: editor.document[keyPath: chain.head] ?? .none,
                                             fileLimit: chain == .security ? fileLimit : attemptsFileLimit)
                    written[chain] = try writer.append(entries)
                    editor.document[keyPath: chain.head] = writer.head
                }
                return written
            }
        }
    }

    /// The events of both chains as stored, in the order they were written, without
    /// verifying them (no key needed).
    public func list() throws -> AuditListing {
        let listing = try store.withDirectory(exclusive: false) { directory -> AuditListing in
            try VaultStore.guarded(.readAuditTrail) {
                var chains: [[AuditRecord]] = []
                var unreadable = 0
                for chain in AuditChain.allCases {
                    let (records, unreadableLines) = try list(chain, directory)
                    chains.append(records)
                    unreadable += unreadableLines
                }
                return AuditListing(records: AuditTrail.merged(security: chains[0], attempts: chains[1]), unreadableLines: unreadable)
            }
        }
        return listing ?? AuditListing(records: [], unreadableLines: 0)
    }

    private func list(_ chain: AuditChain, _ directory: SafeDirectory) throws -> ([AuditRecord], Int) {
        guard let current = try AuditReader.read(directory, chain.currentFile, chain: chain) else { return ([], 0) }
        var files = [current]
        if let first = current.lines.first?.parsed, first.isRotation,
           let older = try AuditReader.read(directory, chain.olderFile, chain: chain) {
            files.insert(older, at: 0)
        }
        var records: [AuditRecord] = []
        var unreadable = 0
        for file in files {
            for line in file.lines {
                guard let parsed = line.parsed else { unreadable += 1; continue }
                if parsed.isRotation { continue }
                records.append(AuditRecord(chain: chain, seq: parsed.entry.seq, time: parsed.entry.time, event: parsed.entry.event,
                                           after: parsed.entry.after, sentence: parsed.entry.sentence,
                                           json: String(decoding: parsed.raw, as: UTF8.self)))
            }
            if !file.tail.isEmpty { unreadable += 1 }
        }
        return (records, unreadable)
    }

    /// Both chains in the order they were written: each attempt right after the security
    /// event it names in `after` (the clock may say the same second for both, or go back).
    static func merged(security: [AuditRecord], attempts: [AuditRecord]) -> [AuditRecord] {
        var merged: [AuditRecord] = []
        merged.reserveCapacity(security.count + attempts.count)
        var next = attempts.startIndex
        for event in security {
            while next < attempts.endIndex, attempts[next].after ?? 0 < event.seq {
                merged.append(attempts[next])
                next += 1
            }
            merged.append(event)
        }
        return merged + attempts[next...]
    }

    /// Verifies both chains with the vault key, each against the head the vault recorded.
    public func verify(_ vault: UnlockedVault) throws -> AuditVerification {
        let keys = try VaultStore.guarded(.openAuditTrail) { try AuditChain.allCases.map { try AuditLine.key(vault.masterKey, chain: $0) } }
        return try vault.withDocument(exclusive: false) { document, directory in
            try VaultStore.guarded(.readAuditTrail) {
                var events = 0
                var problem: AuditProblem? = nil
                var interrupted = false
                var rotations: [AuditRotation] = []
                for (chain, key) in zip(AuditChain.allCases, keys) {
                    var verifier = AuditVerifier(chain: chain, key: key, vaultID: vault.vaultID)
                    let verification = try verifier.verify(directory, head: document[keyPath: chain.head] ?? .none)
                    events += verification.events
                    problem = problem ?? verification.problem
                    interrupted = interrupted || verification.interruptedAppend
                    rotations += verification.rotatedAway
                }
                return AuditVerification(events: events, problem: problem, interruptedAppend: interrupted, rotatedAway: rotations)
            }
        }
    }
}

/// What one append writes, per chain: entries still to be numbered, chained and sealed.
struct AuditBatch {
    private(set) var security: [AuditEntry] = []
    private(set) var attempts: [AuditEntry] = []

    var isEmpty: Bool { security.isEmpty && attempts.isEmpty }

    subscript(chain: AuditChain) -> [AuditEntry] { chain == .security ? security : attempts }

    mutating func add(_ entry: AuditEntry, to chain: AuditChain) {
        if chain == .security { security.append(entry) } else { attempts.append(entry) }
    }

    /// The lines an append wrote, per chain.
    struct Written {
        var security: [AuditLine] = []
        var attempts: [AuditLine] = []

        subscript(chain: AuditChain) -> [AuditLine] {
            get { chain == .security ? security : attempts }
            set { if chain == .security { security = newValue } else { attempts = newValue } }
        }
    }
}

extension AuditChain {
    /// Where the vault document keeps the chain's head.
    var head: WritableKeyPath<VaultDocument, AuditHead?> { self == .security ? \.auditHead : \.attemptsHead }
}
