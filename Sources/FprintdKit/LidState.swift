import Glibc

/// Whether the laptop's lid is closed (a reader inside the lid cannot be touched then).
public enum LidState {
    /// logind's LidClosed when logind is on `bus`; else whether any ACPI lid under
    /// `acpiDirectory` reads "closed"; nil when neither says.
    public static func closed(bus: SystemBus?, acpiDirectory: String = "/proc/acpi/button/lid") -> Bool? {
        if let closed = bus?.lidClosed() { return closed }
        return acpiLidClosed(directory: acpiDirectory)
    }

    /// Each lid's `state` file reads "state:      open" or "state:      closed".
    static func acpiLidClosed(directory: String) -> Bool? {
        guard let dir = opendir(directory) else { return nil }
        defer { closedir(dir) }
        var seen = false
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard !name.hasPrefix("."), let text = readSmallFile(directory + "/" + name + "/state") else { continue }
            seen = true
            if text.contains("closed") { return true }
        }
        return seen ? false : nil
    }

    private static func readSmallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 256)
        var count = 0
        repeat { count = read(fd, &buffer, buffer.count) } while count < 0 && errno == EINTR
        guard count >= 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }
}
