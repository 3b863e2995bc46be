#if hasFeature(Embedded)
import CLinux
#else
import Glibc
#endif

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
