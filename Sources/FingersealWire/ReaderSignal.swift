/// What the broker tells a client that draws its own progress (a rig's `--events-fd`, the
/// agent's Status) as a request goes: the reader's state, a scan's outcome, the secret asked
/// next. Typed on the wire (fields, not JSON text); JSON only where a rig reads it.
public enum ReaderSignal: Equatable, Sendable {
    /// The reader waits for a finger.
    case fingerNeeded
    /// A scan of an enrollment was taken.
    case enrollProgress(completed: Int, total: Int)
    /// The scan was not good enough; the reader waits again.
    case hint(Hint)
    /// The finger did not match; the reader may wait for another try.
    case noMatch
    /// Too many failed matches: the finger is locked until a PIN or password success.
    case fingerLocked
    /// The secret asked next, said before the sentences that explain it (no reader, a
    /// password due).
    case needsPIN
    case needsPassword
    /// The browser or device sign-in waits for the person at the identity provider.
    case waitingForSignIn

    public enum Hint: String, CaseIterable, Sendable {
        case general
        case tooShort = "too-short"
        case centerFinger = "center-finger"
        case removeFinger = "remove-finger"
    }

    /// The event's name, as rigs and the agent's Status know it.
    public var name: String {
        switch self {
        case .fingerNeeded: return "finger-needed"
        case .enrollProgress: return "enroll-progress"
        case .hint: return "hint"
        case .noMatch: return "no-match"
        case .fingerLocked: return "finger-locked"
        case .needsPIN: return "needs-pin"
        case .needsPassword: return "needs-password"
        case .waitingForSignIn: return "waiting-for-sign-in"
        }
    }

    /// The event as one JSON object on one line, for a rig's `--events-fd` (JSON Lines). Every
    /// value is a name from this table or a number: nothing needs escaping.
    public var jsonLine: String {
        switch self {
        case let .enrollProgress(completed, total):
            return #"{"event":"enroll-progress","completed":\#(completed),"total":\#(total)}"#
        case let .hint(hint):
            return #"{"event":"hint","hint":"\#(hint.rawValue)"}"#
        default:
            return #"{"event":"\#(name)"}"#
        }
    }

    func encode(into fields: inout WireFields) {
        fields.add("event", name)
        switch self {
        case let .enrollProgress(completed, total):
            fields.add("completed", Int64(completed))
            fields.add("total", Int64(total))
        case let .hint(hint):
            fields.add("hint", hint.rawValue)
        default:
            break
        }
    }

    static func decode(_ fields: WireFields) throws(WireError) -> ReaderSignal {
        switch try fields.required("event") {
        case "finger-needed": return .fingerNeeded
        case "enroll-progress":
            guard let completed = try fields.integer("completed"), let total = try fields.integer("total"),
                  (0...1000).contains(completed), (1...1000).contains(total) else { throw .badValue("completed") }
            return .enrollProgress(completed: Int(completed), total: Int(total))
        case "hint":
            guard let hint = Hint(rawValue: try fields.required("hint")) else { throw .badValue("hint") }
            return .hint(hint)
        case "no-match": return .noMatch
        case "finger-locked": return .fingerLocked
        case "needs-pin": return .needsPIN
        case "needs-password": return .needsPassword
        case "waiting-for-sign-in": return .waitingForSignIn
        default: throw .badValue("event")
        }
    }
}
