import CLinux
import Glibc
import SystemKit

/// Who owns the other end of a TCP connection on 127.0.0.1, as the kernel knows it. TCP has
/// no SO_PEERCRED, but both ends of a loopback connection are sockets of this machine: the
/// kernel's socket table, asked for the peer's exact 4-tuple, names the uid that created the
/// peer's socket. The 4-tuple is unique while our end of the connection is open, so the
/// answer is about that one socket, not one that used the same port before or after.
public enum LoopbackPeer {
    /// How the socket table is asked.
    public enum Source: Sendable, CaseIterable {
        /// NETLINK_SOCK_DIAG, one exact inet_diag request (what `ss` uses): the precise way.
        case sockDiag
        /// /proc/net/tcp, read whole: where netlink is unavailable (no tcp_diag module).
        case procNetTCP
    }

    /// The uid owning the socket at `peer` that is connected to `local`; nil when the kernel
    /// knows no such live socket (gone, or closed already: an orphaned or time-wait socket
    /// keeps no owner) or cannot be asked. Netlink first, then /proc/net/tcp.
    public static func owner(of peer: sockaddr_in, connectedTo local: sockaddr_in) -> UInt32? {
        for source in Source.allCases {
            if let found = try? owner(of: peer, connectedTo: local, from: source) { return found }
        }
        return nil
    }

    /// One source alone; throws when it cannot be asked, nil when it has no live socket there.
    public static func owner(of peer: sockaddr_in, connectedTo local: sockaddr_in, from source: Source) throws -> UInt32? {
        let entry: Entry?
        switch source {
        case .sockDiag: entry = try sockDiag(peer: peer, local: local)
        case .procNetTCP: entry = try procNetTCP(peer: peer, local: local)
        }
        // Inode 0: no socket file any more (closed by its process, or a time-wait entry), so
        // the uid listed is not an owner's (time-wait entries list 0, which is root's).
        guard let entry, entry.inode != 0 else { return nil }
        return entry.uid
    }

    struct Entry {
        let uid: UInt32
        let inode: UInt32
    }

    // MARK: netlink

    static func sockDiag(peer: sockaddr_in, local: sockaddr_in) throws -> Entry? {
        let fd = try syscall("socket", "NETLINK_SOCK_DIAG") {
            socket(AF_NETLINK, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), NETLINK_SOCK_DIAG)
        }
        defer { close(fd) }
        // The kernel answers while handling the request; the bound is for a kernel that does not.
        var limit = timeval(tv_sec: 1, tv_usec: 0)
        _ = try syscall("setsockopt", "SO_RCVTIMEO") {
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        }

        var question = fs_inet_diag_request()
        question.header.nlmsg_len = UInt32(MemoryLayout<fs_inet_diag_request>.size)
        question.header.nlmsg_type = UInt16(SOCK_DIAG_BY_FAMILY)
        question.header.nlmsg_flags = UInt16(NLM_F_REQUEST)
        question.header.nlmsg_seq = 1
        question.request.sdiag_family = UInt8(AF_INET)
        question.request.sdiag_protocol = UInt8(IPPROTO_TCP)
        question.request.idiag_states = UInt32.max
        // The peer's socket: its local end is the peer's address, its remote end ours.
        question.request.id.idiag_sport = peer.sin_port
        question.request.id.idiag_dport = local.sin_port
        question.request.id.idiag_src.0 = peer.sin_addr.s_addr
        question.request.id.idiag_dst.0 = local.sin_addr.s_addr
        question.request.id.idiag_cookie = (FS_INET_DIAG_NOCOOKIE, FS_INET_DIAG_NOCOOKIE)

        var kernel = sockaddr_nl()
        kernel.nl_family = sa_family_t(AF_NETLINK)
        _ = try withUnsafePointer(to: &question) { message in
            try withUnsafePointer(to: &kernel) { address in
                try address.withMemoryRebound(to: sockaddr.self, capacity: 1) { target in
                    try syscall("sendto", "NETLINK_SOCK_DIAG") {
                        sendto(fd, message, MemoryLayout<fs_inet_diag_request>.size, 0, target,
                               socklen_t(MemoryLayout<sockaddr_nl>.size))
                    }
                }
            }
        }
        var reply = [UInt8](repeating: 0, count: 8192)
        let count = try syscall("recv", "NETLINK_SOCK_DIAG") { recv(fd, &reply, reply.count, 0) }
        return try reply.withUnsafeBytes { bytes in
            try parseSockDiagReply(UnsafeRawBufferPointer(rebasing: bytes[..<count]), peer: peer, local: local)
        }
    }

    /// The kernel's answer to one exact request: one inet_diag message, or an error (ENOENT:
    /// no such socket). Anything but the socket asked about is no answer.
    static func parseSockDiagReply(_ bytes: UnsafeRawBufferPointer, peer: sockaddr_in, local: sockaddr_in) throws -> Entry? {
        let headerSize = MemoryLayout<nlmsghdr>.size
        guard bytes.count >= headerSize else { throw SystemError("recv", "NETLINK_SOCK_DIAG", code: EPROTO) }
        let header = bytes.loadUnaligned(as: nlmsghdr.self)
        guard Int(header.nlmsg_len) <= bytes.count, header.nlmsg_seq == 1 else {
            throw SystemError("recv", "NETLINK_SOCK_DIAG", code: EPROTO)
        }
        switch Int32(header.nlmsg_type) {
        case NLMSG_ERROR:
            guard Int(header.nlmsg_len) >= headerSize + MemoryLayout<Int32>.size else {
                throw SystemError("recv", "NETLINK_SOCK_DIAG", code: EPROTO)
            }
            let code = -bytes.loadUnaligned(fromByteOffset: headerSize, as: Int32.self)
            if code == ENOENT { return nil }
            throw SystemError("inet_diag", code: code > 0 ? code : EPROTO)
        case SOCK_DIAG_BY_FAMILY:
            guard Int(header.nlmsg_len) >= headerSize + MemoryLayout<inet_diag_msg>.size else {
                throw SystemError("recv", "NETLINK_SOCK_DIAG", code: EPROTO)
            }
            let message = bytes.loadUnaligned(fromByteOffset: headerSize, as: inet_diag_msg.self)
            guard message.idiag_family == UInt8(AF_INET), message.id.idiag_sport == peer.sin_port,
                  message.id.idiag_dport == local.sin_port, message.id.idiag_src.0 == peer.sin_addr.s_addr,
                  message.id.idiag_dst.0 == local.sin_addr.s_addr else { return nil }
            return Entry(uid: message.idiag_uid, inode: message.idiag_inode)
        default:
            throw SystemError("recv", "NETLINK_SOCK_DIAG", code: EPROTO)
        }
    }

    // MARK: /proc/net/tcp

    static func procNetTCP(peer: sockaddr_in, local: sockaddr_in) throws -> Entry? {
        guard let table = readPlainFile("/proc/net/tcp", limit: 64 << 20) else {
            throw SystemError("read", "/proc/net/tcp", code: EIO)
        }
        return findInTCPTable(table, peer: peer, local: local)
    }

    /// The line whose local address is the peer's and whose remote address is ours. The kernel
    /// writes addresses as the 32-bit value in memory and ports in host order, both in hex:
    /// "sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...".
    static func findInTCPTable(_ table: [UInt8], peer: sockaddr_in, local: sockaddr_in) -> Entry? {
        let wantedLocal = Array(endpoint(peer).utf8), wantedRemote = Array(endpoint(local).utf8)
        for line in table.split(separator: 0x0a).dropFirst() {
            let fields = line.split(separator: 0x20)
            guard fields.count > 9, fields[1].elementsEqual(wantedLocal), fields[2].elementsEqual(wantedRemote),
                  let uid = UInt32(String(decoding: fields[7], as: UTF8.self)),
                  let inode = UInt32(String(decoding: fields[9], as: UTF8.self)) else { continue }
            return Entry(uid: uid, inode: inode)
        }
        return nil
    }

    static func endpoint(_ address: sockaddr_in) -> String {
        hex(UInt64(address.sin_addr.s_addr), digits: 8) + ":" + hex(UInt64(UInt16(bigEndian: address.sin_port)), digits: 4)
    }

    private static func hex(_ value: UInt64, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
