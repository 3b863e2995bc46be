import Foundation
import Glibc

/// A Python http.server on 127.0.0.1:<ephemeral> for one test, answering with `handler`: the
/// source of a `class Handler(http.server.BaseHTTPRequestHandler)`. It prints its port once it
/// listens; reading that line (with a deadline) is the readiness signal.
final class PythonHTTPServer {
    let port: Int
    private let process: Process

    init(handler: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", "import http.server, sys\n\n" + handler + """

            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            print(server.server_address[1], flush=True)
            server.serve_forever()
            """]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let fd = output.fileHandleForReading.fileDescriptor
        guard let line = readLine(fd: fd, timeoutMS: 10_000), let port = Int(line) else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw TestFailure("the test HTTP server did not start")
        }
        self.process = process
        self.port = port
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

/// Reads one line from `fd`, waiting at most `timeoutMS` in total.
private func readLine(fd: Int32, timeoutMS: Int) -> String? {
    let deadline = ContinuousClock.now + .milliseconds(timeoutMS)
    var bytes: [UInt8] = []
    while ContinuousClock.now < deadline {
        let remaining = deadline - ContinuousClock.now
        let ms = max(1, Int(remaining.components.seconds * 1000) + Int(remaining.components.attoseconds / 1_000_000_000_000_000))
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&poller, 1, Int32(ms))
        if ready < 0 && errno == EINTR { continue }
        guard ready > 0 else { return nil }
        var byte: UInt8 = 0
        guard read(fd, &byte, 1) == 1 else { return nil }
        if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
        bytes.append(byte)
    }
    return nil
}
