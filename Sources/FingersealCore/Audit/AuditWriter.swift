import FingersealWire
import Localization
import SodiumKit
import SystemKit

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
