import Glibc

/// The one funnel every system call goes through: retries EINTR and turns -1/errno into a
/// typed error (the shape of swift-system's `valueOrErrno`).
@inline(__always)
public func syscall<T: FixedWidthInteger>(_ operation: String, _ subject: String = "", _ body: () -> T) throws -> T {
    while true {
        let result = body()
        if result != -1 { return result }
        let code = errno
        if code == EINTR { continue }
        throw SystemError(operation, subject, code: code)
    }
}
