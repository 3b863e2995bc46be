import Glibc

/// A failed system call: which operation, on what, and errno.
public struct SystemError: Error, Equatable, CustomStringConvertible, Sendable {
    public let operation: String
    public let subject: String
    public let code: Int32

    public init(_ operation: String, _ subject: String = "", code: Int32) {
        self.operation = operation
        self.subject = subject
        self.code = code
    }

    public var description: String {
        let reason = String(cString: strerror(code))
        return subject.isEmpty ? "\(operation) failed: \(reason)" : "\(operation) \(subject) failed: \(reason)"
    }
}

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
