import FingersealWire
import Glibc
import SharedMessages
import Testing
@testable import fingerseal
@testable import TestSupport

/// The typed options of the wire (`RequestOptions`): one definition per option, checked in
/// one place, worded in one place, so the CLI and the broker refuse the same mistake with the
/// same sentence.
@Suite struct CommandOptionsTests {
    static func values(_ pairs: [(String, String)]) -> OptionValues {
        var values = OptionValues()
        for (field, value) in pairs { values.set(field: field, value) }
        return values
    }

    static func decoded(_ command: Command, _ pairs: [(String, String)], arguments: [String] = []) throws(OptionError)
        -> RequestOptions {
        try RequestOptions(command, decoding: values(pairs), arguments: arguments)
    }

    static func refusal(_ command: Command, _ pairs: [(String, String)], arguments: [String] = []) -> OptionError? {
        do throws(OptionError) {
            _ = try decoded(command, pairs, arguments: arguments)
            return nil
        } catch {
            return error
        }
    }

    // MARK: the wire's checks

    @Test func typedValuesRoundTrip() throws {
        let stepUp = try Self.decoded(.stepUp, [("ttl", "+600"), ("fresh", "1"), ("user", "bob"), ("device", "virtual")],
                                      arguments: ["payroll"])
        let options = stepUp.group(StepUpOptions.self)
        #expect(options.ttl == 600 && options.fresh && !options.check && options.scan.device == "virtual")
        #expect(stepUp.user == "bob")
        #expect(stepUp.command.scan.device == "virtual", "the shared group, whichever command has it")
        // Sent in canonical spelling, and decoded to the same value again.
        #expect(stepUp.values.value(field: "ttl") == "600")
        #expect(try RequestOptions(.stepUp, decoding: stepUp.values, arguments: ["payroll"]) == stepUp)

        let login = try Self.decoded(.login, [("flow", "browser"), ("redirect-port", "8765"), ("timeout", "3600"), ("no-qr", "1")])
        let given = login.group(LoginOptions.self)
        #expect(given.flow == .browser && given.redirectPort == 8765 && given.timeout == 3600 && given.noQR && !given.noBrowser)
        // Another command's group is its defaults.
        #expect(login.group(StepUpOptions.self) == StepUpOptions())
    }

    /// Every number option refuses each side of its range and garbage, with its own range;
    /// the same option name (`--timeout`) keeps each command's range.
    @Test(arguments: [
        (Command.verify, "timeout", "--timeout", 1...600), (.login, "timeout", "--timeout", 1...86_400),
        (.stepUp, "ttl", "--ttl", 1...86_400), (.reveal, "ttl", "--ttl", 1...86_400),
        (.token, "min-valid", "--min-valid", 0...86_400), (.login, "redirect-port", "--redirect-port", 1024...65_535),
    ])
    func numbersAreCheckedAgainstTheirRange(command: Command, field: String, name: String, range: ClosedRange<Int>) {
        let arguments = command == .stepUp ? ["payroll"] : []
        for good in [range.lowerBound, range.upperBound] {
            #expect(Self.refusal(command, [(field, String(good))], arguments: arguments) == nil, "\(command) \(name) \(good)")
        }
        for bad in [String(range.lowerBound - 1), String(range.upperBound + 1), "x", "", "1e3", " 5", String(repeating: "9", count: 40)] {
            #expect(Self.refusal(command, [(field, bad)], arguments: arguments) == .number(name, range), "\(command) \(name) \(bad)")
        }
    }

    @Test func garbageAndUnknownOptionsAreRefused() {
        #expect(Self.refusal(.status, [("json", "yes")]) == .takesNoValue("--json"))
        #expect(Self.refusal(.status, [("ttl", "60")]) == .unknown("--ttl"), "an option of another command")
        #expect(Self.refusal(.status, [("bogus", "1")]) == .unknown("--bogus"))
        #expect(Self.refusal(.login, [("flow", "magic")]) == .choice("--flow", ["device", "password", "browser"]))
        // A PAM request carries module arguments, never command-line options, not even --user.
        #expect(Self.refusal(.pamAuthenticate, [("user", "root")]) == .unknown("--user"))
        #expect(Self.refusal(.pamAuthenticate, []) == nil)
    }

    @Test func optionsThatExcludeEachOther() {
        #expect(Self.refusal(.unlock, [("exec", "1"), ("json", "1")]) == .execAlone)
        #expect(Self.refusal(.unlock, [], arguments: ["ls"]) == .unlockTakesNoArguments)
        #expect(Self.refusal(.unlock, [("exec", "1")]) == nil)
        #expect(Self.refusal(.stepUp, []) == .stepUpNeedsContext)
        #expect(Self.refusal(.stepUp, [("check", "1"), ("end", "1")], arguments: ["payroll"]) == .checkOrEndAlone)
        #expect(Self.refusal(.stepUp, [("check", "1"), ("command", "1")], arguments: ["payroll"]) == .checkOrEndAlone)
        #expect(Self.refusal(.stepUp, [("end", "1")], arguments: ["payroll"]) == nil)
        #expect(Self.refusal(.seal, []) == .sealNeedsContext)
        #expect(Self.refusal(.seal, [("context", "bank")], arguments: ["a", "b"]) == .sealOneFile)
        #expect(Self.refusal(.reveal, [], arguments: ["a", "b"]) == .revealNeedsFile)
        #expect(Self.refusal(.forget, []) == .forgetOneOrAll)
        #expect(Self.refusal(.forget, [("all", "1")], arguments: ["left-thumb"]) == .forgetOneOrAll)
        #expect(Self.refusal(.forget, [], arguments: ["left-thumb"]) == nil)
    }

    // MARK: defined once

    /// The CLI sends only the wire's options, each command exactly those its wire group
    /// takes, and every number and choice it accepts is the wire's (so its range is checked
    /// there, never here).
    @Test func theCommandTreeSendsTheWiresOptions() throws {
        func nodes(_ spec: CommandSpec) -> [CommandSpec] { [spec] + spec.subcommands.flatMap(nodes) }
        for spec in nodes(Commands.root) {
            for option in spec.options {
                switch option.kind {
                case .number, .choice: #expect(option.wire != nil, "\(spec.name) \(option.name) is the wire's")
                default: break
                }
                if let wire = option.wire { #expect(wire.name == option.name) }
            }
            guard let command = spec.command else { continue }
            let wire = try #require(try? CommandOptions(command, decoding: OptionValues()))
            let wireNames = Set(wire.accepted.map(\.name))
            let sent = Set(spec.options.compactMap(\.wire?.name)).subtracting([Option.user.name])
            #expect(sent.isSubset(of: wireNames), "\(spec.name): \(sent.subtracting(wireNames))")
            // What the wire takes beyond: local options the CLI turns into a flag (--pin-fd,
            // --client-secret-file) and step-up's -- COMMAND.
            let names = Set(spec.options.map(\.name)).union([Option.command.name])
            #expect(wireNames.isSubset(of: names), "\(spec.name): \(wireNames.subtracting(names))")
        }
    }

    /// The text of every Swift file under `directory` (from the package root), its folders' too.
    static func swiftSources(under directory: String) -> [String] {
        var sources: [String] = []
        func walk(_ directory: String) {
            guard let handle = opendir(directory) else { return }
            defer { closedir(handle) }
            while let entry = readdir(handle) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name.hasPrefix(".") { continue }
                let path = directory + "/" + name
                if name.hasSuffix(".swift") {
                    sources.append(String(decoding: readFile(path) ?? [], as: UTF8.self))
                } else if Int32(entry.pointee.d_type) == Int32(DT_DIR) {
                    walk(path)
                }
            }
        }
        walk(Paths.packageRoot + "/" + directory)
        return sources
    }

    /// Each sentence of an option error is written once in the sources (SharedMessages), not
    /// once for the CLI and once for the broker.
    @Test func eachSentenceIsWrittenOnce() throws {
        let sentences = [
            "\"Unknown option %1$s. Run with --help to see the options.\"", "\"The option %1$s takes no value.\"",
            "\"The option %1$s needs a value.\"", "\"The option %1$s takes a whole number from %2$s to %3$s.\"",
            "\"The option %1$s takes %2$s.\"", "\"Use --exec on its own, without --print-token or --json.\"",
            "\"The unlock command takes no arguments. To run a command, put it after --exec.\"",
            "\"Say which context to confirm, for example: fingerseal step-up payroll\"",
            "\"Use --check or --end on their own, with only the context.\"",
            "\"Say which context to seal for with --context CONTEXT.\"", "\"Give at most one file to seal.\"",
            "\"Say which sealed file to reveal.\"", "\"Name one finger to forget, or use --all.\"",
        ]
        let sources = Self.swiftSources(under: "Sources")
        #expect(sources.count > 50)
        for sentence in sentences {
            let count = sources.map { $0.components(separatedBy: sentence).count - 1 }.reduce(0, +)
            #expect(count == 1, "\(sentence) is written \(count) times")
        }
    }

    /// No sentence is written both in the CLI's table and in the broker's: one both ends say
    /// is written once, in SharedMessages, and each table forwards to it.
    @Test func noSentenceIsInBothTables() throws {
        /// The msgids of a table: the literal that opens each tr( and trn( (and trn's plural).
        func msgids(_ sources: [String]) -> Set<String> {
            let text = sources.joined(separator: "\n")
            var found = Set<String>()
            func literal(at start: String.Index) -> (String, String.Index)? {
                var index = start, value = ""
                while index < text.endIndex {
                    let character = text[index]
                    if character == "\\" {
                        let next = text.index(after: index)
                        guard next < text.endIndex else { return nil }
                        value.append(character); value.append(text[next])
                        index = text.index(after: next)
                    } else if character == "\"" {
                        return (value, text.index(after: index))
                    } else {
                        value.append(character)
                        index = text.index(after: index)
                    }
                }
                return nil
            }
            for opener in ["tr(\"", "trn(\""] {
                var rest = text.startIndex
                while let range = text.range(of: opener, range: rest..<text.endIndex) {
                    rest = range.upperBound
                    guard let (singular, end) = literal(at: range.upperBound) else { break }
                    found.insert(singular)
                    if opener == "trn(\"", text[end...].hasPrefix(", \""),
                       let (plural, _) = literal(at: text.index(end, offsetBy: 3)) {
                        found.insert(plural)
                    }
                }
            }
            return found
        }
        func file(_ relative: String) throws -> [String] {
            [String(decoding: try #require(readFile(Paths.packageRoot + "/" + relative)), as: UTF8.self)]
        }
        let cli = msgids(try file("Sources/fingerseal/Strings.swift"))
        // The broker's table: the core's Messages by domain, and the sentences only the broker says.
        let broker = msgids(try file("Sources/FingersealCore/Support/Messages.swift")
            + Self.swiftSources(under: "Sources/FingersealCore/Support/Messages") + Self.swiftSources(under: "Sources/Broker/Messages"))
        #expect(cli.count > 50 && broker.count > 300, "the tables were read")
        #expect(cli.intersection(broker).isEmpty, "written in both tables: \(cli.intersection(broker).sorted())")
        // The shared ones are there, once.
        let shared = msgids(try file("Sources/SharedMessages/SharedMessages.swift"))
        #expect(shared.contains("Cancelled.") && shared.isDisjoint(with: cli) && shared.isDisjoint(with: broker))
    }

    // MARK: both ends

    /// A mistake the CLI finds before it asks, and the same mistake in a request from another
    /// client, which only the broker can find: the same sentence, the same outcome.
    @Test func bothEndsSayTheSameSentence() throws {
        let home = try CLIHome()
        let cases: [(cli: [String], wire: [String], error: OptionError)] = [
            (["step-up", "payroll", "--ttl", "90000"], ["step-up", "value=--ttl=90000", "arg=payroll"], .number("--ttl", 1...86_400)),
            (["verify", "--timeout", "0"], ["verify", "value=--timeout=0"], .number("--timeout", 1...600)),
            (["token", "--min-valid", "-1"], ["token", "value=--min-valid=-1"], .number("--min-valid", 0...86_400)),
            (["login", "--flow", "magic"], ["login", "value=--flow=magic"], .choice("--flow", ["device", "password", "browser"])),
            (["status", "--ttl", "60"], ["status", "value=--ttl=60"], .unknown("--ttl")),
            (["forget"], ["forget"], .forgetOneOrAll),
            (["unlock", "--json", "--exec", "true"], ["unlock", "flag=--json", "flag=--exec"], .execAlone),
        ]
        for (cli, wire, error) in cases {
            let sentence = error.message
            let fromCLI = try home.run(cli)
            #expect(fromCLI.status == 2, "\(cli): \(fromCLI.all)")
            #expect(fromCLI.stderr == "fingerseal: error: \(sentence)\n", "\(cli): \(fromCLI.all)")
            let fromBroker = try home.broker.wire(wire)
            #expect(fromBroker.stdout.contains("result: usage \(sentence)\n"), "\(wire): \(fromBroker.all)")
        }
    }
}
