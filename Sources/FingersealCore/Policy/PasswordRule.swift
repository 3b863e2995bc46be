/// The phone's rule for the account password (issue 23 §1): after a restart, and after a
/// while without it, the password is needed before a finger or the PIN opens anything.
/// What it is judged by is the broker's alone: when it last checked the account password
/// itself (`PasswordSeen`, in the account's ledger), the boot it saw then, and its clock.
public struct PasswordRule: Equatable, Sendable {
    /// `password_after_boot=yes`.
    public var afterBoot: Bool
    /// `password_after=`, in seconds; nil, never.
    public var after: Int?

    /// What `password_after=` accepts: an hour to a year.
    public static let afterRange = 3600...(365 * 24 * 3600)
    /// A password seen this far in the future of the clock means the clock went back: it is
    /// not trusted to keep the password away longer.
    static let clockSlack: Int64 = 300

    public init(afterBoot: Bool = false, after: Int? = nil) {
        self.afterBoot = afterBoot
        self.after = after
    }

    public init(_ options: Options) {
        self.init(afterBoot: options.passwordAfterBoot, after: options.passwordAfter)
    }

    public var isInForce: Bool { afterBoot || after != nil }

    /// Why the password is needed (the names are what `status --json` says).
    public enum Reason: String, Sendable {
        case afterBoot = "after-boot"
        case afterTime = "after-time"
    }

    /// Why the account password is needed now, or nil when a finger or the PIN may answer.
    public func due(_ seen: PasswordSeen?, boot: String, now: Int64) -> Reason? {
        if afterBoot && seen?.boot != boot { return .afterBoot }
        if let after {
            guard let seen, seen.at <= now + PasswordRule.clockSlack, now - seen.at < Int64(after) else { return .afterTime }
        }
        return nil
    }

    /// When the password will next be needed, for `status` and `doctor`.
    public enum Next: Equatable, Sendable {
        /// At the next sign-in.
        case now(Reason)
        /// At this time, or after a restart when that comes first (`afterRestart`).
        case later(at: Int64?, afterRestart: Bool)
    }

    /// Nil when no rule is in force.
    public func next(_ seen: PasswordSeen?, boot: String, now: Int64) -> Next? {
        guard isInForce else { return nil }
        if let reason = due(seen, boot: boot, now: now) { return .now(reason) }
        let at = after.flatMap { after in seen.map { $0.at + Int64(after) } }
        return .later(at: at, afterRestart: afterBoot)
    }
}

/// When the broker last checked the account password itself, and in which boot.
public struct PasswordSeen: Codable, Equatable, Sendable {
    /// The kernel's boot id (/proc/sys/kernel/random/boot_id) at the time.
    public var boot: String
    public var at: Int64

    public init(boot: String, at: Int64) {
        self.boot = boot
        self.at = at
    }

    /// What a ledger may hold: a boot id's length, a time in range.
    var isPlausible: Bool {
        boot.utf8.count <= 64 && (Int64(0)...(Int64(1) << 40)).contains(at)
    }
}

/// A duration as the configuration writes it: `90m`, `48h`, `7d`, `30s`, or seconds alone.
public enum DurationSetting {
    public static func seconds(parsing text: String) -> Int? {
        guard let last = text.last, text.utf8.count <= 12 else { return nil }
        let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        let unit = units[last]
        let digits = unit == nil ? Substring(text) : text.dropLast()
        guard !digits.isEmpty, digits.allSatisfy(\.isASCIIDigit), let number = Int(digits) else { return nil }
        let (seconds, overflow) = number.multipliedReportingOverflow(by: unit ?? 1)
        return overflow ? nil : seconds
    }
}

extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
