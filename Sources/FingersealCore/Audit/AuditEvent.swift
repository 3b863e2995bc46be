import SodiumKit
import SystemKit
import Localization

/// How a vault was unlocked (and which lock engaged).
public enum UnlockMethod: String, Codable, Sendable {
    case finger, pin
}

/// Where an unlock came through.
public enum AuditChannel: String, Codable, Sendable {
    /// The `fingerseal` command.
    case cli
    /// A PAM host (through the broker).
    case pam
}

/// What the audit trail records. Never a secret: names, outcomes and reasons only.
public enum AuditEvent: Equatable, Sendable {
    /// `fingerseal login` sealed a new sign-in (`flow`: device, password or browser).
    case signIn(issuer: String, flow: String)
    case unlock(method: UnlockMethod, via: AuditChannel)
    /// The fingerprint (or the PIN) could not be used and the next way in was offered: the
    /// PIN, or the password module; `reason` is short, usually an `Outcome` name.
    case fallback(reason: String)
    /// A step-up for a context, and how it ended.
    case stepUp(context: String, result: Outcome)
    /// Sensitive data of a context was decrypted (`fileID` names what, never its content).
    case reveal(context: String, fileID: String)
    /// Too many failures locked fingerprint unlock, or the PIN.
    case lockout(UnlockMethod)
    /// An action (unlock, sign-in, fingerprint scan, token refresh, ...) did not succeed.
    case failure(action: String, reason: String)
    case logout
    /// A forgotten PIN was replaced (`fingerseal pin reset`: the account password, or root).
    case pinReset
    /// The PIN confirmed fprintd's enrolled set (`fingers` of them) after it changed.
    case fprintdSetConfirmed(fingers: Int)
    /// These keyslots ("pin", "device") were sealed to the TPM: a vault made before one was
    /// usable, upgraded when the PIN was entered (or resealed to new `tpm_pcrs`).
    case sealedToTPM(slots: [String])
    /// The PIN slot, sealed inside the TPM's dictionary-attack lockout (as fingerseal did
    /// before), was sealed again outside it when the PIN was entered.
    case pinLeftTPMLockout
    /// A vault sealed to a TPM this computer no longer has was replaced by a new one (the
    /// account password and a new PIN); `previous` is the old vault's id.
    case vaultReplacedAfterTPMChange(previous: String)
}

/// Where each event's log line goes, besides the audit file.
public enum AuditSink: Sendable {
    /// syslog(3) at LOG_AUTHPRIV: the broker.
    case syslog
    /// The PAM module passes pam_syslog here.
    case custom(@Sendable (Syslog.Level, String) -> Void)
    case none

    func log(_ level: Syslog.Level, _ message: String) {
        switch self {
        case .syslog: Syslog.log(level, message)
        case let .custom(log): log(level, message)
        case .none: break
        }
    }
}

/// The last entry of an audit chain (its number and MAC), kept in the vault document: one
/// per chain (`auditHead`, `attemptsHead`).
///
/// Why there and not in a file of its own: the document is MAC'd with the vault key already
/// and is the one file a vault cannot do without. Cutting entries off the end of
/// `audit.jsonl`, or deleting it, no longer matches the head; deleting the head would mean
/// deleting the vault. A separate head file could be deleted together with the trail, and
/// the trail would look as if it never existed. The price is one more atomic vault write per
/// append (same temp file, fsync, rename, fsync as every vault update).
struct AuditHead: Codable, Equatable {
    var seq: UInt64
    var mac: String

    static let none = AuditHead(seq: 0, mac: Encoding.hex(AuditLine.genesis))
}

/// One event as `fingerseal audit` lists it.
public struct AuditRecord: Equatable, Sendable {
    public let chain: AuditChain
    /// Its number in its chain.
    public let seq: UInt64
    public let time: Int64
    public let event: String
    /// An attempt: the newest security event's number when it was written.
    let after: UInt64?
    /// A plain sentence saying what happened.
    public let sentence: String
    /// The entry as stored: one JSON object.
    public let json: String
}

/// The events as stored (read without the vault key, so not verified), and how many lines
/// could not be read as entries.
public struct AuditListing: Equatable, Sendable {
    public let records: [AuditRecord]
    public let unreadableLines: Int
}

/// What is wrong with an audit trail: the first problem found, in file order.
public struct AuditProblem: Error, Equatable, Sendable {
    public enum Kind: String, Sendable {
        /// An entry's content changed (or a line is not an entry at all).
        case edited
        /// Entries are missing: a gap in the numbers, or a missing file.
        case deleted
        /// A line fingerseal did not write there (a forged entry, or a copy of one).
        case inserted
        /// Authentic entries in the wrong order.
        case reordered
        /// The trail ends before the last entry the vault recorded.
        case truncated
        /// The last line is incomplete and held a recorded entry.
        case tornLastLine = "torn-last-line"
        /// An entry of another vault.
        case wrongVault = "wrong-vault"
    }

    public let kind: Kind
    public let file: String
    /// 1-based line number, when one line is to blame.
    public let line: Int?
    /// The entry number concerned, when known.
    public let entry: UInt64?
    /// The problem as a plain sentence fragment.
    public let message: String
}

/// The result of `AuditTrail.verify`, over both chains.
public struct AuditVerification: Equatable, Sendable {
    /// Events verified in both chains (before the problem, if there is one; rotation entries
    /// not counted).
    public let events: Int
    /// The first problem: the security chain's, else the attempts'.
    public let problem: AuditProblem?
    /// A current file ends in an incomplete line after the last recorded entry: an append
    /// a crash cut short. It never held a recorded event; the next append removes it.
    public let interruptedAppend: Bool
    /// The chains whose oldest entries were rotated away; empty when both still hold every
    /// entry since the vault was made.
    public var rotatedAway: [AuditRotation] = []

    public var intact: Bool { problem == nil }
}

/// What rotation took from one chain: entries 1 to `through` (numbers as listed; rotation
/// entries count), and when the oldest entry still kept was written.
public struct AuditRotation: Equatable, Sendable {
    public let chain: AuditChain
    public let through: UInt64
    public let oldestKept: Int64
}

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

    public init(store: VaultStore, clock: any Clock = SystemClock(), sink: AuditSink = .syslog) {
        self.store = store
        self.clock = clock
        self.sink = sink
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

    /// One plain sentence at LOG_AUTHPRIV, with the entry's number when it was recorded.
    private func log(_ entry: AuditEntry, chain: AuditChain, seq: UInt64?) {
        let number = seq.map { chain == .security ? ", event \($0)" : ", attempt \($0)" } ?? ""
        sink.log(.notice, "audit: user \(store.location.account.name)" + number + ": " + entry.sentence)
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

extension AuditEvent {
    /// Which chain records it. Attempts are what anyone running as the user can cause without
    /// a finger, the PIN or the account password, as often as they like: a fallback, a
    /// failure, a step-up that did not succeed. Everything else needs one of those, or is rare
    /// by nature (a lock engages once until the next success). Exhaustive on purpose: a new
    /// event must be placed.
    public var chain: AuditChain {
        switch self {
        case .fallback, .failure: return .attempts
        case let .stepUp(_, result): return result == .success ? .security : .attempts
        case .signIn, .unlock, .reveal, .lockout, .logout, .pinReset, .fprintdSetConfirmed, .sealedToTPM, .pinLeftTPMLockout,
             .vaultReplacedAfterTPMChange:
            return .security
        }
    }

    func entry(time: Int64, vault: String) -> AuditEntry {
        var entry = AuditEntry(seq: 0, time: time, vault: vault, event: "", prev: "")
        switch self {
        case let .signIn(issuer, flow):
            entry.event = "sign-in"
            entry.issuer = AuditText.clean(issuer)
            entry.flow = AuditText.clean(flow)
        case let .unlock(method, via):
            entry.event = "unlock"
            entry.method = method.rawValue
            entry.via = via.rawValue
        case let .fallback(reason):
            entry.event = "fallback"
            entry.reason = AuditText.clean(reason)
        case let .stepUp(context, result):
            entry.event = "step-up"
            entry.context = AuditText.clean(context)
            entry.result = result.rawValue
        case let .reveal(context, fileID):
            entry.event = "reveal"
            entry.context = AuditText.clean(context)
            entry.file = AuditText.clean(fileID)
        case let .lockout(method):
            entry.event = "lockout"
            entry.method = method.rawValue
        case let .failure(action, reason):
            entry.event = "failure"
            entry.action = AuditText.clean(action)
            entry.reason = AuditText.clean(reason)
        case .logout:
            entry.event = "logout"
        case .pinReset:
            entry.event = "pin-reset"
        case let .fprintdSetConfirmed(fingers):
            entry.event = "fprintd-set-confirmed"
            entry.reason = String(fingers)
        case let .sealedToTPM(slots):
            entry.event = "sealed-to-tpm"
            entry.reason = AuditText.clean(slots.joined(separator: ","))
        case .pinLeftTPMLockout:
            entry.event = "pin-left-tpm-lockout"
        case let .vaultReplacedAfterTPMChange(previous):
            entry.event = "vault-replaced"
            entry.reason = "tpmChanged"
            entry.file = AuditText.clean(previous)
        }
        return entry
    }
}

extension AuditEntry {
    /// What happened, as one plain sentence.
    var sentence: String {
        switch event {
        case "sign-in": return Messages.auditSignedIn(issuer ?? "?", flow ?? "?")
        case "unlock": return Messages.auditUnlocked(method: method ?? "?", via: via ?? "?")
        case "fallback": return Messages.auditFallback(Messages.auditReason(reason ?? "?"))
        case "step-up": return Messages.auditStepUp(context ?? "?", Messages.auditReason(result ?? "?"))
        case "reveal": return Messages.auditReveal(context ?? "?", file ?? "?")
        case "lockout": return Messages.auditLockout(method ?? "?")
        case "failure": return Messages.auditFailure(action ?? "?", Messages.auditReason(reason ?? "?"))
        case "logout": return Messages.auditLoggedOut
        case "pin-reset": return Messages.auditPINReset
        case "fprintd-set-confirmed": return Messages.auditFprintdSetConfirmed(Int(reason ?? "") ?? 0)
        case "sealed-to-tpm": return Messages.auditSealedToTPM(slots: (reason ?? "").split(separator: ",").map(String.init))
        case "pin-left-tpm-lockout": return Messages.auditPINLeftTPMLockout
        case "vault-replaced": return Messages.auditVaultReplaced(file ?? "?")
        case AuditEntry.rotated: return Messages.auditRotated(trail == AuditChain.attempts.entryTag ? AuditFiles.olderAttempts : AuditFiles.older)
        case AuditEntry.counted:
            let kinds = counts ?? [], others = other ?? 0
            let total = kinds.reduce(others) { $0 &+ $1.count }
            let parts = kinds.map { Messages.auditCountedKind($0.count, $0.example.sentence) }
                + (others > 0 ? [Messages.auditCountedOther(others)] : [])
            return ([Messages.auditCounted(total, isoTimestamp(since ?? time), isoTimestamp(until ?? time))] + parts)
                .joined(separator: " ")
        default: return Messages.auditUnknownEvent(event)
        }
    }
}

/// Text that goes into an entry: no control or bidi-override characters (a listing must
/// read as it is), at most `AuditFiles.maxField` bytes.
enum AuditText {
    static func clean(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        var bytes = 0
        for scalar in text.unicodeScalars {
            let value = scalar.value
            let control = value < 0x20 || (0x7f...0x9f).contains(value)
            let bidi = (0x202a...0x202e).contains(value) || (0x2066...0x2069).contains(value)
            let kept: Unicode.Scalar = control || bidi ? " " : scalar
            bytes += String(kept).utf8.count
            if bytes > AuditFiles.maxField { break }
            out.append(kept)
        }
        return String(out)
    }
}

/// Reads audit files, bounded.
enum AuditReader {
    /// The parsed file, or nil when it does not exist. Larger than fingerseal ever writes it:
    /// an `UnsafeFileError` (too large).
    static func read(_ directory: SafeDirectory, _ name: String, chain: AuditChain) throws -> AuditFileContents? {
        guard let bytes = try directory.read(name, sizeLimit: chain.fileLimit) else { return nil }
        return AuditFileContents.parse(bytes)
    }
}

/// The append to one chain, under the vault's exclusive lock (inside `UnlockedVault.update`).
struct AuditWriter {
    let chain: AuditChain
    let directory: SafeDirectory
    let key: SecureBytes
    let vaultID: String
    /// The newest entry: the vault's head, moved on by what is found on disk and written.
    var head: AuditHead
    let fileLimit: Int

    private var currentPath: String { directory.path + "/" + chain.currentFile }

    private func own(_ line: AuditLine?) -> AuditLine? {
        guard let line, line.entry.vault == vaultID, line.isAuthentic(key: key) else { return nil }
        return line
    }

    /// The authentic entry on the complete line that ends just before `end` (`end - 1` is
    /// its newline), or nil.
    private func line(in file: FileDescriptor, endingAt end: Int, subject: String) throws -> AuditLine? {
        guard end > 0 else { return nil }
        let start = max(end - 1 - AuditFiles.maxLine - 1, 0)
        let window = try file.readBytes(at: start, count: end - 1 - start, subject: subject)
        let lineStart: Int
        if let newline = window.lastIndex(of: 0x0a) {
            lineStart = newline + 1
        } else if start == 0 {
            lineStart = 0
        } else {
            return nil // longer than any entry
        }
        return own(AuditLine.parse(window[lineStart...]))
    }

    /// The authentic entry on the first line, or nil.
    private func firstLine(in file: FileDescriptor, size: Int, subject: String) throws -> AuditLine? {
        let window = try file.readBytes(at: 0, count: min(size, AuditFiles.maxLine + 1), subject: subject)
        guard let newline = window.firstIndex(of: 0x0a) else { return nil }
        return own(AuditLine.parse(window[..<newline]))
    }

    /// The older file's first and last authentic entries, when it exists and is complete.
    private func olderEnds() throws -> (first: AuditLine?, last: AuditLine?) {
        guard let older = try directory.openTrusted(chain.olderFile, sizeLimit: Int.max) else { return (nil, nil) }
        let subject = directory.path + "/" + chain.olderFile
        let size = Int(try older.status().st_size)
        guard size > 0, try older.readBytes(at: size - 1, count: 1, subject: subject) == [0x0a] else { return (nil, nil) }
        return (try firstLine(in: older, size: size, subject: subject), try line(in: older, endingAt: size, subject: subject))
    }

    mutating func append(_ entries: [AuditEntry]) throws -> [AuditLine] {
        var (file, created) = try directory.openForAppend(chain.currentFile)
        var size = Int(try file.status().st_size)
        var separator: [UInt8] = []
        var older: (first: AuditLine?, last: AuditLine?)? = nil

        // 1. An incomplete last line. It is cut off only when it can be an append of ours
        //    that a crash interrupted: no longer than a line, and after the newest entry the
        //    vault recorded (so it never held a recorded event). Anything else is damage for
        //    --verify to report: it stays, and the new entry starts on a line of its own.
        if size > 0, try file.readBytes(at: size - 1, count: 1, subject: currentPath) != [0x0a] {
            let window = try file.readBytes(at: max(size - AuditFiles.maxLine - 1, 0), count: min(size, AuditFiles.maxLine + 1),
                                       subject: currentPath)
            var cut: Int? = nil
            if let newline = window.lastIndex(of: 0x0a) {
                cut = size - window.count + newline + 1
            } else if size <= AuditFiles.maxLine {
                cut = 0
            }
            var before: AuditLine? = nil
            if let cut {
                if cut > 0 {
                    before = try line(in: file, endingAt: cut, subject: currentPath)
                } else {
                    older = try olderEnds()
                    before = older?.last
                }
            }
            if let cut, head.seq == 0 || (before?.entry.seq ?? 0) >= head.seq {
                try file.truncate(to: cut, subject: currentPath)
                try file.sync()
                size = cut
            } else {
                separator = [0x0a]
            }
        }

        // 2. The newest entry on disk. An append whose vault update a crash prevented is
        //    authentic and newer than the head: adopt it, so the chain goes on after it.
        var newest: AuditLine? = nil
        if separator.isEmpty {
            if size > 0 {
                newest = try line(in: file, endingAt: size, subject: currentPath)
            } else if head.seq > 0 {
                if older == nil { older = try olderEnds() }
                newest = older?.last
            }
        }
        if let newest, newest.entry.seq > head.seq {
            head = AuditHead(seq: newest.entry.seq, mac: Encoding.hex(newest.mac))
        }

        // 3. Rotation. An empty current file after recorded events is a rotation that a
        //    crash cut short when the older file ends at the head: finish it. (If it does
        //    not, the current file was lost; the trail goes on from the head and --verify
        //    reports the gap.) A current file that would grow past the limit is rotated.
        var rotation: UInt64? = nil
        if size == 0 && head.seq > 0, let ends = older, let last = ends.last, let first = ends.first,
           last.entry.seq == head.seq, Encoding.hex(last.mac) == head.mac {
            rotation = first.entry.seq
        }
        var lines = try seal(entries, rotation: rotation)
        let length = { (lines: [AuditLine]) in lines.reduce(0) { $0 + $1.raw.count + 1 } }
        if size > 0 && size + separator.count + length(lines) > fileLimit {
            let first = try firstLine(in: file, size: size, subject: currentPath)?.entry.seq ?? 0
            try directory.rename(chain.currentFile, to: chain.olderFile)
            (file, created) = try directory.openForAppend(chain.currentFile)
            size = 0
            separator = []
            lines = try seal(entries, rotation: first)
        }

        // 4. One write, then fsync (and the directory, for a new file).
        var bytes = separator
        for line in lines { bytes += line.raw + [0x0a] }
        try file.writeAll(bytes, subject: currentPath)
        try file.sync()
        if created { try directory.sync() }
        if let last = lines.last { head = AuditHead(seq: last.entry.seq, mac: Encoding.hex(last.mac)) }
        return lines
    }

    /// Numbers and seals `entries` after the head, behind a rotation entry when `rotation`
    /// names the older file's first entry.
    private func seal(_ entries: [AuditEntry], rotation: UInt64?) throws -> [AuditLine] {
        guard var prev = Hex.bytes(head.mac), prev.count == AuditLine.macLength else {
            throw FingersealError(.vaultUnusable, Messages.vaultDamaged(VaultFiles.vault, tr("its audit head is not valid")))
        }
        var seq = head.seq
        var sealed: [AuditLine] = []
        var pending = entries
        if let rotation {
            pending.insert(AuditEntry(seq: 0, time: entries.first?.time ?? 0, vault: vaultID, event: AuditEntry.rotated,
                                      first: rotation, prev: ""), at: 0)
        }
        // Numbers written by fingerseal are far from the end of UInt64; a head that says
        // otherwise must not trap (this runs inside PAM hosts): it is refused.
        guard seq <= UInt64.max - UInt64(pending.count) else {
            throw FingersealError(.vaultUnusable, Messages.vaultDamaged(VaultFiles.vault, tr("its audit head is not valid")))
        }
        for var entry in pending {
            seq += 1
            entry.seq = seq
            entry.trail = chain.entryTag
            entry.prev = Encoding.hex(prev)
            let line = try AuditLine.seal(entry, key: key)
            sealed.append(line)
            prev = line.mac
        }
        return sealed
    }
}

/// Walks one chain and names the first problem.
struct AuditVerifier {
    let chain: AuditChain
    let key: SecureBytes
    let vaultID: String
    private(set) var events = 0
    /// Entry number → MAC, of every authentic entry walked.
    private var seen: [UInt64: [UInt8]] = [:]
    private var last: AuditLine? = nil
    /// The oldest entry walked (files are walked oldest first), and the oldest event's time.
    private var oldest: AuditLine? = nil
    private var oldestEventTime: Int64? = nil

    init(chain: AuditChain = .security, key: SecureBytes, vaultID: String) {
        self.chain = chain
        self.key = key
        self.vaultID = vaultID
    }

    /// Entries before the oldest kept one were rotated away (a chain starts at 1).
    private var rotatedAway: [AuditRotation] {
        guard let oldest, oldest.entry.seq > 1 else { return [] }
        return [AuditRotation(chain: chain, through: oldest.entry.seq - 1, oldestKept: oldestEventTime ?? oldest.entry.time)]
    }

    private func problem(_ kind: AuditProblem.Kind, _ file: String, line: Int?, entry: UInt64?, _ message: String) -> AuditProblem {
        AuditProblem(kind: kind, file: file, line: line, entry: entry, message: message)
    }

    mutating func verify(_ directory: SafeDirectory, head: AuditHead) throws -> AuditVerification {
        let headMAC = Hex.bytes(head.mac) ?? []
        func result(_ problem: AuditProblem?, interrupted: Bool = false) -> AuditVerification {
            AuditVerification(events: events, problem: problem, interruptedAppend: interrupted,
                              rotatedAway: problem == nil ? rotatedAway : [])
        }
        func read(_ name: String) throws -> Result<AuditFileContents?, AuditProblem> {
            do {
                return .success(try AuditReader.read(directory, name, chain: chain))
            } catch let error as UnsafeFileError {
                guard case .tooLarge = error.reason else { throw error }
                return .failure(problem(.edited, name, line: nil, entry: nil, Messages.auditOversized(name)))
            }
        }
        let currentName = chain.currentFile, olderName = chain.olderFile

        // The current file, when it is missing or empty.
        let current: AuditFileContents
        switch try read(currentName) {
        case let .failure(problem): return result(problem)
        case let .success(contents?) where !contents.lines.isEmpty || !contents.tail.isEmpty: current = contents
        case .success:
            if head.seq == 0 { return result(nil) }
            // Intact only as a rotation a crash cut short: the older file ends at the head.
            if case let .success(older?) = try read(olderName), walk(older, olderName, expected: nil, prev: nil) == nil,
               older.tail.isEmpty, let last, last.entry.seq >= head.seq, seen[head.seq] == headMAC {
                return result(nil)
            }
            return result(problem(.deleted, currentName, line: nil, entry: nil, Messages.auditFileMissing(currentName, head.seq)))
        }

        // Where the current file's chain starts: entry 1, or after the older file.
        var expected: UInt64 = 1
        var prev = AuditLine.genesis
        if let first = current.lines.first?.parsed, first.entry.vault == vaultID, first.isAuthentic(key: key) {
            if first.isRotation, let from = first.entry.first {
                let older: AuditFileContents
                switch try read(olderName) {
                case let .failure(problem): return result(problem)
                case let .success(contents?) where !contents.lines.isEmpty: older = contents
                case .success:
                    return result(problem(.deleted, olderName, line: nil, entry: from,
                                          Messages.auditOlderFileMissing(olderName, from, first.entry.seq &- 1)))
                }
                if let problem = walk(older, olderName, expected: from, prev: nil) { return result(problem) }
                if !older.tail.isEmpty {
                    return result(problem(.tornLastLine, olderName, line: older.lines.count + 1, entry: nil,
                                          Messages.auditTornLine(olderName, older.lines.count + 1, (last?.entry.seq ?? 0) &+ 1)))
                }
                guard let olderLast = last, olderLast.entry.seq == first.entry.seq &- 1 else {
                    return result(problem(.truncated, olderName, line: nil, entry: last?.entry.seq,
                                          Messages.auditTruncated(olderName, last?.entry.seq ?? 0, first.entry.seq &- 1)))
                }
                guard Encoding.hex(olderLast.mac) == first.entry.prev else {
                    return result(problem(.inserted, currentName, line: 1, entry: first.entry.seq,
                                          Messages.auditDoesNotFollow(currentName, 1)))
                }
                expected = first.entry.seq
                prev = olderLast.mac
            } else if first.entry.seq != 1 {
                return result(problem(.deleted, currentName, line: 1, entry: first.entry.seq,
                                      Messages.auditDeletedBefore(currentName, 1, first.entry.seq)))
            }
        }
        if let problem = walk(current, currentName, expected: expected, prev: prev) { return result(problem) }

        // The end: it must reach the head the vault recorded.
        let lastSeq = last?.entry.seq ?? 0
        var interrupted = false
        if !current.tail.isEmpty {
            let lineNumber = current.lines.count + 1
            if current.tail.count > AuditFiles.maxLine {
                return result(problem(.edited, currentName, line: lineNumber, entry: nil, Messages.auditUnreadable(currentName, lineNumber)))
            }
            guard lastSeq >= head.seq else {
                return result(problem(.tornLastLine, currentName, line: lineNumber, entry: lastSeq &+ 1,
                                      Messages.auditTornLine(currentName, lineNumber, lastSeq &+ 1)))
            }
            interrupted = true
        }
        if lastSeq < head.seq {
            return result(problem(.truncated, currentName, line: nil, entry: lastSeq, Messages.auditTruncated(currentName, lastSeq, head.seq)))
        }
        if head.seq > 0 && seen[head.seq] != headMAC {
            return result(problem(.deleted, currentName, line: nil, entry: head.seq, Messages.auditNotRecorded(head.seq)))
        }
        return result(nil, interrupted: interrupted)
    }

    /// Checks `contents` line by line. `expected`: the number the first line must have (nil:
    /// any); `prev`: the MAC it must follow (nil: not known, the older file's start).
    mutating func walk(_ contents: AuditFileContents, _ file: String, expected start: UInt64?, prev startPrev: [UInt8]?) -> AuditProblem? {
        var expected = start
        var prev = startPrev
        for (index, line) in contents.lines.enumerated() {
            let later = contents.lines[(index + 1)...]
            guard let parsed = line.parsed else {
                return problem(.edited, file, line: line.number, entry: expected, Messages.auditUnreadable(file, line.number))
            }
            let entry = parsed.entry
            if entry.vault != vaultID {
                return problem(.wrongVault, file, line: line.number, entry: entry.seq, Messages.auditWrongVault(file, line.number))
            }
            guard parsed.isAuthentic(key: key) else {
                // A forged line either repeats the number of the genuine entry next to it, or
                // sits where the chain goes on without it; otherwise an entry was changed.
                let next = later.first?.parsed?.entry.seq
                if next == entry.seq || (entry.seq != expected && next != nil && next == expected) {
                    return problem(.inserted, file, line: line.number, entry: entry.seq, Messages.auditInserted(file, line.number))
                }
                return problem(.edited, file, line: line.number, entry: entry.seq, Messages.auditEdited(file, line.number, entry.seq))
            }
            if let want = expected, entry.seq != want {
                if entry.seq > want {
                    if later.contains(where: { $0.parsed?.entry.seq == want }) {
                        return problem(.reordered, file, line: line.number, entry: entry.seq,
                                       Messages.auditReordered(file, line.number, entry.seq))
                    }
                    return problem(.deleted, file, line: line.number, entry: want,
                                   Messages.auditDeleted(file, line.number, want, entry.seq - 1))
                }
                if seen[entry.seq] == parsed.mac {
                    return problem(.inserted, file, line: line.number, entry: entry.seq,
                                   Messages.auditDuplicate(file, line.number, entry.seq))
                }
                return problem(.reordered, file, line: line.number, entry: entry.seq, Messages.auditReordered(file, line.number, entry.seq))
            }
            if let prev, Encoding.hex(prev) != entry.prev {
                return problem(.inserted, file, line: line.number, entry: entry.seq, Messages.auditDoesNotFollow(file, line.number))
            }
            seen[entry.seq] = parsed.mac
            if oldest == nil { oldest = parsed }
            if !parsed.isRotation {
                events += 1
                if oldestEventTime == nil { oldestEventTime = entry.time }
            }
            expected = entry.seq &+ 1
            prev = parsed.mac
            last = parsed
        }
        return nil
    }
}
