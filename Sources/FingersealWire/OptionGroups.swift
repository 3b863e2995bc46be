// MARK: groups several commands share

public struct NoOptions: OptionGroup {
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {}
}

/// `--json`.
public struct OutputOptions: OptionGroup {
    public var json = false
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) { try coder.flag(&json, .json) }
}

/// `--device`, `--timeout` (1 to 600 seconds).
public struct ScanOptions: OptionGroup {
    public var device: String? = nil
    public var timeout: Int? = nil
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        coder.text(&device, .device)
        try coder.number(&timeout, .scanTimeout)
    }
}

/// `--pin-fd`: answers come from a descriptor (a new PIN is asked once, the PIN without a
/// scan first).
public struct AnswerOptions: OptionGroup {
    public var pinFromDescriptor = false
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) { try coder.flag(&pinFromDescriptor, .pinFD) }
}

/// `--json` and the scan options (`verify`, `selftest`).
public struct ScanReportOptions: OptionGroup {
    public var output = OutputOptions()
    public var scan = ScanOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        try output.code(&coder)
        try scan.code(&coder)
    }
}

/// `--json` and `--pin-fd` (`logout`).
public struct OutputAnswerOptions: OptionGroup {
    public var output = OutputOptions()
    public var answers = AnswerOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        try output.code(&coder)
        try answers.code(&coder)
    }
}

// MARK: each command's own

public struct ResetOptions: OptionGroup {
    public var yes = false
    public var answers = AnswerOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        try coder.flag(&yes, .yes)
        try answers.code(&coder)
    }
}

public struct LoginOptions: OptionGroup {
    public var issuer: String? = nil
    public var clientID: String? = nil
    public var clientSecret = false
    public var scope: String? = nil
    public var flow: SignInFlow? = nil
    public var idpUser: String? = nil
    public var noQR = false
    public var noBrowser = false
    /// Browser flow: seconds to wait for the browser.
    public var timeout: Int? = nil
    public var redirectPort: Int? = nil
    public var answers = AnswerOptions()
    public var output = OutputOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        coder.text(&issuer, .issuer)
        coder.text(&clientID, .clientID)
        try coder.flag(&clientSecret, .clientSecret)
        coder.text(&scope, .scope)
        try coder.choice(&flow, .flow)
        coder.text(&idpUser, .idpUser)
        try coder.flag(&noQR, .noQR)
        try coder.flag(&noBrowser, .noBrowser)
        try coder.number(&timeout, .browserTimeout)
        try coder.number(&redirectPort, .redirectPort)
        try answers.code(&coder)
        try output.code(&coder)
    }
}

public struct UnlockOptions: OptionGroup {
    public var printToken = false
    public var exec = false
    public var pin = false
    public var output = OutputOptions()
    public var answers = AnswerOptions()
    public var scan = ScanOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        try coder.flag(&printToken, .printToken)
        try coder.flag(&exec, .exec)
        try coder.flag(&pin, .pin)
        try output.code(&coder)
        try answers.code(&coder)
        try scan.code(&coder)
    }
    /// With --exec the command to run stays with the CLI, so there are no arguments either way.
    public func validate(arguments: [String]) throws(OptionError) {
        if exec && (printToken || output.json) { throw .execAlone }
        if !exec && !arguments.isEmpty { throw .unlockTakesNoArguments }
    }
}

public struct TokenOptions: OptionGroup {
    /// Unlock again if the token expires sooner than this.
    public var minValid: Int? = nil
    public var output = OutputOptions()
    public var answers = AnswerOptions()
    public var scan = ScanOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        try coder.number(&minValid, .minValid)
        try output.code(&coder)
        try answers.code(&coder)
        try scan.code(&coder)
    }
}

public struct ProofOptions: OptionGroup {
    public var nonce: String? = nil
    public var output = OutputOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        coder.text(&nonce, .nonce)
        try output.code(&coder)
    }
    /// The arguments: the request's method, then its URL (`ProofRequest` says which are).
    public func validate(arguments: [String]) throws(OptionError) {
        guard arguments.count == 2, ProofRequest.isMethod(arguments[0]), ProofRequest.isURL(arguments[1]) else {
            throw .proofNeedsMethodAndURL
        }
        if let nonce, !ProofRequest.isNonce(nonce) { throw .proofBadNonce }
    }
}

/// What a proof may be asked for (RFC 9449 §4.2), checked the same at both ends: a method is
/// an HTTP token (RFC 9110 §5.6.2), a URL is http(s) and bounded, a nonce is NQCHAR (§8.1).
public enum ProofRequest {
    public static let maxURL = 8192

    public static func isMethod(_ text: String) -> Bool {
        (1...32).contains(text.utf8.count) && text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            default:
                Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
            }
        }
    }

    /// http:// or https:// and printable ASCII, bounded; the broker reads the rest (`htu`).
    public static func isURL(_ text: String) -> Bool {
        // ASCII case folding by hand: the wire builds in Embedded Swift, without Unicode tables.
        let folded = text.utf8.prefix(8).map { (0x41...0x5a).contains($0) ? $0 | 0x20 : $0 }
        return text.utf8.count <= maxURL && (folded.starts(with: "https://".utf8) || folded.starts(with: "http://".utf8))
            && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f }
    }

    /// 1 to 256 of NQCHAR: what a server's `DPoP-Nonce` may be.
    public static func isNonce(_ text: String) -> Bool {
        (1...256).contains(text.utf8.count)
            && text.utf8.allSatisfy { $0 == 0x21 || (0x23...0x5b).contains($0) || (0x5d...0x7e).contains($0) }
    }
}

public struct StepUpOptions: OptionGroup {
    public var ttl: Int? = nil
    public var maxAge: Int? = nil
    public var fresh = false
    public var check = false
    public var end = false
    public var command = false
    public var output = OutputOptions()
    public var answers = AnswerOptions()
    public var scan = ScanOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        try coder.number(&ttl, .ttl)
        try coder.number(&maxAge, .maxAge)
        try coder.flag(&fresh, .fresh)
        try coder.flag(&check, .check)
        try coder.flag(&end, .end)
        try coder.flag(&command, .command)
        try output.code(&coder)
        try answers.code(&coder)
        try scan.code(&coder)
    }
    /// The arguments: the context, then (the CLI's, never sent) the command to run.
    public func validate(arguments: [String]) throws(OptionError) {
        guard !arguments.isEmpty else { throw .stepUpNeedsContext }
        if check || end {
            let modes = [check, end, fresh].filter { $0 }.count
            guard modes == 1, !command, arguments.count == 1 else { throw .checkOrEndAlone }
        }
    }
}

public struct SealOptions: OptionGroup {
    public var context: String? = nil
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) { coder.text(&context, .context) }
    /// The arguments: at most the file to seal (the CLI reads it and sends none).
    public func validate(arguments: [String]) throws(OptionError) {
        guard context != nil else { throw .sealNeedsContext }
        guard arguments.count <= 1 else { throw .sealOneFile }
    }
}

public struct RevealOptions: OptionGroup {
    public var noNotice = false
    public var ttl: Int? = nil
    public var maxAge: Int? = nil
    public var answers = AnswerOptions()
    public var scan = ScanOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        try coder.flag(&noNotice, .noNotice)
        try coder.number(&ttl, .ttl)
        try coder.number(&maxAge, .maxAge)
        try answers.code(&coder)
        try scan.code(&coder)
    }
    /// The arguments: at most the sealed file (the CLI reads it and sends none).
    public func validate(arguments: [String]) throws(OptionError) {
        guard arguments.count <= 1 else { throw .revealNeedsFile }
    }
}

public struct EnrollOptions: OptionGroup {
    public var finger: String? = nil
    public var scan = ScanOptions()
    public var answers = AnswerOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        coder.text(&finger, .finger)
        try scan.code(&coder)
        try answers.code(&coder)
    }
}

public struct ForgetOptions: OptionGroup {
    public var all = false
    public var answers = AnswerOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        try coder.flag(&all, .all)
        try answers.code(&coder)
    }
    /// The arguments: one finger, or none with --all.
    public func validate(arguments: [String]) throws(OptionError) {
        guard all != (arguments.count == 1), arguments.count <= 1 else { throw .forgetOneOrAll }
    }
}

/// `account remove USER`: one account.
public struct AccountRemoveOptions: OptionGroup {
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {}
    public func validate(arguments: [String]) throws(OptionError) {
        guard arguments.count == 1 else { throw .accountRemoveOne }
    }
}

/// `account purge ID`: one vault set aside.
public struct AccountPurgeOptions: OptionGroup {
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {}
    public func validate(arguments: [String]) throws(OptionError) {
        guard arguments.count == 1 else { throw .accountPurgeOne }
    }
}

/// `account useradd NAME`, `account userdel NAME`: the account the hook names.
public struct AccountHookOptions: OptionGroup {
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {}
    public func validate(arguments: [String]) throws(OptionError) {
        guard arguments.count == 1 else { throw .accountHookOne }
    }
}

/// `account expire`: `--days-ahead`, `--json`.
public struct AccountExpireOptions: OptionGroup {
    public var daysAhead: Int? = nil
    public var output = OutputOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        try coder.number(&daysAhead, .daysAhead)
        try output.code(&coder)
    }
}

public struct CaptureOptions: OptionGroup {
    public var out: String? = nil
    public var scan = ScanOptions()
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        coder.text(&out, .out)
        try scan.code(&coder)
    }
}

public struct AuditOptions: OptionGroup {
    public var output = OutputOptions()
    public var verify = false
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) {
        try output.code(&coder)
        try coder.flag(&verify, .verify)
    }
}

/// `keyring on --without-tpm`.
public struct KeyringOnOptions: OptionGroup {
    public var withoutTPM = false
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) { try coder.flag(&withoutTPM, .withoutTPM) }
}

/// `doctor --service NAME`.
public struct DoctorOptions: OptionGroup {
    public var service: String? = nil
    public init() {}
    public mutating func code(_ coder: inout OptionCoder) throws(OptionError) { coder.text(&service, .service) }
}
