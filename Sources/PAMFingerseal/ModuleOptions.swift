/// What the module reads from its own arguments: where the broker listens, how long to wait
/// for it, and whether to log each message. Everything else is the broker's business: every
/// argument goes to it unchanged (`Request.moduleOptions`), and names the module does not know
/// are not the module's to judge.
struct ModuleOptions: Equatable {
    static let defaultSocket = "/run/fingerseal/socket"

    /// `socket=PATH`: the broker's socket.
    var socket = ModuleOptions.defaultSocket
    /// `debug`: one log line per broker message and per decision.
    var debug = false
    /// `timeout=N`: seconds the broker waits for a finger. Here it only bounds the module's waits.
    var timeout = 15
    /// `backstop=N`: replaces the computed wait bound (for tests, and IdPs slower than the
    /// defaults allow for). Not advertised: the broker's own bounds are what a site sets.
    var backstop: Int? = nil

    init() {}

    /// The longest wait between two messages of the broker: the scan timeout, the IdP's
    /// connect and request bounds (5 s and 10 s by default) and 15 s of slack. The broker bounds
    /// each of those itself; this only keeps a broken or stalled broker from holding the host.
    var messageWait: Double { Double(backstop ?? (timeout + 5 + 10 + 15)) }

    struct Invalid: Error, Equatable {
        /// A sentence for the log (never shown to the person).
        let reason: String
    }

    /// Applies the module's own names, in order (a later one wins); other names are skipped.
    /// Throws on the first invalid value of one of its own.
    init(parsing arguments: [String]) throws(Invalid) {
        for argument in arguments {
            // Byte-wise: the host's arguments are ASCII names, and this keeps the module out of
            // the standard library's Unicode machinery.
            let bytes = Array(argument.utf8)
            let equals = bytes.firstIndex(of: UInt8(ascii: "="))
            let name = String(decoding: bytes[..<(equals ?? bytes.endIndex)], as: UTF8.self)
            let value = equals.map { String(decoding: bytes[($0 + 1)...], as: UTF8.self) }
            switch name {
            case "socket": socket = try ModuleOptions.socketPath(value)
            case "debug": debug = try ModuleOptions.flag(name, value)
            case "timeout": timeout = try ModuleOptions.integer(name, value, 1...300)
            case "backstop": backstop = try ModuleOptions.integer(name, value, 1...3600)
            default: continue
            }
        }
    }

    /// An absolute path that fits a socket address (108 bytes with its NUL).
    private static func socketPath(_ value: String?) throws(Invalid) -> String {
        guard let value, value.utf8.first == UInt8(ascii: "/"), value.utf8.count < 108,
              !value.utf8.split(separator: UInt8(ascii: "/")).contains(where: { $0.elementsEqual("..".utf8) }) else {
            throw Invalid(reason: "socket= needs an absolute path of at most 107 bytes without ..")
        }
        return value
    }

    private static func flag(_ name: String, _ value: String?) throws(Invalid) -> Bool {
        switch value {
        case nil, "1", "yes", "true", "on": return true
        case "0", "no", "false", "off": return false
        default: throw Invalid(reason: "\(name)= needs yes or no")
        }
    }

    private static func integer(_ name: String, _ value: String?, _ range: ClosedRange<Int>) throws(Invalid) -> Int {
        guard let value, let number = Int(value), range.contains(number) else {
            throw Invalid(reason: "\(name)= needs a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }
}
