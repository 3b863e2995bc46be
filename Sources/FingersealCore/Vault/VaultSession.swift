import FingersealWire
/// One request's use of a vault: the file read and MAC-checked once (the status, then the
/// unlock, the refresh and the audit trail all use that read while the file is still it),
/// the device slot opened at most once (a TPM unseal where it is sealed), and whatever the
/// request unlocked handed to the audit trail instead of opening the vault again.
/// Nothing outlives the request: no master key is kept between requests.
public final class VaultSession {
    public let store: VaultStore
    private var read: VaultSnapshot?
    private var statusRead = false
    private var cachedStatus: VaultStatus?
    private var deviceVault: UnlockedVault?
    private var deviceFailure: (any Error)?
    /// The vault this request unlocked (a finger, the PIN), for the records it makes.
    public private(set) var unlocked: UnlockedVault?

    public init(_ store: VaultStore) { self.store = store }

    /// The vault's state, read once per request; nil when there is none.
    public func status() throws -> VaultStatus? {
        if statusRead { return cachedStatus }
        cachedStatus = try Vault.status(store, checkingSlots: false) { self.read = $0 }
        statusRead = true
        return cachedStatus
    }

    /// The vault through its device slot, opened once per request (failures too: a sealed
    /// slot that does not open is not asked again).
    public func unlockWithDevice() throws -> UnlockedVault {
        if let deviceVault { return deviceVault }
        if let deviceFailure { throw deviceFailure }
        do {
            let vault = try Vault.unlockWithDevice(store, read: read)
            deviceVault = vault
            return vault
        } catch {
            deviceFailure = error
            throw error
        }
    }

    /// The vault with the PIN (counted, delays apply: `Vault.unlock`).
    public func unlock(pin: PINKeyslot, ledger: LockoutLedger) throws -> UnlockedVault {
        guard let status = try status() else { throw FingersealError(.noVault, Messages.noVault) }
        let vault = try Vault.unlock(store, status: status, read: read, pin: pin, ledger: ledger)
        unlocked = vault
        return vault
    }

    /// Says which vault the request unlocked, for the records it makes afterwards.
    public func opened(_ vault: UnlockedVault) { unlocked = vault }

    /// A vault to write the audit trail with: the one the request unlocked, else the device
    /// slot's (opened once); nil when neither opens (the trail says why in the log).
    public var forRecords: UnlockedVault? {
        unlocked ?? (try? unlockWithDevice())
    }

    /// Events noted for the request's next record: written with it, in one append.
    private var noted: [AuditEvent] = []

    /// Notes an event to be written with the request's next record (a failed scan, before
    /// the fallback or the failure it leads to).
    public func note(_ event: AuditEvent) { noted.append(event) }

    /// Records what was noted and `events` in one append with the request's vault.
    @discardableResult
    public func record(_ events: [AuditEvent]) -> Bool {
        let all = noted + events
        noted = []
        // Nothing to write: the vault is not opened for it.
        guard !all.isEmpty else { return true }
        return AuditTrail(store: store).record(all, vault: forRecords)
    }

    @discardableResult
    public func record(_ event: AuditEvent) -> Bool { record([event]) }
}
