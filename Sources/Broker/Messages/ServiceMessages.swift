import FingersealCore
import Localization

/// The broker as a service: busy, speaking another protocol, refusing a request, sharing the reader
/// between requests, an answer that does not come. Only the broker says these; those the core, the
/// flows or the tests say too are public in FingersealCore
/// (Support/Messages/ServiceMessages.swift).
extension Messages {
    // The broker.
    static var brokerBusy: String { tr("The fingerseal service is busy with too many requests. Try again in a moment.") }
    static func wrongProtocol(_ version: Int) -> String {
        tr("This program speaks version %1$s of the fingerseal protocol, and the service another. Update fingerseal.", version)
    }
    static var readerBusyWaiting: String { tr("The fingerprint reader is busy with another request. Waiting for it.") }
    static var answerTimedOut: String { tr("No answer came in time.") }
    static var badAnswer: String { tr("The answer could not be read.") }
}
