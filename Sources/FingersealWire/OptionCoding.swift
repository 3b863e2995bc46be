/// On the wire every option is one field with an explicit name, `opt.FIELD`: a flag as "1",
/// a value as its text. Field names never change with the command line's spelling.

/// Why a command's options were refused. Words come from one place that both ends link
/// (`OptionError.message`, in SharedMessages): this target has no catalog.
public enum OptionError: Error, Equatable, Sendable {
    /// An option this command does not take (its name, or `--FIELD` from the wire).
    case unknown(String)
    case takesNoValue(String)
    case needsValue(String)
    case number(String, ClosedRange<Int>)
    case choice(String, [String])
    // Options that exclude each other, and the positional arguments.
    case execAlone
    case unlockTakesNoArguments
    case stepUpNeedsContext
    case proofNeedsMethodAndURL
    case proofBadNonce
    case checkOrEndAlone
    case sealNeedsContext
    case sealOneFile
    case revealNeedsFile
    case forgetOneOrAll
    case accountRemoveOne
    case accountPurgeOne
    case accountHookOne
}

/// The options of one request as the wire carries them, unchecked: each field once.
public struct OptionValues: Equatable, Sendable {
    public struct Pair: Equatable, Sendable {
        public let field: String
        public let value: String
    }

    static let prefix = "opt."
    public private(set) var pairs: [Pair] = []

    public init() {}

    /// Sets `field` (replacing an earlier value): a client may send anything here; the
    /// broker checks it when it decodes the request.
    public mutating func set(field: String, _ value: String) {
        pairs.removeAll { $0.field == field }
        pairs.append(Pair(field: field, value: value))
    }

    public func value(field: String) -> String? {
        for pair in pairs where pair.field == field { return pair.value }
        return nil
    }

    func encode(into fields: inout WireFields) {
        for pair in pairs { fields.add(OptionValues.prefix + pair.field, pair.value) }
    }

    /// Every `opt.` field of a packet; one repeated is a malformed packet.
    static func decode(_ fields: WireFields) throws(WireError) -> OptionValues {
        var values = OptionValues()
        for pair in fields.pairs where pair.key.hasPrefix(prefix) {
            let field = String(pair.key.dropFirst(prefix.count))
            if values.value(field: field) != nil { throw .repeatedField(pair.key) }
            values.pairs.append(Pair(field: field, value: try Wire.text(pair.value, pair.key)))
        }
        return values
    }
}

/// Reads, writes or lists the options of a group: each group names every option it has once
/// (`OptionGroup.code`), and that one list is its decoder, its encoder and its option table.
public struct OptionCoder {
    enum Mode { case reading, writing, listing }
    let mode: Mode
    public private(set) var values: OptionValues
    public private(set) var accepted: [Option] = []

    init(_ mode: Mode, _ values: OptionValues = OptionValues()) {
        self.mode = mode
        self.values = values
    }

    public mutating func flag(_ value: inout Bool, _ option: Option) throws(OptionError) {
        accepted.append(option)
        switch mode {
        case .reading:
            guard let text = values.value(field: option.field) else { return }
            guard text == "1" else { throw .takesNoValue(option.name) }
            value = true
        case .writing:
            if value { values.set(field: option.field, "1") }
        case .listing:
            break
        }
    }

    public mutating func text(_ value: inout String?, _ option: Option) {
        accepted.append(option)
        switch mode {
        case .reading: value = values.value(field: option.field)
        case .writing: if let value { values.set(field: option.field, value) }
        case .listing: break
        }
    }

    public mutating func number(_ value: inout Int?, _ option: Option) throws(OptionError) {
        accepted.append(option)
        switch mode {
        case .reading:
            guard let text = values.value(field: option.field) else { return }
            value = try option.number(text)
        case .writing:
            if let value { values.set(field: option.field, String(value)) }
        case .listing:
            break
        }
    }

    public mutating func choice<Choice: RawRepresentable>(_ value: inout Choice?, _ option: Option) throws(OptionError)
        where Choice.RawValue == String {
        accepted.append(option)
        switch mode {
        case .reading:
            guard let text = values.value(field: option.field) else { return }
            guard let chosen = Choice(rawValue: try option.choice(text)) else { throw .unknown(option.name) }
            value = chosen
        case .writing:
            if let value { values.set(field: option.field, value.rawValue) }
        case .listing:
            break
        }
    }

    /// Every field read must be one of the group's options.
    func checkAllAccepted() throws(OptionError) {
        for pair in values.pairs where !accepted.contains(where: { $0.field == pair.field }) {
            throw .unknown("--" + pair.field)
        }
    }
}

/// A group of options: a command's, or one several commands share.
public protocol OptionGroup: Equatable, Sendable {
    init()
    /// Every option of the group, once.
    mutating func code(_ coder: inout OptionCoder) throws(OptionError)
    /// What no single option can say: options that exclude each other, and the positional
    /// arguments (the CLI's, the request's).
    func validate(arguments: [String]) throws(OptionError)
}

extension OptionGroup {
    public func validate(arguments: [String]) throws(OptionError) {}

    /// Decodes `values`, refusing any field that is not one of the group's options.
    public init(decoding values: OptionValues) throws(OptionError) {
        self.init()
        var coder = OptionCoder(.reading, values)
        try code(&coder)
        try coder.checkAllAccepted()
    }

    /// The group as the wire carries it.
    public var values: OptionValues {
        var copy = self
        var coder = OptionCoder(.writing)
        do { try copy.code(&coder) } catch {}
        return coder.values
    }

    /// The group's options, in the order it names them.
    public static var accepted: [Option] {
        var group = Self()
        var coder = OptionCoder(.listing)
        do { try group.code(&coder) } catch {}
        return coder.accepted
    }
}
