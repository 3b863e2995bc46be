import FingersealCore
import FoundationEssentials
import Glibc
import SystemKit

/// What the broker knows of the accounts provisioning made (issue 22 §2), in the store:
/// `STATE/provisioned/` (root, 0700), one `NAME.json` per account, written atomically, and
/// `recent.json`, the times of the accounts made in the last hour (the per-hour limit).
///
/// A record is written `pending` BEFORE useradd runs and becomes `active` only once the PIN
/// and a finger are in the vault: a broker that dies in between leaves a pending record,
/// and the next start (`Provisioning.recover`) removes that half-made account, its vault and
/// the record. So no crash leaves a usable half account.
struct ProvisionRecord: Codable, Equatable {
    enum State: String, Codable { case pending, active }
    var name: String
    /// nil until useradd made the account.
    var uid: UInt32?
    var state: State
    var issuer: String
    var subject: String?
    var createdAt: Int64
    var lastUsed: Int64
    /// The mark useradd was given in the account's comment (`SystemAccounts.comment(marker:)`):
    /// how the undo and `recover` tell the account made from another of the same name. Nil
    /// in a record from before it was kept (the comment was then the bare one).
    var marker: String? = nil
}

final class ProvisionRegistry {
    static let directoryName = "provisioned"
    static let lockName = ".lock"
    static let recentName = "recent.json"
    static let recordLimit = 64 * 1024

    let directory: SafeDirectory

    /// The registry, made when missing (only provisioning makes it).
    init(stateDirectory: String) throws {
        let root = try SafeDirectory(path: stateDirectory, owner: geteuid())
        directory = try root.makeSubdirectory(ProvisionRegistry.directoryName, mode: 0o700)
        _ = fchmodat(AT_FDCWD, stateDirectory + "/" + ProvisionRegistry.directoryName, 0o700, 0)
    }

    private init(directory: SafeDirectory) { self.directory = directory }

    /// The registry if provisioning ever made it; nil otherwise (nothing was provisioned).
    static func existing(stateDirectory: String) throws -> ProvisionRegistry? {
        try SafeDirectory(path: stateDirectory, owner: geteuid()).subdirectory(directoryName).map(ProvisionRegistry.init(directory:))
    }

    /// Runs `body` holding the registry's lock (at most 10 s to get it).
    func locked<T>(_ body: () throws -> T) throws -> T {
        let lock = try directory.lock(ProvisionRegistry.lockName, exclusive: true, timeout: 10)
        return try withExtendedLifetime(lock) { try body() }
    }

    static func fileName(_ name: String) -> String { name + ".json" }

    func records() throws -> [ProvisionRecord] {
        try directory.entries().filter { $0.hasSuffix(".json") && $0 != ProvisionRegistry.recentName && !$0.hasPrefix(".") }
            .sorted()
            .compactMap { try? read(file: $0) }
    }

    func record(_ name: String) throws -> ProvisionRecord? {
        guard AccountName.isValid(name) else { return nil }
        return try read(file: ProvisionRegistry.fileName(name))
    }

    private func read(file: String) throws -> ProvisionRecord? {
        guard let bytes = try directory.read(file, sizeLimit: ProvisionRegistry.recordLimit) else { return nil }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(ProvisionRecord.self, from: Data(bytes))
    }

    func write(_ record: ProvisionRecord) throws {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys]
        try directory.replace(ProvisionRegistry.fileName(record.name), with: Array(try encoder.encode(record)))
    }

    func remove(_ name: String) throws {
        guard AccountName.isValid(name) else { return }
        try directory.remove(ProvisionRegistry.fileName(name))
    }

    /// The records (pending or active) of accounts made for one identity.
    func records(issuer: String, subject: String) throws -> [ProvisionRecord] {
        try records().filter { $0.issuer == issuer && $0.subject == subject }
    }

    /// Accounts made (or being made) within the hour before `now`.
    func madeWithinHour(now: Int64) throws -> Int {
        let recent = try recentTimes().filter { $0 > now - 3600 }
        let pending = try records().filter { $0.state == .pending }.count
        return recent.count + pending
    }

    /// Notes an account made at `now` (keeping the last hour's only).
    func noteMade(now: Int64) throws {
        let times = try recentTimes().filter { $0 > now - 3600 } + [now]
        try directory.replace(ProvisionRegistry.recentName, with: Array(try JSONEncoder().encode(times)))
    }

    private func recentTimes() throws -> [Int64] {
        guard let bytes = try directory.read(ProvisionRegistry.recentName, sizeLimit: ProvisionRegistry.recordLimit) else { return [] }
        return (try? JSONDecoder().decode([Int64].self, from: Data(bytes))) ?? []
    }
}

/// The names whose accounts this broker is making right now: `account remove` waits for
/// them to be finished (or undone) rather than pull an account from under its making.
final class NamesInFlight: @unchecked Sendable {
    private let lock = ThreadLock()
    private var names: Set<String> = []

    func begin(_ name: String) { lock.locked { _ = names.insert(name) } }
    func end(_ name: String) { lock.locked { _ = names.remove(name) } }
    func contains(_ name: String) -> Bool { lock.locked { names.contains(name) } }
}
