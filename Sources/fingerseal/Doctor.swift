import FingersealWire
import Glibc

/// `fingerseal doctor`: this side checks what any user can see (is the service answering,
/// are its units, the PAM module and profiles, the udev rules, the group and a TPM there, is
/// the clock past this release), then asks the service for what only it can see of the
/// caller's own setup, and renders both: one line per finding, or JSON. The exit status
/// says whether anything blocks fingerprint unlock (`Outcome.unavailable`), from the one
/// table like every other.
enum Doctor {
    static let rigGroup = "fingerseal-rig"

    static func run(_ parsed: ParsedArguments, _ output: Output) throws(CLIError) -> Int32 {
        guard parsed.positionals.isEmpty else { throw CLIError(.usage, Strings.unexpectedArgument(String(parsed.positionals[0].prefix(64)))) }
        let invocation = try Invocation(Commands.doctor, .doctor, parsed)
        let system = SystemFiles(root: Invocation.environment("FINGERSEAL_DOCTOR_ROOT") ?? "")
        let (service, fromBroker) = try ask(invocation, output, system)
        var findings = service
        findings.append(units(system))
        findings.append(module(system))
        findings.append(authProfile(system))
        findings.append(sessionProfile(system))
        findings += fromBroker
        findings.append(tpm(system))
        if let clock = clock(now: Int64(time(nil)), checkedByService: fromBroker.contains { $0.check == "clock" }) {
            findings.append(clock)
        }
        findings.append(udev(system))
        findings.append(group(system))
        let report = Report(findings)
        output.out(parsed.has(Commands.json) ? report.json() : report.text(emphasis: output.emphasis && isatty(STDOUT_FILENO) == 1))
        return report.problems > 0 ? Outcome.unavailable.exitCode : Outcome.success.exitCode
    }

    // MARK: the service

    /// The service's findings, after one saying whether it answered. A request it refuses as
    /// wrongly asked (`--service` naming no PAM service) is the usage error it is, not a finding.
    static func ask(_ invocation: Invocation, _ output: Output, _ system: SystemFiles) throws(CLIError) -> ([Finding], [Finding]) {
        var invocation = invocation
        let sink = FindingSink()
        invocation.findings = sink
        let path = invocation.socketPath
        do throws(CLIError) {
            _ = try Client.run(invocation, output)
            return ([Finding("service", .ok, Strings.doctorServiceAnswers(path))], sink.findings)
        } catch {
            switch error.message {
            case Strings.serviceNotRunning:
                let fix = system.systemdRuns ? Strings.doctorFixService : Strings.doctorFixServiceWithoutSystemd(path)
                return ([Finding("service", .problem, Strings.doctorServiceSilent(path), fix: fix)], [])
            case Strings.serviceRefused(path):
                return ([Finding("service", .problem, Strings.doctorServiceRefused(path), fix: Strings.doctorFixServiceRefused)], [])
            default:
                if error.outcome == .usage { throw error }
                return ([Finding("service", .ok, Strings.doctorServiceAnswers(path)),
                         Finding("service-checks", .problem, Strings.doctorServiceFailed(error.message),
                                 fix: Strings.doctorFixServiceFailed)], sink.findings)
            }
        }
    }

    // MARK: this side

    /// With systemd: fingerseal.socket enabled (the link `systemctl enable` makes). Without:
    /// said, since nothing then starts the service on demand.
    static func units(_ system: SystemFiles) -> Finding {
        guard system.systemdRuns else {
            return Finding("units", .warning, Strings.doctorNoSystemd,
                           fix: Strings.doctorFixServiceWithoutSystemd(defaultBrokerSocket))
        }
        if system.exists("/etc/systemd/system/sockets.target.wants/fingerseal.socket") {
            return Finding("units", .ok, Strings.doctorUnitsEnabled)
        }
        let installed = ["/etc/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system", "/usr/local/lib/systemd/system"]
            .contains { system.exists($0 + "/fingerseal.socket") }
        return installed ? Finding("units", .warning, Strings.doctorUnitsDisabled, fix: Strings.doctorFixService)
                         : Finding("units", .problem, Strings.doctorUnitsMissing, fix: Strings.doctorFixInstall)
    }

    static func module(_ system: SystemFiles) -> Finding {
        let directories = ["/lib/\(SystemFiles.multiarch)/security", "/usr/lib/\(SystemFiles.multiarch)/security"]
        if let found = directories.first(where: { system.exists($0 + "/pam_fingerseal.so") }) {
            return Finding("pam-module", .ok, Strings.doctorModuleInstalled(found + "/pam_fingerseal.so"))
        }
        return Finding("pam-module", .problem, Strings.doctorModuleMissing(directories[0]), fix: Strings.doctorFixInstall)
    }

    /// common-auth: pam_fingerseal present, and before pam_unix (else the password comes first).
    static func authProfile(_ system: SystemFiles) -> Finding {
        let file = "/etc/pam.d/common-auth"
        guard let stack = system.read(file).map(PAMStack.init) else {
            return Finding("pam-auth", .problem, Strings.doctorUnreadable(file), fix: Strings.doctorFixAuthDisabled)
        }
        guard let fingerseal = stack.first("pam_fingerseal.so", type: "auth") else {
            return Finding("pam-auth", .problem, Strings.doctorAuthDisabled(file), fix: Strings.doctorFixAuthDisabled)
        }
        if let unix = stack.first("pam_unix.so", type: "auth"), unix < fingerseal {
            return Finding("pam-auth", .problem, Strings.doctorAuthOutOfOrder(file), fix: Strings.doctorFixAuthOrder(file))
        }
        return Finding("pam-auth", .ok, Strings.doctorAuthEnabled(file))
    }

    /// common-session: optional; when there, after pam_systemd (which makes the runtime
    /// directory the token goes to).
    static func sessionProfile(_ system: SystemFiles) -> Finding {
        let file = "/etc/pam.d/common-session"
        let stack = PAMStack(system.read(file) ?? "")
        guard let fingerseal = stack.first("pam_fingerseal.so", type: "session") else {
            return Finding("pam-session", .ok, Strings.doctorSessionDisabled(file))
        }
        if let systemd = stack.first("pam_systemd.so", type: "session"), fingerseal < systemd {
            return Finding("pam-session", .warning, Strings.doctorSessionOutOfOrder(file), fix: Strings.doctorFixSessionOrder(file))
        }
        return Finding("pam-session", .ok, Strings.doctorSessionEnabled(file))
    }

    static func tpm(_ system: SystemFiles) -> Finding {
        Finding("tpm", .ok, system.exists("/dev/tpmrm0") ? Strings.doctorTPMPresent : Strings.doctorTPMAbsent)
    }

    /// Before this release the clock is wrong. The service checks it against the vault too;
    /// when it did, an agreeing finding here would say nothing new.
    static func clock(now: Int64, checkedByService: Bool) -> Finding? {
        if now < Fingerseal.writtenAt {
            return Finding("clock", .problem, Strings.doctorClockBeforeRelease(isoTimestamp(now), isoTimestamp(Fingerseal.writtenAt)),
                           fix: Strings.doctorFixClock)
        }
        return checkedByService ? nil : Finding("clock", .ok, Strings.doctorClockAfterRelease)
    }

    /// Where the Makefile and the package put them (/lib or /usr/lib), or the administrator's.
    static func udev(_ system: SystemFiles) -> Finding {
        let candidates = ["/lib/udev/rules.d", "/usr/lib/udev/rules.d", "/etc/udev/rules.d"].map { $0 + "/70-fingerseal.rules" }
        if let found = candidates.first(where: system.exists) { return Finding("udev", .ok, Strings.doctorUdevInstalled(found)) }
        return Finding("udev", .warning, Strings.doctorUdevMissing, fix: Strings.doctorFixInstall)
    }

    static func group(_ system: SystemFiles) -> Finding {
        system.groupExists(rigGroup) ? Finding("group", .ok, Strings.doctorGroupPresent(rigGroup))
                                     : Finding("group", .warning, Strings.doctorGroupMissing(rigGroup), fix: Strings.doctorFixGroup(rigGroup))
    }
}

/// The system files doctor looks at, under `root` (empty: the real ones). A root directory
/// (FINGERSEAL_DOCTOR_ROOT) is for tests: a copy of /etc/pam.d and friends to break. It
/// changes only what this command reads as the user; the service never sees it.
struct SystemFiles {
    let root: String

    #if arch(x86_64)
    static let multiarch = "x86_64-linux-gnu"
    #elseif arch(arm64)
    static let multiarch = "aarch64-linux-gnu"
    #else
    static let multiarch = "unknown-linux-gnu"
    #endif

    /// A link counts even when it dangles (an enabled unit in a copied tree).
    func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(root + path, &info) == 0
    }

    var systemdRuns: Bool { exists("/run/systemd/system") }

    /// The file's text, at most 1 MiB; nil when it cannot be read.
    func read(_ path: String) -> String? {
        let fd = open(root + path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while bytes.count < 1 << 20 {
            let count = Glibc.read(fd, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count < 0 { return nil }
            if count == 0 { break }
            bytes += buffer[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Through NSS on the real system; in a copied tree, its etc/group.
    func groupExists(_ name: String) -> Bool {
        guard !root.isEmpty else { return getgrnam(name) != nil }
        return (read("/etc/group") ?? "").split(separator: "\n").contains { $0.hasPrefix(name + ":") }
    }
}

/// A PAM stack file as lines of type, control and module, in order (comments, blanks and
/// @include lines left out).
struct PAMStack {
    struct Line {
        let type: String
        let module: String
    }
    let lines: [Line]

    init(_ text: String) {
        lines = text.split(separator: "\n").compactMap { raw -> Line? in
            let line = raw.prefix { $0 != "#" }.trimmingCharacters()
            guard !line.isEmpty, !line.hasPrefix("@") else { return nil }
            var rest = Substring(line)
            let type = rest.prefix { !$0.isWhitespace }
            rest = rest.dropFirst(type.count).drop { $0.isWhitespace }
            // A bracketed control ([success=end default=ignore]) holds spaces.
            if rest.hasPrefix("[") {
                guard let close = rest.firstIndex(of: "]") else { return nil }
                rest = rest[rest.index(after: close)...]
            } else {
                rest = rest.drop { !$0.isWhitespace }
            }
            let module = rest.drop { $0.isWhitespace }.prefix { !$0.isWhitespace }
            guard !module.isEmpty else { return nil }
            return Line(type: String(type.drop { $0 == "-" }), module: String(module.split(separator: "/").last ?? module))
        }
    }

    /// The index of the first line of `type` that loads `module`.
    func first(_ module: String, type: String) -> Int? {
        lines.firstIndex { $0.type == type && $0.module == module }
    }
}

extension Substring {
    func trimmingCharacters() -> String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}

/// The findings with their tally, as text lines or JSON.
struct Report {
    let findings: [Finding]
    let problems: Int
    let warnings: Int

    init(_ findings: [Finding]) {
        self.findings = findings
        problems = findings.filter { $0.status == .problem }.count
        warnings = findings.filter { $0.status == .warning }.count
    }

    var summary: String {
        problems > 0 ? Strings.doctorBlocked(problems) : warnings > 0 ? Strings.doctorOnlyWarnings(warnings) : Strings.doctorAllWell
    }

    /// A word leads each line (never colour alone): each line shape is one whole sentence of
    /// the catalog, so a translation may order it as it needs. On a terminal without
    /// NO_COLOR, the word is also bold: the part of the shape before its first placeholder.
    func text(emphasis: Bool) -> String {
        var lines = findings.map { finding -> String in
            let line = Strings.doctorLine(finding.status, finding.message, fix: finding.fix)
            guard emphasis else { return line }
            let shape = Strings.doctorLine(finding.status, "\u{1}", fix: finding.fix.isEmpty ? "" : "\u{2}")
            let lead = shape.prefix { $0 != "\u{1}" && $0 != "\u{2}" }
            let word = String(lead.reversed().drop { $0.isWhitespace || $0 == ":" }.reversed())
            guard !word.isEmpty, line.hasPrefix(word) else { return line }
            return "\u{1b}[1m" + word + "\u{1b}[0m" + line.dropFirst(word.count)
        }
        lines.append(summary)
        return lines.joined(separator: "\n")
    }

    func json() -> String {
        func quoted(_ text: String) -> String {
            var out = "\""
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\t": out += "\\t"
                case "\r": out += "\\r"
                default:
                    if scalar.value < 0x20 {
                        let hex = String(scalar.value, radix: 16)
                        out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                    } else {
                        out.unicodeScalars.append(scalar)
                    }
                }
            }
            return out + "\""
        }
        let items = findings.map { finding in
            "    {\"check\": \(quoted(finding.check)), \"status\": \(quoted(finding.status.rawValue)), "
                + "\"message\": \(quoted(finding.message)), \"fix\": \(quoted(finding.fix))}"
        }
        return """
            {
              "findings": [
            \(items.joined(separator: ",\n"))
              ],
              "summary": {"ok": \(findings.count - problems - warnings), "warnings": \(warnings), "problems": \(problems), \
            "blocks_unlock": \(problems > 0), "message": \(quoted(summary))}
            }
            """
    }
}
