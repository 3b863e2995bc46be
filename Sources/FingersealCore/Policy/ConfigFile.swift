import Glibc
import Localization
import SodiumKit
import SystemKit

extension Options {
    /// Defaults overlaid with the system configuration file, read safely: a root-owned
    /// regular file in a root-owned directory, neither writable by group or others, at most
    /// 64 KiB. `path` nil: /etc/fingerseal/fingerseal.conf, or, only when that does not
    /// exist, /etc/security/fingerseal.conf (one file is read, never both). A missing file
    /// means defaults. Returns the options and any warnings about unknown names.
    public static func loadSystem(path: String? = nil, cache: SystemConfigCache? = nil) throws -> (Options, [String]) {
        try loadFirst(path.map { [$0] } ?? [Options.configPath, Options.legacyConfigPath], cache: cache)
    }

    /// The first of `paths` that exists, alone; defaults when none does. A file that exists
    /// but is refused is an error, never a reason to read the next one.
    static func loadFirst(_ paths: [String], cache: SystemConfigCache? = nil) throws -> (Options, [String]) {
        for path in paths {
            if let loaded = try loadFile(path, cache: cache) { return loaded }
        }
        return (Options(), [])
    }

    /// The options in `path`, or nil when it (or its directory) does not exist. With a
    /// cache, the file is still opened and checked every time; only reading and parsing it
    /// again is spared while it is the same file, unchanged.
    private static func loadFile(_ path: String, cache: SystemConfigCache?) throws -> (Options, [String])? {
        var known: (Options, [String])? = nil
        guard let (bytes, info) = try readSystemFile(path, sizeLimit: Options.maxConfigSize, unlessKnown: { info in
            known = cache?.lookup(path, info)
            return known != nil
        }) else { return nil }
        if let known { return known }
        var options = Options()
        let warnings = try options.applyConfigFile(String(decoding: bytes ?? [], as: UTF8.self), source: path)
        cache?.keep(path, info, (options, warnings))
        return (options, warnings)
    }

    /// A file the administrator owns (the configuration, the user map), read safely; nil
    /// when it (or its directory) does not exist.
    static func readSystemFile(_ path: String, sizeLimit: Int) throws -> [UInt8]? {
        try readSystemFile(path, sizeLimit: sizeLimit, unlessKnown: { _ in false }).map { $0.bytes ?? [] }
    }

    /// The same, opened and checked, then read unless `known` says, from the file's status,
    /// that the caller holds what it says already (bytes nil then).
    static func readSystemFile(_ path: String, sizeLimit: Int,
                               unlessKnown known: (stat) -> Bool) throws -> (bytes: [UInt8]?, info: stat)? {
        let (directoryPath, name) = splitPath(path)
        do {
            let directory = try SafeDirectory(path: directoryPath, owner: 0)
            return try directory.read(name, sizeLimit: sizeLimit, unlessKnown: known).map { ($0.bytes, $0.status) }
        } catch let error as SystemError where error.code == ENOENT {
            return nil
        } catch let error as UnsafeFileError {
            throw FingersealError(.badConfiguration, Messages.unsafeConfigFile(Messages.unsafeReason(error)))
        } catch {
            throw FingersealError(.badConfiguration, Messages.systemFailure(.readFile(path)), detail: "\(error)")
        }
    }

    /// The largest client secret read from a file.
    static let maxClientSecretSize = 4096

    /// The secret in `client_secret_file`, read by the broker as root, never by a caller: a
    /// regular file (no symlink followed, no FIFO waited on) owned by root in a directory only
    /// root can write, readable by nobody else, at most 4 KiB; the editor's trailing newline
    /// is not part of it. The bytes read are wiped; the secret lives in protected memory.
    public static func readClientSecret(_ path: String) throws -> SecureBytes {
        let (directoryPath, name) = splitPath(path)
        do {
            guard let file = try SafeDirectory(path: directoryPath, owner: 0)
                .openTrusted(name, sizeLimit: maxClientSecretSize) else {
                throw FingersealError(.badConfiguration, Messages.clientSecretFileMissing(path))
            }
            let mode = try file.status().st_mode
            guard mode & (S_IRGRP | S_IROTH) == 0 else {
                throw FingersealError(.badConfiguration, Messages.clientSecretFileReadable(path, mode))
            }
            var bytes = try file.readAll(limit: maxClientSecretSize, subject: path)
            defer { Sodium.wipe(&bytes) }
            var end = bytes.endIndex
            while end > bytes.startIndex, [0x0a, 0x0d, 0x20].contains(bytes[end - 1]) { end -= 1 }
            guard end > bytes.startIndex else { throw FingersealError(.badConfiguration, Messages.clientSecretFileEmpty(path)) }
            return try SecureBytes(copying: bytes[..<end])
        } catch let error as FingersealError {
            throw error
        } catch let error as SystemError where error.code == ENOENT {
            throw FingersealError(.badConfiguration, Messages.clientSecretFileMissing(path))
        } catch let error as UnsafeFileError {
            throw FingersealError(.badConfiguration, Messages.unsafeClientSecretFile(Messages.unsafeReason(error)))
        } catch {
            throw FingersealError(.badConfiguration, Messages.systemFailure(.readFile(path)), detail: "\(error)")
        }
    }

    /// "/a/b/c" → ("/a/b", "c"); "/c" → ("/", "c"); "c" → (".", "c").
    private static func splitPath(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let directory = slash == path.startIndex ? "/" : String(path[..<slash])
        return (directory, String(path[path.index(after: slash)...]))
    }
}

/// The system configuration as last parsed, for a process that reads it on every request (the
/// broker): reused only while the file is the very same one, unchanged (device, inode, size,
/// modification and change times, from the descriptor opened and checked for this request).
/// A file changed less than `settleTime` before it was read is not kept: two edits within the
/// file system's timestamp granularity could leave the same size and times (git's "racy
/// clean" case), so such a file is parsed again on every request until it settles. Warnings
/// are sentences in the language of the request that parsed the file: reused only in it.
public final class SystemConfigCache: @unchecked Sendable {
    private struct Entry {
        let path: String
        let identity: FileIdentity
        let language: String?
        let loaded: (Options, [String])
    }
    private let lock = ThreadLock()
    private var entry: Entry? = nil
    /// How long ago, in nanoseconds, a file must have changed to be kept.
    let settleTime: Int64

    public init() { settleTime = 2_000_000_000 }
    init(settleTime: Int64) { self.settleTime = settleTime }

    func lookup(_ path: String, _ info: stat) -> (Options, [String])? {
        let identity = FileIdentity(info)
        let language = Localization.current?.locale
        return lock.locked {
            guard let entry, entry.path == path, entry.identity == identity,
                  entry.loaded.1.isEmpty || entry.language == language else { return nil }
            return entry.loaded
        }
    }

    func keep(_ path: String, _ info: stat, _ loaded: (Options, [String])) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let nanoseconds = { (time: timespec) in Int64(time.tv_sec) &* 1_000_000_000 &+ Int64(time.tv_nsec) }
        let settled = nanoseconds(now) - max(nanoseconds(info.st_mtim), nanoseconds(info.st_ctim)) >= settleTime
        let kept = settled ? Entry(path: path, identity: FileIdentity(info), language: Localization.current?.locale, loaded: loaded) : nil
        lock.locked { entry = kept }
    }
}
