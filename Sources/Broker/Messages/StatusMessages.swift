import FingersealCore
import Localization

/// `fingerseal status`: one line per fact. Only the broker says these.
extension Messages {
    // status: one line per fact, each a label and its value (the labels line up in no language,
    // so a translation may reword each line freely).
    static func statusVault(_ directory: String) -> String { tr("Vault: %1$s", directory) }
    static func statusEnabledSince(_ time: String) -> String { tr("Enabled since %1$s.", time) }
    /// The newest finger, PIN or password confirmation, in the person's words ("today at 20:09").
    static func statusLastVerified(_ seconds: Int64?, now: Int64) -> String {
        guard let seconds else { return tr("Last verified: never.") }
        let (daysAgo, clock) = Localization.localDay(seconds, now: now)
        switch daysAgo {
        case 0?: return tr("Last verified: today at %1$s.", clock)
        case 1?: return tr("Last verified: yesterday at %1$s.", clock)
        default: return tr("Last verified: %1$s.", Localization.localTime(seconds))
        }
    }
    static var statusPINSet: String { tr("PIN: set") }
    static var statusPINNotSet: String { tr("PIN: not set") }
    static var statusKeyslots: String { tr("Keyslots:") }
    static var slotPIN: String { tr("protected by the PIN (Argon2id)") }
    static var slotDeviceFilePermissions: String { tr("device key protected by file permissions only") }
    static var slotDeviceFilePermissionsBroken: String { tr("device key protected by file permissions only; the key is missing or damaged") }
    static var slotDevice: String { tr("device key") }
    static var slotPINTPM: String { tr("protected by the PIN (Argon2id) and this computer's TPM") }
    static var slotDeviceTPM: String { tr("device key sealed to this computer's TPM") }
    static func slotDeviceTPMPCRs(_ pcrs: [Int]) -> String {
        tr("device key sealed to this computer's TPM and to the values of PCRs %1$s", pcrs.map(String.init).joined(separator: ", "))
    }
    static var slotTPMChanged: String { tr("sealed to a TPM this computer no longer has; run: fingerseal pin reset") }
    static var slotTPMUnreachable: String { tr("sealed to this computer's TPM, which cannot be reached now") }
    static var slotPCRsChanged: String { tr("device key sealed to PCR values that changed; enter your PIN once to seal it again") }
    static func statusTPM(_ mode: String) -> String {
        switch mode {
        case "require": return tr("TPM: required (tpm=require)")
        case "off": return tr("TPM: new keyslots are not sealed to it (tpm=off)")
        default: return tr("TPM: used when one is usable (tpm=auto)")
        }
    }
    static func statusFprintdFingers(_ fingers: [String]) -> String {
        fingers.isEmpty ? tr("Fingers enrolled in fprintd: none")
            : tr("Fingers enrolled in fprintd: %1$s", fingers.map(fingerName).joined(separator: ", "))
    }
    static func statusFingers(_ fingers: [String]) -> String {
        fingers.isEmpty ? tr("Fingers enrolled: none") : tr("Fingers enrolled: %1$s", fingers.map(fingerName).joined(separator: ", "))
    }
    static var statusNotSignedIn: String { tr("Sign-in: not signed in") }
    static var statusSignedIn: String { tr("Sign-in: signed in") }
    static var statusSignInRequired: String { tr("Sign-in: sign-in required; run: fingerseal login") }
    static func statusSignedInWith(_ issuer: String, _ client: String) -> String { tr("Sign-in: signed in (%1$s, client %2$s)", issuer, client) }
    // Whether the sign-in's tokens are bound to this computer (RFC 9449).
    static var statusBoundByTPM: String {
        tr("Bound to this computer: yes, by a key the TPM holds, which never leaves it. A copy of the vault refreshes nothing elsewhere.")
    }
    static var statusBoundBySoftwareKey: String {
        tr("Bound to this computer: yes, by a key sealed in the vault. Without a TPM to hold that key, a copy of the vault opened with your PIN could still use the sign-in elsewhere.")
    }
    static var statusBearer: String {
        tr("Bound to this computer: no. The identity provider gives bearer tokens, which work wherever they are copied.")
    }
    static func statusSignInRequiredWith(_ issuer: String, _ client: String) -> String {
        tr("Sign-in: sign-in required; run: fingerseal login (%1$s, client %2$s)", issuer, client)
    }
    static func statusNotSignedInWith(_ issuer: String, _ client: String) -> String { tr("Sign-in: not signed in (%1$s, client %2$s)", issuer, client) }
    static var statusFingerLocked: String { tr("Fingerprint lock: locked after too many failed scans; a PIN or password success unlocks it") }
    static func statusFingerNotLocked(_ failures: Int) -> String { tr("Fingerprint lock: not locked; failed scans in a row: %1$s", failures) }
    static var statusPINLocked: String { tr("PIN lock: locked after too many wrong PINs; sign in again to unlock it") }
    static func statusPINNotLocked(_ failures: Int) -> String { tr("PIN lock: not locked; wrong PINs in a row: %1$s", failures) }
}
