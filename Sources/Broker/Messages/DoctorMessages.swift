import FingersealCore
import Localization
import SharedMessages

/// `fingerseal doctor`: what the service sees of the caller's setup, each finding a sentence and
/// each fix another. Only the broker says these; those the core, the flows or the tests say too are
/// public in FingersealCore (Support/Messages/DoctorMessages.swift).
extension Messages {
    // Doctor (`fingerseal doctor`): what the service sees of the caller's setup. Each finding
    // is one sentence, each fix another.
    static var doctorBackendFprintd: String { tr("The reader backend is fprintd, which owns the fingerprint reader on this computer.") }
    static var doctorBackendDirect: String { tr("The reader backend is libfprint, driven directly by the fingerseal service.") }
    static var doctorFixBackend: String { tr("Start fprintd, or set reader=libfprint in /etc/fingerseal/fingerseal.conf.") }
    static var doctorReadersFailed: String { tr("Fingerseal could not list the fingerprint readers.") }
    static func doctorReaders(_ names: [String]) -> String {
        names.count == 1 ? tr("A fingerprint reader is connected: %1$s.", names[0])
            : trn("%1$s fingerprint reader is connected: %2$s.", "%1$s fingerprint readers are connected: %2$s.",
                  names.count, names.count, names.joined(separator: ", "))
    }
    static var doctorFixNoReader: String { tr("Connect a fingerprint reader, then check it with: fingerseal devices") }
    static var doctorFixReaderBusy: String { tr("Run fingerseal doctor again when the reader is free.") }
    static var doctorNoVault: String { tr("Fingerseal is not set up for this account: there is no vault and no PIN.") }
    static var doctorFixNoVault: String { tr("Set a PIN, which creates the vault: fingerseal pin set") }
    static var doctorFixVaultUnusable: String {
        tr("Run fingerseal status for details; if the vault cannot be repaired, start again with: fingerseal reset")
    }
    static func doctorVault(_ created: String) -> String { tr("Your vault exists; it was created at %1$s.", created) }
    static var doctorPINSet: String { tr("The PIN is set.") }
    static var doctorNoPIN: String { tr("The vault has no PIN, so nothing can unlock it when a finger fails.") }
    static var doctorFixNoPIN: String { tr("Set a new PIN with: fingerseal pin reset") }
    static func doctorFingers(_ fingers: [String]) -> String {
        fingers.count == 1 ? tr("One finger is enrolled: %1$s.", fingers[0])
            : trn("%1$s finger is enrolled: %2$s.", "%1$s fingers are enrolled: %2$s.",
                  fingers.count, fingers.count, fingers.joined(separator: ", "))
    }
    static func doctorFprintdFingers(_ fingers: [String]) -> String {
        fingers.count == 1 ? tr("One finger is enrolled in fprintd: %1$s.", fingers[0])
            : trn("%1$s finger is enrolled in fprintd: %2$s.", "%1$s fingers are enrolled in fprintd: %2$s.",
                  fingers.count, fingers.count, fingers.joined(separator: ", "))
    }
    static var doctorNoFingers: String { tr("No finger is enrolled, so only the PIN unlocks.") }
    static var doctorFixEnroll: String { tr("Enroll a finger with: fingerseal enroll") }
    static var doctorFixFingersChanged: String { tr("Run fingerseal unlock once and enter your PIN to confirm the fingers.") }
    static var doctorNotLocked: String { tr("Neither fingerprint unlock nor the PIN is locked.") }
    static var doctorFingerLocked: String { tr("Fingerprint unlock is locked after too many failed scans.") }
    static var doctorFixFingerLocked: String { tr("Unlock once with your PIN (fingerseal unlock) or your password; that clears the lock.") }
    static var doctorPINLocked: String { tr("The PIN is locked after too many wrong tries.") }
    static var doctorFixPINLocked: String { tr("Sign in again, which clears the lock: fingerseal login") }
    static var doctorNotSignedIn: String { tr("You are not signed in to an identity provider, so unlocking gives no access token.") }
    static var doctorSignInRequired: String { tr("Your sign-in at the identity provider has ended, so unlocking needs a new one.") }
    static var doctorFixSignIn: String { tr("Sign in with: fingerseal login") }
    static var doctorFixSoftwareKey: String {
        tr("The TPM can hold the key now: sign in again with fingerseal login to have it made there.")
    }
    static var doctorFixBearer: String {
        tr("Where the identity provider offers DPoP, sign in again with fingerseal login to bind the sign-in to this computer.")
    }
    static func doctorSignedIn(_ who: String, _ issuer: String) -> String { tr("Signed in as %1$s at %2$s.", who, issuer) }
    static func doctorSignedInTo(_ issuer: String) -> String { tr("Signed in to %1$s.", issuer) }
    static func doctorServiceDefaults(_ service: String) -> String {
        tr("Every setting for the PAM service %1$s is its default (module arguments in its stack may still change some).", service)
    }
    static func doctorServiceSettings(_ service: String) -> String {
        tr("Settings for the PAM service %1$s that differ from the defaults (module arguments in its stack may still change some):", service)
    }
    static func doctorSettingFromFile(_ setting: String) -> String { tr("%1$s, from the configuration file.", setting) }
    static func doctorSettingFromSection(_ setting: String, _ service: String) -> String {
        tr("%1$s, from the section [service %2$s].", setting, service)
    }
    static func doctorSettingFromSectionRootHosts(_ setting: String, _ service: String) -> String {
        tr("%1$s, from the section [service %2$s], for hosts running as root only: a host running as the user (a lock screen) names its service itself, so it gets only a section's presentation settings.",
           setting, service)
    }
    static var doctorNoProvider: String { tr("No identity provider is configured or signed in to, so none was asked.") }
    static func doctorProviderAnswers(_ issuer: String) -> String { tr("The identity provider %1$s answers.", issuer) }
    /// One whole sentence per way the discovery request failed.
    static func doctorProviderFailed(_ issuer: String, _ failure: TokenFailure) -> String {
        switch failure {
        case .unreachable:
            tr("The identity provider %1$s did not answer its discovery request: it cannot be reached.", issuer)
        case let .rejected(status, _):
            tr("The identity provider %1$s refused its discovery request with HTTP status %2$s.", issuer, status)
        case .malformed:
            tr("The identity provider %1$s answered its discovery request, but the answer could not be read.", issuer)
        case .badConfiguration:
            tr("The identity provider %1$s answered its discovery request with a configuration that cannot be used.", issuer)
        case .chainEnded, .credentialsRefused:
            tr("The identity provider %1$s no longer knows this sign-in.", issuer)
        case .clientAuthenticationRequired:
            tr("The identity provider %1$s asks for a client secret for its discovery request.", issuer)
        case .accessDenied:
            tr("The identity provider %1$s refused its discovery request.", issuer)
        case .authorizationPending, .slowDown, .expiredToken, .identityRejected, .proofRefused:
            tr("The identity provider %1$s gave an unexpected answer to its discovery request.", issuer)
        }
    }
    static var doctorFixProvider: String { tr("Check the network connection and the issuer in /etc/fingerseal/fingerseal.conf.") }
    static var doctorClockPlausible: String {
        tr("The system clock is plausible: it is later than the vault's creation and its last sign-in renewal.")
    }
    static func doctorClockBeforeVault(_ now: String, _ created: String) -> String {
        tr("The system clock says %1$s, which is earlier than the creation of your vault at %2$s.", now, created)
    }
    static func doctorClockBeforeRefresh(_ now: String, _ refreshed: String) -> String {
        tr("The system clock says %1$s, which is earlier than the last renewal of your sign-in at %2$s.", now, refreshed)
    }
    static var doctorNotSealedYet: String { tr("Your vault is not sealed to this computer's TPM yet; it will be the next time you enter your PIN.") }
    static var doctorFixSealNow: String { tr("Enter your PIN once, for example with: fingerseal step-up --fresh tpm") }
    static var doctorNoTPM: String { tr("No usable TPM was found, so your device key is protected by file permissions only: a stolen disk gives it away.") }
    static var doctorFixEnableTPM: String { tr("Turn the TPM on in the computer's firmware settings, then enter your PIN once.") }
    static var doctorTPMOff: String { tr("The TPM is not used (tpm=off), so your device key is protected by file permissions only: a stolen disk gives it away.") }
    static var doctorFixTPMOff: String { tr("Set tpm=auto in /etc/fingerseal/fingerseal.conf, then enter your PIN once.") }
    static var doctorTPMChanged: String { tr("Your vault is sealed to a TPM this computer no longer has (it was cleared or replaced, or the disk was moved), so neither your finger nor your PIN can open it.") }
    static var doctorFixTPMChanged: String { tr("Set fingerseal up again with your account password: fingerseal pin reset, then fingerseal login") }
    static var doctorTPMUnreachable: String { tr("Your vault is sealed to this computer's TPM, which cannot be reached now.") }
    static var doctorFixTPMUnreachable: String { tr("Check that the TPM is turned on in the firmware settings and that /dev/tpmrm0 exists.") }
    static var doctorFixClock: String { SharedMessages.fixClock }
}
