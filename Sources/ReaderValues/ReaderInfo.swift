/// How a sensor expects the finger to be presented.
public enum ScanType: Sendable, Equatable {
    case press
    case swipe
}

/// What a reader can do, as libfprint's `FpDeviceFeature` bits (libfprint 1.94.5).
public struct ReaderFeatures: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let capture = ReaderFeatures(rawValue: 1 << 0)
    public static let identify = ReaderFeatures(rawValue: 1 << 1)
    public static let verify = ReaderFeatures(rawValue: 1 << 2)
    public static let storage = ReaderFeatures(rawValue: 1 << 3)
    public static let storageList = ReaderFeatures(rawValue: 1 << 4)
    public static let storageDelete = ReaderFeatures(rawValue: 1 << 5)
    public static let storageClear = ReaderFeatures(rawValue: 1 << 6)
    public static let duplicatesCheck = ReaderFeatures(rawValue: 1 << 7)
    public static let alwaysOn = ReaderFeatures(rawValue: 1 << 8)
    public static let updatePrint = ReaderFeatures(rawValue: 1 << 9)
}

/// A snapshot of one reader as enumerated; holds no libfprint pointer, so it may cross threads.
public struct ReaderInfo: Sendable, Equatable {
    /// Stable for the device's lifetime in this context (e.g. a USB path), not across reboots.
    public let deviceID: String
    /// libfprint driver name, e.g. "virtual_image".
    public let driver: String
    /// Human-readable product name.
    public let name: String
    public let scanType: ScanType
    public let features: ReaderFeatures

    public init(deviceID: String, driver: String, name: String, scanType: ScanType, features: ReaderFeatures) {
        self.deviceID = deviceID
        self.driver = driver
        self.name = name
        self.scanType = scanType
        self.features = features
    }
}
