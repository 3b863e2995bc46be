import Glibc
import SystemKit

/// Whether a fingerprint reader sits in a port the firmware calls removable (a USB reader
/// plugged in, or a dock's), as opposed to built into the laptop: while the lid is closed,
/// only such a reader is used (`reader_location=auto`).
public enum ReaderPlacement {
    public static let sysfsDevices = "/sys/bus/usb/devices"
    /// libfprint's list of the USB readers it supports (`usb:vXXXXpYYYY*` lines).
    public static let hwdb = "/lib/udev/hwdb.d/60-autosuspend-libfprint-2.hwdb"

    public static func hasExternalReader(devices: String = sysfsDevices, hwdb: String = hwdb) -> Bool {
        let known = supportedIDs(hwdb)
        guard !known.isEmpty else { return false }
        for name in directoryNames(devices) where !name.hasPrefix(".") {
            let base = devices + "/" + name
            guard let vendor = firstLine(base + "/idVendor"), let product = firstLine(base + "/idProduct"),
                  known.contains(vendor.lowercased() + ":" + product.lowercased()) else { continue }
            if firstLine(base + "/removable") == "removable" { return true }
        }
        return false
    }

    /// "vvvv:pppp" for every reader the hwdb names.
    static func supportedIDs(_ path: String) -> Set<String> {
        guard let text = readText(path, limit: 1 << 20) else { return [] }
        var ids: Set<String> = []
        for line in text.split(separator: "\n") where line.hasPrefix("usb:v") {
            let id = line.dropFirst(5)
            guard id.count >= 10, let p = id.firstIndex(of: "p") else { continue }
            let vendor = id[..<p], product = id[id.index(after: p)...].prefix(4)
            if vendor.count == 4 && product.count == 4 { ids.insert(vendor.lowercased() + ":" + product.lowercased()) }
        }
        return ids
    }

    private static func firstLine(_ path: String) -> String? {
        readText(path, limit: 256).map { String($0.prefix { $0 != "\n" }) }
    }

    private static func readText(_ path: String, limit: Int) -> String? {
        readPlainFile(path, limit: limit).map { String(decoding: $0, as: UTF8.self) }
    }
}
