import FingersealCore
import Glibc
import SodiumKit
import SystemKit

/// Where output goes, and how it looks. Meaning is always in the words; emphasis is added
/// only on a terminal, and never when NO_COLOR is set or TERM is dumb.
struct Output: Sendable {
    let emphasis: Bool

    init(environment: [String: String]) {
        let noColor = !(environment["NO_COLOR"] ?? "").isEmpty
        emphasis = !noColor && environment["TERM"] != "dumb" && isatty(STDERR_FILENO) == 1
    }

    func out(_ text: String) {
        write(STDOUT_FILENO, text + "\n")
    }

    func error(_ text: String) {
        let prefix = emphasis ? "\u{1b}[1mfingerseal: error:\u{1b}[0m " : "fingerseal: error: "
        write(STDERR_FILENO, prefix + text + "\n")
    }

    func note(_ text: String) {
        write(STDERR_FILENO, text + "\n")
    }

    private func write(_ fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return -1 }
                return Glibc.write(fd, base + offset, buffer.count - offset)
            }
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return }
            offset += written
        }
    }
}

/// Reads secrets and confirmations, from the terminal (no echo) or a given descriptor.
struct SecretInput {
    /// Longest line accepted; anything longer is refused, not truncated.
    static let maxLength = 1024

    /// Reads one line from `fd` into secure memory, a byte at a time so nothing past the
    /// newline is consumed.
    static func readLine(fd: Int32) throws -> SecureBytes {
        let line = try secureBuffer()
        var byte: UInt8 = 0
        while true {
            let count = read(fd, &byte, 1)
            if count < 0 && errno == EINTR { continue }
            if count < 0 { throw FingersealError(.systemError, Messages.systemFailure("read the PIN from descriptor \(fd)")) }
            if count == 0 || byte == 0x0a { break }
            if byte == 0x0d { continue }
            guard line.append(byte) else { throw FingersealError(.usage, Messages.pinTooLong(PINRules.maximumLength)) }
        }
        byte = 0
        return line
    }

    /// Prompts on the controlling terminal and reads without echo. Ctrl-C or Ctrl-D on an
    /// empty line cancel; Backspace and Ctrl-U edit.
    static func prompt(_ text: String, echo: Bool = false) throws -> SecureBytes {
        switch try prompt(text, echo: echo, wakingOn: []) {
        case let .line(line): return line
        case .woken: throw FingersealError(.cancelled, Messages.cancelled)
        }
    }

    enum Answer {
        case line(SecureBytes)
        /// One of the descriptors became readable before the line was complete; what was
        /// typed so far is wiped.
        case woken(Int32)
    }

    /// As `prompt`, but also returns as soon as one of `descriptors` is readable: the reader
    /// matched while the PIN was being typed, or a signal arrived.
    static func prompt(_ text: String, echo: Bool = false, wakingOn descriptors: [Int32]) throws -> Answer {
        let raw = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY)
        guard raw >= 0 else { throw FingersealError(.usage, Messages.noTerminal) }
        let tty = FileDescriptor(owning: raw)
        var saved = termios()
        guard tcgetattr(raw, &saved) == 0 else { throw FingersealError(.usage, Messages.noTerminal) }
        var quiet = saved
        // No echo, no line editing by the kernel, no signals: Ctrl-C arrives as a byte, so the
        // terminal is always restored (a signal would kill us with echo off).
        quiet.c_lflag &= ~tcflag_t(ECHO | ICANON | ISIG)
        withUnsafeMutableBytes(of: &quiet.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        // Quiet first, prompt second: a fast typist (or a password manager) starts typing
        // the moment the prompt shows, and nothing typed may be echoed or thrown away.
        guard tcsetattr(raw, TCSANOW, &quiet) == 0 else { throw FingersealError(.usage, Messages.noTerminal) }
        defer {
            _ = tcsetattr(raw, TCSANOW, &saved)
            try? tty.writeAll([0x0a], subject: "/dev/tty")
        }
        if !text.isEmpty { try? tty.writeAll(Array(text.utf8), subject: "/dev/tty") }
        let line = try secureBuffer()
        var byte: UInt8 = 0
        defer { byte = 0 }
        var watched = [pollfd(fd: raw, events: Int16(POLLIN), revents: 0)]
            + descriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        while true {
            if !descriptors.isEmpty {
                for index in watched.indices { watched[index].revents = 0 }
                if poll(&watched, nfds_t(watched.count), -1) < 0 {
                    if errno == EINTR { continue }
                    throw FingersealError(.systemError, Messages.systemFailure("wait for the terminal"))
                }
                if let woken = watched.dropFirst().first(where: { $0.revents != 0 }) {
                    line.removeAll()
                    return .woken(woken.fd)
                }
                if watched[0].revents == 0 { continue }
            }
            let count = read(raw, &byte, 1)
            if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            if count <= 0 { throw FingersealError(.cancelled, Messages.cancelled) }
            switch byte {
            case 0x0a, 0x0d: return .line(line)
            case 0x03: throw FingersealError(.cancelled, Messages.cancelled)
            case 0x04 where line.count == 0: throw FingersealError(.cancelled, Messages.cancelled)
            case 0x7f, 0x08: line.removeLast()
            case 0x15: line.removeAll()
            default:
                if echo { try? tty.writeAll([byte], subject: "/dev/tty") }
                line.append(byte)
            }
        }
    }

    private static func secureBuffer() throws -> SecureBytes {
        do { return try SecureBytes(capacity: maxLength) } catch { throw FingersealError(.systemError, Messages.secureMemory) }
    }
}
