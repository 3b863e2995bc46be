import CLinux
import Glibc
import SystemKit

/// Why a connection could not be used.
public enum ConnectionError: Error, Equatable, Sendable {
    /// No broker at the path (not installed, not running, socket missing or refused).
    case unreachable(Int32)
    case timedOut
    case closed
    case protocolError(WireError)
    case system(String, Int32)
}

/// One SOCK_SEQPACKET connection: a message per packet, every wait bounded, no SIGPIPE.
/// Owns its descriptor.
public final class WireConnection: @unchecked Sendable {
    public let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: Wire.maxPacket + 1)

    public init(owning fd: Int32) { self.fd = fd }

    deinit {
        finishReading()
        Wire.wipe(&buffer)
        close(fd)
    }

    /// Before the close: stop the peer from sending more, then read away what it already sent.
    /// A Unix socket closed with unread packets makes the peer's next read fail with
    /// ECONNRESET, even where our last message (a refusal, a result) waits for it to read.
    private func finishReading() {
        shutdown(fd, Int32(SHUT_RD))
        for _ in 0..<4096 {
            let count = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count <= 0 && errno != EINTR { break }
        }
    }

    /// Connects to the broker at `path` within `timeout` seconds.
    public static func connect(path: String, timeout: Double) throws(ConnectionError) -> WireConnection {
        let fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw .system("socket", errno) }
        let connection = WireConnection(owning: fd)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw .unreachable(ENAMETOOLONG) }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if rc != 0 {
            let code = errno
            guard code == EINPROGRESS || code == EAGAIN || code == EINTR else { throw .unreachable(code) }
            // A full backlog: wait (bounded) for the broker to take us.
            var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let ready = poll(&pfd, 1, Int32(max(timeout, 0) * 1000))
            guard ready > 0 else { throw ready == 0 ? .timedOut : .unreachable(errno) }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
            guard error == 0 else { throw .unreachable(error) }
        }
        return connection
    }

    /// Sends one packet, waiting at most until `deadline` for room.
    public func send(_ packet: [UInt8], until deadline: Double) throws(ConnectionError) {
        guard packet.count <= Wire.maxPacket else { throw .protocolError(.tooLarge) }
        while true {
            let sent = packet.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent == packet.count { return }
            let code = errno
            if sent >= 0 || code == EPIPE || code == ECONNRESET { throw .closed }
            if code == EINTR { continue }
            guard code == EAGAIN else { throw .system("send", code) }
            var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let remaining = deadline - monotonicSeconds()
            guard remaining > 0 else { throw .timedOut }
            _ = poll(&pfd, 1, Int32(min(remaining * 1000, 60_000).rounded(.up)))
        }
    }

    public enum Received {
        case packet
        /// One of the other descriptors is readable (a cancel, a signal, a finished scan).
        case other(Int32)
        case closed
        case timedOut
    }

    /// Waits until `deadline` for a packet (read with `withPacket`), or one of `others`.
    public func wait(until deadline: Double, alsoWatching others: [Int32] = []) -> Received {
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
        for other in others { fds.append(pollfd(fd: other, events: Int16(POLLIN), revents: 0)) }
        while true {
            let remaining = deadline - monotonicSeconds()
            if remaining <= 0 { return .timedOut }
            let ready = poll(&fds, nfds_t(fds.count), Int32(min(remaining * 1000, 60_000).rounded(.up)))
            if ready < 0 {
                if errno == EINTR { continue }
                return .closed
            }
            if ready == 0 { continue }
            for entry in fds.dropFirst() where entry.revents != 0 { return .other(entry.fd) }
            if fds[0].revents & Int16(POLLIN) != 0 { return .packet }
            if fds[0].revents != 0 { return .closed }
        }
    }

    /// Reads the waiting packet and lends it to `body`; the buffer is wiped afterwards (it
    /// may hold a PIN or a token).
    public func withPacket<T>(_ body: (UnsafeRawBufferPointer) -> T) throws(ConnectionError) -> T {
        var count = 0
        while true {
            count = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, Int32(MSG_TRUNC) | Int32(MSG_DONTWAIT)) }
            if count >= 0 || errno != EINTR { break }
        }
        if count < 0 {
            let code = errno
            if code == EAGAIN { throw .timedOut }
            throw code == ECONNRESET ? .closed : .system("recv", code)
        }
        if count == 0 { throw .closed }
        defer { buffer.withUnsafeMutableBytes { fs_wipe($0.baseAddress, min(count, $0.count)) } }
        guard count <= Wire.maxPacket else { throw .protocolError(.tooLarge) }
        return buffer.withUnsafeBytes { raw in body(UnsafeRawBufferPointer(rebasing: raw[0..<count])) }
    }

    /// Waits for the next packet and decodes it with `decode`.
    public func receive<M>(until deadline: Double, alsoWatching others: [Int32] = [],
                           _ decode: (UnsafeRawBufferPointer) throws(WireError) -> M) throws(ConnectionError) -> Incoming<M> {
        switch wait(until: deadline, alsoWatching: others) {
        case .packet:
            let decoded = try withPacket { raw -> Result<M, WireError> in
                do throws(WireError) { return .success(try decode(raw)) } catch { return .failure(error) }
            }
            switch decoded {
            case let .success(message): return .message(message)
            case let .failure(error): throw .protocolError(error)
            }
        case let .other(fd): return .other(fd)
        case .closed: throw .closed
        case .timedOut: throw .timedOut
        }
    }

    public enum Incoming<M> {
        case message(M)
        case other(Int32)
    }

    /// Ends our sending side (the peer sees the end of the conversation).
    public func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }
}
