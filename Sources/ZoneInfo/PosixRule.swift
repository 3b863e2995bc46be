/// A POSIX TZ rule ("CET-1CEST,M3.5.0,M10.5.0/3", "IST-5:30", "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0"):
/// the TZ variable's own form, and the footer of a TZif file, which says what holds after the
/// file's last transition. Parsed from untrusted text (a client's TZ): every number is bounded,
/// and anything not in the grammar (POSIX, with RFC 8536's extension of rule times to ±167
/// hours) is refused whole.
public struct PosixRule: Equatable, Sendable {
    public let standard: LocalTimeType
    /// Summer time and when it starts and ends; nil for a zone without it.
    public let daylight: Daylight?

    public struct Daylight: Equatable, Sendable {
        public let type: LocalTimeType
        public let start: Transition
        public let end: Transition
    }

    /// A day of the year and a local time of day (seconds, may be negative or past 24 hours).
    public struct Transition: Equatable, Sendable {
        public enum Day: Equatable, Sendable {
            /// Jn: 1…365, February 29 never counted.
            case julianNoLeap(Int64)
            /// n: 0…365, February 29 counted.
            case zeroBased(Int64)
            /// Mm.w.d: month 1…12, week 1…5 (5: the last), weekday 0 (Sunday)…6.
            case monthWeekDay(month: Int64, week: Int64, weekday: Int64)
        }
        public let day: Day
        public let time: Int64
    }

    /// The longest rule accepted: real ones are under 60 characters.
    static let lengthLimit = 256

    public init?(_ text: String) {
        var scanner = RuleScanner(Array(text.utf8))
        guard text.utf8.count <= PosixRule.lengthLimit, let rule = scanner.rule(), scanner.atEnd else { return nil }
        self = rule
    }

    init(standard: LocalTimeType, daylight: Daylight?) {
        self.standard = standard
        self.daylight = daylight
    }

    /// What holds at `instant` (seconds since the epoch, UTC).
    public func type(at instant: Int64) -> LocalTimeType {
        // Instants beyond any clock's reach (about ±30,000 years) are still arithmetic, but not
        // worth the risk of overflow: the standard time answers there.
        guard let daylight, instant > -(1 << 40), instant < 1 << 40 else { return standard }
        // The year as standard time reckons it; the rule's dates are in that year.
        let year = CivilDays.year(ofDay: CivilDays.floorDiv(instant + Int64(standard.utcOffset), 86_400))
        let start = PosixRule.instant(of: daylight.start, in: year, offset: standard.utcOffset)
        let end = PosixRule.instant(of: daylight.end, in: year, offset: daylight.type.utcOffset)
        let inDaylight = start < end ? (instant >= start && instant < end) : !(instant >= end && instant < start)
        return inDaylight ? daylight.type : standard
    }

    /// When `transition` happens in `year`, in UTC, while `offset` holds.
    static func instant(of transition: Transition, in year: Int64, offset: Int32) -> Int64 {
        let firstOfYear = CivilDays.days(year: year, month: 1, day: 1)
        let day: Int64
        switch transition.day {
        case let .julianNoLeap(n):
            day = firstOfYear + n - 1 + (CivilDays.isLeap(year) && n >= 60 ? 1 : 0)
        case let .zeroBased(n):
            day = firstOfYear + n
        case let .monthWeekDay(month, week, weekday):
            let first = CivilDays.days(year: year, month: month, day: 1)
            var dayOfMonth = 1 + (weekday - CivilDays.weekday(first) + 7) % 7 + (week - 1) * 7
            while dayOfMonth > CivilDays.daysInMonth(month, of: year) { dayOfMonth -= 7 }
            day = first + dayOfMonth - 1
        }
        return day * 86_400 + transition.time - Int64(offset)
    }
}

/// Reads the grammar of a POSIX TZ rule, one piece at a time; nil at the first thing out of it.
private struct RuleScanner {
    let bytes: [UInt8]
    var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { index == bytes.count }
    private var next: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func take(_ byte: UInt8) -> Bool {
        guard next == byte else { return false }
        index += 1
        return true
    }

    mutating func rule() -> PosixRule? {
        guard let standardName = name(), let standardOffset = offset() else { return nil }
        let standard = LocalTimeType(utcOffset: standardOffset, isDST: false, abbreviation: standardName)
        if atEnd { return PosixRule(standard: standard, daylight: nil) }
        guard let daylightName = name() else { return nil }
        // Summer time is an hour ahead of standard time unless the rule says otherwise.
        var daylightOffset = standardOffset + 3600
        if let byte = next, byte != UInt8(ascii: ",") {
            guard let given = offset() else { return nil }
            daylightOffset = given
        }
        let type = LocalTimeType(utcOffset: daylightOffset, isDST: true, abbreviation: daylightName)
        // No dates: the United States' rules, as glibc assumes without a posixrules file.
        guard take(UInt8(ascii: ",")) else {
            guard atEnd else { return nil }
            return PosixRule(standard: standard, daylight: .init(type: type, start: RuleScanner.usStart, end: RuleScanner.usEnd))
        }
        guard let start = transition(), take(UInt8(ascii: ",")), let end = transition() else { return nil }
        return PosixRule(standard: standard, daylight: .init(type: type, start: start, end: end))
    }

    static let usStart = PosixRule.Transition(day: .monthWeekDay(month: 3, week: 2, weekday: 0), time: 7200)
    static let usEnd = PosixRule.Transition(day: .monthWeekDay(month: 11, week: 1, weekday: 0), time: 7200)

    /// "CET", or "<+0530>": at least three characters, letters only unquoted; letters,
    /// digits, '+' and '-' quoted.
    private mutating func name() -> String? {
        let start: Int, end: Int
        if take(UInt8(ascii: "<")) {
            start = index
            while let byte = next, isAlphanumeric(byte) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") { index += 1 }
            end = index
            guard take(UInt8(ascii: ">")) else { return nil }
        } else {
            start = index
            while let byte = next, isLetter(byte) { index += 1 }
            end = index
        }
        guard end - start >= 3, end - start <= 16 else { return nil }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }

    /// A POSIX offset ("-1", "5:30", "+3"): west of Greenwich is positive, so the UTC offset
    /// is its negation. Hours 0…24 (RFC 8536 allows up to 24 here).
    private mutating func offset() -> Int32? {
        guard let seconds = clock(hourLimit: 24) else { return nil }
        let east = -seconds
        guard east > -Int64(LocalTimeType.offsetLimit), east < Int64(LocalTimeType.offsetLimit) else { return nil }
        return Int32(east)
    }

    /// `[+-]hh[:mm[:ss]]` in seconds, hours at most `hourLimit`.
    private mutating func clock(hourLimit: Int64) -> Int64? {
        var sign: Int64 = 1
        if take(UInt8(ascii: "-")) { sign = -1 } else { _ = take(UInt8(ascii: "+")) }
        guard let hours = number(digits: 3), hours <= hourLimit else { return nil }
        var seconds = hours * 3600
        if take(UInt8(ascii: ":")) {
            guard let minutes = number(digits: 2), minutes <= 59 else { return nil }
            seconds += minutes * 60
            if take(UInt8(ascii: ":")) {
                guard let secs = number(digits: 2), secs <= 59 else { return nil }
                seconds += secs
            }
        }
        return sign * seconds
    }

    /// `Jn`, `n` or `Mm.w.d`, then an optional `/time` (default 02:00).
    private mutating func transition() -> PosixRule.Transition? {
        let day: PosixRule.Transition.Day
        if take(UInt8(ascii: "J")) {
            guard let n = number(digits: 3), n >= 1, n <= 365 else { return nil }
            day = .julianNoLeap(n)
        } else if take(UInt8(ascii: "M")) {
            guard let month = number(digits: 2), month >= 1, month <= 12, take(UInt8(ascii: ".")),
                  let week = number(digits: 1), week >= 1, week <= 5, take(UInt8(ascii: ".")),
                  let weekday = number(digits: 1), weekday <= 6 else { return nil }
            day = .monthWeekDay(month: month, week: week, weekday: weekday)
        } else {
            guard let n = number(digits: 3), n <= 365 else { return nil }
            day = .zeroBased(n)
        }
        var time: Int64 = 7200
        if take(UInt8(ascii: "/")) {
            guard let given = clock(hourLimit: 167) else { return nil }
            time = given
        }
        return PosixRule.Transition(day: day, time: time)
    }

    /// One to `digits` decimal digits.
    private mutating func number(digits: Int) -> Int64? {
        var value: Int64 = 0
        var count = 0
        while let byte = next, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), count < digits {
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            count += 1
            index += 1
        }
        return count > 0 ? value : nil
    }

    private func isLetter(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
    }

    private func isAlphanumeric(_ byte: UInt8) -> Bool { isLetter(byte) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) }
}
