import CLinux
import Glibc

/// Why a file or directory that a privileged reader would trust was refused.
public enum UnsafeFileReason: Equatable, Sendable {
    case symlink
    case notRegularFile
    case notDirectory
    case wrongOwner(found: UInt32, expected: UInt32)
    case writableByOthers(mode: UInt32)
    case tooLarge(size: Int, limit: Int)
}

public struct UnsafeFileError: Error, Equatable, Sendable, CustomStringConvertible {
    public let path: String
    public let reason: UnsafeFileReason

    public var description: String {
        switch reason {
        case .symlink: return "\(path) is a symbolic link"
        case .notRegularFile: return "\(path) is not a regular file"
        case .notDirectory: return "\(path) is not a directory"
        case let .wrongOwner(found, expected): return "\(path) is owned by uid \(found), expected uid \(expected)"
        case let .writableByOthers(mode): return "\(path) is writable by group or others (mode \(String(mode & 0o7777, radix: 8)))"
        case let .tooLarge(size, limit): return "\(path) is \(size) bytes, more than the limit of \(limit)"
        }
    }
}

/// The checks a privileged process makes before trusting a file it opened without following
/// symlinks (pam-u2f `open_safely`): type, owner, no group/world write, size cap.
func checkTrusted(_ info: stat, path: String, directory: Bool, owner: UInt32, sizeLimit: Int?) throws {
    let type = info.st_mode & S_IFMT
    if directory && type != S_IFDIR { throw UnsafeFileError(path: path, reason: .notDirectory) }
    if !directory && type != S_IFREG { throw UnsafeFileError(path: path, reason: .notRegularFile) }
    if info.st_uid != owner { throw UnsafeFileError(path: path, reason: .wrongOwner(found: info.st_uid, expected: owner)) }
    if info.st_mode & (S_IWGRP | S_IWOTH) != 0 {
        throw UnsafeFileError(path: path, reason: .writableByOthers(mode: info.st_mode))
    }
    if let sizeLimit, Int(info.st_size) > sizeLimit {
        throw UnsafeFileError(path: path, reason: .tooLarge(size: Int(info.st_size), limit: sizeLimit))
    }
}

/// A directory opened safely, through which files are read, replaced atomically and locked.
/// Every file operation is relative to the directory descriptor, so a path swapped after
/// the checks cannot redirect it.
public final class SafeDirectory {
    public let path: String
    public let owner: UInt32
    private let fd: FileDescriptor

    /// Opens `path` without following a symlink in its last component and checks it is a
    /// directory owned by `owner` and not writable by group or others.
    public init(path: String, owner: UInt32) throws {
        let raw: Int32
        do {
            raw = try syscall("open", path) { open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        } catch let error as SystemError where error.code == ELOOP {
            throw UnsafeFileError(path: path, reason: .symlink)
        } catch let error as SystemError where error.code == ENOTDIR {
            // O_DIRECTORY|O_NOFOLLOW on a symlink to a directory reports ENOTDIR on some kernels.
            var info = stat()
            if lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK {
                throw UnsafeFileError(path: path, reason: .symlink)
            }
            throw UnsafeFileError(path: path, reason: .notDirectory)
        }
        self.fd = FileDescriptor(owning: raw)
        self.path = path
        self.owner = owner
        try checkTrusted(try fd.status(), path: path, directory: true, owner: owner, sizeLimit: nil)
    }

    private func full(_ name: String) -> String { path + "/" + name }

    /// This directory's identity, from its open descriptor.
    public func identity() throws -> FileIdentity { FileIdentity(try fd.status()) }

    /// The identities of directory `path` and of `name` in it, by lstat (no symlink followed,
    /// nothing opened): for a cache of a file read through a SafeDirectory to see, with two
    /// calls instead of two opens, that both are still the very ones it checked and read,
    /// unchanged (a chmod or chown changes the change time too). Nil when either is missing.
    public static func identities(path: String, name: String) -> (directory: FileIdentity, file: FileIdentity)? {
        var directory = stat(), file = stat()
        guard lstat(path, &directory) == 0, lstat(path + "/" + name, &file) == 0 else { return nil }
        return (FileIdentity(directory), FileIdentity(file))
    }


    /// Opens `name` for reading with the trusted-file checks. Returns nil if it does not exist.
    public func openTrusted(_ name: String, sizeLimit: Int) throws -> FileDescriptor? {
        try openChecked(name, sizeLimit: sizeLimit)?.file
    }

    /// `openTrusted`, with the status the checks were made on (one fstat for both).
    private func openChecked(_ name: String, sizeLimit: Int) throws -> (file: FileDescriptor, status: stat)? {
        let raw: Int32
        do {
            // O_NONBLOCK: opening a FIFO planted in place of the file must not block.
            raw = try syscall("open", full(name)) {
                openat(fd.rawValue, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
            }
        } catch let error as SystemError where error.code == ENOENT {
            return nil
        } catch let error as SystemError where error.code == ELOOP {
            throw UnsafeFileError(path: full(name), reason: .symlink)
        }
        let file = FileDescriptor(owning: raw)
        let info = try file.status()
        try checkTrusted(info, path: full(name), directory: false, owner: owner, sizeLimit: sizeLimit)
        return (file, info)
    }

    /// Reads a whole trusted file, or nil if it does not exist.
    public func read(_ name: String, sizeLimit: Int) throws -> [UInt8]? {
        guard let file = try openTrusted(name, sizeLimit: sizeLimit) else { return nil }
        return try readWhole(file, name, sizeLimit: sizeLimit)
    }

    /// Reads a whole trusted file and keeps it open: while it is, `identity(of:)` telling the
    /// same identity means the name still holds these bytes. Nil if it does not exist.
    public func readKeepingOpen(_ name: String, sizeLimit: Int) throws -> (file: FileDescriptor, bytes: [UInt8], identity: FileIdentity)? {
        guard let (file, info) = try openChecked(name, sizeLimit: sizeLimit) else { return nil }
        return (file, try readWhole(file, name, sizeLimit: sizeLimit), FileIdentity(info))
    }

    /// Reads a whole trusted file with the status its checks were made on; nil if it does not
    /// exist.
    public func readChecked(_ name: String, sizeLimit: Int) throws -> (bytes: [UInt8], status: stat)? {
        guard let (file, info) = try openChecked(name, sizeLimit: sizeLimit) else { return nil }
        return (try readWhole(file, name, sizeLimit: sizeLimit), info)
    }

    private func readWhole(_ file: FileDescriptor, _ name: String, sizeLimit: Int) throws -> [UInt8] {
        do {
            return try file.readAll(limit: sizeLimit, subject: full(name))
        } catch let error as SystemError where error.code == EFBIG {
            throw UnsafeFileError(path: full(name), reason: .tooLarge(size: sizeLimit + 1, limit: sizeLimit))
        }
    }

    public func exists(_ name: String) throws -> Bool {
        var info = stat()
        if fstatat(fd.rawValue, name, &info, AT_SYMLINK_NOFOLLOW) == 0 { return true }
        if errno == ENOENT { return false }
        throw SystemError("stat", full(name), code: errno)
    }

    /// Which file `name` is now (not following a symlink), or nil when there is none.
    public func identity(of name: String) throws -> FileIdentity? {
        var info = stat()
        if fstatat(fd.rawValue, name, &info, AT_SYMLINK_NOFOLLOW) == 0 { return FileIdentity(info) }
        if errno == ENOENT { return nil }
        throw SystemError("stat", full(name), code: errno)
    }

    /// Replaces `name` atomically: temp file in this directory, write, fsync, rename, fsync
    /// the directory. A crash at any instant leaves the old or the new file, never a torn one.
    /// Returns the new file, still open (what a reader pins, see `FileIdentity`).
    @discardableResult
    public func replace(_ name: String, with bytes: [UInt8], mode: mode_t = 0o600) throws -> FileDescriptor {
        let temp = ".\(name).tmp-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))"
        let raw = try syscall("create", full(temp)) {
            openat(fd.rawValue, temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        }
        let file = FileDescriptor(owning: raw)
        do {
            _ = try syscall("fchmod", full(temp)) { fchmod(raw, mode) }
            try file.writeAll(bytes, subject: full(temp))
            try file.sync()
            _ = try syscall("rename", full(name)) { renameat(fd.rawValue, temp, fd.rawValue, name) }
        } catch {
            _ = unlinkat(fd.rawValue, temp, 0)
            throw error
        }
        try fd.sync()
        return file
    }

    /// Opens `name` for appending (`O_APPEND`, never following a symlink), creating it with
    /// `mode` when missing, with the trusted-file checks of `openTrusted` (no size cap: an
    /// appender reads only what it needs). `created` says the file is new: after its first
    /// write is synced, sync the directory (`sync()`) so the new name is durable too.
    public func openForAppend(_ name: String, mode: mode_t = 0o600) throws -> (file: FileDescriptor, created: Bool) {
        let flags = O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY
        while true {
            do {
                let raw = try syscall("open", full(name)) { openat(fd.rawValue, name, flags) }
                let file = FileDescriptor(owning: raw)
                try checkTrusted(try file.status(), path: full(name), directory: false, owner: owner, sizeLimit: nil)
                return (file, false)
            } catch let error as SystemError where error.code == ELOOP {
                throw UnsafeFileError(path: full(name), reason: .symlink)
            } catch let error as SystemError where error.code == ENOENT {
                // Missing: create it (exclusively, so a name planted meanwhile is not taken over).
            }
            do {
                let raw = try syscall("create", full(name)) { openat(fd.rawValue, name, flags | O_CREAT | O_EXCL, mode) }
                let file = FileDescriptor(owning: raw)
                _ = try syscall("fchmod", full(name)) { fchmod(raw, mode) }
                try checkTrusted(try file.status(), path: full(name), directory: false, owner: owner, sizeLimit: nil)
                return (file, true)
            } catch let error as SystemError where error.code == EEXIST {
                continue // created by someone else between the two opens: open that one, checked
            }
        }
    }

    /// Renames `from` to `to` in this directory (replacing `to`) and makes it durable.
    public func rename(_ from: String, to: String) throws {
        _ = try syscall("rename", full(from)) { renameat(fd.rawValue, from, fd.rawValue, to) }
        try fd.sync()
    }

    /// Moves `name` (a file or a whole directory) into `other` as `newName`, never over
    /// something already there (EEXIST), and makes both directories durable.
    public func move(_ name: String, into other: SafeDirectory, as newName: String) throws {
        _ = try syscall("rename", full(name)) {
            renameat2(fd.rawValue, name, other.fd.rawValue, newName, UInt32(FS_RENAME_NOREPLACE))
        }
        try fd.sync()
        try other.fd.sync()
    }

    /// Makes the directory's entries durable (after creating a file in it).
    public func sync() throws {
        try fd.sync()
    }

    /// Removes `name` (not following symlinks) and makes the removal durable.
    public func remove(_ name: String) throws {
        do {
            _ = try syscall("remove", full(name)) { unlinkat(fd.rawValue, name, 0) }
        } catch let error as SystemError where error.code == ENOENT {
            return
        }
        try fd.sync()
    }

    /// A subdirectory, opened with the same checks; nil when it does not exist.
    public func subdirectory(_ name: String) throws -> SafeDirectory? {
        do {
            return try SafeDirectory(path: full(name), owner: owner)
        } catch let error as SystemError where error.code == ENOENT {
            return nil
        }
    }

    /// The subdirectory `name`, created with `mode` when missing, opened with the same checks.
    public func makeSubdirectory(_ name: String, mode: mode_t) throws -> SafeDirectory {
        if mkdirat(fd.rawValue, name, mode) != 0 && errno != EEXIST {
            throw SystemError("mkdir", full(name), code: errno)
        }
        return try SafeDirectory(path: full(name), owner: owner)
    }

    /// Removes an empty subdirectory.
    public func removeDirectory(_ name: String) throws {
        do {
            _ = try syscall("rmdir", full(name)) { unlinkat(fd.rawValue, name, AT_REMOVEDIR) }
        } catch let error as SystemError where error.code == ENOENT {
            return
        }
    }

    /// Names in the directory, without "." and "..".
    public func entries() throws -> [String] {
        let raw = try syscall("open", path) { openat(fd.rawValue, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard let stream = fdopendir(raw) else {
            let code = errno
            _ = Glibc.close(raw)
            throw SystemError("opendir", path, code: code)
        }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Removes temp files a crashed writer left behind. Call only while holding the
    /// exclusive lock: then no live writer owns one.
    public func removeStaleTempFiles() throws {
        for name in try entries() where name.hasPrefix(".") && includes(name, ".tmp-") {
            _ = unlinkat(fd.rawValue, name, 0)
        }
    }

    /// Takes a `flock` on `name` (created 0600 if missing), waiting at most `timeout` seconds.
    public func lock(_ name: String, exclusive: Bool, timeout: Double) throws -> FileLock {
        let raw: Int32
        do {
            raw = try syscall("open", full(name)) {
                openat(fd.rawValue, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0o600)
            }
        } catch let error as SystemError where error.code == ELOOP {
            throw UnsafeFileError(path: full(name), reason: .symlink)
        }
        let file = FileDescriptor(owning: raw)
        try checkTrusted(try file.status(), path: full(name), directory: false, owner: owner, sizeLimit: 4096)
        return try FileLock(file, exclusive: exclusive, timeout: timeout, subject: full(name))
    }
}

/// Creates `path` and any missing parents; the last component gets `mode`. Existing
/// components are left as they are.
public func createDirectories(_ path: String, mode: mode_t) throws {
    var prefix = path.hasPrefix("/") ? "" : "."
    let parts = path.split(separator: "/")
    for (index, part) in parts.enumerated() {
        prefix += "/" + part
        let isLast = index == parts.count - 1
        if mkdir(prefix, isLast ? mode : 0o755) == 0 { continue }
        let code = errno
        if code != EEXIST { throw SystemError("mkdir", prefix, code: code) }
    }
}

/// Whether `text` contains `part` (stdlib only: substring search is otherwise
/// _StringProcessing's, which the PAM module does not link).
func includes(_ text: String, _ part: String) -> Bool {
    let haystack = Array(text.utf8), needle = Array(part.utf8)
    guard needle.count <= haystack.count else { return needle.isEmpty }
    return (0...(haystack.count - needle.count)).contains { start in haystack[start..<(start + needle.count)].elementsEqual(needle) }
}

/// Which file a name stood for when it was read: device, inode, size and change times. A
/// reader that keeps the file open (so its inode cannot be reused) knows the name still holds
/// the bytes it read while the identity is the same: every writer here replaces the file
/// (a new inode) rather than writing into it.
public struct FileIdentity: Equatable, Sendable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modified: Int64
    let changed: Int64

    public init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = Int64(info.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_mtim.tv_nsec)
        changed = Int64(info.st_ctim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_ctim.tv_nsec)
    }
}
