import FingersealCore
import Localization

/// The configuration: its options and sections, what the administrator fixes, the client secret
/// file it names. Only the broker says these; those the core, the flows or the tests say too are
/// public in FingersealCore (Support/Messages/ConfigurationMessages.swift).
extension Messages {
    // Configuration
    static func badServiceName(_ service: String) -> String {
        tr("%1$s is not a PAM service name: it needs one name, without spaces or commas.", service)
    }
    static var unknownUser: String { tr("That user does not exist.") }

    // Fleet configuration: the system file, what it fixes, the client secret it names
    static func fixedArgument(_ argument: String, _ option: String) -> String {
        tr("The administrator fixed %1$s for this machine, so %2$s cannot change it.", option, argument)
    }
    static var signInNotConfigured: String { tr("Say which identity provider and client with --issuer URL --client-id ID, or ask the administrator to set issuer and client_id in /etc/fingerseal/fingerseal.conf.") }
    static var administratorSecretWins: String { tr("The client secret set by the administrator is used; the one from --client-secret-file was not.") }
}
