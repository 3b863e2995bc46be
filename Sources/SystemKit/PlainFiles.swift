import Glibc

// Files outside any store of ours, which the kernel or another root service keeps (sysfs,
// /proc, fprintd's prints, libfprint's hwdb): read whole and bounded, listed by name, with
// nothing to report but "not there" (nil or empty). What fingerseal trusts goes through
// SafeDirectory instead.

/// The whole file; nil when it is missing, unreadable or larger than `limit` bytes.
/// `followLinks: false` refuses a symbolic link as the last component.
public func readPlainFile(_ path: String, limit: Int, followLinks: Bool = true) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC | (followLinks ? 0 : O_NOFOLLOW))
    guard fd >= 0 else { return nil }
    return try? FileDescriptor(owning: fd).readAll(limit: limit, subject: path)
}

/// The first `limit` bytes of a file (fewer at its end); nil when it cannot be read. For a
/// /proc file whose head is enough (a command line).
public func readPlainFileHead(_ path: String, limit: Int) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
    guard fd >= 0 else { return nil }
    return try? FileDescriptor(owning: fd).readBytes(at: 0, count: limit, subject: path)
}

/// Where the symbolic link `path` points, as written (at most 4 KiB); nil when it is no link
/// or cannot be read (/proc/PID/exe of a process gone).
public func symbolicLinkTarget(_ path: String) -> String? {
    var buffer = [CChar](repeating: 0, count: 4096)
    let count = readlink(path, &buffer, buffer.count)
    guard count > 0 else { return nil }
    return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// The names in a directory, without "." and "..", sorted; empty when it cannot be read.
/// `onlyDirectories`: real subdirectories only (no symbolic links to them).
public func directoryNames(_ path: String, onlyDirectories: Bool = false) -> [String] {
    guard let handle = opendir(path) else { return [] }
    defer { closedir(handle) }
    var names: [String] = []
    while let entry = readdir(handle) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        guard name != "." && name != "..", !onlyDirectories || entry.pointee.d_type == UInt8(DT_DIR) else { continue }
        names.append(name)
    }
    return names.sorted()
}
