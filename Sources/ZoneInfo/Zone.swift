import SystemKit

/// A time zone for presenting times to a person: a name and what it says at each instant.
/// Resolved from what a client sends (its TZ, or its /etc/localtime's name) against the
/// system's TZif database, without ICU. Only ever presentation: nothing decided depends on it.
public struct Zone: Equatable, Sendable {
    /// As the client named it ("Europe/Oslo", or the rule "CET-1CEST,M3.5.0,M10.5.0/3").
    public let name: String
    private let rules: Rules

    enum Rules: Equatable, Sendable {
        case database(TZif)
        case rule(PosixRule)
        case utc
    }

    public static let utc = Zone(name: "UTC", rules: .utc)

    init(name: String, rules: Rules) {
        self.name = name
        self.rules = rules
    }

    /// What holds at `instant` (seconds since the epoch).
    public func type(at instant: Int64) -> LocalTimeType {
        switch rules {
        case let .database(file): return file.type(at: instant)
        case let .rule(rule): return rule.type(at: instant)
        case .utc: return .utc
        }
    }

    /// Why a zone a client named could not be used (the broker logs it and uses UTC).
    public enum Unusable: Error, Equatable, Sendable {
        /// Not a name the database could hold, nor a POSIX rule.
        case badName
        /// No such file (or not a regular, readable file within the size limit).
        case notFound
        case malformed(String)
    }

    /// The zone `text` names, the way glibc reads TZ: ":NAME" is a database name; otherwise a
    /// database name when there is such a file, else a POSIX rule. `database` is the
    /// zoneinfo directory (tests point it elsewhere).
    public static func named(_ text: String, database: String = ZoneDatabase.directory) throws(Unusable) -> Zone {
        if text.hasPrefix(":") { return try ZoneDatabase(directory: database).zone(String(text.dropFirst())) }
        do {
            return try ZoneDatabase(directory: database).zone(text)
        } catch {
            if let rule = PosixRule(text) { return Zone(name: text, rules: .rule(rule)) }
            throw error
        }
    }
}

/// The system's TZif files (/usr/share/zoneinfo), reached only by names that stay inside it.
public struct ZoneDatabase: Sendable {
    public static let directory = "/usr/share/zoneinfo"
    /// tzdata's longest name is under 40 characters.
    static let nameLimit = 128

    let directory: String

    public init(directory: String = ZoneDatabase.directory) { self.directory = directory }

    /// Whether `name` is a path inside the database: relative, components of letters, digits,
    /// '_', '-', '+' and '.', none of them "." or "..", none empty.
    public static func isSafeName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= nameLimit else { return false }
        let allowed = name.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || [UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."), UInt8(ascii: "/")].contains(byte)
        }
        guard allowed else { return false }
        return name.split(separator: "/", omittingEmptySubsequences: false).allSatisfy { !$0.isEmpty && $0 != "." && $0 != ".." }
    }

    func zone(_ name: String) throws(Zone.Unusable) -> Zone {
        guard ZoneDatabase.isSafeName(name) else { throw .badName }
        guard let bytes = readPlainFile(directory + "/" + name, limit: TZif.sizeLimit) else { throw .notFound }
        do {
            return Zone(name: name, rules: .database(try TZif(parsing: bytes)))
        } catch {
            throw .malformed(error.reason)
        }
    }
}
