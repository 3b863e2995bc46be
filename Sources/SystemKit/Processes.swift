import CLinux
import Glibc

/// When process `pid` started, in clock ticks since boot (field 22 of /proc/PID/stat); nil
/// when there is no such process. With the pid it names one process, whatever reuses the pid.
public func processStartTime(_ pid: pid_t) -> UInt64? {
    let path = "/proc/\(pid)/stat"
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    let file = FileDescriptor(owning: fd)
    guard let bytes = try? file.readAll(limit: 4096, subject: path) else { return nil }
    return statField(22, of: bytes)
}

/// Field `number` (1-based, as proc(5) counts) of a /proc/PID/stat line, as a number: counted
/// after the ")" that ends the command name, which may itself hold spaces and parentheses.
/// Read as bytes: it runs for every connection the broker serves.
public func statField(_ number: Int, of bytes: [UInt8]) -> UInt64? {
    guard number >= 3, let close = bytes.lastIndex(of: 0x29) else { return nil }
    var field = 2 // the command name's
    var value: UInt64 = 0
    var inField = false
    for byte in bytes[(close + 1)...] {
        if byte == 0x20 || byte == 0x0a {
            if inField && field == number { return value }
            inField = false
            continue
        }
        if !inField {
            inField = true
            field += 1
            value = 0
        }
        guard field == number else { continue }
        guard byte >= 0x30 && byte <= 0x39 else { return nil }
        let (times, overflow) = value.multipliedReportingOverflow(by: 10)
        let (sum, carried) = times.addingReportingOverflow(UInt64(byte - 0x30))
        guard !overflow && !carried else { return nil }
        value = sum
    }
    return inField && field == number ? value : nil
}

/// Starts a program the way a new program should start, whoever calls: no signal blocked and
/// every signal at its default (the caller may have blocked some for a signalfd). With
/// `searchPath`, `path` is looked up in PATH; `environment` nil passes this process's own.
public func spawnProgram(_ path: String, arguments: [String], environment: [String]?, searchPath: Bool = false,
                         actions: UnsafeMutablePointer<posix_spawn_file_actions_t>? = nil,
                         newSession: Bool = false) throws -> pid_t {
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t(), all = sigset_t()
    sigemptyset(&none)
    sigfillset(&all)
    posix_spawnattr_setsigmask(&attributes, &none)
    posix_spawnattr_setsigdefault(&attributes, &all)
    let session = newSession ? FS_POSIX_SPAWN_SETSID : 0
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | session))
    let argv = arguments.map { strdup($0) } + [nil]
    var envp = (environment ?? []).map { strdup($0) } + [nil]
    defer { (argv + envp).forEach { free($0) } }
    var child: pid_t = 0
    let rc = envp.withUnsafeMutableBufferPointer { own -> Int32 in
        let env = environment == nil ? environ : own.baseAddress
        return searchPath ? posix_spawnp(&child, path, actions, &attributes, argv, env)
                          : posix_spawn(&child, path, actions, &attributes, argv, env)
    }
    guard rc == 0 else { throw SystemError("spawn", path, code: rc) }
    return child
}

/// A read-only file in memory (a sealed memfd) holding `bytes`, at its start: how a secret is
/// handed to another process, by descriptor, never in argv, the environment or a string. The
/// caller owns the descriptor; `closeOnExec` false for one a program started with exec keeps.
public func sealedMemoryFile(name: String, _ bytes: UnsafeRawBufferPointer, closeOnExec: Bool) throws -> Int32 {
    let flags = UInt32(MFD_ALLOW_SEALING) | (closeOnExec ? UInt32(MFD_CLOEXEC) : 0)
    let fd = try syscall("memfd_create", name) { memfd_create(name, flags) }
    do {
        // Written through a descriptor of its own, so ours stays open when that one closes.
        try FileDescriptor(owning: try syscall("dup", name) { dup(fd) }).writeAll(bytes, subject: name)
        _ = try syscall("fcntl", name) { fcntl(fd, FS_F_ADD_SEALS, FS_F_SEAL_WRITE | FS_F_SEAL_GROW | FS_F_SEAL_SHRINK | FS_F_SEAL_SEAL) }
        _ = try syscall("lseek", name) { Int32(truncatingIfNeeded: lseek(fd, 0, SEEK_SET)) }
    } catch {
        close(fd)
        throw error
    }
    return fd
}

/// A pipe whose two ends close on exec (pipe2 with O_CLOEXEC): a child gets only the end
/// its spawn actions give it.
public func closeOnExecPipe() throws -> (read: Int32, write: Int32) {
    var fds: [Int32] = [-1, -1]
    _ = try syscall("pipe2") { pipe2(&fds, O_CLOEXEC) }
    return (fds[0], fds[1])
}
