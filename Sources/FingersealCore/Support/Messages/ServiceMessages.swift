import Localization

/// The broker as a service: busy, speaking another protocol, refusing a request, sharing the reader
/// between requests, an answer that does not come. The sentences only the broker says are in the
/// broker (Sources/Broker/Messages/ServiceMessages.swift).
extension Messages {
    // The broker.
    /// A request whose text holds a control character; `field` is its name on the wire.
    public static func controlCharacters(_ field: String) -> String {
        tr("The request was refused: its field %1$s holds a control character, such as a line break or an escape. Remove it and try again.", field)
    }
    public static var readerNeededElsewhere: String {
        tr("The fingerprint reader was needed for someone signing in at this computer, so this scan stopped. Nothing was counted.")
    }
    public static var scanStoppedForSleep: String {
        tr("The computer is going to sleep, so this scan stopped. Nothing was counted.")
    }
    public static var readerNotFromRemote: String {
        tr("The fingerprint reader is not used from a remote session. Use your PIN, or ask at the computer itself.")
    }
}
