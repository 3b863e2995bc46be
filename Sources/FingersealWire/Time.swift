import CLinux
#if !hasFeature(Embedded)
import Glibc
#endif

/// "2026-11-29T17:10:00Z" for a Unix time, without pulling ICU into anything (here, where the
/// broker and the CLI both reach it).
public func isoTimestamp(_ seconds: Int64) -> String {
    var time = time_t(seconds)
    var parts = tm()
    guard gmtime_r(&time, &parts) != nil else { return String(seconds) }
    func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
    return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
        + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
}
