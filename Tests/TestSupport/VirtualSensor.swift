import Glibc

/// Client side of libfprint's virtual drivers' sockets. libfprint creates the socket when
/// the device is opened; every wait here is bounded.
enum VirtualSensor {
    /// virtual_device / virtual_device_storage: one command per connection; the driver
    /// closes the connection once it has taken the command. Returns what it answered.
    @discardableResult
    static func send(_ command: String, to path: String, timeout: Double = 10) throws -> String {
        let fd = try connect(path, timeout: timeout)
        defer { close(fd) }
        let bytes = Array(command.utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else { throw TestFailure("write to \(path) failed") }
        var answer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fd, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            if count < 0 { throw TestFailure("no answer to \(command) within \(timeout) s") }
            if count == 0 { break }
            answer += chunk[..<count]
        }
        return String(decoding: answer, as: UTF8.self)
    }

    /// Connects, retrying until the socket exists (readiness, bounded by `timeout`).
    static func connect(_ path: String, timeout: Double) throws -> Int32 {
        let deadline = now() + timeout
        while true {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { throw TestFailure("socket failed") }
            let connected = withUnixAddress(path) { Glibc.connect(fd, $0, $1) }
            if connected == 0 {
                var limit = timeval(tv_sec: Int(timeout), tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
                return fd
            }
            close(fd)
            guard now() < deadline else { throw TestFailure("socket \(path) did not appear within \(timeout) s") }
            var pause = timespec(tv_sec: 0, tv_nsec: 5_000_000)
            nanosleep(&pause, nil)
        }
    }

    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

/// virtual_image: one persistent connection carrying images (int32 w, int32 h, w*h bytes).
final class VirtualImageSensor {
    private let fd: Int32

    init(path: String, timeout: Double = 10) throws {
        fd = try VirtualSensor.connect(path, timeout: timeout)
    }

    deinit { close(fd) }

    /// Sends a ready-made payload (the fixtures' *.fpimg files are exactly that).
    func send(_ payload: [UInt8]) throws {
        var offset = 0
        while offset < payload.count {
            let written = payload[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard written > 0 else { throw TestFailure("write to virtual_image failed") }
            offset += written
        }
    }

    static func fixture(_ name: String) throws -> [UInt8] {
        let path = Paths.fixtures + "/prints/" + name
        guard let bytes = readFile(path) else { throw TestFailure("missing fixture \(path)") }
        return bytes
    }
}

/// Calls `body` with a sockaddr_un for `path` (as sockaddr) and its length.
func withUnixAddress<T>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (index, byte) in Array(path.utf8).prefix(raw.count - 1).enumerated() { raw[index] = byte }
    }
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
}
