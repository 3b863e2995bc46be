import Glibc
import Localization
import SharedMessages
import SystemKit

/// The vault and its files (missing, damaged, refused for their ownership or permissions, busy),
/// and what fingerseal was doing when the system failed it (`SystemStep`).
extension Messages {
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
        case .makeProofKey: return tr("Fingerseal could not make the key that binds the sign-in to this computer.")
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
}
