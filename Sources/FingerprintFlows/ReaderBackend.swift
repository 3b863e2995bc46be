import FingersealCore
import FprintdKit
import FprintKit
import Glibc
import ReaderValues
import SystemKit

/// The reader a flow scans with: libfprint driving the device itself (kiosks, rigs), or
/// fprintd, which owns the device on desktops and keeps the templates (claimed for `user`).
public enum ReaderBackend {
    case libfprint(LibfprintDevice)
    case fprintd(FprintdDevice, user: String, storage: String)

    public var swipe: Bool {
        switch self {
        case let .libfprint(reader): return reader.info.scanType == .swipe
        case let .fprintd(device, _, _): return device.info.scanType == "swipe"
        }
    }
}

/// A running verify or enroll on either backend.
protocol ScanOperation {
    func wait(timeout: Double, cancelFDs: [Int32], onEvent: (ReaderEvent) -> Void) -> OperationResult
}

extension ReaderOperation: ScanOperation {}

extension FprintdOperation: ScanOperation {
    func wait(timeout: Double, cancelFDs: [Int32], onEvent: (ReaderEvent) -> Void) -> OperationResult {
        let result: FprintdResult = wait(timeout: timeout, cancelFDs: cancelFDs, onEvent: onEvent)
        return result.widened()
    }
}

/// fprintd's enrolled set for a user as it is now: the finger names, and a digest that also
/// covers the prints fprintd stored (root reads them under `storage`/USER; where it cannot,
/// the names alone), so a finger re-enrolled under the same name is a change too.
public enum FprintdEnrolledSet {
    /// At most this much of one stored print is read (fprintd's are a few KiB).
    static let maxPrintSize = 1 << 20

    public static func read(_ device: FprintdDevice, user: String, storage: String) throws -> FprintdSet {
        let fingers: [Finger]
        do throws(FprintError) { fingers = try device.enrolledFingers(user: user) } catch {
            throw Fingerprint.translate(error)
        }
        let stored = storedPrints(storage + "/" + user, fingers: fingers)
        let names = fingers.map(\.name)
        return FprintdSet(fingers: names, digest: FprintdSet.digest(fingers: names, stored: stored))
    }

    /// fprintd's layout: STORAGE/USER/DRIVER/DEVICE/FINGER-NUMBER. Every driver and device
    /// directory is taken in, in sorted order, for each finger.
    static func storedPrints(_ userDirectory: String, fingers: [Finger]) -> [String: [UInt8]] {
        var stored: [String: [UInt8]] = [:]
        guard user(directory: userDirectory) else { return stored }
        for driver in directoryNames(userDirectory, onlyDirectories: true) {
            for device in directoryNames(userDirectory + "/" + driver, onlyDirectories: true) {
                for finger in fingers {
                    // fprintd names the file by the finger's number in hex ("a" for the right little finger).
                    let path = "\(userDirectory)/\(driver)/\(device)/" + String(finger.rawValue, radix: 16)
                    if let bytes = readPlainFile(path, limit: maxPrintSize, followLinks: false) {
                        stored[finger.name, default: []] += bytes
                    }
                }
            }
        }
        return stored
    }

    private static func user(directory: String) -> Bool {
        var info = stat()
        return lstat(directory, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }
}

extension Fingerprint {
    /// Whether the fingers fprintd holds now are the ones the vault's device slot is bound to.
    public static func fprintdSetChanged(_ current: FprintdSet, bound: FprintdSet?) -> Bool {
        bound?.digest != current.digest
    }

    /// Forgets fingers at fprintd: only those fingerseal enrolled there are deleted; a finger
    /// another program enrolled is refused with a sentence that says where to remove it.
    /// The set left is bound to the vault (the PIN confirmed it). `fingers` nil: all of
    /// fingerseal's own. Returns the fingers deleted.
    public static func forgetAtFprintd(vault: UnlockedVault, fingers: [String]?, device: FprintdDevice, user: String,
                                       storage: String) throws -> [String] {
        guard vault.unlockedBy == .pin else { throw FingersealError(.usage, Messages.pinNeeded) }
        let current = try FprintdEnrolledSet.read(device, user: user, storage: storage)
        let ours = try vault.fprintdSet()?.enrolledHere.filter { current.fingers.contains($0) } ?? []
        let targets = fingers ?? ours
        for finger in targets {
            guard current.fingers.contains(finger) else { throw FingersealError(.usage, Messages.notEnrolledFinger(finger)) }
            guard ours.contains(finger) else { throw FingersealError(.usage, Messages.notEnrolledHere(finger)) }
        }
        for name in targets {
            guard let finger = Finger(name: name) else { continue }
            do throws(FprintError) { try device.deleteEnrolledFinger(finger) } catch { throw translate(error) }
        }
        let left = try FprintdEnrolledSet.read(device, user: user, storage: storage)
        try vault.update {
            try $0.bindFprintd(FprintdSet(fingers: left.fingers, digest: left.digest,
                                          enrolledHere: ours.filter { !targets.contains($0) }))
        }
        return targets
    }
}
