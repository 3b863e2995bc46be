import Glibc
import Localization
import SharedMessages
import SystemKit

/// How a scan prompt says to get out of the scan; each pairs with "Place your finger on the
/// reader" into one whole sentence (`Messages.placeFinger(swipe:cancelHint:)`).
public enum ScanHint: Sendable {
    case none
    /// "or press Ctrl-C to cancel"
    case pressCtrlC
    /// "or press Ctrl-C to use your password" (a terminal PAM host)
    case pressCtrlCForPassword
    /// "or use your password" (a graphical host)
    case orUsePassword
    /// "or type your PIN and press Enter. Enter alone goes straight to the PIN."
    case fingerOrPIN
    /// "or type your PIN" (an application's dialog, whose field and buttons say the rest)
    case orTypePIN
}

/// Every sentence a person sees, in one table: plain sentences a screen reader can speak,
/// meaning never in colour or symbols alone. Each is looked up in the message catalog in the
/// language of the request being served (po/README).
/// What fingerseal was doing when the system failed it (`Messages.systemFailure`): each one
/// whole sentence in the catalog, never a verb phrase glued into one.
public enum SystemStep: Sendable, Equatable {
    case checkAccountPassword, listenForBrowser, startScan, scan, lookUpAccount, finishRequest, useReader, derivePINKey
    case readFile(String)
    case createKey, deriveKey, encryptSecret, measurePINCost
    case openVault, readVault, listVault, saveVault, deleteVault, deleteOldVault
    case readDeviceKey, writeDeviceKey, removeOldDeviceKey
    case readLockout, saveLockout
    case openAuditTrail, readAuditTrail, writeAuditTrail
}

public enum Messages {
    /// Text from elsewhere as it goes inside one of our sentences (`SharedMessages.embedded`).
    public static func embedded(_ text: String) -> String { SharedMessages.embedded(text) }

    // Vault
    public static var noVault: String { tr("Fingerseal is not set up for this account. Run: fingerseal pin set") }
    public static var vaultExists: String { tr("A PIN is already set. To change it, run: fingerseal pin change") }
    public static var vaultReplaced: String { tr("The vault was replaced by another program while in use. Run the command again.") }
    public static func vaultDamaged(_ file: String, _ why: String) -> String {
        tr("The fingerseal file %1$s cannot be used: %2$s. It was left unchanged.", file, embedded(why))
    }
    public static func unsafeFile(_ why: String) -> String {
        tr("Fingerseal refused to use its files because %1$s. Fix the ownership or permissions, or remove the file.", embedded(why))
    }
    /// Why a file was refused, as a clause for `unsafeFile` and its kin.
    public static func unsafeReason(_ error: UnsafeFileError) -> String {
        switch error.reason {
        case .symlink: return tr("%1$s is a symbolic link", error.path)
        case .notRegularFile: return tr("%1$s is not a regular file", error.path)
        case .notDirectory: return tr("%1$s is not a directory", error.path)
        case let .wrongOwner(found, expected): return tr("%1$s is owned by uid %2$s, not uid %3$s", error.path, found, expected)
        case let .writableByOthers(mode):
            return tr("%1$s is writable by group or others (mode %2$s)", error.path, String(mode & 0o7777, radix: 8))
        case let .tooLarge(size, limit): return tr("%1$s is %2$s bytes, more than the limit of %3$s", error.path, size, limit)
        }
    }
    /// A file fingerseal may not open (EACCES, EPERM), as a clause for `unsafeFile`.
    public static func notPermitted(_ error: SystemError) -> String {
        tr("%1$s cannot be opened (%2$s)", error.subject.isEmpty ? "?" : error.subject, String(cString: strerror(error.code)))
    }
    public static var vaultBusy: String { tr("Another fingerseal program is using the vault. Try again in a moment.") }
    public static func systemFailure(_ step: SystemStep) -> String {
        switch step {
        case .checkAccountPassword: return tr("Fingerseal could not check the account password.")
        case .listenForBrowser: return tr("Fingerseal could not listen for the browser on 127.0.0.1.")
        case .startScan: return tr("Fingerseal could not start the scan.")
        case .scan: return tr("Fingerseal could not finish the scan.")
        case .lookUpAccount: return tr("Fingerseal could not look up the user account.")
        case .finishRequest: return tr("Fingerseal could not finish the request.")
        case .useReader: return tr("Fingerseal could not use the fingerprint reader.")
        case .derivePINKey: return tr("Fingerseal could not derive a key from the PIN; the computer may be out of memory.")
        case let .readFile(path): return tr("Fingerseal could not read %1$s.", path)
        case .createKey: return tr("Fingerseal could not create a key.")
        case .deriveKey: return tr("Fingerseal could not derive a key.")
        case .encryptSecret: return tr("Fingerseal could not encrypt a secret.")
        case .measurePINCost: return tr("Fingerseal could not measure how long the PIN takes to check.")
        case .openVault: return tr("Fingerseal could not open the vault.")
        case .readVault: return tr("Fingerseal could not read the vault.")
        case .listVault: return tr("Fingerseal could not list the vault's files.")
        case .saveVault: return tr("Fingerseal could not save the vault.")
        case .deleteVault: return tr("Fingerseal could not delete the vault.")
        case .deleteOldVault: return tr("Fingerseal could not delete the old vault.")
        case .readDeviceKey: return tr("Fingerseal could not read the device key.")
        case .writeDeviceKey: return tr("Fingerseal could not write the device key.")
        case .removeOldDeviceKey: return tr("Fingerseal could not remove an old device key.")
        case .readLockout: return tr("Fingerseal could not read the lockout record.")
        case .saveLockout: return tr("Fingerseal could not save the lockout record.")
        case .openAuditTrail: return tr("Fingerseal could not open the audit trail.")
        case .readAuditTrail: return tr("Fingerseal could not read the audit trail.")
        case .writeAuditTrail: return tr("Fingerseal could not write the audit trail.")
        }
    }
    public static var secureMemory: String { SharedMessages.secureMemory }

    // PIN
    public static var enterPIN: String { tr("PIN: ") }
    public static var enterOldPIN: String { tr("Current PIN: ") }
    public static var enterNewPIN: String { tr("New PIN: ") }
    public static var repeatNewPIN: String { tr("Repeat the new PIN: ") }
    public static var wrongPIN: String { tr("The PIN is not correct.") }
    public static var pinMismatch: String { tr("The two PINs are not the same. Nothing was changed.") }
    public static func pinTooShort(_ minimum: Int) -> String { tr("The PIN must have at least %1$s characters.", minimum) }
    public static func pinTooLong(_ maximum: Int) -> String { tr("The PIN must have at most %1$s characters.", maximum) }
    public static var pinEmptyInput: String { tr("No PIN was given.") }
    public static var pinChecksBusy: String { tr("The service is checking too many PINs at once. Try again in a moment.") }
    public static func pinWait(_ seconds: Int64) -> String {
        trn("Too many wrong PINs. Wait %1$s second, then try again.", "Too many wrong PINs. Wait %1$s seconds, then try again.", Int(clamping: seconds), seconds)
    }
    public static var pinLocked: String { tr("The PIN is locked after too many wrong tries. Sign in again with: fingerseal login") }
    public static var pinSet: String { tr("The PIN is set. Fingerseal is ready.") }
    public static var pinChanged: String { tr("The PIN is changed.") }
    public static var noDeviceSlot: String { tr("The device key is missing or damaged; only the PIN can unlock the vault. Changing the PIN repairs it.") }
    public static var fingerLocked: String { tr("Fingerprint unlock is locked after too many failed scans. Use your PIN or password.") }

    public static var pinNeeded: String { tr("This change needs your PIN.") }

    // The TPM the keyslots are sealed to
    public static var tpmUnreachable: String { tr("Fingerseal cannot use this computer's TPM right now, and your vault is sealed to it. Try again; if it keeps failing, run: fingerseal doctor") }
    public static var tpmRequired: String { tr("This computer requires fingerseal to use a TPM (tpm=require), and no usable TPM was found, so the vault cannot be created or unlocked.") }
    public static var tpmRequiredNotSealed: String { tr("This computer requires fingerseal to use a TPM (tpm=require), and the key your finger opens is not sealed to it yet. Enter your PIN once to seal it.") }
    public static var tpmSealFailed: String { tr("The TPM did not give back what was just sealed in it, so nothing was changed.") }
    public static var tpmKeyslotDamaged: String { tr("A keyslot sealed to the TPM is damaged and cannot be opened. Nothing was changed.") }
    public static var tpmChangedFinger: String { tr("Your finger cannot unlock fingerseal any more: the TPM your vault is sealed to is gone (it was cleared or replaced, or the disk was moved to another computer). Set fingerseal up again with your account password: fingerseal pin reset") }
    public static var tpmChangedPIN: String { tr("Your PIN cannot unlock fingerseal any more: the TPM your vault is sealed to is gone (it was cleared or replaced, or the disk was moved to another computer). Set fingerseal up again with your account password: fingerseal pin reset") }
    /// `seconds`: the TPM's lockout interval (one failure is forgotten after it); 0 when the
    /// TPM did not say.
    public static func tpmLockedOut(seconds: Int) -> String {
        guard seconds > 0 else {
            return tr("This computer's TPM refuses PINs for now, after too many wrong ones. It allows another try after its own recovery time; until then, use your finger or your password.")
        }
        let minutes = (seconds + 59) / 60
        return trn("This computer's TPM refuses PINs for now, after too many wrong ones. It allows another try within %1$s minute; until then, use your finger or your password.",
                   "This computer's TPM refuses PINs for now, after too many wrong ones. It allows another try within %1$s minutes; until then, use your finger or your password.",
                   minutes, minutes)
    }
    public static var tpmPCRsChanged: String { tr("Your finger cannot unlock fingerseal until you enter your PIN once: this computer's firmware or boot software changed since the key was sealed to its TPM.") }
    public static var vaultReplacedAfterTPMChange: String { tr("Your vault was sealed to a TPM this computer no longer has, so nothing in it could be opened. A new vault with your new PIN replaces it: enroll your fingers again with fingerseal enroll, and sign in with fingerseal login.") }

    // Applications (through the session agent)
    public static var passwordInstead: String { tr("Enter your account password instead of a finger or the PIN.") }
    public static var noReaderEnterPassword: String { tr("No fingerprint reader is connected. Enter your account password.") }
    public static var passwordOnlyForApplications: String { tr("Only an application's dialog may use the account password in place of a finger or the PIN.") }
    public static var badApplication: String { tr("The session agent sent a description of the application that fingerseal cannot use.") }
    public static func notFromThisProgram(_ command: String) -> String { tr("This program cannot ask for %1$s.", command) }

    // Readers
    public static var noReader: String { tr("No fingerprint reader is connected.") }
    public static func noSuchReader(_ id: String) -> String { tr("There is no reader with the id %1$s. Run: fingerseal devices", id) }
    public static func placeFinger(swipe: Bool) -> String {
        swipe ? tr("Swipe your finger across the reader.") : tr("Place your finger on the reader.")
    }
    /// The scan prompt with how to get out of it, as one whole sentence per combination.
    public static func placeFinger(swipe: Bool, cancelHint: ScanHint) -> String {
        switch (swipe, cancelHint) {
        case (false, .none): return tr("Place your finger on the reader.")
        case (true, .none): return tr("Swipe your finger across the reader.")
        case (false, .pressCtrlC): return tr("Place your finger on the reader, or press Ctrl-C to cancel.")
        case (true, .pressCtrlC): return tr("Swipe your finger across the reader, or press Ctrl-C to cancel.")
        case (false, .pressCtrlCForPassword): return tr("Place your finger on the reader, or press Ctrl-C to use your password.")
        case (true, .pressCtrlCForPassword): return tr("Swipe your finger across the reader, or press Ctrl-C to use your password.")
        case (false, .orUsePassword): return tr("Place your finger on the reader, or use your password.")
        case (true, .orUsePassword): return tr("Swipe your finger across the reader, or use your password.")
        case (false, .fingerOrPIN):
            return tr("Place your finger on the reader, or type your PIN and press Enter. Enter alone goes straight to the PIN.")
        case (true, .fingerOrPIN):
            return tr("Swipe your finger across the reader, or type your PIN and press Enter. Enter alone goes straight to the PIN.")
        case (false, .orTypePIN): return tr("Place your finger on the reader, or type your PIN.")
        case (true, .orTypePIN): return tr("Swipe your finger across the reader, or type your PIN.")
        }
    }
    public static func enrollProgress(_ done: Int, _ total: Int, swipe: Bool) -> String {
        done >= total ? tr("Scan %1$s of %2$s done.", done, total)
            : swipe ? tr("Scan %1$s of %2$s done. Swipe your finger again.", done, total)
            : tr("Scan %1$s of %2$s done. Lift your finger and place it again.", done, total)
    }
    public static var hintGeneral: String { tr("The scan did not work. Try again.") }
    public static var hintTooShort: String { tr("The swipe was too short. Swipe your finger again.") }
    public static var hintCenter: String { tr("Your finger was not centred on the reader. Centre it and try again.") }
    public static var hintRemove: String { tr("Remove your finger from the reader, then try again.") }
    public static var noMatch: String { tr("The fingerprint did not match.") }
    public static var noMatchTryAgain: String { tr("The fingerprint did not match. Try again.") }
    public static var scanTimedOut: String { tr("No finger was scanned in time.") }
    public static var readerRemoved: String { tr("The fingerprint reader was disconnected.") }
    public static func readerFailed(_ detail: String) -> String { tr("The fingerprint reader reported an error: %1$s.", embedded(detail)) }
    public static var readerOperationCancelled: String { tr("The fingerprint reader reported an error: the operation was cancelled.") }
    public static var readerUnexpectedResult: String { tr("The fingerprint reader reported an error: unexpected result.") }
    public static var enrollGaveNoPrint: String { tr("The fingerprint reader reported an error: enrollment gave no print.") }
    public static func readerErrorCode(_ code: String) -> String { tr("The fingerprint reader reported an error: code %1$s.", code) }
    public static func readerDoesNotSupport(_ what: String) -> String { tr("The fingerprint reader reported an error: it does not support %1$s.", what) }
    public static var readerBusy: String { tr("The fingerprint reader is busy. Try again in a moment.") }
    public static var notEnrolled: String { tr("No finger is enrolled. Run: fingerseal enroll") }
    // fprintd holds the templates (reader=fprintd, or auto with fprintd on the system bus).
    public static var fingersChanged: String { tr("The fingers enrolled for you in fprintd changed since your PIN last confirmed them, so a finger unlocks again only after you enter your PIN once.") }
    public static var fingersConfirmed: String { tr("Your PIN confirmed the fingers now enrolled in fprintd; they unlock fingerseal again.") }
    public static var anyFprintdFinger: String { tr("a finger enrolled in fprintd") }
    public static var fingersBound: String { tr("The fingers enrolled for you in fprintd now unlock fingerseal.") }
    public static func notEnrolledHere(_ finger: String) -> String {
        tr("The finger %1$s was enrolled with another program (your desktop's settings or fprintd-enroll), so fingerseal does not delete it. Remove it there; fingerseal then asks for your PIN once to confirm the change.", finger)
    }
    public static var fprintdUnavailable: String { tr("fprintd, which owns the fingerprint reader on this computer, cannot be reached.") }
    public static var nothingForgottenAtFprintd: String { tr("fingerseal enrolled no finger in fprintd, so none was deleted. Fingers enrolled with other programs are removed there.") }
    public static var needsDirectReader: String { tr("fprintd owns the fingerprint reader on this computer, so this command cannot drive it directly. Stop fprintd and set reader=libfprint in the configuration to use it.") }
    public static var lidClosed: String { tr("The lid is closed, so the built-in fingerprint reader is not used.") }
    public static var noCompatiblePrints: String { tr("None of your enrolled fingers were enrolled on this reader. Run: fingerseal enroll") }
    public static func alreadyEnrolled(_ finger: String) -> String {
        tr("The finger %1$s is already enrolled. To enroll it again, first run: fingerseal forget %1$s", finger)
    }
    public static var duplicateFinger: String { tr("The reader already holds this finger, stored by another program (fprintd, another operating system or another user). Enroll a different finger, or remove that print with the program that stored it.") }
    public static var readerStorageFull: String { tr("The reader's storage is full. fingerseal never deletes other programs' prints to make room: remove prints you no longer need with the program that stored them, then enroll again.") }
    public static func enrolled(_ finger: String) -> String { tr("Enrolled %1$s.", fingerName(finger)) }
    public static func forgotten(_ fingers: [String]) -> String {
        fingers.isEmpty ? tr("No finger was enrolled.")
            : trn("Forgot %1$s.", "Forgot these fingers: %1$s.", fingers.count, fingers.map(fingerName).joined(separator: ", "))
    }
    /// A finger as a person says it, for fprintd's name of it ("right-index-finger"); a name
    /// that is none of the ten stays as it is. Command lines and --json keep fprintd's names.
    public static func fingerName(_ name: String) -> String {
        switch name {
        case "left-thumb": return tr("left thumb")
        case "left-index-finger": return tr("left index finger")
        case "left-middle-finger": return tr("left middle finger")
        case "left-ring-finger": return tr("left ring finger")
        case "left-little-finger": return tr("left little finger")
        case "right-thumb": return tr("right thumb")
        case "right-index-finger": return tr("right index finger")
        case "right-middle-finger": return tr("right middle finger")
        case "right-ring-finger": return tr("right ring finger")
        case "right-little-finger": return tr("right little finger")
        default: return name
        }
    }
    public static func notEnrolledFinger(_ finger: String) -> String { tr("The finger %1$s is not enrolled.", finger) }
    public static var onDeviceTemplateLeft: String { tr("The reader is not connected, so its stored copy of the print could not be deleted. Run fingerseal forget again with the reader connected to delete it.") }
    public static func unknownFinger(_ name: String) -> String {
        tr("Unknown finger %1$s. Use one of: left-thumb, left-index-finger, left-middle-finger, left-ring-finger, left-little-finger, right-thumb, right-index-finger, right-middle-finger, right-ring-finger, right-little-finger.", name)
    }
    public static var captureNotSupported: String { tr("This reader cannot capture images.") }
    public static func captured(_ path: String, _ width: Int, _ height: Int) -> String { tr("Saved a %1$s by %2$s image to %3$s.", width, height, path) }
    public static var selftestNeedsStorage: String { tr("The self-test needs a reader that stores prints on the device.") }

    public static var signInRequired: String { tr("Your sign-in has ended. Sign in again with: fingerseal login") }
    public static var idpUnreachable: String { tr("The identity provider cannot be reached, and the last sign-in check is too long ago to go on without it.") }
    public static var idpRefused: String { tr("The identity provider did not renew your sign-in. Your sign-in is kept; try again later.") }
    public static var notSignedIn: String { tr("This account is not signed in to an identity provider. Sign in with: fingerseal login") }
    /// `finger`: nil for the PIN, else the finger's name ("" when fprintd did not say).
    public static func unlockedWith(_ method: UnlockMethod, finger: String?) -> String {
        switch method {
        case .pin: return tr("Unlocked with your PIN.")
        case .password: return tr("Unlocked with your password.")
        case .finger:
            guard let finger, !finger.isEmpty else { return tr("Unlocked with your finger.") }
            return tr("Unlocked with your finger (%1$s).", finger)
        }
    }
    public static func tokenReady(_ minutes: Int) -> String {
        trn("A fresh access token is ready. It is valid for %1$s more minute.", "A fresh access token is ready. It is valid for %1$s more minutes.", minutes, minutes)
    }
    public static var offlineNoToken: String { tr("The identity provider cannot be reached, so there is no fresh access token. The offline grace still allows unlocking.") }
    /// The question a PAM host is asked while the reader waits (prompt=combined with the PIN,
    /// or a host without Ctrl-C): the one sentence of its prompt, which says it all, the
    /// reader's way of taking the finger included (a host may show only prompts).
    public static func fingerOrPINPrompt(swipe: Bool) -> String {
        swipe ? tr("Swipe your finger across the reader and press Enter, or type your PIN: ")
            : tr("Place your finger on the reader and press Enter, or type your PIN: ")
    }
    /// The same with no PIN to type: Enter alone goes on to the password.
    public static func fingerThenEnterPrompt(swipe: Bool) -> String {
        swipe ? tr("Swipe your finger across the reader and press Enter, or press Enter alone for your password: ")
            : tr("Place your finger on the reader and press Enter, or press Enter alone for your password: ")
    }
    public static var loggedOut: String { tr("Signed out. The sign-in is removed from your vault; your PIN and fingers are kept.") }
    public static func revokeFailed(_ detail: String) -> String {
        tr("The identity provider could not be told to end the sign-in (%1$s). It is removed here; at the provider it ends when it expires.", embedded(detail))
    }
    // Step-up and sealed data
    public static var badContext: String { tr("A context name is 1 to 64 letters, digits, dots, dashes or underscores.") }
    /// A new confirmation, one whole sentence per way it was made and unit of its lifetime;
    /// `context` nil: an application's, whose dialog says what it is for (a context is its
    /// identifier, never words for people).
    public static func steppedUp(_ context: String?, _ method: UnlockMethod, ttl: Int) -> String {
        let minutes = ttl / 60
        guard let context else {
            switch (method, minutes > 0) {
            case (.finger, true):
                return trn("Confirmed with your finger, for %1$s minute.", "Confirmed with your finger, for %1$s minutes.", minutes, minutes)
            case (.finger, false):
                return trn("Confirmed with your finger, for %1$s second.", "Confirmed with your finger, for %1$s seconds.", ttl, ttl)
            case (.pin, true):
                return trn("Confirmed with your PIN, for %1$s minute.", "Confirmed with your PIN, for %1$s minutes.", minutes, minutes)
            case (.pin, false):
                return trn("Confirmed with your PIN, for %1$s second.", "Confirmed with your PIN, for %1$s seconds.", ttl, ttl)
            case (.password, true):
                return trn("Confirmed with your password, for %1$s minute.", "Confirmed with your password, for %1$s minutes.",
                           minutes, minutes)
            case (.password, false):
                return trn("Confirmed with your password, for %1$s second.", "Confirmed with your password, for %1$s seconds.", ttl, ttl)
            }
        }
        switch (method, minutes > 0) {
        case (.finger, true):
            return trn("Confirmed with your finger for %1$s, for %2$s minute.", "Confirmed with your finger for %1$s, for %2$s minutes.",
                       minutes, context, minutes)
        case (.finger, false):
            return trn("Confirmed with your finger for %1$s, for %2$s second.", "Confirmed with your finger for %1$s, for %2$s seconds.",
                       ttl, context, ttl)
        case (.pin, true):
            return trn("Confirmed with your PIN for %1$s, for %2$s minute.", "Confirmed with your PIN for %1$s, for %2$s minutes.",
                       minutes, context, minutes)
        case (.pin, false):
            return trn("Confirmed with your PIN for %1$s, for %2$s second.", "Confirmed with your PIN for %1$s, for %2$s seconds.",
                       ttl, context, ttl)
        case (.password, true):
            return trn("Confirmed with your password for %1$s, for %2$s minute.",
                       "Confirmed with your password for %1$s, for %2$s minutes.", minutes, context, minutes)
        case (.password, false):
            return trn("Confirmed with your password for %1$s, for %2$s second.",
                       "Confirmed with your password for %1$s, for %2$s seconds.", ttl, context, ttl)
        }
    }
    public static func grantHeld(_ context: String?) -> String {
        context.map { tr("Already confirmed for %1$s in this session.", $0) } ?? tr("Already confirmed.")
    }
    public static func stepUpCeiling(_ seconds: Int) -> String {
        trn("The option --ttl takes at most %1$s second on this computer: the administrator's limit (stepup_max_ttl).",
            "The option --ttl takes at most %1$s seconds on this computer: the administrator's limit (stepup_max_ttl).", seconds, seconds)
    }
    public static func grantEnded(_ context: String) -> String { tr("The confirmation for %1$s is ended.", context) }
    public static func noGrant(_ context: String) -> String { tr("There is no confirmation for %1$s in this session.", context) }
    public static func stepUpPrompt(_ context: String?) -> String {
        context.map { tr("Confirm it is you for %1$s.", $0) } ?? tr("Confirm it is you.")
    }
    public static var personalDataFollows: String { tr("Personal data follows.") }
    public static var payloadBudgetSpent: String {
        tr("The service is holding as much data to seal or reveal as it can at the moment. Try again when your other requests have finished.")
    }
    public static var payloadTooSlow: String { tr("The data to seal or reveal did not arrive in time, so nothing was done.") }
    public static var notSealedFile: String { tr("This is not a file sealed by fingerseal, or it is damaged.") }
    public static var sealedByAnotherVault: String { tr("This file was sealed with another fingerseal vault; this vault cannot open it.") }
    public static var sealedTampered: String { tr("This sealed file was changed after it was sealed, or its context was altered. Nothing was revealed.") }
    public static func sealedFor(_ context: String) -> String { tr("Sealed for the context %1$s.", context) }
    public static func tooLargeToSeal(_ limit: Int) -> String { SharedMessages.tooLargeToSeal(limitMiB: limit / (1024 * 1024)) }
    public static func cannotRead(_ path: String) -> String { SharedMessages.cannotRead(path) }
    public static func cannotWrite(_ path: String, _ why: String) -> String { SharedMessages.cannotWrite(path, why) }
    public static var pinForReset: String { tr("Deleting the vault needs its PIN. If the PIN is forgotten, set a new one with: fingerseal pin reset") }
    public static func redirectPortBusy(_ port: Int) -> String {
        tr("Port %1$s on 127.0.0.1 is in use, so the browser cannot come back to fingerseal. Close what uses it, or choose another port.", port)
    }
    public static func cannotRun(_ command: String, _ why: String) -> String { SharedMessages.cannotRun(command, why) }
    public static var notRevocable: String { tr("The identity provider offers no way to end a sign-in early. It is removed here; at the provider it ends when it expires.") }
    public static func openAndEnter(_ uri: String, _ code: String) -> String {
        tr("To sign in, open %1$s on any device and enter the code %2$s.", uri, code)
    }
    public static var orScanQR: String { tr("Or scan this QR code with your phone:") }
    public static var waitingForSignIn: String { tr("Waiting for you to finish signing in. Press Ctrl-C to cancel.") }
    public static var codeExpired: String { tr("The sign-in code expired before it was used. Run fingerseal login again.") }
    public static var signInRefused: String { tr("The sign-in was refused.") }
    public static var credentialsRefused: String { tr("The identity provider refused the user name or password.") }
    public static var noRefreshToken: String { tr("The identity provider issued no refresh token. Ask for the offline_access scope, or ask your administrator to allow refresh tokens for this client.") }
    public static func signedIn(_ issuer: String) -> String { tr("Signed in to %1$s. The sign-in is sealed in your vault.", issuer) }
    public static func signedInAs(_ who: String) -> String { tr("Signed in as %1$s.", who) }
    public static func identityMismatch(_ who: String, _ user: String) -> String {
        tr("The identity provider signed in %1$s, which is not the account %2$s on this computer, so the sign-in was refused and nothing was stored.", who, user)
    }
    public static func identityClaimMissing(_ who: String, _ claim: String, _ user: String) -> String {
        tr("The identity provider did not say which account %1$s is here (it sent no %2$s for the account %3$s), so the sign-in was refused and nothing was stored.", who, claim, user)
    }
    public static var identityUnknown: String { tr("The identity provider did not say who signed in (no ID token and no userinfo), so the sign-in was refused: this computer requires the account to match.") }
    public static var identityChanged: String { tr("The identity provider now names another account than the one that signed in, so a new sign-in is required. Run: fingerseal login") }
    public static var offerEnroll: String { tr("To unlock with your finger from now on, run: fingerseal enroll") }
    public static func passwordPrompt(_ user: String) -> String { tr("Password for %1$s: ", user) }
    public static func providerProblem(_ detail: String) -> String { tr("The identity provider cannot be used: %1$s.", embedded(detail)) }
    public static func providerAnswered(_ status: Int, _ code: String?) -> String {
        guard let code else { return tr("The identity provider cannot be used: it answered %1$s.", status) }
        return tr("The identity provider cannot be used: it answered %1$s %2$s.", status, embedded(code))
    }
    public static var providerUnexpectedAnswer: String { tr("The identity provider cannot be used: unexpected answer.") }
    public static func providerEndedSignIn(_ error: String) -> String {
        tr("The identity provider cannot be used: it ended the sign-in with the error %1$s.", embedded(error))
    }
    public static var providerSentNothingBack: String {
        tr("The identity provider cannot be used: it sent the browser back with neither a code nor an error.")
    }
    public static func providerUnreachable(_ detail: String) -> String { tr("The identity provider cannot be reached (%1$s). Check the network and try again.", embedded(detail)) }
    public static var signInRequiredNotice: String { tr("Fingerprint unlock needs a new sign-in. Run: fingerseal login") }

    // Browser sign-in (the pages are what the browser shows when it comes back)
    public static var openInBrowser: String { tr("Open this address in a browser to sign in:") }
    public static var browserTimedOut: String { tr("The browser did not come back in time. Run fingerseal login again.") }
    public static var codeNotAccepted: String { tr("The identity provider did not accept the sign-in. Run fingerseal login again.") }
    public static var browserPageReceived: String { tr("You can close this window and return to the terminal.") }
    public static var browserPageFailed: String { tr("The sign-in did not complete. You can close this window and return to the terminal.") }
    public static var browserPageIgnored: String { tr("This page does not belong to the sign-in in progress, so it was ignored.") }
    public static var browserPageOtherAccount: String {
        tr("This sign-in belongs to another account on this computer, so this browser cannot complete it. Nothing was changed.")
    }
    public static var browserPageUnknownAccount: String {
        tr("Fingerseal could not tell which account on this computer this browser belongs to, so it cannot complete the sign-in. Nothing was changed.")
    }
    public static func browserOtherAccountRefused(_ account: String) -> String {
        tr("Another account on this computer (%1$s) tried to complete this sign-in. It was refused; your sign-in goes on.", account)
    }
    public static var browserUnknownAccountRefused: String {
        tr("A program on this computer whose account could not be told tried to complete this sign-in. It was refused; your sign-in goes on.")
    }

    // Reset
    public static var resetConfirm: String { tr("This deletes the fingerseal vault for this account, with its PIN, enrolled fingers and sign-in. Type yes to continue: ") }
    public static var resetDone: String { tr("The fingerseal vault is deleted.") }
    public static var resetNothing: String { tr("There is no fingerseal vault for this account. Nothing was deleted.") }
    public static var resetCancelled: String { tr("Nothing was deleted.") }

    // Input
    public static var cancelled: String { SharedMessages.cancelled }
    public static var noTerminal: String { SharedMessages.noTerminal }

    // Configuration
    public static func badOption(_ option: String, _ why: String) -> String { tr("The option %1$s is not valid: %2$s.", option, embedded(why)) }
    public static func unknownOption(_ option: String) -> String { tr("Unknown option %1$s was ignored.", option) }
    public static func unknownSection(_ section: String) -> String { tr("Unknown section [%1$s] was ignored, with its settings.", section) }
    public static func badServiceSection(_ service: String) -> String {
        tr("The section [service %1$s] is not valid: it needs one PAM service name, without spaces or commas.", service)
    }
    public static func fileOnlyInServiceSection(_ option: String, _ service: String) -> String {
        tr("The option %1$s in the section [service %2$s] was ignored: it is set for the whole machine, at the top of the file, not per service.",
           option, service)
    }
    public static func badServiceName(_ service: String) -> String {
        tr("%1$s is not a PAM service name: it needs one name, without spaces or commas.", service)
    }
    public static var unknownUser: String { tr("That user does not exist.") }
    // Fleet configuration: the system file, what it fixes, the client secret it names
    public static func unsafeConfigFile(_ why: String) -> String {
        tr("Fingerseal refused its configuration because %1$s. The file must be root's and writable by root only.", embedded(why))
    }
    public static func fixedOnlyInFile(_ source: String) -> String {
        tr("The option fixed in %1$s was ignored: only the configuration file can fix options.", source)
    }
    public static func fixedOptionIgnored(_ option: String, _ source: String) -> String {
        tr("The option %1$s in %2$s was ignored: the administrator fixed it in the configuration file.", option, source)
    }
    public static func fixedArgument(_ argument: String, _ option: String) -> String {
        tr("The administrator fixed %1$s for this machine, so %2$s cannot change it.", option, argument)
    }
    public static func fileOnlyOption(_ option: String, _ source: String) -> String {
        tr("The option %1$s in %2$s was ignored: only the configuration file can set it.", option, source)
    }
    public static var badTPMMode: String { tr("The option tpm is not valid: use auto, require or off.") }
    public static var badTPMTCTI: String { tr("The option tpm_tcti is not valid: it needs a TCTI such as device:/dev/tpmrm0.") }
    public static var badTPMPCRs: String { tr("The option tpm_pcrs is not valid: it needs PCR numbers from 0 to 23 separated by commas, or none.") }
    public static var signInNotConfigured: String { tr("Say which identity provider and client with --issuer URL --client-id ID, or ask the administrator to set issuer and client_id in /etc/fingerseal/fingerseal.conf.") }
    public static var administratorSecretWins: String { tr("The client secret set by the administrator is used; the one from --client-secret-file was not.") }
    public static func clientSecretFileMissing(_ path: String) -> String {
        tr("The client secret file %1$s named in the configuration does not exist.", path)
    }
    public static func clientSecretFileReadable(_ path: String, _ mode: UInt32) -> String {
        tr("The client secret file %1$s can be read by group or others (mode %2$s). Make it readable by root only (chmod 600).", path, String(mode & 0o7777, radix: 8))
    }
    public static func unsafeClientSecretFile(_ why: String) -> String {
        tr("Fingerseal refused the client secret file because %1$s. It must be root's, in a directory only root can write.", embedded(why))
    }
    public static func clientSecretFileEmpty(_ path: String) -> String { tr("The client secret file %1$s is empty.", path) }

    // Audit trail: what `fingerseal audit` lists and syslog receives (one sentence per event)
    public static func auditSignedIn(_ issuer: String, _ flow: String) -> String { tr("Signed in to %1$s with the %2$s sign-in.", issuer, flow) }
    public static func auditUnlocked(method: String, via: String) -> String {
        switch (method, via) {
        case ("finger", "pam"): return tr("Unlocked with a finger at a system sign-in (PAM).")
        case ("finger", "cli"): return tr("Unlocked with a finger, using the fingerseal command.")
        case ("pin", "pam"): return tr("Unlocked with the PIN at a system sign-in (PAM).")
        case ("pin", "cli"): return tr("Unlocked with the PIN, using the fingerseal command.")
        case ("finger", "application"): return tr("Unlocked with a finger for an application.")
        case ("pin", "application"): return tr("Unlocked with the PIN for an application.")
        case ("password", "application"): return tr("Unlocked with the account password for an application.")
        default: return tr("Unlocked with %1$s (%2$s).", method, via)
        }
    }
    /// What the session agent said of the application that asked: a claim, never proof.
    public static func auditApplication(name: String?, executable: String?, appID: String?, busName: String) -> String {
        let program = executable ?? tr("an unknown program")
        switch (name, appID) {
        case let (name?, appID?):
            return tr("The session agent said %1$s asked (%2$s, Flatpak app %3$s, bus name %4$s); the system cannot vouch for this.",
                      name, program, appID, busName)
        case let (name?, nil):
            return tr("The session agent said %1$s asked (%2$s, bus name %3$s); the system cannot vouch for this.", name, program, busName)
        case let (nil, appID?):
            return tr("The session agent said %1$s asked (Flatpak app %2$s, bus name %3$s); the system cannot vouch for this.",
                      program, appID, busName)
        case (nil, nil):
            return tr("The session agent said %1$s asked (bus name %2$s); the system cannot vouch for this.", program, busName)
        }
    }
    public static func auditFallback(_ reason: String) -> String { tr("Moved on to the next way to sign in: %1$s.", embedded(reason)) }
    public static func auditStepUp(_ context: String, _ result: String) -> String { tr("Step-up for %1$s: %2$s.", context, result) }
    public static func auditReveal(_ context: String, _ file: String) -> String { tr("Revealed %1$s for %2$s.", file, context) }
    public static func auditLockout(_ method: String) -> String {
        method == "finger" ? tr("Fingerprint unlock was locked after too many failed scans.")
            : method == "pin" ? tr("The PIN was locked after too many wrong tries.") : tr("%1$s was locked.", method)
    }
    /// Each action that did not succeed has its own sentence.
    public static func auditFailure(_ action: AuditAction, _ reason: String) -> String {
        let reason = embedded(reason)
        switch action {
        case .unlock: return tr("Unlock did not succeed: %1$s.", reason)
        case .signIn: return tr("Sign-in did not succeed: %1$s.", reason)
        case .signOut: return tr("Sign-out did not succeed: %1$s.", reason)
        case .tokenRefresh: return tr("Token refresh did not succeed: %1$s.", reason)
        case .pinReset: return tr("PIN reset did not succeed: %1$s.", reason)
        case .fingerprintScan: return tr("Fingerprint scan did not succeed: %1$s.", reason)
        case .identify: return tr("Turning touch to sign in on or off did not succeed: %1$s.", reason)
        }
    }
    /// An action a trail names that this fingerseal does not know (another version wrote it).
    public static func auditFailureOfUnknownAction(_ action: String, _ reason: String) -> String {
        tr("%1$s did not succeed: %2$s.", action, embedded(reason))
    }
    public static var auditLoggedOut: String { tr("Signed out.") }
    public static var auditPINReset: String { tr("A forgotten PIN was replaced with a new one.") }
    public static func auditRotated(_ file: String) -> String { tr("Older events were moved to %1$s.", file) }
    /// An entry of attempts counted, not recorded one by one (`AttemptTally`); the kinds follow.
    public static func auditCounted(_ total: UInt64, _ from: String, _ to: String) -> String {
        trn("%1$s more attempt, from %2$s to %3$s, was counted and not listed one by one.",
            "%1$s more attempts, from %2$s to %3$s, were counted and not listed one by one.", Int(clamping: total), total, from, to)
    }
    /// One kind in such a count: how often, and the sentence an attempt of that kind has.
    public static func auditCountedKind(_ count: UInt64, _ sentence: String) -> String {
        trn("%1$s time: %2$s", "%1$s times: %2$s", Int(clamping: count), count, sentence)
    }
    public static func auditCountedOther(_ count: UInt64) -> String {
        trn("%1$s time: another kind of attempt.", "%1$s times: other kinds of attempt.", Int(clamping: count), count)
    }
    public static func auditUnknownEvent(_ event: String) -> String { tr("An event this fingerseal does not know: %1$s.", event) }
    /// Why an attempt did not succeed, as words: every reason has its own.
    public static func auditReason(_ reason: AuditReason) -> String {
        switch reason {
        case let .outcome(outcome): return auditReason(outcome)
        case let .cause(cause): return auditReason(cause)
        case let .refusal(refusal): return auditReason(refusal)
        case let .unknown(word): return tr("a reason this fingerseal does not know (%1$s)", word)
        }
    }
    static func auditReason(_ outcome: Outcome) -> String {
        switch outcome {
        case .success: return tr("success")
        case .noMatch: return tr("the fingerprint did not match")
        case .wrongPIN: return tr("the PIN was wrong")
        case .triesExhausted: return tr("too many failed tries")
        case .lockedOut: return tr("locked after too many failures")
        case .signInRequired: return tr("a new sign-in is required")
        case .tokenUnavailable: return tr("no access token")
        case .noReader: return tr("no fingerprint reader")
        case .noPrints: return tr("no print for this reader")
        case .notEnrolled: return tr("no finger enrolled")
        case .fingersChanged: return tr("the fingers enrolled in fprintd changed")
        case .noVault: return tr("not set up")
        case .noPIN: return tr("no PIN")
        case .timedOut: return tr("timed out")
        case .cancelled: return tr("cancelled")
        case .remoteSession: return tr("a remote session")
        case .vaultUnusable: return tr("the vault could not be used")
        case .unavailable: return tr("not available")
        case .unknownUser: return tr("unknown user")
        case .badConfiguration: return tr("bad configuration")
        case .conversationAgain: return tr("interrupted")
        case .notPermitted: return tr("not permitted")
        case .notApplicable: return tr("nothing to do")
        case .usage: return tr("wrong usage")
        case .systemError: return tr("a system error")
        }
    }
    static func auditReason(_ cause: FingersealError.Cause) -> String {
        switch cause {
        case .tpmChanged: return tr("the TPM the vault is sealed to is gone")
        case .tpmLockedOut: return tr("the TPM's lockout refused the PIN")
        case .tpmPCRsChanged: return tr("the firmware or boot software changed since the key was sealed")
        case .tpmNotSealed: return tr("the key the finger opens is not sealed to the TPM yet (tpm=require)")
        case .accountPasswordRefused: return tr("the account password was not accepted")
        case .fingerUnlockOff: return tr("fingerprint unlock is turned off")
        case .passwordAfterBoot: return tr("the first sign-in after a restart needs the account password")
        case .passwordAfter: return tr("the account password was not used for too long")
        case .vaultOfAnotherAccount: return tr("the vault under this user id belongs to another account")
        }
    }
    static func auditReason(_ refusal: AuditReason.Refusal) -> String {
        switch refusal {
        case .identityMismatch: return tr("the identity provider named another account")
        case .redirectFromOtherAccount: return tr("another account on this computer tried to complete the browser sign-in")
        case .signInRefused: return tr("the identity provider refused the sign-in")
        // Provisioning (issue 22 §2).
        case .rateLimited: return tr("too many new accounts in the last hour")
        case .requirement: return tr("the identity lacks the claim value this computer requires")
        case .nameTaken: return tr("the name is taken here")
        case .otherName: return tr("the identity provider names another user name")
        case .noName: return tr("the identity provider gave no user name")
        case .invalidName: return tr("the user name cannot be used here")
        case .identityUnknown: return tr("the identity provider did not say who signed in")
        case .brokerStopped: return tr("the broker stopped while making it")
        case .authTimeMissing: return tr("the identity provider did not say when the person signed in")
        case .authNotFresh: return tr("the person did not sign in again after the code was shown")
        case .subjectProvisioned: return tr("this identity already has an account made here")
        case .reservedName: return tr("the name is kept for the system or for administrators")
        case .reservedNamesUnknown: return tr("the names kept for administrators could not be read")
        case .emailDomainMissing: return tr("no e-mail domain is set for new accounts")
        case .emailUnverified: return tr("the e-mail address is not verified")
        case .emailDomain: return tr("the e-mail address is in another domain")
        }
    }
    public static func auditListed(_ seq: UInt64, _ time: String, _ sentence: String) -> String { tr("Event %1$s, %2$s: %3$s", seq, time, sentence) }
    /// An entry of the attempts' chain, numbered in that chain.
    public static func auditListedAttempt(_ seq: UInt64, _ time: String, _ sentence: String) -> String {
        tr("Attempt %1$s, %2$s: %3$s", seq, time, sentence)
    }
    /// Attempts the broker has counted in the open window and not written yet.
    public static func auditAttemptsPending(_ total: UInt64, since: String, until: String) -> String {
        trn("%1$s more attempt since %2$s is counted and not listed one by one; the count is recorded as one entry when it ends, at %3$s.",
            "%1$s more attempts since %2$s are counted and not listed one by one; the count is recorded as one entry when it ends, at %3$s.",
            Int(clamping: total), total, since, until)
    }
    public static func auditKeyring(_ change: KeyringChange) -> String {
        switch change {
        case .on: return tr("The login password was sealed for the keyring.")
        case .off: return tr("The login password sealed for the keyring was removed.")
        case .updated: return tr("The login password sealed for the keyring was replaced by the new one.")
        case .dropped: return tr("The login password sealed for the keyring no longer worked and was removed.")
        }
    }
    public static var auditFingerUnlockOn: String { tr("Fingerprint unlock was turned on.") }
    public static var auditFingerUnlockOff: String { tr("Fingerprint unlock was turned off.") }
    public static var auditIdentifyOn: String { tr("Touch to sign in was turned on; the PIN confirmed it.") }
    public static var auditIdentifyOff: String { tr("Touch to sign in was turned off; the PIN confirmed it.") }
    public static func auditIdentifyAmbiguous(_ others: Int) -> String {
        trn("At touch to sign in, a finger matched this account and %1$s other account, so nobody was signed in.",
            "At touch to sign in, a finger matched this account and %1$s other accounts, so nobody was signed in.", others, others)
    }
    public static func auditFprintdSetConfirmed(_ fingers: Int) -> String {
        trn("The PIN confirmed the %1$s finger now enrolled in fprintd.", "The PIN confirmed the %1$s fingers now enrolled in fprintd.", fingers, fingers)
    }
    public static func auditSealedToTPM(slots: [String]) -> String {
        switch (slots.contains("pin"), slots.contains("device")) {
        case (true, true): return tr("The PIN and the device key were sealed to this computer's TPM.")
        case (true, false): return tr("The PIN was sealed to this computer's TPM.")
        default: return tr("The device key was sealed to this computer's TPM.")
        }
    }
    public static var auditPINLeftTPMLockout: String { tr("The PIN was sealed to this computer's TPM again, outside the TPM's lockout that every account shares: wrong PINs for this vault no longer count towards it.") }
    public static func auditVaultReplaced(_ previous: String) -> String {
        tr("The vault %1$s was sealed to a TPM this computer no longer has; after the account password, this new vault replaced it.", previous)
    }
    public static var auditNone: String { tr("No events are recorded yet.") }
    public static func auditUnreadableLines(_ count: Int) -> String {
        trn("%1$s line of the audit trail cannot be read. Run: fingerseal audit --verify", "%1$s lines of the audit trail cannot be read. Run: fingerseal audit --verify", count, count)
    }
    public static func auditIntact(_ events: Int) -> String { trn("The audit trail is intact: %1$s event.", "The audit trail is intact: %1$s events.", events, events) }
    /// `audit --verify`: what rotation took from a chain (`through` is the last number gone).
    public static func auditRotatedAway(attempts: Bool, through: UInt64, oldestKept: String) -> String {
        switch (attempts, through == 1) {
        case (false, true): return tr("Event 1 was rotated away; the oldest kept is from %1$s.", oldestKept)
        case (false, false): return tr("Events 1 to %1$s were rotated away; the oldest kept is from %2$s.", through, oldestKept)
        case (true, true): return tr("Attempt 1 was rotated away; the oldest attempt kept is from %1$s.", oldestKept)
        case (true, false): return tr("Attempts 1 to %1$s were rotated away; the oldest attempt kept is from %2$s.", through, oldestKept)
        }
    }
    public static var auditInterruptedAppend: String { tr("Its last line is incomplete because an append was interrupted; it held no recorded event, and the next event recorded removes it.") }
    public static func auditTampered(_ problem: String) -> String { tr("The audit trail is not intact: %1$s.", embedded(problem)) }
    public static func auditUnreadable(_ file: String, _ line: Int) -> String { tr("line %1$s of %2$s is not an audit entry (edited or damaged)", line, file) }
    public static func auditEdited(_ file: String, _ line: Int, _ entry: UInt64) -> String {
        tr("line %1$s of %2$s, event %3$s, does not match its seal (edited)", line, file, entry)
    }
    public static func auditInserted(_ file: String, _ line: Int) -> String { tr("line %1$s of %2$s was not written by fingerseal (inserted)", line, file) }
    public static func auditDuplicate(_ file: String, _ line: Int, _ entry: UInt64) -> String {
        tr("line %1$s of %2$s is a second copy of event %3$s (inserted)", line, file, entry)
    }
    public static func auditDoesNotFollow(_ file: String, _ line: Int) -> String {
        tr("line %1$s of %2$s does not follow the entry before it (inserted or deleted)", line, file)
    }
    public static func auditDeleted(_ file: String, _ line: Int, _ from: UInt64, _ to: UInt64) -> String {
        from == to ? tr("event %1$s is missing before line %2$s of %3$s (deleted)", from, line, file)
            : tr("events %1$s to %2$s are missing before line %3$s of %4$s (deleted)", from, to, line, file)
    }
    public static func auditDeletedBefore(_ file: String, _ line: Int, _ entry: UInt64) -> String {
        tr("the events before event %1$s, on line %2$s of %3$s, are missing (deleted)", entry, line, file)
    }
    public static func auditFileMissing(_ file: String, _ recorded: UInt64) -> String {
        trn("the file %1$s is missing or empty, but the vault recorded %2$s event (deleted)", "the file %1$s is missing or empty, but the vault recorded %2$s events (deleted)", Int(clamping: recorded), file, recorded)
    }
    public static func auditOlderFileMissing(_ file: String, _ from: UInt64, _ to: UInt64) -> String {
        tr("the file %1$s with events %2$s to %3$s is missing or empty (deleted)", file, from, to)
    }
    public static func auditReordered(_ file: String, _ line: Int, _ entry: UInt64) -> String {
        tr("event %1$s on line %2$s of %3$s is out of order (reordered)", entry, line, file)
    }
    public static func auditTruncated(_ file: String, _ last: UInt64, _ recorded: UInt64) -> String {
        tr("%1$s ends at event %2$s, but the vault recorded %3$s (truncated: the last events were cut off)", file, last, recorded)
    }
    public static func auditTornLine(_ file: String, _ line: Int, _ entry: UInt64) -> String {
        tr("the last line of %1$s, line %2$s, is incomplete and event %3$s is cut off (torn last line)", file, line, entry)
    }
    public static func auditWrongVault(_ file: String, _ line: Int) -> String {
        tr("line %1$s of %2$s belongs to another vault (wrong vault)", line, file)
    }
    public static func auditOversized(_ file: String) -> String { tr("%1$s is larger than fingerseal ever writes it (edited)", file) }
    public static func auditNotRecorded(_ entry: UInt64) -> String {
        tr("event %1$s is not the one the vault recorded (the trail was replaced)", entry)
    }

    // The broker.
    public static var brokerBusy: String { tr("The fingerseal service is busy with too many requests. Try again in a moment.") }
    public static func wrongProtocol(_ version: Int) -> String {
        tr("This program speaks version %1$s of the fingerseal protocol, and the service another. Update fingerseal.", version)
    }
    /// A request whose text holds a control character; `field` is its name on the wire.
    public static func controlCharacters(_ field: String) -> String {
        tr("The request was refused: its field %1$s holds a control character, such as a line break or an escape. Remove it and try again.", field)
    }
    public static var readerBusyWaiting: String { tr("The fingerprint reader is busy with another request. Waiting for it.") }
    public static var readerNeededElsewhere: String {
        tr("The fingerprint reader was needed for someone signing in at this computer, so this scan stopped. Nothing was counted.")
    }
    public static var scanStoppedForSleep: String {
        tr("The computer is going to sleep, so this scan stopped. Nothing was counted.")
    }
    public static var readerNotFromRemote: String {
        tr("The fingerprint reader is not used from a remote session. Use your PIN, or ask at the computer itself.")
    }
    public static var answerTimedOut: String { tr("No answer came in time.") }
    public static var badAnswer: String { tr("The answer could not be read.") }
    // Fingerprint unlock, the person's own switch (fingerseal on / off)
    public static var fingerUnlockOff: String { tr("Fingerprint unlock is off for your account, by your choice. Use your PIN or password; fingerseal on turns it back on.") }
    public static var fingerUnlockTurnedOff: String { tr("Fingerprint unlock is off. Your vault and enrolled fingers are kept; fingerseal on turns it back on.") }
    public static var fingerUnlockTurnedOn: String { tr("Fingerprint unlock is on again.") }
    /// The same for an application's switch, which turns it back on itself (no command to name).
    public static var fingerUnlockSwitchedOff: String { tr("Fingerprint unlock is off. Your vault and enrolled fingers are kept.") }
    // The keyring, unlocked by the finger (issue 23 §1).
    public static var keyringNeedsPassword: String { tr("To unlock your keyring with your finger, fingerseal keeps your account password sealed in your vault. Give your account password.") }
    public static var keyringTurnedOn: String { tr("Your account password is sealed in your vault. A finger or PIN at sign-in now unlocks your keyring too.") }
    public static var keyringNoServices: String { tr("No sign-in service hands it on yet: your administrator lists them in keyring_services= in fingerseal.conf.") }
    public static var keyringTurnedOff: String { tr("Your account password is no longer kept in your vault. Your keyring stays locked after a finger or PIN sign-in.") }
    public static var keyringAlreadyOff: String { tr("Your account password is not kept in your vault.") }
    public static var keyringDropped: String { tr("The account password sealed for your keyring no longer works, so fingerseal removed it. Type your password to unlock the keyring; fingerseal keyring on seals the new one.") }
    /// `keyring on` in a vault a stolen disk opens, neither the person nor the administrator
    /// having said so; `sealable`: a TPM is there, and the next PIN seals the vault to it.
    public static func keyringNeedsTPM(sealable: Bool) -> String {
        sealable
            ? tr("Your vault is not sealed to this computer's TPM yet, so whoever takes the disk could read your account password from it. Enter your PIN once to seal it, for example with: fingerseal step-up --fresh tpm, then run fingerseal keyring on again. To keep it in the vault as it is, run: fingerseal keyring on --without-tpm")
            : tr("Your vault is not sealed to a TPM, so whoever takes this computer's disk could read your account password from it. To keep it in the vault anyway, run: fingerseal keyring on --without-tpm")
    }
    /// The copy is kept in a vault a stolen disk opens (`keyring on`, `status`, `doctor`).
    public static var keyringWithoutTPM: String { tr("Your account password is sealed in a vault that is not sealed to a TPM: whoever takes this computer's disk can read it.") }
    public static var doctorFixKeyringWithoutTPM: String { tr("Where this computer has a TPM, enter your PIN once to seal your vault to it, for example with: fingerseal step-up --fresh tpm. Otherwise run: fingerseal keyring off") }
    public static var statusKeyringOn: String { tr("Keyring: unlocked by your finger or PIN at sign-in (your account password is sealed in the vault).") }
    public static var statusKeyringOff: String { tr("Keyring: not unlocked by fingerseal.") }
    public static var doctorKeyringNoServices: String { tr("Your account password is sealed for the keyring, but no sign-in service hands it on.") }
    public static var doctorFixKeyringNoServices: String { tr("The administrator lists the services in keyring_services= in fingerseal.conf; or run: fingerseal keyring off") }
    public static func doctorKeyring(_ services: [String]) -> String {
        tr("Your account password is sealed for the keyring and handed on at sign-in by: %1$s.", services.joined(separator: ", "))
    }
    // The password's place in the day (issue 23 §1).
    public static func passwordDue(_ reason: PasswordRule.Reason) -> String {
        switch reason {
        case .afterBoot:
            return tr("Your account password is needed for the first sign-in after a restart. Your finger works again after that.")
        case .afterTime:
            return tr("Your account password is needed, as it has not been used for a while. Your finger works again after that.")
        }
    }
    /// Before a PIN-gated command (enroll, forget, a PIN change, sign-out, reset).
    public static func passwordDueBeforePIN(_ reason: PasswordRule.Reason) -> String {
        switch reason {
        case .afterBoot:
            return tr("Your account password is needed first, as it was not used since this computer started. The PIN is asked after it.")
        case .afterTime:
            return tr("Your account password is needed first, as it has not been used for a while. The PIN is asked after it.")
        }
    }
    /// `status`: when the account password will next be needed.
    public static func statusPasswordNext(_ next: PasswordRule.Next) -> String {
        switch next {
        case .now(.afterBoot): return tr("Account password: needed at the next sign-in, the first since the restart.")
        case .now(.afterTime): return tr("Account password: needed at the next sign-in, as it has not been used for a while.")
        case let .later(at?, true): return tr("Account password: needed again after the next restart, or on %1$s if that comes first.", Localization.localTime(at))
        case let .later(at?, false): return tr("Account password: needed again on %1$s.", Localization.localTime(at))
        case .later(nil, _): return tr("Account password: needed again after the next restart.")
        }
    }
    public static var fingerUnlockAlreadyOn: String { tr("Fingerprint unlock is already on.") }
    public static var fingerUnlockAlreadyOff: String { tr("Fingerprint unlock is already off.") }
    public static var statusFingerUnlockOn: String { tr("Fingerprint unlock is on.") }
    public static var statusFingerUnlockOff: String { tr("Fingerprint unlock is off, by your choice. Run: fingerseal on") }
    /// The same on an application's settings page, whose switch turns it on (no command to name).
    public static var settingFingerUnlockOff: String { tr("Fingerprint unlock is off, by your choice.") }

    // Touch to sign in (identify)
    /// The identify scan's prompt, one whole sentence per reader and host.
    public static func identifyPrompt(swipe: Bool, cancelHint: ScanHint) -> String {
        let ctrlC = cancelHint == .pressCtrlC || cancelHint == .pressCtrlCForPassword
        switch (swipe, ctrlC) {
        case (false, false): return tr("Touch the fingerprint reader to sign in.")
        case (true, false): return tr("Swipe your finger across the reader to sign in.")
        case (false, true): return tr("Touch the fingerprint reader to sign in, or press Ctrl-C to type your user name.")
        case (true, true): return tr("Swipe your finger across the reader to sign in, or press Ctrl-C to type your user name.")
        }
    }
    public static var identifyNoMatch: String { tr("No account was found for this finger. Type your user name to sign in.") }
    public static var identifyAmbiguous: String { tr("This finger matches more than one account, so nobody was signed in. Type your user name to sign in.") }
    public static func identifyPaused(minutes: Int) -> String {
        trn("Touch to sign in is paused for %1$s minute after several unknown fingers. Type your user name to sign in.",
            "Touch to sign in is paused for %1$s minutes after several unknown fingers. Type your user name to sign in.", minutes, minutes)
    }
    public static var identifyLocked: String {
        tr("Touch to sign in is off after too many unknown fingers, until someone signs in with their user name. Type your user name to sign in.")
    }
    public static var identifyDailyLimit: String {
        tr("Touch to sign in is off for the rest of the day after too many unknown fingers. Type your user name to sign in.")
    }
    public static var identifyNotWithFprintd: String { tr("Touch to sign in is not available when fprintd runs the reader. Type your user name to sign in.") }
    public static var identifyNotOnThisReader: String { tr("This fingerprint reader cannot tell whose finger it is. Type your user name to sign in.") }
    public static var identifyOnlyForSystemHosts: String { tr("Touch to sign in is only for the system's own login screens.") }
    public static var identifyTurnedOn: String { tr("Touch to sign in is on for your account: where a login screen offers it, touching the reader signs you in without your user name.") }
    public static var statusIdentifyOn: String { tr("Touch to sign in is on for your account.") }
    public static var identifyTurnedOff: String { tr("Touch to sign in is off for your account.") }
    public static var identifyAlreadyOn: String { tr("Touch to sign in is already on for your account.") }
    public static var identifyAlreadyOff: String { tr("Touch to sign in is already off for your account.") }
    public static var identifyNeedsFinger: String { tr("Touch to sign in needs an enrolled finger. Run: fingerseal enroll") }

    public static var onlyRootNamesUser: String { tr("Only root can act for another user.") }
    public static var notYourAccount: String { tr("You can act only for your own account.") }
    public static func rigOnly(_ group: String) -> String {
        tr("Only root and members of the group %1$s can use this command, because it reads biometric data or changes the reader.", group)
    }
    public static var notAvailableYet: String { tr("This command is not available from the fingerseal service yet.") }

    // The account password (checked by the service with PAM, service fingerseal-verify).
    public static var accountPasswordRefused: String { tr("The account password was not accepted. Nothing was changed.") }
    public static func accountPasswordWait(_ seconds: Int64) -> String {
        trn("Too many wrong account passwords. Wait %1$s second, then try again.",
            "Too many wrong account passwords. Wait %1$s seconds, then try again.", Int(clamping: seconds), seconds)
    }
    public static var accountPasswordNeeded: String { tr("This needs your account password (the one you sign in to this computer with).") }
    public static var resetWithAccountPassword: String { tr("To delete the vault without the PIN, give your account password.") }
    public static var passwordEmptyInput: String { tr("No password was given.") }

    // pin reset (a forgotten PIN)
    public static var pinResetDone: String { tr("The new PIN is set. Your enrolled fingers and sign-in are kept.") }
    public static var pinResetNoDevice: String { tr("The vault cannot be opened without the PIN: its device key is missing or does not match the enrolled fingers. To start again, delete the vault with: fingerseal reset") }

    // Tokens held by the service
    public static func cachedTokenReady(_ minutes: Int) -> String {
        trn("The identity provider cannot be reached, so this session's access token is used. It is valid for %1$s more minute.", "The identity provider cannot be reached, so this session's access token is used. It is valid for %1$s more minutes.", minutes, minutes)
    }
    /// Why the identity provider could not be told to end a sign-in, as words (never an
    /// internal error value).
    public static func revokeFailed(_ failure: TokenFailure) -> String {
        let detail: String
        switch failure {
        case .unreachable: detail = tr("it cannot be reached")
        case let .rejected(status, _): detail = tr("it refused the request with HTTP status %1$s", status)
        case .malformed: detail = tr("its answer could not be read")
        case .badConfiguration: detail = tr("its configuration cannot be used")
        case .chainEnded, .credentialsRefused: detail = tr("it no longer knows this sign-in")
        case .clientAuthenticationRequired: return revokeNeedsClientSecret
        case .accessDenied: detail = tr("it refused the request")
        case .authorizationPending, .slowDown, .expiredToken, .identityRejected: detail = tr("it gave an unexpected answer")
        }
        return revokeFailed(detail)
    }

    public static var revokeNeedsClientSecret: String { tr("The identity provider lets only clients with a secret end a sign-in early. It is removed here; at the provider it ends when it expires.") }

    // Sign-in: a confidential client's secret, asked through the client
    public static var clientSecretPrompt: String { tr("Client secret: ") }

    // Rig commands
    /// The self-test's closing sentence when a step failed; `why` is that step's sentence.
    public static func selftestFailed(_ step: String, _ why: String) -> String {
        tr("The self-test failed at %1$s: %2$s.", selftestStepName(step), embedded(why))
    }
    /// A self-test step's name (the JSON keeps the English word).
    public static func selftestStepName(_ step: String) -> String {
        switch step {
        case "open": return tr("open")
        case "enroll": return tr("enroll")
        case "verify": return tr("verify")
        case "delete": return tr("delete")
        case "close": return tr("close")
        default: return step
        }
    }
    /// One line per self-test step as it finishes.
    public static func selftestStep(_ step: String, failure: String?, milliseconds: Double) -> String {
        guard let failure else { return tr("%1$s: passed (%2$s ms)", selftestStepName(step), milliseconds) }
        return tr("%1$s: failed: %2$s (%3$s ms)", selftestStepName(step), failure, milliseconds)
    }
    public static var selftestPassed: String { tr("The self-test passed.") }
    public static var readerDidNotClose: String { tr("The reader did not close in time.") }

    // Command lines the service checks.
    public static var noFingerEnrolled: String { tr("No finger is enrolled.") }
    public static var everyFingerEnrolled: String { tr("Every finger is already enrolled. To enroll one again, first run: fingerseal forget FINGER") }
    public static func verifyMatch(_ finger: String, _ milliseconds: Double) -> String {
        tr("Match: %1$s, in %2$s milliseconds.", finger, milliseconds)
    }
    public static func commandAfterDashes(_ context: String) -> String {
        tr("Put the command to run after --, for example: fingerseal step-up %1$s -- COMMAND", context)
    }
    public static var noClientSecret: String { tr("No client secret was given.") }
    public static var badSecretName: String { tr("Secret names use a-z, 0-9, dot, dash and underscore.") }

    // status: one line per fact, each a label and its value (the labels line up in no language,
    // so a translation may reword each line freely).
    public static func statusVault(_ directory: String) -> String { tr("Vault: %1$s", directory) }
    public static func statusEnabledSince(_ time: String) -> String { tr("Enabled since %1$s.", time) }
    /// The newest finger, PIN or password confirmation, in the person's words ("today at 20:09").
    public static func statusLastVerified(_ seconds: Int64?, now: Int64) -> String {
        guard let seconds else { return tr("Last verified: never.") }
        let (daysAgo, clock) = Localization.localDay(seconds, now: now)
        switch daysAgo {
        case 0?: return tr("Last verified: today at %1$s.", clock)
        case 1?: return tr("Last verified: yesterday at %1$s.", clock)
        default: return tr("Last verified: %1$s.", Localization.localTime(seconds))
        }
    }
    public static var statusPINSet: String { tr("PIN: set") }
    public static var statusPINNotSet: String { tr("PIN: not set") }
    public static var statusKeyslots: String { tr("Keyslots:") }
    public static var slotPIN: String { tr("protected by the PIN (Argon2id)") }
    public static var slotDeviceFilePermissions: String { tr("device key protected by file permissions only") }
    public static var slotDeviceFilePermissionsBroken: String { tr("device key protected by file permissions only; the key is missing or damaged") }
    public static var slotDevice: String { tr("device key") }
    public static var slotPINTPM: String { tr("protected by the PIN (Argon2id) and this computer's TPM") }
    public static var slotDeviceTPM: String { tr("device key sealed to this computer's TPM") }
    public static func slotDeviceTPMPCRs(_ pcrs: [Int]) -> String {
        tr("device key sealed to this computer's TPM and to the values of PCRs %1$s", pcrs.map(String.init).joined(separator: ", "))
    }
    public static var slotTPMChanged: String { tr("sealed to a TPM this computer no longer has; run: fingerseal pin reset") }
    public static var slotTPMUnreachable: String { tr("sealed to this computer's TPM, which cannot be reached now") }
    public static var slotPCRsChanged: String { tr("device key sealed to PCR values that changed; enter your PIN once to seal it again") }
    public static func statusTPM(_ mode: String) -> String {
        switch mode {
        case "require": return tr("TPM: required (tpm=require)")
        case "off": return tr("TPM: new keyslots are not sealed to it (tpm=off)")
        default: return tr("TPM: used when one is usable (tpm=auto)")
        }
    }
    public static func statusFprintdFingers(_ fingers: [String]) -> String {
        fingers.isEmpty ? tr("Fingers enrolled in fprintd: none")
            : tr("Fingers enrolled in fprintd: %1$s", fingers.map(fingerName).joined(separator: ", "))
    }
    public static func statusFingers(_ fingers: [String]) -> String {
        fingers.isEmpty ? tr("Fingers enrolled: none") : tr("Fingers enrolled: %1$s", fingers.map(fingerName).joined(separator: ", "))
    }
    public static var statusNotSignedIn: String { tr("Sign-in: not signed in") }
    public static var statusSignedIn: String { tr("Sign-in: signed in") }
    public static var statusSignInRequired: String { tr("Sign-in: sign-in required; run: fingerseal login") }
    public static func statusSignedInWith(_ issuer: String, _ client: String) -> String { tr("Sign-in: signed in (%1$s, client %2$s)", issuer, client) }
    public static func statusSignInRequiredWith(_ issuer: String, _ client: String) -> String {
        tr("Sign-in: sign-in required; run: fingerseal login (%1$s, client %2$s)", issuer, client)
    }
    public static func statusNotSignedInWith(_ issuer: String, _ client: String) -> String { tr("Sign-in: not signed in (%1$s, client %2$s)", issuer, client) }
    public static var statusFingerLocked: String { tr("Fingerprint lock: locked after too many failed scans; a PIN or password success unlocks it") }
    public static func statusFingerNotLocked(_ failures: Int) -> String { tr("Fingerprint lock: not locked; failed scans in a row: %1$s", failures) }
    public static var statusPINLocked: String { tr("PIN lock: locked after too many wrong PINs; sign in again to unlock it") }
    public static func statusPINNotLocked(_ failures: Int) -> String { tr("PIN lock: not locked; wrong PINs in a row: %1$s", failures) }
    /// What `reset` asks the person to type; the English word is always accepted too.
    public static var confirmWord: String { tr("yes") }

    // Doctor (`fingerseal doctor`): what the service sees of the caller's setup. Each finding
    // is one sentence, each fix another.
    public static var doctorBackendFprintd: String { tr("The reader backend is fprintd, which owns the fingerprint reader on this computer.") }
    public static var doctorBackendDirect: String { tr("The reader backend is libfprint, driven directly by the fingerseal service.") }
    public static var doctorFixBackend: String { tr("Start fprintd, or set reader=libfprint in /etc/fingerseal/fingerseal.conf.") }
    public static var doctorReadersFailed: String { tr("Fingerseal could not list the fingerprint readers.") }
    public static func doctorReaders(_ names: [String]) -> String {
        names.count == 1 ? tr("A fingerprint reader is connected: %1$s.", names[0])
            : trn("%1$s fingerprint reader is connected: %2$s.", "%1$s fingerprint readers are connected: %2$s.",
                  names.count, names.count, names.joined(separator: ", "))
    }
    public static var doctorFixNoReader: String { tr("Connect a fingerprint reader, then check it with: fingerseal devices") }
    public static var doctorFixReaderBusy: String { tr("Run fingerseal doctor again when the reader is free.") }
    public static var doctorNoVault: String { tr("Fingerseal is not set up for this account: there is no vault and no PIN.") }
    public static var doctorFixNoVault: String { tr("Set a PIN, which creates the vault: fingerseal pin set") }
    public static var doctorFixVaultUnusable: String {
        tr("Run fingerseal status for details; if the vault cannot be repaired, start again with: fingerseal reset")
    }
    public static func doctorVault(_ created: String) -> String { tr("Your vault exists; it was created at %1$s.", created) }
    public static var doctorPINSet: String { tr("The PIN is set.") }
    public static var doctorNoPIN: String { tr("The vault has no PIN, so nothing can unlock it when a finger fails.") }
    public static var doctorFixNoPIN: String { tr("Set a new PIN with: fingerseal pin reset") }
    public static func doctorFingers(_ fingers: [String]) -> String {
        fingers.count == 1 ? tr("One finger is enrolled: %1$s.", fingers[0])
            : trn("%1$s finger is enrolled: %2$s.", "%1$s fingers are enrolled: %2$s.",
                  fingers.count, fingers.count, fingers.joined(separator: ", "))
    }
    public static func doctorFprintdFingers(_ fingers: [String]) -> String {
        fingers.count == 1 ? tr("One finger is enrolled in fprintd: %1$s.", fingers[0])
            : trn("%1$s finger is enrolled in fprintd: %2$s.", "%1$s fingers are enrolled in fprintd: %2$s.",
                  fingers.count, fingers.count, fingers.joined(separator: ", "))
    }
    public static var doctorNoFingers: String { tr("No finger is enrolled, so only the PIN unlocks.") }
    public static var doctorFixEnroll: String { tr("Enroll a finger with: fingerseal enroll") }
    public static var doctorFixFingersChanged: String { tr("Run fingerseal unlock once and enter your PIN to confirm the fingers.") }
    public static var doctorNotLocked: String { tr("Neither fingerprint unlock nor the PIN is locked.") }
    public static var doctorFingerLocked: String { tr("Fingerprint unlock is locked after too many failed scans.") }
    public static var doctorFixFingerLocked: String { tr("Unlock once with your PIN (fingerseal unlock) or your password; that clears the lock.") }
    public static var doctorPINLocked: String { tr("The PIN is locked after too many wrong tries.") }
    public static var doctorFixPINLocked: String { tr("Sign in again, which clears the lock: fingerseal login") }
    public static var doctorNotSignedIn: String { tr("You are not signed in to an identity provider, so unlocking gives no access token.") }
    public static var doctorSignInRequired: String { tr("Your sign-in at the identity provider has ended, so unlocking needs a new one.") }
    public static var doctorFixSignIn: String { tr("Sign in with: fingerseal login") }
    public static func doctorSignedIn(_ who: String, _ issuer: String) -> String { tr("Signed in as %1$s at %2$s.", who, issuer) }
    public static func doctorSignedInTo(_ issuer: String) -> String { tr("Signed in to %1$s.", issuer) }
    public static func doctorServiceDefaults(_ service: String) -> String {
        tr("Every setting for the PAM service %1$s is its default (module arguments in its stack may still change some).", service)
    }
    public static func doctorServiceSettings(_ service: String) -> String {
        tr("Settings for the PAM service %1$s that differ from the defaults (module arguments in its stack may still change some):", service)
    }
    public static func doctorSettingFromFile(_ setting: String) -> String { tr("%1$s, from the configuration file.", setting) }
    public static func doctorSettingFromSection(_ setting: String, _ service: String) -> String {
        tr("%1$s, from the section [service %2$s].", setting, service)
    }
    public static func doctorSettingFromSectionRootHosts(_ setting: String, _ service: String) -> String {
        tr("%1$s, from the section [service %2$s], for hosts running as root only: a host running as the user (a lock screen) names its service itself, so it gets only a section's presentation settings.",
           setting, service)
    }
    public static var doctorNoProvider: String { tr("No identity provider is configured or signed in to, so none was asked.") }
    public static func doctorProviderAnswers(_ issuer: String) -> String { tr("The identity provider %1$s answers.", issuer) }
    /// One whole sentence per way the discovery request failed.
    public static func doctorProviderFailed(_ issuer: String, _ failure: TokenFailure) -> String {
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
        case .authorizationPending, .slowDown, .expiredToken, .identityRejected:
            tr("The identity provider %1$s gave an unexpected answer to its discovery request.", issuer)
        }
    }
    public static var doctorFixProvider: String { tr("Check the network connection and the issuer in /etc/fingerseal/fingerseal.conf.") }
    public static var doctorClockPlausible: String {
        tr("The system clock is plausible: it is later than the vault's creation and its last sign-in renewal.")
    }
    public static func doctorClockBeforeVault(_ now: String, _ created: String) -> String {
        tr("The system clock says %1$s, which is earlier than the creation of your vault at %2$s.", now, created)
    }
    public static func doctorClockBeforeRefresh(_ now: String, _ refreshed: String) -> String {
        tr("The system clock says %1$s, which is earlier than the last renewal of your sign-in at %2$s.", now, refreshed)
    }
    public static var doctorSealedToTPM: String { tr("Your PIN and your device key are sealed to this computer's TPM.") }
    public static var doctorPINInsideTPMLockout: String { tr("Your PIN is sealed inside the TPM's lockout, which every account on this computer shares: until you enter it once, your wrong PINs count towards that lockout, and while it lasts your PIN is refused.") }
    public static var doctorNotSealedYet: String { tr("Your vault is not sealed to this computer's TPM yet; it will be the next time you enter your PIN.") }
    public static var doctorFixSealNow: String { tr("Enter your PIN once, for example with: fingerseal step-up --fresh tpm") }
    public static var doctorNoTPM: String { tr("No usable TPM was found, so your device key is protected by file permissions only: a stolen disk gives it away.") }
    public static var doctorFixEnableTPM: String { tr("Turn the TPM on in the computer's firmware settings, then enter your PIN once.") }
    public static var doctorTPMOff: String { tr("The TPM is not used (tpm=off), so your device key is protected by file permissions only: a stolen disk gives it away.") }
    public static var doctorFixTPMOff: String { tr("Set tpm=auto in /etc/fingerseal/fingerseal.conf, then enter your PIN once.") }
    public static var doctorTPMChanged: String { tr("Your vault is sealed to a TPM this computer no longer has (it was cleared or replaced, or the disk was moved), so neither your finger nor your PIN can open it.") }
    public static var doctorFixTPMChanged: String { tr("Set fingerseal up again with your account password: fingerseal pin reset, then fingerseal login") }
    public static var doctorTPMUnreachable: String { tr("Your vault is sealed to this computer's TPM, which cannot be reached now.") }
    public static var doctorFixTPMUnreachable: String { tr("Check that the TPM is turned on in the firmware settings and that /dev/tpmrm0 exists.") }
    public static var doctorFixClock: String { SharedMessages.fixClock }
}
