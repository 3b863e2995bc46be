import Localization

/// The sentences of vaults and the accounts that come and go (issue 31 §1): a vault set
/// aside because another account holds its user id now, removed with its account, deleted
/// by an administrator.
extension Messages {
    /// Why a vault was set aside, as a sentence of its own (`OwnerMismatch.Reason`'s name).
    public static func setAsideReason(_ reason: String) -> String {
        switch OwnerMismatch.Reason(rawValue: reason) {
        case .otherName?: return tr("Its user id now belongs to another account.")
        case .otherUID?: return tr("It was found under another user id.")
        case .accountMadeAgain?: return tr("Its account was removed and made again.")
        case .accountNewer?: return tr("The account that holds its user id now was made after it.")
        case .newAccount?: return tr("A new account was made with its user id.")
        case nil: return tr("It belongs to another account.")
        }
    }

    /// The vault set aside, as `account list` and `doctor` name it.
    public static func setAsideWhose(_ vault: SetAsideVault) -> String {
        guard let name = vault.boundName else { return tr("the vault of user id %1$s", vault.uid) }
        return tr("the vault of %1$s (user id %2$s)", name, vault.uid)
    }

    // fingerseal account list, purge
    public static var accountSetAsideHeading: String { tr("Vaults set aside because another account holds their user id now:") }
    public static func accountSetAsideListed(_ vault: SetAsideVault, _ when: String) -> String {
        tr("Set aside %1$s: %2$s. %3$s To delete it, run: fingerseal account purge %4$s", when, setAsideWhose(vault),
           setAsideReason(vault.reason), vault.id)
    }
    public static var accountNoneSetAside: String { tr("No vault is set aside.") }
    public static func accountPurged(_ id: String) -> String { tr("The vault set aside as %1$s was deleted.", id) }
    public static func accountNotSetAside(_ id: String) -> String {
        tr("No vault is set aside as %1$s. Run fingerseal account list to see those that are.", id)
    }

    // What useradd's and userdel's hooks say
    public static func accountVaultRemoved(_ name: String) -> String {
        tr("The fingerseal vault of %1$s was removed with the account.", name)
    }
    public static func accountEarlierVaultSetAside(_ uid: UInt32) -> String {
        tr("A fingerseal vault of an earlier account with user id %1$s was set aside; fingerseal account list shows it.", uid)
    }

    // fingerseal doctor
    public static func doctorSetAside(_ when: String) -> String {
        tr("A vault of an earlier account with your user id or name was set aside %1$s. It is not yours, and it is never used for you.", when)
    }
    public static func doctorFixSetAside(_ id: String) -> String {
        tr("An administrator can delete it with: fingerseal account purge %1$s", id)
    }
    public static func doctorSetAsideCount(_ count: Int) -> String {
        trn("%1$s vault is set aside because another account holds its user id now.",
            "%1$s vaults are set aside because other accounts hold their user ids now.", count, count)
    }
    public static var doctorFixSetAsideCount: String { tr("Run fingerseal account list to see them, and fingerseal account purge to delete one.") }

    // the audit trail
    public static func auditAccountVault(_ change: AccountVaultChange, _ reason: String) -> String {
        switch change {
        case .setAside: return tr("The vault was set aside. %1$s", setAsideReason(reason))
        case .removed: return tr("The vault was removed with its account.")
        case .purged: return tr("An administrator deleted the vault that was set aside.")
        }
    }
}
