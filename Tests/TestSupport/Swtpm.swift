import Foundation
import Glibc

/// A swtpm simulator on 127.0.0.1 for one test (`--flags not-need-init,startup-clear`, free
/// ports); `stop()` (or dropping it) kills it and removes its state. Each instance is another
/// TPM: another endorsement and owner seed, as on another machine.
final class SwtpmProcess {
    let port: UInt16
    private let process: Process
    private let stateDir: URL
    private var stopped = false

    init() throws {
        stateDir = FileManager.default.temporaryDirectory
            .appendingPathComponent("tpmkit-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: stateDir, withIntermediateDirectories: false)
        var started: Process?
        var chosen: UInt16 = 0
        do {
            // swtpm needs two adjacent ports; another process may grab them between our probe
            // and swtpm's bind, so retry a few times with fresh ports.
            for _ in 0..<5 {
                let port = try freePortPair()
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/swtpm")
                process.arguments = ["socket", "--tpm2",
                                     "--server", "type=tcp,port=\(port),bindaddr=127.0.0.1",
                                     "--ctrl", "type=tcp,port=\(port + 1),bindaddr=127.0.0.1",
                                     "--tpmstate", "dir=\(stateDir.path)",
                                     "--flags", "not-need-init,startup-clear"]
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                try process.run()
                if waitUntilAccepting(port: port, process: process, deadline: .now + .seconds(10)) {
                    started = process
                    chosen = port
                    break
                }
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        } catch {
            try? FileManager.default.removeItem(at: stateDir)
            throw error
        }
        guard let started else {
            try? FileManager.default.removeItem(at: stateDir)
            throw SwtpmStartFailure()
        }
        process = started
        port = chosen
    }

    var tcti: String { "swtpm:host=127.0.0.1,port=\(port)" }

    deinit { stop() }

    func stop() {
        guard !stopped else { return }
        stopped = true
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: stateDir)
    }
}

struct SwtpmStartFailure: Error {}

/// Binds port 0 to learn a free port P whose neighbour P+1 is also free.
func freePortPair() throws -> UInt16 {
    for _ in 0..<50 {
        let first = try BoundSocket(port: 0)
        guard first.port < UInt16.max, (try? BoundSocket(port: first.port + 1)) != nil else { continue }
        return first.port
    }
    throw SwtpmStartFailure()
}

/// Readiness polling with a deadline: retry connect until swtpm accepts or exits.
func waitUntilAccepting(port: UInt16, process: Process, deadline: ContinuousClock.Instant) -> Bool {
    while ContinuousClock.now < deadline {
        guard process.isRunning else { return false }
        if canConnect(port: port) { return true }
        usleep(10_000)
    }
    return false
}

func loopback(port: UInt16) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    return address
}

func canConnect(port: UInt16) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = loopback(port: port)
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
}

/// A TCP socket bound (not listening) on 127.0.0.1; closed on deinit.
final class BoundSocket {
    let fd: Int32
    let port: UInt16

    init(port: UInt16) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SwtpmStartFailure() }
        var address = loopback(port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) == 0 }
        }
        guard bound, named else {
            close(fd)
            throw SwtpmStartFailure()
        }
        self.fd = fd
        self.port = UInt16(bigEndian: actual.sin_port)
    }

    deinit { close(fd) }
}

