import CLinux
import Glibc

/// Runs `body` with this thread's filesystem identity set to `account`, when the caller is
/// root and the account is not. Linux's fsuid/fsgid are per thread, so a PAM host's other
/// threads keep their identity; files created inside are owned by the user, and permission
/// checks are the user's. Root's supplementary groups stay; the vault refuses anything
/// group-writable, so they grant nothing extra there.
public func asUser<T>(_ account: UserAccount, _ body: () throws -> T) throws -> T {
    guard geteuid() == 0, account.uid != 0 else { return try body() }
    let previousGroup = UInt32(truncatingIfNeeded: setfsgid(account.gid))
    let previousUser = UInt32(truncatingIfNeeded: setfsuid(account.uid))
    defer {
        _ = setfsuid(previousUser)
        _ = setfsgid(previousGroup)
    }
    // setfsuid reports no error; ask again (with an invalid id) to learn what is in force.
    let invalid = UInt32.max
    guard UInt32(truncatingIfNeeded: setfsuid(invalid)) == account.uid,
          UInt32(truncatingIfNeeded: setfsgid(invalid)) == account.gid else {
        throw SystemError("setfsuid", account.name, code: EPERM)
    }
    return try body()
}

/// Makes this process not dumpable (prctl PR_SET_DUMPABLE 0), as a setuid program is: no core
/// file, and other processes of the same user can neither ptrace it nor read its memory, its
/// environment or its descriptors through /proc. For a process that runs as the user and
/// holds what that user's other code must not take (the session agent: PINs and passwords on
/// their way to the broker, tokens and plaintext on their way to an application, grant keys).
/// Kept across threads, lost at exec.
public func makeNotDumpable() throws {
    _ = try syscall("prctl", "PR_SET_DUMPABLE") { fs_set_not_dumpable() }
}
