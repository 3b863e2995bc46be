import CLinux
#if !hasFeature(Embedded)
import Glibc
#endif

/// The time zone a client sends with its request (`Request.timeZone`), so that the broker
/// shows times in the person's zone, not its own (UTC under systemd): the TZ variable as it
/// is (":Europe/Oslo", "Europe/Oslo", or a POSIX rule such as "CET-1CEST,M3.5.0,M10.5.0/3"),
/// else the zone /etc/localtime links to. The broker validates and resolves it; here it is
/// only found and bounded.
public enum ClientTimeZone {
    /// Longer than any zone name or real POSIX rule: what is longer is not sent.
    public static let lengthLimit = 256

    /// `tz`: the TZ variable of the person's environment (nil when unset).
    public static func name(tz: String?, localtime: String = "/etc/localtime") -> String? {
        if let tz, !tz.isEmpty { return tz.utf8.count <= lengthLimit ? tz : nil }
        return linkedZone(localtime)
    }

    /// "Europe/Oslo" for /etc/localtime → /usr/share/zoneinfo/Europe/Oslo (or a relative
    /// ../usr/share/zoneinfo/…): what follows the last "zoneinfo" component. Nil when it is no
    /// such link.
    static func linkedZone(_ link: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 512)
        let count = readlink(link, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        let target = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let components = target.split(separator: "/")
        guard let zoneinfo = components.lastIndex(of: "zoneinfo"), zoneinfo < components.count - 1 else { return nil }
        return components[(zoneinfo + 1)...].joined(separator: "/")
    }
}
