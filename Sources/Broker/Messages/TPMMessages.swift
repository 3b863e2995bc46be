import FingersealCore
import Localization

/// The TPM the keyslots are sealed to. Only the broker says these; those the core, the flows or the
/// tests say too are public in FingersealCore (Support/Messages/TPMMessages.swift).
extension Messages {
    // The TPM the keyslots are sealed to
    static var vaultReplacedAfterTPMChange: String { tr("Your vault was sealed to a TPM this computer no longer has, so nothing in it could be opened. A new vault with your new PIN replaces it: enroll your fingers again with fingerseal enroll, and sign in with fingerseal login.") }
}
