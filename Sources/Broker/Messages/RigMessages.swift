import FingersealCore
import Localization

/// The rig commands: capture and the reader's self-test. Only the broker says these; those the
/// core, the flows or the tests say too are public in FingersealCore
/// (Support/Messages/RigMessages.swift).
extension Messages {
    // Rig commands
    static var captureNotSupported: String { tr("This reader cannot capture images.") }
    static func captured(_ path: String, _ width: Int, _ height: Int) -> String { tr("Saved a %1$s by %2$s image to %3$s.", width, height, path) }
    static var selftestNeedsStorage: String { tr("The self-test needs a reader that stores prints on the device.") }
    static var selftestPassed: String { tr("The self-test passed.") }
    static var readerDidNotClose: String { tr("The reader did not close in time.") }
}
