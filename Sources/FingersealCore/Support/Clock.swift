import Glibc

/// Wall-clock time in whole seconds since the epoch; injectable so lockout delays and
/// expiries can be tested without waiting.
public protocol Clock: Sendable {
    func now() -> Int64
}

public struct SystemClock: Clock {
    public init() {}
    public func now() -> Int64 { Int64(time(nil)) }
}
