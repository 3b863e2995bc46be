import FingersealWire
/// Where an identity provider may be reached: https, or plain http to a loopback address
/// (RFC 8252's exception, and the local test IdP). One rule for the configuration file's
/// `issuer=` and for every URL discovery returns.
public enum ProviderURL {
    /// `http://` to 127.0.0.0/8 (a dotted quad, not merely a name starting with "127."),
    /// `[::1]` or `localhost`, without user information.
    public static func isLoopbackHTTP(_ url: String) -> Bool {
        guard url.hasPrefix("http://") else { return false }
        let authority = authority(url.dropFirst("http://".count))
        let host: Substring
        if authority.hasPrefix("[") {
            host = authority.dropFirst().prefix { $0 != "]" }
        } else {
            host = authority.prefix { $0 != ":" }
        }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        let loopbackIPv4 = octets.count == 4 && octets[0] == "127"
            && octets.allSatisfy { !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) && (Int($0) ?? 256) < 256 }
        return (host == "localhost" || host == "::1" || loopbackIPv4) && !authority.contains("@")
    }

    /// An issuer as the configuration may name it (OIDC Discovery §4.3: https, no query or
    /// fragment): https to a host, or loopback http; printable ASCII, bounded.
    public static func isValidIssuer(_ url: String) -> Bool {
        guard url.utf8.count <= 1024, url.unicodeScalars.allSatisfy({ (0x21...0x7e).contains($0.value) }),
              !url.contains("?"), !url.contains("#") else { return false }
        if url.hasPrefix("https://") {
            let authority = authority(url.dropFirst("https://".count))
            return !authority.isEmpty && !authority.contains("@")
        }
        return isLoopbackHTTP(url)
    }

    private static func authority(_ rest: Substring) -> Substring {
        rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
    }
}

extension Options {
    /// The value of a sign-in option (issuer, client_id, client_secret_file, scope, flow: what
    /// `login`'s arguments may change) as the file set it, nil when unset.
    public func setting(_ option: String) -> String? { SiteSetting.named(option)?.written?(self) }

    /// Settings from arguments (the PAM module's) over the system file: an option the file
    /// fixed keeps the file's value, and `fixed=` and the machine's settings (`SiteSetting.fileOnly`) are the
    /// file's alone; all are ignored with a warning, so a fleet file never breaks a PAM stack
    /// that sets them.
    @discardableResult
    public mutating func applyArguments(_ settings: [String], source: String) throws -> [String] {
        var warnings: [String] = []
        var allowed: [String] = []
        for setting in settings {
            let name = ModuleArgument(setting).name
            if name == "fixed" {
                warnings.append(Messages.fixedOnlyInFile(source))
            } else if SiteSetting.fileOnly.contains(name) {
                warnings.append(Messages.fileOnlyOption(name, source))
            } else if fixed.contains(name) {
                warnings.append(Messages.fixedOptionIgnored(name, source))
            } else {
                allowed.append(setting)
            }
        }
        return warnings + (try apply(allowed, source: source))
    }
}
