/// One module argument as a PAM configuration line gives it: `name` or `name=value`, split at
/// the first `=`. The one syntax both ends read: the module for its own names (`ModuleOptions`),
/// the broker for all of them (`Options.apply`), which judges the policy.
public struct ModuleArgument: Equatable, Sendable {
    public let name: String
    /// nil for a bare `name`; "" for `name=`.
    public let value: String?

    public init(name: String, value: String?) {
        self.name = name
        self.value = value
    }

    public init(_ argument: String) {
        // Byte-wise: the host's arguments are ASCII names, and this keeps the module out of
        // the standard library's Unicode machinery.
        let bytes = Array(argument.utf8)
        let equals = bytes.firstIndex(of: UInt8(ascii: "="))
        name = String(decoding: bytes[..<(equals ?? bytes.endIndex)], as: UTF8.self)
        value = equals.map { String(decoding: bytes[($0 + 1)...], as: UTF8.self) }
    }

    /// A yes/no value (a bare name is yes); nil when it is neither.
    public var flag: Bool? {
        switch value {
        case nil, "1", "yes", "true", "on": return true
        case "0", "no", "false", "off": return false
        default: return nil
        }
    }

    /// A whole number within `range`; nil otherwise.
    public func integer(_ range: ClosedRange<Int>) -> Int? {
        guard let value, let number = Int(value), range.contains(number) else { return nil }
        return number
    }
}

/// What the module reads from its own arguments: where the broker listens, how long to wait
/// for it, and whether to log each message. Everything else is the broker's business: every
/// argument goes to it unchanged (`Origin.pamHost`'s module arguments), and names the module does not know
/// are not the module's to judge. The broker checks these names too, with the same ranges.
public struct ModuleOptions: Equatable, Sendable {
    /// `socket=PATH`: the broker's socket.
    public var socket = defaultBrokerSocket
    /// `debug`: one log line per broker message and per decision.
    public var debug = false
    /// `timeout=N`: seconds the broker waits for a finger. Here it only bounds the module's waits.
    public var timeout = 15
    /// `backstop=N`: replaces the computed wait bound (for tests, and IdPs slower than the
    /// defaults allow for). Not advertised: the broker's own bounds are what a site sets.
    public var backstop: Int? = nil
    /// `identify`: with no user name yet, the broker identifies the finger (the user name is
    /// asked only when that finds nobody).
    public var identify = false
    /// `password_used`: this line comes after the stack's password module. It asks nothing:
    /// when the password signed the person in, the broker may take it to check it itself
    /// (the password rule, the keyring's copy), and the line answers PAM_IGNORE.
    public var passwordUsed = false

    /// The ranges of `timeout=` and `backstop=`.
    public static let timeoutRange = 1...300
    public static let backstopRange = 1...3600

    public init() {}

    /// The longest wait between two messages of the broker: the scan timeout, the IdP's
    /// connect and request bounds (5 s and 10 s by default) and 15 s of slack. The broker bounds
    /// each of those itself; this only keeps a broken or stalled broker from holding the host.
    public var messageWait: Double { Double(backstop ?? (timeout + 5 + 10 + 15)) }

    public struct Invalid: Error, Equatable, Sendable {
        /// A sentence for the log (never shown to the person).
        public let reason: String
    }

    /// Applies the module's own names, in order (a later one wins); other names are skipped.
    /// Throws on the first invalid value of one of its own.
    public init(parsing arguments: [String]) throws(Invalid) {
        for text in arguments {
            let argument = ModuleArgument(text)
            switch argument.name {
            case "socket": socket = try ModuleOptions.socketPath(argument.value)
            case "debug": debug = try ModuleOptions.flag(argument)
            case "timeout": timeout = try ModuleOptions.integer(argument, ModuleOptions.timeoutRange)
            case "backstop": backstop = try ModuleOptions.integer(argument, ModuleOptions.backstopRange)
            case "identify": identify = try ModuleOptions.flag(argument)
            case "password_used": passwordUsed = try ModuleOptions.flag(argument)
            default: continue
            }
        }
    }

    /// An absolute path that fits a socket address (108 bytes with its NUL), without `..`.
    public static func isSocketPath(_ value: String) -> Bool {
        value.utf8.first == UInt8(ascii: "/") && value.utf8.count < 108
            && !value.utf8.split(separator: UInt8(ascii: "/")).contains(where: { $0.elementsEqual("..".utf8) })
    }

    private static func socketPath(_ value: String?) throws(Invalid) -> String {
        guard let value, isSocketPath(value) else {
            throw Invalid(reason: "socket= needs an absolute path of at most 107 bytes without ..")
        }
        return value
    }

    private static func flag(_ argument: ModuleArgument) throws(Invalid) -> Bool {
        guard let flag = argument.flag else { throw Invalid(reason: "\(argument.name)= needs yes or no") }
        return flag
    }

    private static func integer(_ argument: ModuleArgument, _ range: ClosedRange<Int>) throws(Invalid) -> Int {
        guard let number = argument.integer(range) else {
            throw Invalid(reason: "\(argument.name)= needs a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }
}
