import FingersealWire
import Localization
import SystemKit
import ZoneInfo

/// The time zone a request's times are shown in: the one the client named (`Request.timeZone`),
/// resolved against the system's database. A name that cannot be used is logged and the times
/// are shown in UTC, said as such; the person is never refused for it (presentation only).
enum RequestZone {
    static func resolve(_ name: String) -> Zone? {
        do {
            return try Zone.named(name)
        } catch {
            Syslog.log(.notice, "fingersealed: the time zone \"\(printable(name))\" a client sent cannot be used (\(error)); "
                       + "its times are shown in UTC")
            return nil
        }
    }

    /// A client's text for a log line: printable ASCII only, bounded.
    private static func printable(_ text: String) -> String {
        String(decoding: text.utf8.prefix(ClientTimeZone.lengthLimit).map { $0 >= 0x20 && $0 < 0x7f ? $0 : UInt8(ascii: "?") },
               as: UTF8.self)
    }
}
