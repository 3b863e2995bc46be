import Glibc
import SystemKit
import SystemdKit

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
        var seen = false
        for name in directoryNames(directory) where !name.hasPrefix(".") {
            guard let state = readPlainFile(directory + "/" + name + "/state", limit: 256, followLinks: false) else { continue }
            seen = true
            if String(decoding: state, as: UTF8.self).contains("closed") { return true }
        }
        return seen ? false : nil
    }
}
