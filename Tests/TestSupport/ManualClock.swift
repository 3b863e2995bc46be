import FingersealCore

/// A clock the test moves.
final class ManualClock: FingersealCore.Clock, @unchecked Sendable {
    var time: Int64
    init(_ time: Int64) { self.time = time }
    func now() -> Int64 { time }
}
