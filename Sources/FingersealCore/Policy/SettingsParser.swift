import FingersealWire
import Localization

/// The parser: settings as written (module arguments, the configuration file and its
/// `[service NAME]` sections) applied through `SiteSetting.all`, and what is read back of them.
extension Options {
    /// A name from the file or a caller as a sentence quotes it: at most 64 characters.
    public static func shown(_ name: String) -> String { name.count > 64 ? String(name.prefix(64)) + "…" : name }

    /// The configuration file (a fleet drops it in place).
    public static let configPath = "/etc/fingerseal/fingerseal.conf"
    /// Where it used to be; read only when `configPath` does not exist.
    public static let legacyConfigPath = "/etc/security/fingerseal.conf"
    static let maxOptionLength = 4096
    static let maxConfigSize = 64 * 1024

    /// Applies `name[=value]` settings in order. Throws on the first invalid value; unknown
    /// names are returned as warnings.
    @discardableResult
    public mutating func apply(_ settings: [String], source: String) throws -> [String] {
        var warnings: [String] = []
        for setting in settings {
            guard setting.utf8.count <= Options.maxOptionLength else {
                throw FingersealError(.badConfiguration, Messages.badOption(String(setting.prefix(32)) + "…", tr("it is too long")),
                                      detail: source)
            }
            let argument = ModuleArgument(setting)
            let name = argument.name
            if try !applyOne(name: name, value: argument.value) {
                warnings.append(Messages.unknownOption(Options.shown(name)))
            }
        }
        return warnings
    }

    /// Parses the text of a configuration file: one `name` or `name=value` per line, `#`
    /// comments, blank lines ignored, whitespace around names and values trimmed. Sections:
    /// `[provision]` (provisioning's settings) and `[service NAME]` (one PAM service's), each
    /// running to the next section or the end.
    @discardableResult
    public mutating func applyConfigFile(_ text: String, source: String = Options.configPath) throws -> [String] {
        guard text.utf8.count <= Options.maxConfigSize else {
            throw FingersealError(.badConfiguration, Messages.badOption(source, tr("the file is too large")))
        }
        var settings: [String] = []
        var warnings: [String] = []
        // `[provision]`: the names below it are provisioning's (`require=` is
        // `provision_require=`); a name already spelled `provision_…` is the same one.
        enum Section: Equatable { case top, provision, service(String), unknown }
        var section = Section.top
        var sections: [(service: String, settings: [String])] = []
        // isNewline: "\r\n" is a single Character in Swift and would not match "\n".
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
            let trimmed = line.trimmingSpaces
            if trimmed.hasPrefix("[") && trimmed.hasSuffix("]") {
                let name = trimmed.dropFirst().dropLast().trimmingSpaces
                let words = name.split(maxSplits: 1, whereSeparator: { $0 == " " || $0 == "\t" })
                if name == "provision" {
                    section = .provision
                } else if words.first == "service" {
                    // A name the parser would refuse in skip_services= is an error, as a bad
                    // value is: its settings would otherwise silently apply to nothing.
                    let service = words.count > 1 ? words[1].trimmingSpaces : ""
                    guard Options.isServiceName(service) else {
                        throw FingersealError(.badConfiguration, Messages.badServiceSection(Options.shown(service)), detail: source)
                    }
                    section = .service(service)
                    sections.append((service, []))
                } else {
                    warnings.append(Messages.unknownSection(Options.shown(name)))
                    section = .unknown
                }
                continue
            }
            let parts = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            var name = parts[0].trimmingSpaces
            if name.isEmpty { continue }
            switch section {
            // The settings of a section nobody knows are not applied as the main section's.
            case .unknown: continue
            case .provision: if !name.hasPrefix("provision_") { name = "provision_" + name }
            case .top, .service: break
            }
            let setting = parts.count > 1 ? "\(name)=\(parts[1].trimmingSpaces)" : name
            if case .service = section { sections[sections.count - 1].settings.append(setting) } else { settings.append(setting) }
        }
        warnings += try apply(settings, source: source)
        fileSettings += settings
        for (service, written) in sections { warnings += try addServiceSection(service, written, source: source) }
        return warnings
    }

    /// Checks a `[service NAME]` section with the one parser, over the top level, and keeps
    /// it: a bad value is an error and an unknown name a warning, exactly as at the top level.
    /// Refused here, with a warning: what only the file's top level sets (`SiteSetting.Scope.file`:
    /// `fixed=`, the TPM, the step-up ceiling, provisioning's rule), since those are the
    /// machine's, not a service's: a host names its own PAM service (one running as the user
    /// names any it likes), so a per-service TPM mode, ceiling or provisioning rule would be
    /// the host's to choose. What of a section reaches a host running as the user is decided
    /// in the broker (`Dispatcher.effectiveOptions`).
    private mutating func addServiceSection(_ service: String, _ written: [String], source: String) throws -> [String] {
        var warnings: [String] = []
        var kept: [String] = []
        for setting in written {
            let name = ModuleArgument(setting).name
            if SiteSetting.fileOnly.contains(name) {
                warnings.append(Messages.fileOnlyInServiceSection(Options.shown(name), service))
            } else {
                kept.append(setting)
            }
        }
        var checked = self
        warnings += try checked.apply(kept, source: "\(source) [service \(service)]")
        serviceSections[service, default: []] += kept
        return warnings
    }

    /// The settings in force for PAM service `service` (nil: a command, not a PAM host):
    /// these, with the service's `[service NAME]` section applied over them. `only`: apply
    /// just the section's settings with these names.
    public func forService(_ service: String?, only allowed: Set<String>? = nil) throws -> Options {
        guard let service, let section = serviceSections[service] else { return self }
        var options = self
        let settings = allowed.map { names in section.filter { names.contains(ModuleArgument($0).name) } } ?? section
        // Checked when the file was read; unknown names were reported then.
        try options.apply(settings, source: "[service \(service)]")
        return options
    }

    /// Where the settings in force for `service` that differ from the defaults came from:
    /// each option once, as last written (`name=value`), and whether its section wrote it.
    /// Options the file sets back to their default, and names the parser does not know, are
    /// left out.
    public func origins(service: String?) -> [(setting: String, name: String, fromSection: Bool)] {
        var latest: [(setting: String, name: String, fromSection: Bool)] = []
        let section = service.flatMap { serviceSections[$0] } ?? []
        for (setting, fromSection) in fileSettings.map({ ($0, false) }) + section.map({ ($0, true) }) {
            let name = ModuleArgument(setting).name
            var alone = Options()
            guard (try? alone.apply([setting], source: "")) != nil, alone != Options() else {
                latest.removeAll { $0.name == name } // set back to its default
                continue
            }
            latest.removeAll { $0.name == name }
            latest.append((setting, name, fromSection))
        }
        return latest
    }

    /// Reads one setting through its entry in `SiteSetting.all`; false for an unknown name.
    private mutating func applyOne(name: String, value: String?) throws -> Bool {
        guard let setting = SiteSetting.named(name) else { return false }
        try setting.read(&self, SettingValue(name: name, value: value))
        return true
    }
}

extension Substring {
    var trimmingSpaces: String {
        String(drop(while: { $0 == " " || $0 == "\t" || $0 == "\r" }).reversed()
            .drop(while: { $0 == " " || $0 == "\t" || $0 == "\r" }).reversed())
    }
}
