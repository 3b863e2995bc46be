import FingersealWire
import Glibc
import SodiumKit
import SystemKit

/// Where output goes, and how it looks. Meaning is always in the words; emphasis is added
/// only on a terminal, and never when NO_COLOR is set or TERM is dumb.
struct Output {
    let emphasis: Bool

    init() {
        emphasis = Invocation.environment("NO_COLOR") == nil && Invocation.environment("TERM") != "dumb"
            && isatty(STDERR_FILENO) == 1
    }

    /// A line of the command's output proper.
    func out(_ text: String) { Output.write(STDOUT_FILENO, text + "\n") }

    /// A sentence for the person (progress, a problem the command survives).
    func note(_ text: String) { Output.write(STDERR_FILENO, text + "\n") }

    /// The reason a command failed.
    func error(_ text: String) {
        // The label from the catalog ("feil:"); the program's name stays as typed.
        let label = "fingerseal: " + Strings.errorLabel
        let prefix = emphasis ? "\u{1b}[1m" + label + "\u{1b}[0m " : label + " "
        Output.write(STDERR_FILENO, prefix + text + "\n")
    }

    static func write(_ fd: Int32, _ text: String) {
        var text = text
        text.withUTF8 { _ = write(fd, UnsafeRawBufferPointer($0)) }
    }

    /// Writes every byte; false when the descriptor refuses.
    @discardableResult
    static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(fd, base + offset, bytes.count - offset)
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return false }
            offset += written
        }
        return true
    }
}

/// One line being read into secure memory: from the controlling terminal (without echo
/// unless asked), or from a descriptor the person named (`--pin-fd`, `--password-fd`). It
/// lives across interruptions, so a sentence from the broker can be shown while someone
/// types and the typing goes on; dropping it wipes what was typed and restores the terminal.
final class LineReader {
    /// Longest line accepted; anything longer is refused, not truncated.
    static let maxLength = 1024

    enum Event {
        case line(SecureBytes)
        /// Ctrl-C, Ctrl-D on an empty line, or the terminal went away.
        case cancel
        /// Longer than `maxLength` (read to its end, and wiped).
        case tooLong
        /// One of the other descriptors is readable; the line so far is kept.
        case woken(Int32)
        case timedOut
    }

    private let fd: Int32
    private let terminal: FileDescriptor?
    private var saved = termios()
    private let prompt: String
    private let echo: Bool
    private let line: SecureBytes
    private var overflow = false

    /// Reads from `fd`, a line at a time: nothing past the newline is consumed, so one
    /// descriptor can carry several answers.
    init(descriptor fd: Int32) throws(CLIError) {
        self.fd = fd
        terminal = nil
        prompt = ""
        echo = false
        line = try LineReader.buffer()
    }

    /// Prompts on the controlling terminal; nil when there is none. No echo, no line editing
    /// by the kernel, no signals: Ctrl-C arrives as a byte, so the terminal is always
    /// restored (a signal would kill us with echo off).
    init?(terminal prompt: String, echo: Bool) throws(CLIError) {
        let raw = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY)
        guard raw >= 0 else { return nil }
        let tty = FileDescriptor(owning: raw)
        var original = termios()
        guard tcgetattr(raw, &original) == 0 else { return nil }
        var quiet = original
        quiet.c_lflag &= ~tcflag_t(ECHO | ICANON | ISIG)
        withUnsafeMutableBytes(of: &quiet.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        // Quiet first, prompt second: a fast typist (or a password manager) starts typing the
        // moment the prompt shows, and nothing typed may be echoed or thrown away.
        guard tcsetattr(raw, TCSANOW, &quiet) == 0 else { return nil }
        do { line = try LineReader.buffer() } catch {
            _ = tcsetattr(raw, TCSANOW, &original)
            throw error
        }
        fd = raw
        terminal = tty
        saved = original
        self.prompt = prompt
        self.echo = echo
        if !prompt.isEmpty { Output.write(raw, prompt) }
    }

    deinit {
        if terminal != nil {
            _ = tcsetattr(fd, TCSANOW, &saved)
            Output.write(fd, "\n")
        }
        // `line` wipes itself when released.
    }

    private static func buffer() throws(CLIError) -> SecureBytes {
        do { return try SecureBytes(capacity: maxLength) } catch { throw CLIError(.systemError, Strings.secureMemory) }
    }

    /// Shows `show`'s output (a sentence from the broker) without losing the line: off the
    /// prompt's line, then the prompt again. What was typed stays (it was never echoed).
    func interject(_ show: () -> Void) {
        guard terminal != nil, !prompt.isEmpty else { return show() }
        Output.write(fd, "\n")
        show()
        Output.write(fd, prompt)
    }

    /// Reads until the line is complete, `deadline` passes, or one of `others` is readable.
    func read(until deadline: Double, wakingOn others: [Int32]) -> Event {
        var watched = [pollEntry(fd)] + others.map { pollEntry($0) }
        var byte: UInt8 = 0
        defer { byte = 0 }
        while true {
            switch waitReady(&watched, until: deadline) {
            case .timedOut: return .timedOut
            case .failed: return terminal == nil ? finish() : .cancel
            case .ready: break
            }
            if let woken = watched.dropFirst().first(where: { $0.revents != 0 }) { return .woken(woken.fd) }
            if watched[0].revents == 0 { continue }
            let count = Glibc.read(fd, &byte, 1)
            if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            guard terminal != nil else {
                // A descriptor: its end (or an error) ends the line.
                if count <= 0 || byte == 0x0a { return finish() }
                if byte != 0x0d { add(byte) }
                continue
            }
            if count <= 0 { return .cancel }
            switch byte {
            case 0x0a, 0x0d: return finish()
            case 0x03: return .cancel
            case 0x04 where line.count == 0: return .cancel
            case 0x7f, 0x08:
                if echo && line.count > 0 { Output.write(fd, "\u{8} \u{8}") }
                line.removeLast()
            case 0x15:
                line.removeAll()
            default:
                if echo { _ = withUnsafeBytes(of: byte) { Output.write(fd, $0) } }
                add(byte)
            }
        }
    }

    private func add(_ byte: UInt8) {
        if !line.append(byte) { overflow = true }
    }

    private func finish() -> Event {
        if overflow {
            line.removeAll()
            return .tooLong
        }
        return .line(line)
    }
}
