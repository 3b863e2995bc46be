import SodiumKit
import SystemKit
import Localization

/// What `status` shows: read without unlocking, so nothing here is verified by the MAC.
public struct VaultStatus: Equatable, Sendable {
    public struct Slot: Equatable, Sendable {
        public let kind: KeyslotKind
        public let protection: KeyslotProtection
        /// Whether its key can be had (checked with `checkingSlots`; else `.usable`).
        public let state: SlotState
        /// PCRs a sealed device key is bound to.
        public var pcrs: [Int] = []
        /// A PIN slot sealed inside the TPM's dictionary-attack lockout (before issue 19): its
        /// next correct PIN seals it outside.
        public var insideTPMLockout = false

        public var usable: Bool { state == .usable }
    }

    /// What stands between a slot and its key, as far as can be told without the PIN.
    public enum SlotState: String, Equatable, Sendable {
        case usable
        /// The device key file is missing or damaged.
        case keyMissing = "key-missing"
        /// Sealed to a TPM this computer no longer has (cleared, replaced, the disk moved).
        case tpmChanged = "tpm-changed"
        /// Sealed to the TPM, which cannot be reached now.
        case tpmUnreachable = "tpm-unreachable"
        /// Sealed to PCR values that changed (a firmware or boot update): the PIN reseals it.
        case pcrsChanged = "pcrs-changed"
    }

    public let directory: String
    public let createdAt: Int64
    public let keyslots: [Slot]
    public let fingers: [String]
    /// fprintd's enrolled set the device slot is bound to (the fprintd backend).
    public let fprintd: FprintdSet?
    /// Who is signed in at the identity provider, when it said.
    public let identity: SignedInIdentity?
    public let signIn: SignInState
    public let provider: ProviderRecord?
    /// When the identity provider last renewed the sign-in (what `doctor` checks the clock by).
    public var lastRefreshAt: Int64? = nil
    public let lockout: LockoutState
    /// The account takes part in touch to sign in, as the file says (its MAC is checked only
    /// when the vault is opened: `UnlockedVault.takesPartInIdentify`).
    public var identify = false
    /// The person turned fingerprint unlock off (`fingerseal off`): the PIN and the password only.
    public var fingerOff = false
    /// The login password is sealed for the keyring (`fingerseal keyring on`), as the file says.
    public var keyring = false

    public var pinSet: Bool { keyslots.contains { $0.kind == .pin } }

    /// Every keyslot is sealed to the TPM, so the disk alone opens none of them: without it,
    /// the device key file beside the vault (or a guessed PIN, tried offline) opens it, and
    /// with it all the vault holds. What `keyring on` asks before it seals the password.
    public var sealedToTPM: Bool { !keyslots.isEmpty && keyslots.allSatisfy(\.protection.sealedToTPM) }
}
