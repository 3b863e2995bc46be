/// `provision=`: how unknown user names become accounts.
public enum ProvisionMode: String, Sendable {
    /// A device sign-in at the configured identity provider.
    case idp
}

/// `provision_require=CLAIM:VALUE`: a claim the identity must carry with this value.
public struct ClaimRequirement: Equatable, Sendable {
    public let claim: String
    public let value: String

    public init?(parsing text: String) {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let claim = String(text[..<colon]), value = String(text[text.index(after: colon)...])
        guard !claim.isEmpty, !value.isEmpty, claim.utf8.count <= 64, value.utf8.count <= 256,
              claim.unicodeScalars.allSatisfy({ ($0.value >= 0x61 && $0.value <= 0x7a) || $0 == "_" || ($0.value >= 0x30 && $0.value <= 0x39) }),
              value.unicodeScalars.allSatisfy({ (0x20...0x7e).contains($0.value) }) else { return nil }
        self.claim = claim
        self.value = value
    }

    public var description: String { "\(claim):\(value)" }
}

/// A POSIX account (or group) name as useradd takes it: a letter or _ first, then letters,
/// digits, _ . - (no leading -), at most 32 bytes; lower case only, so no two accounts
/// differ by case.
public enum AccountName {
    public static func isValid(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= 32 else { return false }
        func lower(_ byte: UInt8) -> Bool { byte >= 0x61 && byte <= 0x7a }
        guard lower(first) || first == 0x5f else { return false }
        return bytes.dropFirst().allSatisfy { lower($0) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5f || $0 == 0x2e || $0 == 0x2d }
    }
}

public enum ReaderBackendChoice: String, Sendable {
    case auto, fprintd, libfprint
}

public enum ReaderLocation: String, Sendable {
    case auto, builtin, external
}

/// `dpop=`: the policy for every provider, and where an issuer is named, its own
/// (`dpop = auto, https://login.example.org/realms/staff=required`).
public struct DPoPSettings: Equatable, Sendable, CustomStringConvertible {
    public var general: DPoPPolicy = .auto
    /// By issuer, as discovery names it (a trailing slash is not part of the name).
    public var byIssuer: [String: DPoPPolicy] = [:]
    /// Issuers named at most: a site's providers are few.
    public static let maxIssuers = 32

    public init() {}

    public func policy(for issuer: String) -> DPoPPolicy { byIssuer[DPoPSettings.key(issuer)] ?? general }

    static func key(_ issuer: String) -> String { issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer }

    /// Comma-separated items: a policy alone is the general one (at most one), `ISSUER=POLICY`
    /// an issuer's own (each issuer once). Nil for anything else.
    public init?(parsing text: String, isIssuer: (String) -> Bool) {
        var generalSeen = false
        for item in text.split(separator: ",").map(\.trimmingSpaces) where !item.isEmpty {
            guard let equals = item.lastIndex(of: "=") else {
                guard !generalSeen, let policy = DPoPPolicy(rawValue: item) else { return nil }
                general = policy
                generalSeen = true
                continue
            }
            let issuer = item[..<equals].trimmingSpaces, value = item[item.index(after: equals)...].trimmingSpaces
            guard isIssuer(issuer), let policy = DPoPPolicy(rawValue: value), byIssuer[DPoPSettings.key(issuer)] == nil,
                  byIssuer.count < DPoPSettings.maxIssuers else { return nil }
            byIssuer[DPoPSettings.key(issuer)] = policy
        }
    }

    public var description: String {
        ([general.rawValue] + byIssuer.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.rawValue)" }).joined(separator: ", ")
    }
}

/// Whether sign-ins bind their tokens to a key of this computer (RFC 9449, `dpop=`).
public enum DPoPPolicy: String, Sendable {
    /// Where the provider lists DPoP (ES256) in its discovery document; bearer elsewhere.
    case auto
    /// Always: a provider without it, or a token answer that is not bound, is refused.
    case required
    /// Never: bearer tokens.
    case off
}

/// How a PAM host's conversation is used, for hosts that show less than a terminal does.
public enum PromptStyle: String, Sendable {
    /// Sentences as info messages, the PIN (with `pin`) as its own prompt after the finger.
    case normal
    /// One PIN prompt, asked while the reader waits, whose own text says the finger works
    /// too: for hosts that show prompts but drop info messages.
    case combined
    /// Nothing is ever asked, whatever `pin` says: the finger only. For hosts that answer
    /// every prompt with the typed password (swaylock, i3lock), where a password would be
    /// taken for a wrong PIN.
    case none
}

/// The names settings carry, as the table's readers check them.
extension Options {
    static func isGroupName(_ name: String) -> Bool {
        name.utf8.count <= 256 && !name.contains(where: { $0 == ":" || $0 == "\n" })
    }

    /// One PAM service name as `skip_services=` and its kind take them (one item of their
    /// comma-separated list), and as `[service NAME]` names it.
    public static func isServiceName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 1024 && !name.contains(where: { $0 == "\n" || $0 == " " || $0 == "," })
    }

    /// A parameter of the device authorization request the administrator names: a plain
    /// name, never one the request already carries (which would then be sent twice).
    static func isExtraParameterName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count)
            && name.unicodeScalars.allSatisfy { ($0.value >= 0x61 && $0.value <= 0x7a) || ($0.value >= 0x41 && $0.value <= 0x5a)
                || ($0.value >= 0x30 && $0.value <= 0x39) || $0 == "_" }
            && !["client_id", "client_secret", "scope", "max_age", "prompt"].contains(name)
    }

    /// A DNS name as an e-mail address ends with it: labels of letters, digits and -, joined by
    /// dots (lower case once read).
    static func isDomainName(_ name: String) -> Bool {
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        return name.utf8.count <= 253 && labels.count >= 1 && labels.allSatisfy { label in
            (1...63).contains(label.utf8.count) && !label.hasPrefix("-") && !label.hasSuffix("-")
                && label.unicodeScalars.allSatisfy { ($0.value >= 0x61 && $0.value <= 0x7a) || ($0.value >= 0x30 && $0.value <= 0x39) || $0 == "-" }
        }
    }
}
