/// What a zone says at one instant: how far local time is from UTC, whether that is summer
/// time, and its abbreviation ("CEST", "+0530"). What a date's presentation needs, nothing more.
public struct LocalTimeType: Equatable, Sendable {
    /// Seconds east of UTC (Oslo in summer: 7200).
    public let utcOffset: Int32
    public let isDST: Bool
    public let abbreviation: String

    public init(utcOffset: Int32, isDST: Bool, abbreviation: String) {
        self.utcOffset = utcOffset
        self.isDST = isDST
        self.abbreviation = abbreviation
    }

    public static let utc = LocalTimeType(utcOffset: 0, isDST: false, abbreviation: "UTC")

    /// The farthest any place is from UTC, with room: tzdata's extremes are -12 and +14 hours
    /// (and local mean times of the 19th century a little beyond). A file or rule that says
    /// more is not a zone.
    static let offsetLimit: Int32 = 26 * 3600
}

/// Days and weekdays of the proleptic Gregorian calendar, counted from 1970-01-01 (a
/// Thursday), for the rules of a POSIX TZ string. Pure arithmetic on small numbers: the
/// callers bound the years.
enum CivilDays {
    static func isLeap(_ year: Int64) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    static func daysInMonth(_ month: Int64, of year: Int64) -> Int64 {
        switch month {
        case 2: return isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days from 1970-01-01 to `year`-`month`-`day` (the era-based count of the civil
    /// calendar: March-based years, so February's length falls at a year's end).
    static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// 0 Sunday … 6 Saturday.
    static func weekday(_ days: Int64) -> Int64 {
        let shifted = (days + 4) % 7
        return shifted < 0 ? shifted + 7 : shifted
    }

    /// The year a day (from 1970-01-01) falls in.
    static func year(ofDay days: Int64) -> Int64 {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        return yearOfEra + era * 400 + (monthIndex >= 10 ? 1 : 0)
    }

    /// Floor division, for instants before 1970.
    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }
}
