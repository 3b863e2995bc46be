import Localization

/// Who may run a command, and the command lines the service checks. The sentences only the broker
/// says are in the broker (Sources/Broker/Messages/CommandMessages.swift).
extension Messages {
    public static var notAvailableYet: String { tr("This command is not available from the fingerseal service yet.") }

    // Command lines the service checks.
    public static var badSecretName: String { tr("Secret names use a-z, 0-9, dot, dash and underscore.") }
}
