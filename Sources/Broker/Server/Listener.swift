import Glibc
import SystemKit
import SystemdKit

/// The listening socket: handed over by systemd (fingerseal.socket, LISTEN_FDS) or bound by
/// the broker itself with `--socket PATH` (tests, the demo, containers).
public struct Listener {
    public let fd: Int32
    /// Socket activation: systemd restarts the broker on the next connection, so it may
    /// exit when idle.
    public let activated: Bool

    /// The descriptor systemd passed, if any: exactly one SOCK_SEQPACKET listening socket.
    public static func activated() throws -> Listener? {
        let count = ServiceManager.listenedSockets()
        guard count > 0 else { return nil }
        guard count == 1 else { throw BrokerStartError("expected one socket from systemd, got \(count)") }
        let fd = ServiceManager.firstListenedFD
        guard ServiceManager.isListeningUnixSocket(fd, type: Int32(SOCK_SEQPACKET.rawValue)) else {
            throw BrokerStartError("the socket from systemd is not a listening SOCK_SEQPACKET unix socket")
        }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return Listener(fd: fd, activated: true)
    }

    /// Binds `path` (mode 0666: anyone may ask; the broker decides who may do what). A stale
    /// socket file is replaced; any other file there is refused.
    public static func bind(path: String) throws -> Listener {
        let fd = try syscall("socket") { socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw BrokerStartError("the socket path is too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (index, byte) in bytes.enumerated() { raw[index] = byte } }
        var info = stat()
        if lstat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFSOCK else {
                close(fd)
                throw BrokerStartError("\(path) exists and is not a socket")
            }
            unlink(path)
        }
        let previous = umask(0)
        defer { umask(previous) }
        do {
            _ = try syscall("bind", path) {
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
                }
            }
            _ = try syscall("chmod", path) { chmod(path, 0o666) }
            _ = try syscall("listen", path) { listen(fd, 128) }
        } catch {
            close(fd)
            throw error
        }
        return Listener(fd: fd, activated: false)
    }
}

public struct BrokerStartError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
