import FoundationEssentials
import Glibc
import FingersealCore
import Testing
@testable import TestSupport

/// The soak (issue 24 §4): many PAM authentications through one broker, from four hosts at
/// once (`pam-soak`, each many transactions in one process on a terminal it leads), for two
/// accounts, mixing a match, no match then the password, no match then the PIN, Ctrl-C, and a
/// timeout. The reader is one device: the hosts queue for it, and each host sends its scan when
/// its own prompt to scan arrives, so the scan reaches that request's turn and the mix stays
/// what the plan says. Over the run the broker's RSS, descriptors and threads stay flat; every
/// transaction ends as its kind must; and after the broker stopped (writing the attempts it
/// counted) each account's audit trail verifies and holds one unlock per match and per PIN,
/// and one fallback per failed finger and per PIN skipped, by reason.
///
/// `make check` runs a short soak (`FINGERSEAL_SOAK`, 200 by default; the fprintd one
/// `FINGERSEAL_SOAK_FPRINTD`, 100); `make soak` runs 10,000 and 1,000. Figures are printed
/// (and kept in .build/test-output/SoakTests/).
@Suite(.serialized) struct SoakTests {
    static let pin = "3917"
    static let password = "soak-password"
    static let accounts = [TestUsers.alice, TestUsers.bob]
    /// Each account's print on the virtual reader.
    static func print(_ account: String) -> String { "soak-" + account }
    static let hosts = 4

    static var count: Int { environmentCount("FINGERSEAL_SOAK") ?? 200 }
    static var fprintdCount: Int { environmentCount("FINGERSEAL_SOAK_FPRINTD") ?? 100 }

    static func environmentCount(_ name: String) -> Int? {
        getenv(name).flatMap { Int(String(cString: $0)) }.flatMap { $0 >= hosts ? $0 : nil }
    }

    static var skip: String? {
        guard getuid() == 0 else { return "needs root (test accounts)" }
        return Pamtester.available ? nil : "pam_wrapper (pam_matrix) is missing"
    }

    /// What one transaction is, by its place in the run: per 100, 40 matches, 20 no match then
    /// the password, 20 no match then the PIN, 19 Ctrl-C, 1 timeout (the only kind that holds
    /// the reader for long: timeout=1). Accounts alternate.
    static func step(_ index: Int) -> (account: String, kind: String) {
        let slot = index % 100
        let kind = slot == 99 ? "timeout" : slot < 40 ? "match" : slot < 60 ? "nomatch-password" : slot < 80 ? "pin" : "cancel"
        return (accounts[(index / 3) % 2], kind)
    }

    /// The broker's resident memory (kB), descriptors and threads, from /proc.
    struct Usage: CustomStringConvertible {
        let rss: Int
        let fds: Int
        let threads: Int

        init(_ pid: pid_t) {
            let status = String(decoding: readFile("/proc/\(pid)/status") ?? [], as: UTF8.self)
            func field(_ name: String) -> Int {
                let line = status.split(separator: "\n").first { $0.hasPrefix(name + ":") } ?? ""
                return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") ?? -1
            }
            rss = field("VmRSS")
            threads = field("Threads")
            var count = 0
            if let directory = opendir("/proc/\(pid)/fd") {
                while let entry = readdir(directory) {
                    if withUnsafeBytes(of: entry.pointee.d_name, { $0[0] }) != UInt8(ascii: ".") { count += 1 }
                }
                closedir(directory)
            }
            fds = count
        }

        var description: String { "RSS \(rss) kB, fds \(fds), threads \(threads)" }
    }

    /// The stacks the hosts use: fingerseal with the PIN and one try, then pam_matrix as the
    /// password; `soak-timeout` waits one second for the finger.
    static func writeServices(_ directory: String, socket: String, passdb: String) {
        _ = mkdir(directory, 0o755)
        for (service, timeout) in [("soak", 15), ("soak-timeout", 1)] {
            let text = """
                auth [success=done default=ignore] \(Paths.module) socket=\(socket) pin max_tries=1 max_fails=100 timeout=\(timeout)
                auth required \(Pamtester.matrix) passdb=\(passdb)

                """
            writeFile(directory + "/" + service, Array(text.utf8), mode: 0o644)
        }
        let lines = accounts.flatMap { account in ["soak", "soak-timeout"].map { "\(account):\(password):\($0)\n" } }
        writeFile(passdb, Array(lines.joined().utf8))
    }

    /// Runs transactions `range` from `hosts` hosts at once; returns each "USER KIND" with how
    /// many ended as expected and not, and the unexpected ones' descriptions.
    static func run(_ range: Range<Int>, services: String, sensor: String, scratch: TempDirectory,
                    environment: [String: String] = [:]) throws -> (expected: [String: Int], unexpected: [String: Int], notes: [String]) {
        var children: [Child] = []
        for host in 0..<hosts {
            let plan = scratch.file("plan-\(host)")
            let lines = range.filter { $0 % hosts == host }.map { index -> String in
                let (account, kind) = step(index)
                return "\(kind == "timeout" ? "soak-timeout" : "soak") \(account) \(kind) \(print(account)) \(pin) \(password)\n"
            }
            writeFile(plan, Array(lines.joined().utf8))
            children.append(try Child(Paths.buildDirectory + "/pam-soak", [services, sensor, plan],
                                      environment: ["PATH": "/usr/bin:/bin"].merging(environment) { $1 }, terminal: .leader))
        }
        var expected: [String: Int] = [:], unexpected: [String: Int] = [:], notes: [String] = []
        for child in children {
            // Bounded: a transaction waits at most the module's own bounds; 1,000 take seconds.
            let result = child.finish(limit: 600)
            if result.status != 0 { notes.append("host exited \(result.status): \(result.stderr)") }
            for line in result.stdout.split(separator: "\n") {
                let fields = line.split(separator: " ")
                if fields.first == "tally", fields.count == 7 {
                    let key = "\(fields[1]) \(fields[2])"
                    expected[key, default: 0] += Int(fields[4]) ?? 0
                    unexpected[key, default: 0] += Int(fields[6]) ?? 0
                } else if fields.first == "unexpected" || (fields.first == "stray-interrupts" && fields.last != "0") {
                    notes.append(String(line))
                }
            }
        }
        return (expected, unexpected, notes)
    }

    /// What the plan holds for `range`: "USER KIND" → count.
    static func planned(_ range: Range<Int>) -> [String: Int] {
        var counts: [String: Int] = [:]
        for index in range {
            let (account, kind) = step(index)
            counts["\(account) \(kind)", default: 0] += 1
        }
        return counts
    }

    /// An account's audit trail, through the CLI as root: unlocks by method, fallbacks by
    /// reason (one by one, and in the attempts' counts), and what --verify says.
    struct Trail {
        var unlocks: [String: Int] = [:]
        var fallbacks: [String: Int] = [:]
        var verify = ""
        var verified = false
    }

    private struct Entry: Decodable {
        struct Count: Decodable {
            let event: String
            let reason: String?
            let count: Int
        }
        let event: String
        let method: String?
        let reason: String?
        let counts: [Count]?
    }

    static func trail(_ rig: ReaderBroker, _ account: String) throws -> Trail {
        var trail = Trail()
        let listing = try rig.cli(["audit", "--json", "--user", account])
        for line in listing.stdout.split(separator: "\n") {
            guard let entry = try? JSONDecoder().decode(Entry.self, from: Data(line.utf8)) else { continue }
            if entry.event == "unlock" { trail.unlocks[entry.method ?? "?", default: 0] += 1 }
            if entry.event == "fallback" { trail.fallbacks[entry.reason ?? "?", default: 0] += 1 }
            for count in entry.counts ?? [] where count.event == "fallback" {
                trail.fallbacks[count.reason ?? "?", default: 0] += count.count
            }
        }
        let verify = try rig.cli(["audit", "--verify", "--user", account])
        trail.verify = verify.all.split(separator: "\n").joined(separator: " ")
        trail.verified = verify.status == 0
        return trail
    }

    /// The whole soak against `rig`'s broker; prints and keeps its figures under `name`.
    static func soak(_ name: String, rig: ReaderBroker, sensor: String, total: Int, environment: [String: String] = [:]) throws {
        let services = rig.files.file("soak.d")
        writeServices(services, socket: rig.broker.socketPath, passdb: rig.files.file("passdb"))
        let scratch = try TempDirectory()
        guard let pid = rig.broker.process?.pid else { throw TestFailure("no broker") }
        // Checkpoints: 0, then every 1,000 (or a tenth of a short run), and the end.
        let stride = total >= 2000 ? 1000 : max(total / 2, hosts)
        var marks = Array(Swift.stride(from: 0, to: total, by: stride)) + [total]
        marks = marks.reduce(into: []) { if $0.last != $1 { $0.append($1) } }
        var usage: [(Int, Usage)] = [(0, Usage(pid))]
        var report = ["\(name): \(total) PAM authentications, \(hosts) hosts, accounts \(accounts.joined(separator: " "))",
                      "after 0: \(usage[0].1)"]
        Swift.print(report[1])
        var expected: [String: Int] = [:], unexpected: [String: Int] = [:], notes: [String] = []
        let started = VirtualSensor.now()
        for (from, to) in zip(marks, marks.dropFirst()) {
            let phase = try run(from..<to, services: services, sensor: sensor, scratch: scratch, environment: environment)
            expected.merge(phase.expected, uniquingKeysWith: +)
            unexpected.merge(phase.unexpected, uniquingKeysWith: +)
            notes += phase.notes
            usage.append((to, Usage(pid)))
            let line = "after \(to): \(usage.last!.1) (\(Int(VirtualSensor.now() - started)) s)"
            report.append(line)
            Swift.print(line)
        }
        let seconds = VirtualSensor.now() - started
        report.append("took \(Int(seconds)) s, \(Int(Double(total) / seconds)) authentications/s")
        let plannedCounts = planned(0..<total)
        for key in plannedCounts.keys.sorted() {
            report.append("\(key): planned \(plannedCounts[key]!), as expected \(expected[key] ?? 0), unexpected \(unexpected[key] ?? 0)")
        }
        report += notes.prefix(20)
        #expect(expected == plannedCounts, "every transaction ends as its kind must: \(notes.prefix(10))")
        #expect(unexpected.values.reduce(0, +) == 0)

        // Flat: from the first checkpoint on (the reader opened, the threads started), no growth
        // that follows the count. Threads: the idle connection threads (at most 4) may come and go.
        let first = usage[1].1, last = usage.last!.1
        // A short run (make check's) checks at its middle, which can come before every
        // connection thread has started and opened what it keeps; the long run allows nothing.
        let fdSlack = total >= 2000 ? 0 : 4
        #expect(last.fds <= first.fds + fdSlack, "descriptors grew: \(first) → \(last)")
        #expect(last.threads <= first.threads + 4, "threads grew: \(first) → \(last)")
        #expect(last.rss <= first.rss + 16 * 1024, "memory grew: \(first) → \(last)")

        // The attempts the broker counted in memory are written as it stops; then the trail.
        #expect(rig.broker.terminate() == 0)
        try rig.broker.start()
        for account in accounts {
            let trail = try trail(rig, account)
            let kinds = { (kind: String) in plannedCounts["\(account) \(kind)"] ?? 0 }
            report.append("\(account): unlocks \(trail.unlocks.sorted { $0.key < $1.key }), fallbacks \(trail.fallbacks.sorted { $0.key < $1.key }); \(trail.verify)")
            #expect(trail.verified, "\(trail.verify)")
            #expect(trail.unlocks == ["finger": kinds("match"), "pin": kinds("pin")].filter { $0.value > 0 }, "\(account): \(trail.unlocks)")
            // A fallback per failed finger, by why: no match (then the PIN or its skip), a
            // timeout; and "cancelled" for Ctrl-C and for the PIN skipped to the password.
            let fallbacks = ["noMatch": kinds("nomatch-password") + kinds("pin"), "timedOut": kinds("timeout"),
                             "cancelled": kinds("cancel") + kinds("nomatch-password") + kinds("timeout")]
            #expect(trail.fallbacks == fallbacks.filter { $0.value > 0 }, "\(account): \(trail.fallbacks)")
        }
        let text = report.joined(separator: "\n") + "\n"
        Swift.print(text, terminator: "")
        let output = Paths.packageRoot + "/.build/test-output/SoakTests"
        _ = Child.runQuietly("/bin/mkdir", ["-p", output])
        writeFile(output + "/\(name).txt", Array(text.utf8), mode: 0o644)
    }

    /// The accounts' vaults: a PIN, then a finger (the virtual reader scanning its print).
    static func prepare(_ rig: ReaderBroker, enroll: Bool, sensor: (String) throws -> Void) throws {
        for account in accounts {
            #expect(TestUsers.ensure(account))
            // Made by root (kiosk provisioning: no account password), enrolled by the account.
            let set = try rig.cli(["pin", "set", "--user", account, "--pin-fd", "3"], fd3: pin + "\n")
            #expect(set.status == 0, "\(set.all)")
            guard enroll else { continue }
            let child = try rig.startCLI(["enroll", "--finger", "right-index-finger", "--pin-fd", "3"], fd3: pin + "\n", as: account)
            for _ in 0..<5 { try sensor("SCAN \(print(account))") }
            let enrolled = child.finish()
            #expect(enrolled.status == 0, "\(enrolled.all)")
        }
    }

    @Test(.enabled(if: skip == nil)) func libfprintSoak() throws {
        let rig = try ReaderBroker()
        try SoakTests.prepare(rig, enroll: true) { try VirtualSensor.send($0, to: rig.sensor) }
        try SoakTests.soak("libfprint", rig: rig, sensor: rig.sensor, total: SoakTests.count)
    }

    @Test(.enabled(if: skip == nil && PrivateSystemBus.available)) func fprintdSoak() throws {
        let bus = try PrivateSystemBus()
        defer { bus.stop() }
        for account in SoakTests.accounts {
            #expect(TestUsers.ensure(account))
            try bus.enrollWithFprintdEnroll(user: account, scanID: SoakTests.print(account))
        }
        let rig = try ReaderBroker(config: "reader=auto\nfprintd_storage=\(bus.stateDirectory)\n",
                                   extraEnvironment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        try SoakTests.prepare(rig, enroll: false) { _ in }
        try SoakTests.soak("fprintd", rig: rig, sensor: bus.sensorPath, total: SoakTests.fprintdCount,
                           environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        #expect(access(rig.sensor, F_OK) != 0, "the broker opened libfprint's device itself")
    }
}
