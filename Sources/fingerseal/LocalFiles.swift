import CLinux
import FingersealWire
import Glibc
import SodiumKit
import SystemKit

/// Files the CLI opens as the person running it: what it streams to the broker, and where
/// the broker's data goes. The broker, running as root, never opens a caller's path.
enum LocalFiles {
    /// The largest plaintext `seal` takes (the broker enforces the same).
    static let sealLimit = 64 * 1024 * 1024
    /// A sealed file is its plaintext plus a header and the tag.
    static let revealLimit = sealLimit + 4096

    /// FILE (standard input when nil) into secure memory, refusing more than `limit` bytes.
    static func readInput(_ path: String?, limit: Int) throws(CLIError) -> SecureBytes {
        let name = path ?? Strings.standardInput
        let fd = path.map { open($0, O_RDONLY | O_CLOEXEC) } ?? dup(STDIN_FILENO)
        guard fd >= 0 else { throw CLIError(.usage, Strings.cannotRead(name)) }
        let file = FileDescriptor(owning: fd)
        var chunk = [UInt8](repeating: 0, count: 65536)
        defer { Sodium.wipe(&chunk) }
        do {
            var buffer = try SecureBytes(capacity: 64 * 1024)
            while true {
                let count = read(file.rawValue, &chunk, chunk.count)
                if count < 0 && errno == EINTR { continue }
                if count < 0 { throw CLIError(.usage, Strings.cannotRead(name)) }
                if count == 0 { return buffer }
                if buffer.count + count > limit {
                    throw CLIError(.usage, path == nil || limit == sealLimit ? Strings.tooLargeToSeal(sealLimit >> 20)
                                                                             : Strings.tooLargeToBeSealed(name))
                }
                if buffer.count + count > buffer.capacity {
                    // Grow into new secure memory; the old buffer is wiped when released.
                    buffer = try buffer.grown(toCapacity: min(max(buffer.capacity * 2, buffer.count + count), limit))
                }
                _ = chunk.withUnsafeBytes { buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            }
        } catch let error as CLIError {
            throw error
        } catch {
            throw CLIError(.systemError, Strings.secureMemory)
        }
    }

    /// The client secret in FILE, without the editor's trailing newline.
    static func readClientSecret(_ path: String) throws(CLIError) -> SecureBytes {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw CLIError(.usage, Strings.cannotReadClientSecret(path)) }
        let file = FileDescriptor(owning: fd)
        guard var bytes = try? file.readAll(limit: 4096, subject: path) else {
            throw CLIError(.usage, Strings.cannotReadClientSecret(path))
        }
        defer { Sodium.wipe(&bytes) }
        var end = bytes.endIndex
        while end > bytes.startIndex, [0x0a, 0x0d, 0x20].contains(bytes[end - 1]) { end -= 1 }
        do { return try SecureBytes(copying: bytes[..<end]) } catch { throw CLIError(.systemError, Strings.secureMemory) }
    }
}

/// Where the broker's `data` goes: standard output, or a file this run creates (owner-only,
/// never following a symlink), which is removed again when the command fails.
final class DataTarget {
    let fd: Int32
    let name: String
    /// The file this run created (removed when the command fails).
    private let createdPath: String?
    /// `replacing`: where the created file is renamed to once complete.
    private let finalPath: String?
    private let file: FileDescriptor?
    private var kept = false

    static var standardOutput: DataTarget {
        DataTarget(fd: STDOUT_FILENO, name: Strings.standardOutput, path: nil, finalPath: nil, file: nil)
    }

    private init(fd: Int32, name: String, path: String?, finalPath: String?, file: FileDescriptor?) {
        self.fd = fd
        self.name = name
        self.createdPath = path
        self.finalPath = finalPath
        self.file = file
    }

    /// Creates `path` now, before the broker is asked: a name that cannot be written is a
    /// mistake on the command line, found before anyone scans a finger. Never an existing file.
    static func newFile(_ path: String) throws(CLIError) -> DataTarget {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CLIError(.usage, Strings.cannotWrite(path, String(cString: strerror(errno)))) }
        return DataTarget(fd: fd, name: path, path: path, finalPath: nil, file: FileDescriptor(owning: fd))
    }

    /// Writes into a new owner-only file beside `path`, renamed onto `path` when the command
    /// succeeds: the result is 0600 and the caller's whatever `path` was before (an existing
    /// file keeps neither its mode nor its content, a symlink there is replaced, not
    /// followed), and a failed run leaves `path` as it was. Created now, like `newFile`.
    static func replacing(_ path: String) throws(CLIError) -> DataTarget {
        var existing = stat()
        if lstat(path, &existing) == 0, existing.st_mode & S_IFMT == S_IFDIR {
            throw CLIError(.usage, Strings.cannotWrite(path, String(cString: strerror(EISDIR))))
        }
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[...$0]) } ?? ""
        let base = slash.map { String(path[path.index(after: $0)...]) } ?? path
        for _ in 0..<16 {
            let temporary = directory + "." + base + "." + String(UInt64.random(in: 0...UInt64.max), radix: 36) + ".tmp"
            let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if fd < 0 && errno == EEXIST { continue }
            guard fd >= 0 else { break }
            // The umask may have taken bits away; this is exactly owner read and write.
            fchmod(fd, 0o600)
            return DataTarget(fd: fd, name: path, path: temporary, finalPath: path, file: FileDescriptor(owning: fd))
        }
        throw CLIError(.usage, Strings.cannotWrite(path, String(cString: strerror(errno))))
    }

    var isStandardOutput: Bool { file == nil }

    /// Writes every byte; the error's sentence when it cannot.
    func write(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard let base = bytes.baseAddress else { return nil }
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(fd, base + offset, bytes.count - offset)
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return Strings.cannotWrite(name, String(cString: strerror(errno))) }
            offset += written
        }
        return nil
    }

    /// The command succeeded: the file stays, on disk (renamed into place when replacing).
    func keep() -> String? {
        guard let file else { kept = true; return nil }
        do { try file.sync() } catch {
            discard()
            return Strings.cannotWrite(name, String(cString: strerror((error as? SystemError)?.code ?? EIO)))
        }
        if let createdPath, let finalPath {
            guard rename(createdPath, finalPath) == 0 else {
                let why = String(cString: strerror(errno))
                discard()
                return Strings.cannotWrite(name, why)
            }
            LocalFiles.syncDirectory(of: finalPath)
        }
        kept = true
        return nil
    }

    /// The command failed or was cancelled: no half-written file is left behind (only the
    /// one this run created).
    func discard() {
        guard !kept, let createdPath else { return }
        kept = true
        unlink(createdPath)
    }
}

extension LocalFiles {
    /// Makes a rename in the directory of `path` durable; best effort (the file itself was
    /// synced before).
    static func syncDirectory(of path: String) {
        let directory = path.lastIndex(of: "/").map { String(path[...$0]) } ?? "."
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }
}

