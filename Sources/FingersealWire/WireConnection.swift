import CLinux
#if !hasFeature(Embedded)
import Glibc
#endif
import SystemKit

/// Where the broker listens unless a client is pointed elsewhere (socket=, --socket,
/// FINGERSEAL_SOCKET): the path of fingerseal.socket.
public let defaultBrokerSocket = "/run/fingerseal/socket"

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
    /// Where packets are read: never filled in advance (a connection would pay for a 64 KiB
    /// memset, and another to wipe it), and wiped after each packet, as far as it reached.
    private let buffer: UnsafeMutableRawBufferPointer

    public init(owning fd: Int32) {
        self.fd = fd
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Wire.maxPacket + 1, alignment: 16)
    }

    deinit {
        finishReading()
        buffer.deallocate()
        close(fd)
    }

    /// Before the close: stop the peer from sending more, then read away what it already sent.
    /// A Unix socket closed with unread packets makes the peer's next read fail with
    /// ECONNRESET, even where our last message (a refusal, a result) waits for it to read.
    /// One byte each: the rest of a packet goes with it unread.
    private func finishReading() {
        shutdown(fd, Int32(SHUT_RD))
        var byte: UInt8 = 0
        for _ in 0..<4096 {
            let count = recv(fd, &byte, 1, Int32(MSG_DONTWAIT))
            if count <= 0 && systemErrno() != EINTR { break }
        }
        fs_wipe(&byte, 1)
    }

    /// Connects to the broker at `path` within `timeout` seconds.
    public static func connect(path: String, timeout: Double) throws(ConnectionError) -> WireConnection {
        let fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw .system("socket", systemErrno()) }
        let connection = WireConnection(owning: fd)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw .unreachable(ENAMETOOLONG) }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connectSocket(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if rc != 0 {
            let code = systemErrno()
            guard code == EINPROGRESS || code == EAGAIN || code == EINTR else { throw .unreachable(code) }
            // A full backlog: wait (bounded) for the broker to take us.
            var fds = [pollEntry(fd, Int16(POLLOUT))]
            switch waitReady(&fds, until: monotonicSeconds() + timeout) {
            case .ready: break
            case .timedOut: throw .timedOut
            case let .failed(code): throw .unreachable(code)
            }
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
            let sent = packet.withUnsafeBytes { sendPacket(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent == packet.count { return }
            let code = systemErrno()
            if sent >= 0 || code == EPIPE || code == ECONNRESET { throw .closed }
            if code == EINTR { continue }
            guard code == EAGAIN else { throw .system("send", code) }
            var fds = [pollEntry(fd, Int16(POLLOUT))]
            if case .timedOut = waitReady(&fds, until: deadline) { throw .timedOut }
        }
    }

    /// Streams `bytes` after a request as data packets of at most `chunkSize` bytes, the last
    /// marked `end`, each sent within `sendLimit` seconds; every copy on the way is wiped (it
    /// may be a sealed file or a plaintext). False when the peer stopped taking them.
    public func stream(_ bytes: UnsafeRawBufferPointer, chunkSize: Int, sendLimit: Double) -> Bool {
        var offset = 0
        repeat {
            let end = min(offset + chunkSize, bytes.count)
            let chunk = Array(bytes[offset..<end])
            let packet = ClientMessage.data(chunk, end: end == bytes.count).encoded()
            let sent = (try? send(packet, until: monotonicSeconds() + sendLimit)) != nil
            Wire.wipeStorage(chunk)
            Wire.wipeStorage(packet)
            guard sent else { return false }
            offset = end
        } while offset < bytes.count
        return true
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
        var fds = [pollEntry(fd)]
        for other in others { fds.append(pollEntry(other)) }
        switch waitReady(&fds, until: deadline) {
        case .timedOut: return .timedOut
        case .failed: return .closed
        case .ready:
            for entry in fds.dropFirst() where entry.revents != 0 { return .other(entry.fd) }
            return fds[0].revents & Int16(POLLIN) != 0 ? .packet : .closed
        }
    }

    /// Reads the waiting packet and lends it to `body`; the buffer is wiped afterwards (it
    /// may hold a PIN or a token).
    public func withPacket<T>(_ body: (UnsafeRawBufferPointer) -> T) throws(ConnectionError) -> T {
        var count = 0
        while true {
            count = recv(fd, buffer.baseAddress, buffer.count, Int32(MSG_TRUNC) | Int32(MSG_DONTWAIT))
            if count >= 0 || systemErrno() != EINTR { break }
        }
        if count < 0 {
            let code = systemErrno()
            if code == EAGAIN { throw .timedOut }
            throw code == ECONNRESET ? .closed : .system("recv", code)
        }
        if count == 0 { throw .closed }
        defer { fs_wipe(buffer.baseAddress, min(count, buffer.count)) }
        guard count <= Wire.maxPacket else { throw .protocolError(.tooLarge) }
        return body(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
    }

    /// Waits for the next packet and decodes it with `decode`.
    public func receive<M>(until deadline: Double, alsoWatching others: [Int32] = [],
                           _ decode: (UnsafeRawBufferPointer) throws(WireError) -> M) throws(ConnectionError) -> Incoming<M> {
        // A packet that is there already needs no wait (a request sent with the connect): read
        // at once, unless something else watched could be first.
        if others.isEmpty {
            do throws(ConnectionError) {
                return .message(try decodePacket(decode))
            } catch .timedOut {
                // Nothing yet (EAGAIN): wait for it below.
            }
        }
        switch wait(until: deadline, alsoWatching: others) {
        case .packet:
            return .message(try decodePacket(decode))
        case let .other(fd): return .other(fd)
        case .closed: throw .closed
        case .timedOut: throw .timedOut
        }
    }

    /// The waiting packet, decoded; `.timedOut` when none is there.
    private func decodePacket<M>(_ decode: (UnsafeRawBufferPointer) throws(WireError) -> M) throws(ConnectionError) -> M {
        let decoded = try withPacket { raw -> Result<M, WireError> in
            do throws(WireError) { return .success(try decode(raw)) } catch { return .failure(error) }
        }
        switch decoded {
        case let .success(message): return message
        case let .failure(error): throw .protocolError(error)
        }
    }

    public enum Incoming<M> {
        case message(M)
        case other(Int32)
    }

    /// Ends our sending side (the peer sees the end of the conversation).
    public func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }
}

// The C calls whose Swift names the methods above reuse.
private func sendPacket(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int, _ flags: Int32) -> Int {
    send(fd, bytes, count, flags)
}

private func connectSocket(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    connect(fd, address, length)
}
