import Glibc
import SodiumKit
import SystemKit

extension Options {
    /// Defaults overlaid with the system configuration file, read safely: a root-owned
    /// regular file in a root-owned directory, neither writable by group or others, at most
    /// 64 KiB. `path` nil: /etc/fingerseal/fingerseal.conf, or, only when that does not
    /// exist, /etc/security/fingerseal.conf (one file is read, never both). A missing file
    /// means defaults. Returns the options and any warnings about unknown names.
    public static func loadSystem(path: String? = nil) throws -> (Options, [String]) {
        try loadFirst(path.map { [$0] } ?? [Options.configPath, Options.legacyConfigPath])
    }

    /// The first of `paths` that exists, alone; defaults when none does. A file that exists
    /// but is refused is an error, never a reason to read the next one.
    static func loadFirst(_ paths: [String]) throws -> (Options, [String]) {
        for path in paths {
            if let loaded = try loadFile(path) { return loaded }
        }
        return (Options(), [])
    }

    /// The options in `path`, or nil when it (or its directory) does not exist.
    private static func loadFile(_ path: String) throws -> (Options, [String])? {
        guard let bytes = try readSystemFile(path, sizeLimit: Options.maxConfigSize) else { return nil }
        var options = Options()
        let warnings = try options.applyConfigFile(String(decoding: bytes, as: UTF8.self), source: path)
        return (options, warnings)
    }

    /// A file the administrator owns (the configuration, the user map), read safely; nil
    /// when it (or its directory) does not exist.
    static func readSystemFile(_ path: String, sizeLimit: Int) throws -> [UInt8]? {
        let (directoryPath, name) = splitPath(path)
        do {
            let directory = try SafeDirectory(path: directoryPath, owner: 0)
            return try directory.read(name, sizeLimit: sizeLimit)
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
