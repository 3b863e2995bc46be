import Glibc

/// The fault-injection library (Tests/Helpers/fault-inject/fault.c, built by
/// scripts/build-fault-inject): LD_PRELOADed into a process under test, it fails chosen C
/// library calls, each at a site (the call and its callers, hashed) it names in its log.
enum FaultLibrary {
    /// The built library, or nil (with the reason on stderr) when it cannot be built.
    static let path: String? = {
        let path = Paths.packageRoot + "/.build/fault-inject/libfault.so"
        let build = try? Child.run("/usr/bin/timeout", ["120", Paths.packageRoot + "/scripts/build-fault-inject", path])
        guard build?.status == 0 else {
            let sentence = "The fault-injection library could not be built: \(build?.all ?? "no gcc").\n"
            _ = sentence.utf8CString.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count - 1) }
            return nil
        }
        return path
    }()

    static var available: Bool { path != nil }

    /// The calls each run may fail, by the library's group names.
    static let allGroups = ["malloc", "open", "read", "write", "fsync", "rename", "socket", "connect", "sendmsg", "recvmsg", "poll"]

    /// The groups where an interrupted call (EINTR) is a failure the code must retry or report.
    static let interruptible: Set<String> = ["open", "read", "write", "connect", "sendmsg", "recvmsg", "poll"]

    /// The environment that loads the library into a process, before what `preload` already
    /// holds (pam_wrapper), with `settings` ("FAULT_CALL": "write", ...).
    static func environment(_ settings: [String: String], preload: String? = nil) -> [String: String] {
        var environment = settings
        environment["LD_PRELOAD"] = [path ?? "", preload].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: ":")
        // A trap ends the process at once: Swift's backtracer would inherit the library (and
        // its armed faults) and hold the dying process up to 30 s.
        environment["SWIFT_BACKTRACE"] = "enable=no"
        return environment
    }
}

/// A place where the library can fail a call: the group, the symbol called, the site's hash
/// and its callers (object + offset), as the log names them.
struct FaultSite: Hashable {
    let group: String
    let symbol: String
    let hash: String
    let frames: String

    /// The caller the call was made from ("object+offset").
    private var innermost: Substring { frames.split(separator: " ").first ?? "" }

    /// An allocation the Swift runtime makes itself (its innermost caller is in libswiftCore).
    var isTheSwiftRuntimes: Bool { innermost.hasPrefix("libswiftCore.so+") }

    /// An allocation whose failure ends the process by its allocator's design: the Swift
    /// runtime's (a trap), or GLib's g_malloc (libfprint's and fprintd's, an abort).
    var endsTheProcessByDesign: Bool { isTheSwiftRuntimes || innermost.hasPrefix("libglib-2.0.so") }

    /// Parses the log's "site GROUP SYMBOL HASH FRAMES..." lines, first sight first.
    static func parse(_ log: String) -> [FaultSite] {
        var seen = Set<String>()
        var sites: [FaultSite] = []
        for line in log.split(separator: "\n") where line.hasPrefix("site ") {
            let parts = line.split(separator: " ", maxSplits: 4)
            guard parts.count >= 4, seen.insert(String(parts[3])).inserted else { continue }
            sites.append(FaultSite(group: String(parts[1]), symbol: String(parts[2]), hash: String(parts[3]),
                                   frames: parts.count > 4 ? String(parts[4]) : ""))
        }
        return sites
    }

    /// The hashes of the sites the log says were failed.
    static func failed(_ log: String) -> [String] {
        log.split(separator: "\n").filter { $0.hasPrefix("fail ") }.compactMap { $0.split(separator: " ").dropFirst(3).first }
            .map(String.init)
    }
}

/// The file a sweep shares with a long-running process under the library (the broker): its
/// start-up is never failed, and each run arms it with new settings (FAULT_CONTROL).
final class FaultControl {
    let path: String
    private let fd: Int32

    init(path: String) throws {
        self.path = path
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw TestFailure("cannot create \(path)") }
        let zeros = [UInt8](repeating: 0, count: 4096)
        guard zeros.withUnsafeBytes({ pwrite(fd, $0.baseAddress, $0.count, 0) }) == 4096 else { throw TestFailure("cannot write \(path)") }
    }

    deinit { close(fd) }

    private var generation: UInt32 = 0

    /// Counts and fails calls from now on, as `settings` say ("FAULT_CALL=write FAULT_SITE=…").
    func arm(_ settings: String) {
        disarm()
        var text = Array(settings.utf8.prefix(4000)) + [0]
        _ = text.withUnsafeMutableBytes { pwrite(fd, $0.baseAddress, $0.count, 64) }
        setWord(at: 8, 0)
        setWord(at: 12, 0)
        generation += 1
        setWord(at: 0, generation)
        setWord(at: 4, 1)
    }

    func disarm() { setWord(at: 4, 0) }

    /// Matching calls seen and failures injected since the last `arm`.
    var calls: UInt32 { word(at: 8) }
    var faults: UInt32 { word(at: 12) }

    private func setWord(at offset: off_t, _ value: UInt32) {
        var value = value
        _ = pwrite(fd, &value, 4, offset)
    }

    private func word(at offset: off_t) -> UInt32 {
        var value: UInt32 = 0
        _ = pread(fd, &value, 4, offset)
        return value
    }
}

/// A log file the library appends to, read a run at a time.
final class FaultLog {
    let path: String
    private var offset = 0

    init(path: String) {
        self.path = path
        writeFile(path, [])
    }

    /// What was appended since the last call.
    func fresh() -> String {
        let bytes = readFile(path) ?? []
        defer { offset = bytes.count }
        return String(decoding: bytes.dropFirst(offset), as: UTF8.self)
    }
}

/// What one path's sweep found: its runs, the sites seen and failed, and every finding.
final class FaultTally {
    let path: String
    var runs = 0
    var seen = Set<String>()
    var failed = Set<String>()
    /// Deaths of a full-Swift process from a failed allocation (the runtime's allocator traps by
    /// design; its own caches die of SIGSEGV), in the broker or the CLI, never the module:
    /// counted, judged on what the other side said and left behind.
    var allocationTraps = 0
    var findings: [String] = []

    init(path: String) { self.path = path }

    var line: String {
        "\(path): \(runs) runs, \(seen.count) points seen, \(failed.count) distinct points failed, "
            + "\(allocationTraps) allocator traps, \(findings.count) findings"
    }

    /// Appends the line to FAULT_REPORT (make faults prints the table from it).
    func report() {
        print("fault injection: " + line)
        guard let report = getenv("FAULT_REPORT").map({ String(cString: $0) }) else { return }
        appendToFile(report, Array("\(path)\t\(runs)\t\(seen.count)\t\(failed.count)\t\(allocationTraps)\t\(findings.count)\n".utf8))
        // The findings themselves beside the table (the test's own output comes at its end).
        if !findings.isEmpty { appendToFile(report + ".findings", Array(findings.map { "\(path): \($0)\n" }.joined().utf8)) }
    }
}

/// Which sites a sweep fails: all of them (`make faults`, FAULT_SWEEP=full), or a few of each
/// group for `make check` (seeded, so a run can be repeated), and with which errno.
struct FaultPlan {
    let full: Bool
    let perGroup: Int
    let seed: UInt64

    static var current: FaultPlan {
        let full = getenv("FAULT_SWEEP").map { String(cString: $0) == "full" } ?? false
        let seed = getenv("FAULT_SEED").flatMap { UInt64(String(cString: $0)) } ?? 24
        return FaultPlan(full: full, perGroup: full ? Int.max : 1, seed: seed)
    }

    /// In a full sweep, how many of a path's allocations that end the process by design
    /// (`FaultSite.endsTheProcessByDesign`: the Swift runtime's, GLib's) are failed: each of
    /// them ends the same way, and each costs a broker's restart, so a seeded sample of them
    /// is failed, and every other site.
    static let allocationsEndingByDesign = 40

    /// (site, errno) pairs: every selected site with its group's harshest errno, and in a full
    /// sweep an interrupted call too where one can be.
    func runs(_ sites: [FaultSite], groups: Set<String>) -> [(site: FaultSite, errno: String?)] {
        var generator = SeededGenerator(seed: seed)
        var chosen: [FaultSite] = []
        for group in FaultLibrary.allGroups where groups.contains(group) {
            var ofGroup = sites.filter { $0.group == group }
            if full && group == "malloc" {
                var byDesign = ofGroup.filter(\.endsTheProcessByDesign)
                byDesign.shuffle(using: &generator)
                ofGroup = ofGroup.filter { !$0.endsTheProcessByDesign } + byDesign.prefix(FaultPlan.allocationsEndingByDesign)
            }
            if ofGroup.count > perGroup {
                ofGroup.shuffle(using: &generator)
                ofGroup = Array(ofGroup.prefix(perGroup))
            }
            chosen += ofGroup
        }
        var runs: [(site: FaultSite, errno: String?)] = chosen.map { ($0, nil) }
        if full { runs += chosen.filter { FaultLibrary.interruptible.contains($0.group) }.map { ($0, "EINTR") } }
        return runs
    }
}

/// xorshift64: the same seed picks the same sites.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed == 0 ? 0x9e37_79b9_7f4a_7c15 : seed }
    mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }
}

/// What a person must see when something failed: a whole sentence, and no runtime's trap.
enum FaultVerdict {
    static let trapWords = ["Fatal error", "Swift runtime failure", "Illegal instruction", "Segmentation fault", "core dumped",
                            "Could not allocate memory", "Stack dump", "Aborted"]

    /// The runtime's trap message in `output`, if any.
    static func trap(in output: String) -> String? { trapWords.first { output.contains($0) } }

    /// Whether `output` holds a whole sentence (a capital, words, a full stop).
    static func hasSentence(_ output: String) -> Bool {
        output.split(whereSeparator: { $0 == "\n" }).contains { whole in
            // After the speaker's name ("fingerseal: error: …", "pamtester: …").
            var line = whole[...]
            while let colon = line.range(of: ": "), !line[..<colon.lowerBound].contains(" ") { line = line[colon.upperBound...] }
            let words = line.split(separator: " ")
            guard let first = line.first(where: { $0.isLetter }) else { return false }
            return first.isUppercase && words.count >= 3 && (line.hasSuffix(".") || line.contains(". "))
        }
    }
}
