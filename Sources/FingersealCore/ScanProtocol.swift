import FoundationEssentials

/// What `fingerseal-scan` tells the PAM module, one JSON object per line on its stdout:
/// sentences to show while it works, then exactly one result. Nothing secret crosses it:
/// the access token, when there is one, goes through a descriptor of its own.
public enum ScanMessage: Codable, Equatable, Sendable {
    case info(String)
    case error(String)
    /// `outcome` is an `Outcome` raw value; `finger` is set on a match; `token` is the token
    /// step after a success (the token itself goes through its own descriptor).
    case result(outcome: String, finger: String?, detail: String, token: TokenStep?)

    /// Longest line the module reads; anything longer ends the scan as a failure.
    public static let maxLine = 4096

    public func line() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return ((try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? #"{"error":{"_0":"?"}}"#) + "\n"
    }

    public static func parse(_ line: [UInt8]) -> ScanMessage? {
        guard line.count <= maxLine else { return nil }
        return try? JSONDecoder().decode(ScanMessage.self, from: Data(line))
    }
}
