/// An error with a sentence for the user and an outcome that decides the PAM code and exit
/// status. `detail` is for logs: file paths, errno, never a secret.
public struct FingersealError: Error, Equatable, CustomStringConvertible, Sendable {
    public let outcome: Outcome
    public let message: String
    public let detail: String?

    public init(_ outcome: Outcome, _ message: String, detail: String? = nil) {
        self.outcome = outcome
        self.message = message
        self.detail = detail
    }

    public var description: String {
        guard let detail else { return message }
        return "\(message) (\(detail))"
    }
}
