import Foundation
import Testing
@testable import TestSupport

/// udev/70-fingerseal.rules: gives every reader libfprint supports to root and the group
/// fingerseal-rig only (never to the seat user through "uaccess": the broker owns the reader),
/// parses, and is what scripts/generate-udev-rules makes from the installed hwdb today.
@Suite struct UdevTests {
    /// Installed by Debian's libfprint-2-2 (a dependency of libfprint-2-dev, see scripts/install-deps).
    static let hwdbPath = "/lib/udev/hwdb.d/60-autosuspend-libfprint-2.hwdb"

    /// The package root: three levels above Tests/SystemTests/UdevTests.swift.
    static let packageRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    static var rulesPath: String { packageRoot + "/udev/70-fingerseal.rules" }
    static var generator: String { packageRoot + "/scripts/generate-udev-rules" }
    static let regenerate = "run: scripts/generate-udev-rules > udev/70-fingerseal.rules"
    /// What every reader rule sets: root (the broker) and the rig group, nobody else.
    static let rigGroup = "fingerseal-rig"
    static let rigMode = "0660"

    struct DeviceID: Hashable, Comparable, CustomStringConvertible {
        let vendor: String
        let product: String
        var description: String { "\(vendor):\(product)" }
        static func < (a: Self, b: Self) -> Bool { (a.vendor, a.product) < (b.vendor, b.product) }
    }

    // MARK: The hwdb, parsed independently of the generator

    struct Hwdb {
        var supported: Set<DeviceID> = []
        var unsupported: Set<DeviceID> = []
    }

    /// Sections open with "# Supported by libfprint driver NAME" or "# Known unsupported devices";
    /// match lines are "usb:vXXXXpYYYY*" (hex in any case). Anything else is ignored.
    static func parseHwdb(_ text: String) -> Hwdb {
        var hwdb = Hwdb()
        var inSupported: Bool? = nil
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#") {
                let lower = line.lowercased()
                if lower.contains("supported by libfprint driver") { inSupported = true }
                else if lower.contains("unsupported") { inSupported = false }
                continue
            }
            guard let id = usbID(line), let supported = inSupported else { continue }
            if supported { hwdb.supported.insert(id) } else { hwdb.unsupported.insert(id) }
        }
        return hwdb
    }

    /// "usb:v08FFp1600*" → 08ff:1600; nil for anything that is not one exact vendor:product pair.
    static func usbID(_ line: String) -> DeviceID? {
        let chars = Array(line.lowercased())
        guard chars.count >= 14, String(chars[0..<5]) == "usb:v", chars[9] == "p" else { return nil }
        let vendor = String(chars[5..<9]), product = String(chars[10..<14])
        guard isHex4(vendor), isHex4(product) else { return nil }
        if chars.count > 14, chars[14].isHexDigit, chars[14] != "d" { return nil }
        return DeviceID(vendor: vendor, product: product)
    }

    static func isHex4(_ s: String) -> Bool {
        s.count == 4 && s.allSatisfy { ("0"..."9").contains($0) || ("a"..."f").contains($0) }
    }

    static func installedHwdb() throws -> Hwdb {
        let text = try #require(
            try? String(contentsOfFile: hwdbPath, encoding: .utf8),
            "\(hwdbPath) missing: install libfprint-2-2 (scripts/install-deps)")
        let hwdb = parseHwdb(text)
        try #require(!hwdb.supported.isEmpty, "no supported devices found in \(hwdbPath)")
        return hwdb
    }

    // MARK: The rules file, parsed strictly

    struct Token: Equatable {
        let key: String
        let op: String
        let value: String
    }

    struct RuleError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static let matchKeys: Set<String> = ["SUBSYSTEM", "ACTION", "ATTRS{idVendor}", "ATTRS{idProduct}"]
    static let operators = ["==", "!=", "+=", "="]  // longest first

    /// One rule line: comma-separated `KEY<op>"value"` tokens with known keys and operators.
    static func parseRule(_ line: String) throws -> [Token] {
        var tokens: [Token] = []
        var rest = Substring(line)
        while true {
            rest = rest.drop(while: { $0 == " " || $0 == "\t" })
            guard let opStart = rest.firstIndex(where: { "=!+".contains($0) }) else {
                throw RuleError("no operator in \(String(rest).debugDescription)")
            }
            let key = String(rest[..<opStart])
            rest = rest[opStart...]
            guard let op = operators.first(where: { rest.hasPrefix($0) }) else {
                throw RuleError("bad operator after \(key)")
            }
            rest = rest.dropFirst(op.count)
            guard rest.first == "\"", let close = rest.dropFirst().firstIndex(of: "\"") else {
                throw RuleError("value of \(key) is not a quoted string")
            }
            let value = String(rest[rest.index(after: rest.startIndex)..<close])
            rest = rest[rest.index(after: close)...]
            switch key {
            case _ where matchKeys.contains(key):
                guard op == "==" || op == "!=" else { throw RuleError("\(key) takes == or !=, not \(op)") }
            case "TAG":
                break
            case "GOTO", "LABEL", "GROUP", "MODE":
                guard op == "=" else { throw RuleError("\(key) takes =, not \(op)") }
            default:
                throw RuleError("unknown key \(key.debugDescription)")
            }
            if key.hasPrefix("ATTRS{"), !isHex4(value) {
                throw RuleError("\(key) value \(value.debugDescription) is not 4 lower-case hex digits")
            }
            if key == "MODE", !(value.count == 4 && value.allSatisfy({ ("0"..."7").contains($0) })) {
                throw RuleError("MODE value \(value.debugDescription) is not 4 octal digits")
            }
            if value.isEmpty { throw RuleError("\(key) has an empty value") }
            tokens.append(Token(key: key, op: op, value: value))
            rest = rest.drop(while: { $0 == " " || $0 == "\t" })
            if rest.isEmpty { return tokens }
            guard rest.first == "," else { throw RuleError("expected ',' before \(String(rest).debugDescription)") }
            rest = rest.dropFirst()
        }
    }

    /// (line number, tokens) for every non-comment, non-empty line.
    static func committedRules() throws -> [(line: Int, tokens: [Token])] {
        let text = try #require(
            try? String(contentsOfFile: rulesPath, encoding: .utf8), "cannot read \(rulesPath); \(regenerate)")
        var rules: [(line: Int, tokens: [Token])] = []
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            do { rules.append((index + 1, try parseRule(line))) } catch let error as RuleError {
                throw RuleError("udev/70-fingerseal.rules:\(index + 1): \(error.description)")
            }
        }
        return rules
    }

    /// Devices given to root and the rig group only: rules with SUBSYSTEM=="usb", both IDs,
    /// GROUP="fingerseal-rig" and MODE="0660", and no "uaccess" tag.
    static func rigDevices(_ rules: [(line: Int, tokens: [Token])]) -> Set<DeviceID> {
        var devices: Set<DeviceID> = []
        for rule in rules {
            func match(_ key: String) -> String? { rule.tokens.first { $0.key == key && $0.op == "==" }?.value }
            guard match("SUBSYSTEM") == "usb",
                  rule.tokens.contains(Token(key: "GROUP", op: "=", value: rigGroup)),
                  rule.tokens.contains(Token(key: "MODE", op: "=", value: rigMode)),
                  !isUaccess(rule.tokens),
                  let vendor = match("ATTRS{idVendor}"), let product = match("ATTRS{idProduct}")
            else { continue }
            devices.insert(DeviceID(vendor: vendor, product: product))
        }
        return devices
    }

    /// Tagging a device "uaccess" (TAG+= or TAG=) would give it to the seat user, around the broker.
    static func isUaccess(_ tokens: [Token]) -> Bool {
        tokens.contains { $0.key == "TAG" && ($0.op == "+=" || $0.op == "=") && $0.value == "uaccess" }
    }

    /// Line numbers of the rules that carry a "uaccess" tag.
    static func uaccessRules(_ rules: [(line: Int, tokens: [Token])]) -> [Int] {
        rules.filter { isUaccess($0.tokens) }.map(\.line)
    }

    // MARK: Processes

    struct Run {
        let status: Int32
        let output: String
    }

    /// Runs a program to completion; stdout and stderr share one pipe, so neither can fill and block.
    static func run(_ program: String, _ arguments: [String]) throws -> Run {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Run(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self))
    }

    static var udevadm: String? {
        ["/usr/bin/udevadm", "/bin/udevadm", "/sbin/udevadm"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// `udevadm verify` arrived in systemd 253; Debian 12 has 252.
    static let hasUdevadmVerify: Bool = {
        guard let udevadm, let run = try? run(udevadm, ["--version"]), run.status == 0 else { return false }
        let digits = run.output.trimmingCharacters(in: .whitespacesAndNewlines).prefix(while: \.isNumber)
        return (Int(digits) ?? 0) >= 253
    }()

    // MARK: Tests

    @Test func everySupportedReaderIsGivenToRootAndTheRigGroupOnly() throws {
        let hwdb = try Self.installedHwdb()
        let rules = try Self.committedRules()
        let covered = Self.rigDevices(rules)
        let missing = hwdb.supported.subtracting(covered).sorted()
        #expect(missing.isEmpty, "\(missing.count) supported readers without a GROUP=\"\(Self.rigGroup)\", MODE=\"\(Self.rigMode)\" rule: \(missing); \(Self.regenerate)")
        // Known-unsupported devices are left alone (unless some driver also supports them).
        let unwanted = covered.intersection(hwdb.unsupported.subtracting(hwdb.supported)).sorted()
        #expect(unwanted.isEmpty, "rules for devices libfprint lists as unsupported: \(unwanted)")
        // The seat user must not get the reader: it would go around the broker.
        let uaccess = Self.uaccessRules(rules)
        #expect(uaccess.isEmpty, "lines \(uaccess) tag a reader with \"uaccess\" (the seat user could bypass the broker); \(Self.regenerate)")

        // The checks themselves: a uaccess rule and a rule with another mode cover nothing,
        // and the uaccess one is reported.
        let synthetic = [
            (line: 1, tokens: try Self.parseRule(#"SUBSYSTEM=="usb", ATTRS{idVendor}=="04f3", ATTRS{idProduct}=="0903", TAG+="uaccess""#)),
            (line: 2, tokens: try Self.parseRule(#"SUBSYSTEM=="usb", ATTRS{idVendor}=="04f3", ATTRS{idProduct}=="0907", GROUP="fingerseal-rig", MODE="0666""#)),
            (line: 3, tokens: try Self.parseRule(#"SUBSYSTEM=="usb", ATTRS{idVendor}=="04f3", ATTRS{idProduct}=="0c01", GROUP="fingerseal-rig", MODE="0660", TAG+="uaccess""#)),
            (line: 4, tokens: try Self.parseRule(#"SUBSYSTEM=="usb", ATTRS{idVendor}=="04f3", ATTRS{idProduct}=="0c16", GROUP="fingerseal-rig", MODE="0660""#)),
        ]
        #expect(Self.rigDevices(synthetic) == [DeviceID(vendor: "04f3", product: "0c16")])
        #expect(Self.uaccessRules(synthetic) == [1, 3])
    }

    @Test func everyRuleLineParses() throws {
        let rules = try Self.committedRules()
        #expect(!rules.isEmpty)
        var labels: [String: Int] = [:]
        for rule in rules {
            for token in rule.tokens where token.key == "LABEL" {
                #expect(labels[token.value] == nil, "line \(rule.line): LABEL \(token.value) defined twice")
                labels[token.value] = rule.line
            }
        }
        for rule in rules {
            for token in rule.tokens where token.key == "GOTO" {
                let label = labels[token.value]
                #expect(label != nil, "line \(rule.line): GOTO \(token.value) has no LABEL")
                // udev only jumps forward.
                if let label { #expect(label > rule.line, "line \(rule.line): LABEL \(token.value) is not after its GOTO") }
            }
            // Every rule that acts on a device names exactly one USB device and sets its group
            // and mode, nothing else (no TAG: see everySupportedReaderIsGivenToRootAndTheRigGroupOnly).
            if rule.tokens.contains(where: { ["TAG", "GROUP", "MODE"].contains($0.key) }) {
                let keys = rule.tokens.map(\.key)
                #expect(keys == ["SUBSYSTEM", "ATTRS{idVendor}", "ATTRS{idProduct}", "GROUP", "MODE"], "line \(rule.line): \(keys)")
            }
        }
        // The file's exact line shape, as a second check of the parser.
        #expect(throws: RuleError.self) { try Self.parseRule(#"SUBSYSTEM=="usb", ATTRS{idVendor}=="04F3", GROUP="fingerseal-rig", MODE="0660""#) }
        #expect(throws: RuleError.self) { try Self.parseRule(#"SUBSYSTEM=="usb", OWNER="someone""#) }
        #expect(throws: RuleError.self) { try Self.parseRule(#"SUBSYSTEM=="usb", MODE+="0660""#) }
        #expect(throws: RuleError.self) { try Self.parseRule(#"SUBSYSTEM=="usb", MODE="rw""#) }
        #expect(throws: RuleError.self) { try Self.parseRule(#"SUBSYSTEM=="usb", GROUP=="fingerseal-rig""#) }
        #expect(throws: RuleError.self) { try Self.parseRule(#"SUBSYSTEM=="usb" GROUP="fingerseal-rig""#) }
        #expect(throws: RuleError.self) { try Self.parseRule(#"SUBSYSTEM+="usb""#) }
        #expect(try Self.parseRule(#"ACTION=="remove", GOTO="x""#).count == 2)
        #expect(try Self.parseRule(#"SUBSYSTEM=="usb", ATTRS{idVendor}=="04f3", ATTRS{idProduct}=="0903", GROUP="fingerseal-rig", MODE="0660""#).count == 5)
    }

    @Test func committedFileIsWhatTheGeneratorMakesFromTheInstalledHwdb() throws {
        _ = try Self.installedHwdb()
        let check = try Self.run(Self.generator, ["--check", Self.rulesPath])
        #expect(check.status == 0, "udev/70-fingerseal.rules is stale (libfprint updated?); \(Self.regenerate)\n\(check.output)")
    }

    @Test(.enabled(if: hasUdevadmVerify, "udevadm verify needs systemd 253 or later"))
    func udevadmVerifyAcceptsTheRules() throws {
        let verify = try Self.run(try #require(Self.udevadm), ["verify", Self.rulesPath])
        #expect(verify.status == 0, "\(verify.output)")
    }

    @Test func generatorIsRobustAndDeterministic() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fingerseal-udev-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let hwdb = directory.appendingPathComponent("test.hwdb").path
        let hwdbText = """
            usb:v1111p2222*
             ID_AUTOSUSPEND=1

            # Supported by libfprint driver foo
            usb:v08FFp1681*
            usb:v08ffp1600*
            usb:v08FFp1600*
            usb:v08FFp16*
            #usb:v9999p9999*
            usb:vZZZZp0000*
            garbage
             ID_AUTOSUSPEND=1
             ID_PERSIST=0

            # Known unsupported devices
            usb:v3333p4444*
            usb:v08FFp1681*
             ID_AUTOSUSPEND=1

            """
        try Data(hwdbText.utf8 + [0xFF, 0xFE, 0x0A]).write(to: URL(fileURLWithPath: hwdb))
        let first = try Self.run(Self.generator, [hwdb])
        #expect(first.status == 0, "\(first.output)")
        let rules = directory.appendingPathComponent("70-test.rules").path
        let generated = try Self.run("/bin/sh", ["-c", "exec \"$0\" \"$1\" >\"$2\" 2>/dev/null", Self.generator, hwdb, rules])
        #expect(generated.status == 0)
        let text = try String(contentsOfFile: rules, encoding: .utf8)
        let ruleLines = text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
        #expect(ruleLines == [
            #"ACTION=="remove", GOTO="fingerseal_end""#,
            #"SUBSYSTEM!="usb", GOTO="fingerseal_end""#,
            #"SUBSYSTEM=="usb", ATTRS{idVendor}=="08ff", ATTRS{idProduct}=="1600", GROUP="fingerseal-rig", MODE="0660""#,
            #"SUBSYSTEM=="usb", ATTRS{idVendor}=="08ff", ATTRS{idProduct}=="1681", GROUP="fingerseal-rig", MODE="0660""#,
            #"LABEL="fingerseal_end""#,
        ])
        #expect(text.contains("Generated by scripts/generate-udev-rules from \(hwdb)"))
        #expect(text.contains("\"Known unsupported devices\" section (1 device) is excluded"))
        #expect(try Self.run(Self.generator, ["--check", rules, hwdb]).status == 0)
        try Data((text + "# edited\n").utf8).write(to: URL(fileURLWithPath: rules))
        let stale = try Self.run(Self.generator, ["--check", rules, hwdb])
        #expect(stale.status == 1)
        #expect(stale.output.contains("regenerate"))
        #expect(try Self.run(Self.generator, ["--check", rules, directory.appendingPathComponent("absent").path]).status == 2)
        #expect(try Self.run(Self.generator, ["--bogus"]).status == 2)
    }
}
