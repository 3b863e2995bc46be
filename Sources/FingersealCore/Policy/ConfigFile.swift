import FingersealWire
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
    /// cache, a file and directory that are still the very ones read and checked, unchanged,
    /// give what was parsed; any other is opened, checked and parsed again.
    private static func loadFile(_ path: String, cache: SystemConfigCache?) throws -> (Options, [String])? {
        let (directoryPath, name) = splitPath(path)
        if let cache, let (directory, file) = SafeDirectory.identities(path: directoryPath, name: name),
           let known = cache.lookup(path, directory: directory, file: file) {
            return known
        }
        guard let (bytes, info, directory) = try readCheckedSystemFile(path, sizeLimit: Options.maxConfigSize) else { return nil }
        var options = Options()
        let warnings = try options.applyConfigFile(String(decoding: bytes, as: UTF8.self), source: path)
        cache?.keep(path, directory: directory, file: info, (options, warnings))
        return (options, warnings)
    }

    /// A file the administrator owns (the configuration, the user map), read safely; nil
    /// when it (or its directory) does not exist.
    static func readSystemFile(_ path: String, sizeLimit: Int) throws -> [UInt8]? {
        try readCheckedSystemFile(path, sizeLimit: sizeLimit).map { $0.bytes }
    }

    /// The same, with the file's status and its directory's identity as they were checked.
    static func readCheckedSystemFile(_ path: String, sizeLimit: Int) throws -> (bytes: [UInt8], info: stat, directory: FileIdentity)? {
        let (directoryPath, name) = splitPath(path)
        do {
            let directory = try SafeDirectory(path: directoryPath, owner: 0)
            let identity = try directory.identity()
            return try directory.readChecked(name, sizeLimit: sizeLimit).map { ($0.bytes, $0.status, identity) }
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
/// broker): reused only while the file and its directory are the very same ones, unchanged
/// (device, inode, size, modification and change times; a chmod or chown changes the change
/// time), so every check the safe read made still holds. A file changed less than
/// `settleTime` before it was read is not kept: two edits within the file system's timestamp
/// granularity could leave the same size and times (git's "racy clean" case), so such a file
/// is parsed again on every request until it settles. Warnings are sentences in the language
/// of the request that parsed the file: reused only in it.
public final class SystemConfigCache: @unchecked Sendable {
    private struct Entry {
        let path: String
        let directory: FileIdentity
        let file: FileIdentity
        let language: String?
        let loaded: (Options, [String])
    }
    private let lock = ThreadLock()
    private var entry: Entry? = nil
    /// How long ago, in nanoseconds, a file must have changed to be kept.
    let settleTime: Int64

    public init() { settleTime = 2_000_000_000 }
    init(settleTime: Int64) { self.settleTime = settleTime }

    func lookup(_ path: String, directory: FileIdentity, file: FileIdentity) -> (Options, [String])? {
        let language = Localization.current?.locale
        return lock.locked {
            guard let entry, entry.path == path, entry.directory == directory, entry.file == file,
                  entry.loaded.1.isEmpty || entry.language == language else { return nil }
            return entry.loaded
        }
    }

    func keep(_ path: String, directory: FileIdentity, file info: stat, _ loaded: (Options, [String])) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let nanoseconds = { (time: timespec) in Int64(time.tv_sec) &* 1_000_000_000 &+ Int64(time.tv_nsec) }
        let settled = nanoseconds(now) - max(nanoseconds(info.st_mtim), nanoseconds(info.st_ctim)) >= settleTime
        let kept = settled ? Entry(path: path, directory: directory, file: FileIdentity(info), language: Localization.current?.locale,
                                   loaded: loaded) : nil
        lock.locked { entry = kept }
    }
}
