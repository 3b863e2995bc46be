import FingersealWire
import Glibc
import SystemKit
import Testing
@testable import TestSupport
@testable import ZoneInfo

/// Time zones without ICU (issue 23 §4): the system's TZif files and POSIX TZ rules, checked
/// against glibc's own reading of the same zones (`TZ=… date -d @EPOCH`).
@Suite struct ZoneInfoTests {
    /// glibc's offset ("+0100") and abbreviation for `instant` in `tz`.
    static func date(_ tz: String, _ instant: Int64) throws -> String {
        let result = try Child.run("/bin/date", ["-d", "@\(instant)", "+%z %Z"], environment: ["TZ": tz])
        return result.stdout.split(separator: "\n").first.map(String.init) ?? "?"
    }

    static func shown(_ type: LocalTimeType) -> String {
        let east = type.utcOffset
        let magnitude = abs(Int(east))
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return (east < 0 ? "-" : "+") + two(magnitude / 3600) + two(magnitude % 3600 / 60) + " " + type.abbreviation
    }

    /// Winter, summer, an hour either side of each 2026 change, the far past (before the first
    /// transition) and the far future (the footer's rule).
    static let instants: [Int64] = [
        1_768_478_400, // 2026-01-15 12:00Z
        1_784_116_800, // 2026-07-15 12:00Z
        1_774_746_000 - 3600, 1_774_746_000, 1_774_746_000 + 3600, // Europe's 2026-03-29 01:00Z change
        1_792_890_000 - 3600, 1_792_890_000, 1_792_890_000 + 3600, // and 2026-10-25 01:00Z
        1_772_953_200, 1_793_512_800, // New York's 2026-03-08 and 2026-11-01 changes (07:00Z, 06:00Z)
        1_775_314_800, 1_791_039_600, // Lord Howe's 2026-04-05 and 2026-10-04 changes
        -2_500_000_000, // 1890
        4_102_444_800, // 2100-01-01
        4_118_083_200, // 2100-07-01
    ]

    @Test(arguments: ["Europe/Oslo", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "UTC", "Etc/UTC"])
    func zonesAgreeWithGlibc(name: String) throws {
        let zone = try Zone.named(name)
        #expect(zone.name == name)
        for instant in Self.instants {
            #expect(Self.shown(zone.type(at: instant)) == (try Self.date(":" + name, instant)), "\(name) at \(instant)")
        }
    }

    @Test func osloWinterAndSummer() throws {
        let oslo = try Zone.named(":Europe/Oslo")
        #expect(oslo.type(at: 1_768_478_400) == LocalTimeType(utcOffset: 3600, isDST: false, abbreviation: "CET"))
        #expect(oslo.type(at: 1_784_116_800) == LocalTimeType(utcOffset: 7200, isDST: true, abbreviation: "CEST"))
        // Half an hour of summer time, half-hour offsets.
        let lordHowe = try Zone.named("Australia/Lord_Howe")
        #expect(lordHowe.type(at: 1_768_478_400).utcOffset == 11 * 3600)
        #expect(lordHowe.type(at: 1_784_116_800).utcOffset == 10 * 3600 + 1800)
        #expect(try Zone.named("Asia/Kolkata").type(at: 1_784_116_800).utcOffset == 5 * 3600 + 1800)
    }

    @Test(arguments: ["CET-1CEST,M3.5.0,M10.5.0/3", "EST5EDT,M3.2.0,M11.1.0", "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0",
                      "IST-5:30", "<-03>3", "AAA-2BBB,J60/1:30,300/-1"])
    func posixRulesAgreeWithGlibc(rule: String) throws {
        let zone = try #require(PosixRule(rule))
        // glibc applies a rule's summer time from 1970 on only.
        for instant in Self.instants where instant >= 0 {
            #expect(Self.shown(zone.type(at: instant)) == (try Self.date(rule, instant)), "\(rule) at \(instant)")
        }
        // A rule a client sends as TZ works as a zone too.
        #expect(try Zone.named(rule).type(at: 1_784_116_800) == zone.type(at: 1_784_116_800))
    }

    /// Summer time without dates: the United States' rules, as glibc assumes them.
    @Test func ruleWithoutDatesUsesTheUSRules() throws {
        let rule = try #require(PosixRule("XST5XDT"))
        #expect(rule.type(at: 1_784_116_800) == LocalTimeType(utcOffset: -4 * 3600, isDST: true, abbreviation: "XDT"))
        #expect(rule.type(at: 1_768_478_400) == LocalTimeType(utcOffset: -5 * 3600, isDST: false, abbreviation: "XST"))
        #expect(rule.type(at: 1_772_953_200 - 1).isDST == false)
        #expect(rule.type(at: 1_772_953_200).isDST)
        // The ends of time answer without a trap.
        #expect(rule.type(at: .max) == rule.standard && rule.type(at: .min) == rule.standard)
        let oslo = try Zone.named("Europe/Oslo")
        #expect(oslo.type(at: .max).utcOffset == 3600)
        _ = oslo.type(at: .min)
    }

    /// Names that leave the database, or are no names at all, are refused before any file is
    /// opened; what is neither a file nor a rule is refused too. Never a trap.
    @Test func badNamesAreRefused() throws {
        for name in ["../../etc/passwd", "/etc/passwd", ":/etc/passwd", "Europe/../../../etc/shadow", "Europe//Oslo", "./UTC",
                     "Nowhere/Atlantis", "", ":", String(repeating: "A", count: 300), "Europe/Oslo\n", "CET-1CEST,M13.5.0,M10.5.0",
                     "CET-25", "AB-1"] {
            #expect(throws: Zone.Unusable.self, "\(name)") { try Zone.named(name) }
        }
        #expect(!ZoneDatabase.isSafeName("a/../b"))
        #expect(ZoneDatabase.isSafeName("America/Argentina/Buenos_Aires"))
        #expect(ZoneDatabase.isSafeName("Etc/GMT+5"))
    }

    /// What the database holds but cannot be a zone: cut short anywhere, or with a count,
    /// an index or an offset out of range.
    @Test func malformedFilesAreRefused() throws {
        let oslo = try #require(readPlainFile("/usr/share/zoneinfo/Europe/Oslo", limit: TZif.sizeLimit))
        #expect(throws: Never.self) { try TZif(parsing: oslo) }
        for length in stride(from: 0, to: oslo.count - 1, by: 7) {
            #expect(throws: TZif.Malformed.self) { try TZif(parsing: Array(oslo[..<length])) }
        }
        var badType = oslo
        badType[32] = 0xff // the first block's transition count (bytes 32-35), absurd
        #expect(throws: TZif.Malformed.self) { try TZif(parsing: badType) }
        var badVersion = oslo
        badVersion[4] = UInt8(ascii: "9")
        #expect(throws: TZif.Malformed.self) { try TZif(parsing: badVersion) }
        #expect(throws: TZif.Malformed.self) { try TZif(parsing: Array(repeating: 0, count: TZif.sizeLimit + 1)) }
    }

    /// What a client sends: TZ as it is, else the zone /etc/localtime links to.
    @Test func clientSendsTZOrTheLinkedZone() throws {
        #expect(ClientTimeZone.name(tz: ":Europe/Oslo") == ":Europe/Oslo")
        #expect(ClientTimeZone.name(tz: "CET-1CEST,M3.5.0,M10.5.0/3") == "CET-1CEST,M3.5.0,M10.5.0/3")
        #expect(ClientTimeZone.name(tz: String(repeating: "x", count: 300)) == nil)
        let temp = try TempDirectory()
        symlink("../usr/share/zoneinfo/Asia/Kolkata", temp.file("relative"))
        symlink("/usr/share/zoneinfo/America/New_York", temp.file("absolute"))
        #expect(ClientTimeZone.name(tz: nil, localtime: temp.file("relative")) == "Asia/Kolkata")
        #expect(ClientTimeZone.name(tz: "", localtime: temp.file("absolute")) == "America/New_York")
        #expect(ClientTimeZone.name(tz: nil, localtime: temp.file("missing")) == nil)
    }
}
