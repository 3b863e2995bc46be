/// An error with a sentence for the user and an outcome that decides the PAM code and exit
/// status. `detail` is for logs: file paths, errno, never a secret.
public struct FingersealError: Error, Equatable, CustomStringConvertible, Sendable {
    public let outcome: Outcome
    public let message: String
    public let detail: String?
    /// How long the scan that did not match took, in milliseconds (test rigs time impostors
    /// as well as matches); nil for every other error.
    public var milliseconds: Double? = nil

    public init(_ outcome: Outcome, _ message: String, detail: String? = nil, milliseconds: Double? = nil) {
        self.outcome = outcome
        self.message = message
        self.detail = detail
        self.milliseconds = milliseconds
    }

    public var description: String {
        guard let detail else { return message }
        return "\(message) (\(detail))"
    }
}
