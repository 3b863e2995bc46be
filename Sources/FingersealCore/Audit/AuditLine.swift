import FingersealWire
import FoundationEssentials
import SodiumKit
import SystemKit

/// The audit trail's files in the vault directory, and their bounds.
public enum AuditFiles {
    /// The security chain's current file: JSON Lines, appended to.
    public static let current = "audit.jsonl"
    /// The file before it. When `current` would grow past `fileLimit`, it is renamed to this
    /// name (replacing the one before) and a new `current` begins with a rotation entry that
    /// names the older file's first event. So at most two files, at most 2 MiB, are kept, and
    /// the newest 1 MiB or more of history (several thousand events) is always there.
    public static let older = "audit.1.jsonl"
    /// The attempts' chain (`AuditChain.attempts`), rotated the same way past
    /// `attemptsFileLimit`.
    public static let attempts = "attempts.jsonl"
    public static let olderAttempts = "attempts.1.jsonl"
    /// Every audit file a vault directory holds: deleted with the vault.
    public static let all = [current, older, attempts, olderAttempts]
    static let fileLimit = 1 << 20
    /// Smaller: attempts are many and each says less; a quarter MiB is a thousand or more.
    static let attemptsFileLimit = 256 << 10
    /// The longest line fingerseal writes or reads; anything longer is not an entry.
    static let maxLine = 2048
    /// The longest text kept in one field (names, reasons); longer text is cut.
    static let maxField = 256
}

/// The two chains of a vault's audit trail, each with its own files, rotation limit, MAC key
/// and head in the vault document.
///
/// Why two: a trail that anyone running as the user can fill (a cancelled step-up needs no
/// finger and no PIN) would rotate the events that matter out of a single bounded trail.
/// Security events need a finger, the PIN or the account password, or are rare by nature
/// (a lock engages once until the next success), so their chain grows only as fast as people
/// authenticate; attempts have a chain of their own, and no number of them can push a
/// security event out.
public enum AuditChain: String, CaseIterable, Sendable {
    /// Sign-ins, unlocks, reveals, successful step-ups, lockouts, sign-outs, PIN resets,
    /// confirmations and TPM changes: `audit.jsonl`.
    case security
    /// Fallbacks, failures, step-ups that did not succeed: `attempts.jsonl`.
    case attempts

    public var currentFile: String { self == .security ? AuditFiles.current : AuditFiles.attempts }
    public var olderFile: String { self == .security ? AuditFiles.older : AuditFiles.olderAttempts }
    var fileLimit: Int { self == .security ? AuditFiles.fileLimit : AuditFiles.attemptsFileLimit }
    /// What an entry's `trail` says: nothing for the security chain (entries written before
    /// there were two chains say nothing either).
    var entryTag: String? { self == .security ? nil : rawValue }
}

/// One entry: `{"event":"unlock","method":"finger",...,"prev":"<hex>","seq":N,"time":T,
/// "vault":"<id>","mac":"<hex>"}`. Every field but `mac` is the entry's body, encoded with
/// sorted keys; `mac` is appended last.
struct AuditEntry: Codable, Equatable {
    var seq: UInt64
    var time: Int64
    /// The vault the entry belongs to: a file copied from another vault is told apart.
    var vault: String
    var event: String
    var method: String? = nil
    var via: String? = nil
    var reason: String? = nil
    var issuer: String? = nil
    var flow: String? = nil
    var context: String? = nil
    var result: String? = nil
    var file: String? = nil
    var action: String? = nil
    /// An application's request, as the session agent named it (`AuditEvent.application`):
    /// its bus name, executable, Flatpak app id and the name it gives itself.
    var bus: String? = nil
    var exe: String? = nil
    var app: String? = nil
    var name: String? = nil
    /// A rotation entry: the number of the first entry in the older file.
    var first: UInt64? = nil
    /// The attempts' chain: "attempts" (`AuditChain.entryTag`); absent in the security chain.
    var trail: String? = nil
    /// Attempts: the number of the newest security event when this one was written, which
    /// places it among them when both chains are listed.
    var after: UInt64? = nil
    /// A count of attempts not recorded one by one (`AttemptTally`): the first and last one's
    /// times, how many of each kind, and how many of kinds beyond those named.
    var since: Int64? = nil
    var until: Int64? = nil
    var counts: [AuditCount]? = nil
    var other: UInt64? = nil
    /// The MAC of the entry before (all zeros before the first).
    var prev: String

    static let rotated = "rotated"
    static let counted = "attempts-counted"
}

/// One kind of attempt in a count, and how many: the fields that make its sentence.
struct AuditCount: Codable, Equatable, Sendable {
    var event: String
    var action: String? = nil
    var reason: String? = nil
    var context: String? = nil
    var result: String? = nil
    var count: UInt64

    init(_ entry: AuditEntry, count: UInt64) {
        event = entry.event
        action = entry.action
        reason = entry.reason
        context = entry.context
        result = entry.result
        self.count = count
    }

    func isKind(of entry: AuditEntry) -> Bool {
        event == entry.event && action == entry.action && reason == entry.reason && context == entry.context
            && result == entry.result
    }

    /// An entry of this kind, for its sentence.
    var example: AuditEntry {
        var entry = AuditEntry(seq: 0, time: 0, vault: "", event: event, prev: "")
        entry.action = action
        entry.reason = reason
        entry.context = context
        entry.result = result
        return entry
    }
}

/// A line of the audit file: the entry, its MAC, and the bytes the MAC covers.
///
/// MAC = BLAKE2b-256 keyed with the audit key (a KDF subkey of the vault master key) over the
/// previous entry's MAC (32 bytes) followed by the body. The body is the stored line minus
/// its `,"mac":"…"` member: the check needs no re-encoding, so a future JSON encoder that
/// writes differently cannot make old entries look edited, and any changed byte does.
struct AuditLine: Equatable {
    let entry: AuditEntry
    let mac: [UInt8]
    /// The line as stored, without its newline.
    let raw: [UInt8]

    static let macLength = 32
    static let genesis = [UInt8](repeating: 0, count: macLength)
    private static let macPrefix = Array(#","mac":""#.utf8)
    private static let macSuffix = Array(#""}"#.utf8)
    /// `,"mac":"` + 64 hex digits + `"}`
    private static let trailerLength = macPrefix.count + 2 * macLength + macSuffix.count

    /// The bytes the MAC covers: the line without its mac member, closed again.
    var body: [UInt8] { Array(raw[..<(raw.count - AuditLine.trailerLength)]) + [0x7d] }

    var isRotation: Bool { entry.event == AuditEntry.rotated }

    /// A chain's key: a subkey in a context of its own per chain, so a line (or a file) of one
    /// chain never verifies in the other. (Subkeys of the master key in use: id 1 "fsvaultm",
    /// the vault document's MAC; id 2 "fsaudit1", the security chain; id 4, sealed data;
    /// id 5 "fsattmp1", the attempts' chain.)
    static func key(_ masterKey: SecureBytes, chain: AuditChain = .security) throws -> SecureBytes {
        switch chain {
        case .security: return try KeyDerivation.subkey(of: masterKey, id: 2, context: "fsaudit1")
        case .attempts: return try KeyDerivation.subkey(of: masterKey, id: 5, context: "fsattmp1")
        }
    }

    static func computeMAC(body: [UInt8], prev: [UInt8], key: SecureBytes) throws -> [UInt8] {
        try GenericHash.hash(prev + body, key: key, length: macLength)
    }

    /// Encodes and seals `entry` (whose `prev` names the MAC it follows).
    static func seal(_ entry: AuditEntry, key: SecureBytes) throws -> AuditLine {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = Array(try encoder.encode(entry))
        guard body.last == 0x7d, let prev = Hex.bytes(entry.prev), prev.count == macLength else {
            throw FingersealError(.systemError, Messages.systemFailure(.writeAuditTrail))
        }
        let mac = try computeMAC(body: body, prev: prev, key: key)
        let raw = Array(body.dropLast()) + macPrefix + Array(Encoding.hex(mac).utf8) + macSuffix
        guard raw.count <= AuditFiles.maxLine else {
            throw FingersealError(.systemError, Messages.systemFailure(.writeAuditTrail), detail: "entry too long")
        }
        return AuditLine(entry: entry, mac: mac, raw: raw)
    }

    /// A stored line (without its newline), or nil when it is not one in the format. Says
    /// nothing about authenticity: see `isAuthentic`.
    static func parse(_ line: ArraySlice<UInt8>) -> AuditLine? {
        guard line.count <= AuditFiles.maxLine, line.count > trailerLength + 1, line.first == 0x7b else { return nil }
        let raw = Array(line)
        let trailerStart = raw.count - trailerLength
        let macStart = trailerStart + macPrefix.count
        guard Array(raw[trailerStart..<macStart]) == macPrefix,
              Array(raw[(raw.count - macSuffix.count)...]) == macSuffix,
              let mac = Hex.bytes(raw[macStart..<(raw.count - macSuffix.count)]), mac.count == macLength else { return nil }
        let body = Array(raw[..<trailerStart]) + [0x7d]
        guard let entry = try? JSONDecoder().decode(AuditEntry.self, from: Data(body)),
              let prev = Hex.bytes(entry.prev), prev.count == macLength,
              entry.vault.utf8.count == 32, Hex.bytes(entry.vault) != nil,
              !entry.event.isEmpty, entry.event.utf8.count <= AuditFiles.maxField else { return nil }
        return AuditLine(entry: entry, mac: mac, raw: raw)
    }

    /// True when the MAC is the one the audit key gives: the line is exactly as fingerseal
    /// wrote it, for this vault.
    func isAuthentic(key: SecureBytes) -> Bool {
        guard let prev = Hex.bytes(entry.prev),
              let expected = try? AuditLine.computeMAC(body: body, prev: prev, key: key) else { return false }
        return Sodium.equal(expected, mac)
    }
}

/// What one audit file holds: its complete lines (parsed, or nil when a line is not an entry)
/// and the bytes after its last newline (an incomplete line; normally none).
struct AuditFileContents {
    struct Line {
        /// 1-based.
        let number: Int
        let parsed: AuditLine?
    }

    var lines: [Line] = []
    var tail: [UInt8] = []

    static func parse(_ bytes: [UInt8]) -> AuditFileContents {
        var contents = AuditFileContents()
        var start = 0
        for index in bytes.indices where bytes[index] == 0x0a {
            contents.lines.append(Line(number: contents.lines.count + 1, parsed: AuditLine.parse(bytes[start..<index])))
            start = index + 1
        }
        contents.tail = Array(bytes[start...])
        return contents
    }
}

/// Lowercase hex, both ways.
enum Hex {
    static func bytes(_ text: String) -> [UInt8]? { bytes(text.utf8) }

    static func bytes<Digits: Collection<UInt8>>(_ text: Digits) -> [UInt8]? {
        let digits = Array(text)
        guard digits.count % 2 == 0 else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case 0x30...0x39: return digit - 0x30
            case 0x61...0x66: return digit - 0x61 + 10
            default: return nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
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
