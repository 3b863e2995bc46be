import Glibc

/// Paths of built products and temp directories for tests.
enum Paths {
    /// The directory holding the test binary, and so the other built products; or
    /// FINGERSEAL_BUILD_DIR, where another build of the products is (scripts/sanitize --ci: the
    /// broker, the CLI and the helpers built with ASan, started by these tests).
    static let buildDirectory: String = {
        if let path = getenv("FINGERSEAL_BUILD_DIR") { return String(cString: path) }
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        let exe = count > 0 ? String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) : "."
        // …/debug/fingerselPackageTests.xctest → …/debug
        var parts = exe.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast()
        return parts.joined(separator: "/")
    }()

    static var cli: String { buildDirectory + "/fingerseal" }
    static var agent: String { buildDirectory + "/fingerseal-agent" }
    static var torture: String { buildDirectory + "/vault-torture" }
    /// The PAM module: FINGERSEAL_MODULE, or the Embedded Swift build (scripts/build-module),
    /// rebuilt once per test run when it is older than its sources (SwiftPM does not build it).
    static var module: String { builtModule }

    private static let builtModule: String = {
        if let path = getenv("FINGERSEAL_MODULE") { return String(cString: path) }
        let path = packageRoot + "/.build/embedded/pam_fingerseal.so"
        // Bounded: a compiler that hangs must not hold the suite.
        let build = try? Child.run("/usr/bin/timeout", ["300", packageRoot + "/scripts/build-module", "--if-stale", path])
        if build?.status != 0 {
            let sentence = "The PAM module could not be built (\(build?.stderr ?? "scripts/build-module did not start")); "
                + "run scripts/build-module to see why, or set FINGERSEAL_MODULE to a built pam_fingerseal.so.\n"
            _ = sentence.utf8CString.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count - 1) }
            // Never an older module than the code under test: every test that loads it fails,
            // naming what to do.
            return path + "-could-not-be-built-run-scripts-build-module"
        }
        return path
    }()

    /// The package root (for fixtures): two levels above Tests/TestSupport.
    static let packageRoot: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        return parts.joined(separator: "/")
    }()

    /// Tests/Fixtures (copied from the shared fixtures), or FINGERSEAL_FIXTURES.
    static var fixtures: String {
        if let path = getenv("FINGERSEAL_FIXTURES") { return String(cString: path) }
        return packageRoot + "/Tests/Fixtures"
    }
}

/// A private temp directory, removed with everything in it when dropped.
final class TempDirectory {
    let path: String

    /// `base`: /dev/shm for a memory-backed directory (a session's runtime directory).
    init(base: String = "/tmp") throws {
        var template = Array("\(base)/fingerseal-test-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw TestFailure("mkdtemp failed") }
        path = String(cString: made)
    }

    deinit {
        _ = Child.runQuietly("/bin/rm", ["-rf", path])
    }

    func file(_ name: String) -> String { path + "/" + name }
}

extension Child {
    static func runQuietly(_ path: String, _ arguments: [String]) -> Int32 {
        (try? run(path, arguments).status) ?? -1
    }
}

func readFile(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = read(fd, &chunk, chunk.count)
        if count <= 0 { break }
        bytes += chunk[..<count]
    }
    return bytes
}

func writeFile(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o600) {
    writeFile(path, bytes, flags: O_TRUNC, mode: mode)
}

/// Adds `bytes` at the end of the file (made when missing): one write, so lines of processes
/// appending at once stay whole.
func appendToFile(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o644) {
    writeFile(path, bytes, flags: O_APPEND, mode: mode)
}

private func writeFile(_ path: String, _ bytes: [UInt8], flags: Int32, mode: mode_t) {
    let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | flags, mode)
    guard fd >= 0 else { return }
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}
