// What the benchmarks share: failing with a message, and libfprint's virtual drivers' sockets.
import Glibc

/// Ends the benchmark with "PROGRAM: message" on stderr.
public func fail(_ message: String) -> Never {
    let program = CommandLine.arguments.first.map { String($0.split(separator: "/").last ?? Substring($0)) } ?? "bench"
    let line = Array("\(program): \(message)\n".utf8)
    _ = line.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    exit(1)
}

/// Connects to the driver's socket (libfprint creates it at open).
public func connectSocket(_ path: String) -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (index, byte) in Array(path.utf8).prefix(raw.count - 1).enumerated() { raw[index] = byte }
    }
    let rc = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    if rc != 0 { fail("cannot connect to \(path)") }
    var limit = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    return fd
}

/// virtual_device: one command per connection; EOF means the driver took it.
public func command(_ text: String, _ path: String) {
    let fd = connectSocket(path)
    defer { close(fd) }
    let bytes = Array(text.utf8)
    _ = write(fd, bytes, bytes.count)
    var byte: UInt8 = 0
    while read(fd, &byte, 1) > 0 {}
}
