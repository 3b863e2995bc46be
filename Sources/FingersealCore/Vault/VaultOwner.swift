import FingersealWire
import FoundationEssentials
import Localization
import SodiumKit
import SystemKit

/// The account a vault belongs to (design §4, issue 31 §1). The store is keyed by uid, and
/// uids and names come back: after `userdel`, `useradd` hands the freed uid to the next
/// account, and a removed name can be made again. So a vault records, in its MAC'd document,
/// the account that made it: its uid, its name, and the marker of that account's making
/// (`AccountBirth`) where the system reported one. A vault that does not match the account
/// now holding its uid is never opened for it (`Vault.ownership`, checked before every
/// request and again wherever a vault is read or opened).
public struct AccountBinding: Codable, Equatable, Sendable {
    public var uid: UInt32
    public var name: String
    /// The account's birth marker when the vault was bound; nil where none was reported.
    public var marker: String?

    public init(uid: UInt32, name: String, marker: String?) {
        self.uid = uid
        self.name = name
        self.marker = marker
    }
}

/// The making of an account, as useradd reported it to the broker (its post hook runs
/// `fingerseal account created NAME`): a random marker that no later account can have,
/// even with the same uid and name. Kept in the account's directory of the store (file
/// `account`); removed with the account (userdel's pre hook).
public struct AccountBirth: Codable, Equatable, Sendable {
    public var uid: UInt32
    public var name: String
    public var marker: String
    public var createdAt: Int64

    public init(uid: UInt32, name: String, marker: String, createdAt: Int64) {
        self.uid = uid
        self.name = name
        self.marker = marker
        self.createdAt = createdAt
    }

    /// A new marker for `account`, made now.
    public static func new(_ account: UserAccount, now: Int64) throws -> AccountBirth {
        let marker = try VaultStore.guarded(.createKey) { Encoding.hex(try Sodium.randomBytes(16)) }
        return AccountBirth(uid: account.uid, name: account.name, marker: marker, createdAt: now)
    }

    /// Whether it speaks of `account` (a record left by an account that went without the
    /// hook speaks of nobody now).
    func isOf(_ account: UserAccount) -> Bool { uid == account.uid && name == account.name }
}

/// Whether the vault in a store may be used for the store's account.
public enum VaultOwnership: Equatable, Sendable {
    /// There is no vault.
    case noVault
    /// Bound to this very account.
    case owned
    /// Made before vaults recorded their account, and nothing says it is another's: bound to
    /// this account when the broker next opens it for the account (its keyslots' own proof).
    case unbound
    /// Another account's: set aside, never opened for this one.
    case otherAccount(OwnerMismatch)
}

/// Why a vault is another account's, for the note that stays with it and the journal.
public struct OwnerMismatch: Equatable, Sendable {
    public enum Reason: String, Sendable {
        /// Bound to another uid (a directory moved by hand).
        case otherUID = "other-uid"
        /// Bound to another name: the uid now belongs to another account.
        case otherName = "other-name"
        /// The account was made again since the vault was bound (another birth marker).
        case accountMadeAgain = "account-made-again"
        /// An unbound vault older than the making of the account that holds its uid now.
        case accountNewer = "account-newer"
        /// useradd reported a new account with this uid while a vault was there.
        case newAccount = "new-account"
    }

    public let reason: Reason
    /// Whom the vault was bound to; nil for a vault made before vaults recorded it.
    public let boundTo: AccountBinding?
    public let vaultCreatedAt: Int64

    public init(reason: Reason, boundTo: AccountBinding?, vaultCreatedAt: Int64) {
        self.reason = reason
        self.boundTo = boundTo
        self.vaultCreatedAt = vaultCreatedAt
    }
}

extension VaultFiles {
    /// The account's birth record (`AccountBirth`).
    public static let birth = "account"
    static let birthLimit = 4 << 10
}

extension VaultStore {
    /// The birth record in `directory`, when there is one.
    func readBirth(_ directory: SafeDirectory) throws -> AccountBirth? {
        let bytes = try VaultStore.guarded(.readVault) { try directory.read(VaultFiles.birth, sizeLimit: VaultFiles.birthLimit) }
        guard let bytes else { return nil }
        let body = try Container.decode(.birth, bytes, file: VaultFiles.birth)
        do {
            return try JSONDecoder().decode(AccountBirth.self, from: Data(body))
        } catch {
            throw FingersealError(.vaultUnusable, Messages.vaultDamaged(VaultFiles.birth, tr("its contents cannot be read")))
        }
    }

    func writeBirth(_ birth: AccountBirth, _ directory: SafeDirectory) throws {
        let body = try VaultStore.guarded(.saveVault) { Array(try JSONEncoder().encode(birth)) }
        let bytes = try Container.encode(.birth, body: body)
        _ = try VaultStore.guarded(.saveVault) { try directory.replace(VaultFiles.birth, with: bytes) }
    }

    /// The binding a vault made or opened now for this store's account gets.
    func binding(_ directory: SafeDirectory) throws -> AccountBinding {
        let account = location.account
        let birth = try readBirth(directory)
        return AccountBinding(uid: account.uid, name: account.name, marker: birth.flatMap { $0.isOf(account) ? $0.marker : nil })
    }

    /// Refuses a document that is not this account's (`Vault.judge`), with the sentence an
    /// account without a vault gets: to it, there is none.
    func requireOwned(_ document: VaultDocument, _ directory: SafeDirectory) throws {
        let verdict = Vault.judge(owner: document.owner, vaultCreatedAt: document.createdAt, birth: try readBirth(directory),
                                  account: location.account)
        if case let .otherAccount(mismatch) = verdict {
            throw FingersealError(.noVault, Messages.noVault, detail: "the vault is another account's (\(mismatch.reason.rawValue))",
                                  cause: .vaultOfAnotherAccount)
        }
    }
}

extension Vault {
    /// Whether the vault may be used for the store's account, read without opening it (the
    /// vault document's `owner` and `createdAt`, and the account's birth record). A vault
    /// that may be is kept as the request's read (`VaultStore.requestRead`): the flow after
    /// this check reads the file no second time.
    public static func ownership(_ store: VaultStore) throws -> VaultOwnership {
        let verdict = try store.withDirectory(exclusive: false) { directory -> VaultOwnership in
            guard let snapshot = try store.readUnjudged(directory) else { return .noVault }
            let document = snapshot.document
            let verdict = judge(owner: document.owner, vaultCreatedAt: document.createdAt, birth: try store.readBirth(directory),
                                account: store.location.account)
            if case .otherAccount = verdict { return verdict }
            store.requestRead?.snapshot = snapshot
            return verdict
        }
        return verdict ?? .noVault
    }

    /// The one rule. A bound vault is this account's when uid, name and birth marker are
    /// the account's (a birth record of an earlier account, left by one removed without the
    /// hook, counts as none). An unbound vault is when the account was not made after it.
    static func judge(owner: AccountBinding?, vaultCreatedAt: Int64, birth: AccountBirth?,
                      account: UserAccount) -> VaultOwnership {
        let birth = birth.flatMap { $0.isOf(account) ? $0 : nil }
        guard let owner else {
            if let birth, birth.createdAt > vaultCreatedAt {
                return .otherAccount(OwnerMismatch(reason: .accountNewer, boundTo: nil, vaultCreatedAt: vaultCreatedAt))
            }
            return .unbound
        }
        let reason: OwnerMismatch.Reason
        if owner.uid != account.uid {
            reason = .otherUID
        } else if owner.name != account.name {
            reason = .otherName
        } else if owner.marker != birth?.marker {
            reason = .accountMadeAgain
        } else {
            return .owned
        }
        return .otherAccount(OwnerMismatch(reason: reason, boundTo: owner, vaultCreatedAt: vaultCreatedAt))
    }
}

extension Vault {
    /// The part of the vault document whose account it is (the rest is not decoded).
    struct OwnerFields: Decodable {
        var createdAt: Int64
        var owner: AccountBinding?
    }

    static func ownerFields(_ bytes: [UInt8]) throws -> OwnerFields {
        let body = try Container.decode(.vault, bytes, file: VaultFiles.vault)
        do {
            return try JSONDecoder().decode(OwnerFields.self, from: Data(body))
        } catch {
            throw FingersealError(.vaultUnusable, Messages.vaultDamaged(VaultFiles.vault, tr("its contents cannot be read")))
        }
    }
}

extension UnlockedVault {
    /// Binds a vault made before vaults recorded their account to the account that just
    /// opened it, after the check of whose it is found nothing saying it is another's.
    func bindIfUnbound() throws {
        try update { editor in
            guard editor.document.owner == nil else { return }
            editor.document.owner = try store.binding(editor.directory)
        }
    }
}
