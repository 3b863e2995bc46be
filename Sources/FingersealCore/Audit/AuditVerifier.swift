import SodiumKit
import SystemKit

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

    private func problem(_ kind: AuditProblem.Damage, _ file: String, line: Int?, entry: UInt64?, _ message: String) -> AuditProblem {
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
