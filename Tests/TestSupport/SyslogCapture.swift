import Glibc

/// Receives what a child process sends to syslog: the child runs in a private mount
/// namespace where /dev/log is bind-mounted to this datagram socket. Needs root.
final class SyslogCapture {
    static var available: Bool { geteuid() == 0 && access("/usr/bin/unshare", X_OK) == 0 && access("/dev/log", F_OK) == 0 }
    /// Also where the machine has no /dev/log: then the namespace gets a /dev of its own (a
    /// tmpfs with the real devices bound in) that has one; the real /dev is never touched.
    static var availableAnywhere: Bool { geteuid() == 0 && access("/usr/bin/unshare", X_OK) == 0 }

    let path: String
    private let directory: String
    private let fd: Int32

    init(directory: String) throws {
        self.directory = directory
        path = directory + "/log.sock"
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        let bound = withUnixAddress(path) { bind(fd, $0, $1) }
        guard fd >= 0, bound == 0 else { throw TestFailure("cannot bind \(path)") }
        chmod(path, 0o666)
    }

    deinit { close(fd) }

    /// `command` wrapped so its syslog goes here.
    func wrap(_ command: [String]) -> (String, [String]) {
        if access("/dev/log", F_OK) == 0 {
            return ("/usr/bin/unshare", ["--mount", "--", "/bin/sh", "-c", SyslogCapture.hideJournal + #"mount --bind "$0" /dev/log && exec "$@""#, path]
                + command)
        }
        let ownDev = #"""
            set -e; \#(SyslogCapture.hideJournal) real="$1/real-dev"; shift; mkdir -p "$real"; mount --rbind /dev "$real"
            mount -t tmpfs -o mode=755 tmpfs /dev
            for n in null zero full random urandom tty ptmx; do touch "/dev/$n"; mount --bind "$real/$n" "/dev/$n"; done
            for d in pts shm; do mkdir "/dev/$d"; mount --rbind "$real/$d" "/dev/$d"; done
            ln -s /proc/self/fd /dev/fd; ln -s fd/0 /dev/stdin; ln -s fd/1 /dev/stdout; ln -s fd/2 /dev/stderr
            touch /dev/log; mount --bind "$0" /dev/log; exec "$@"
            """#
        return ("/usr/bin/unshare", ["--mount", "--", "/bin/sh", "-c", ownDev, path, directory] + command)
    }

    /// Where journald runs, its socket hidden from the child: the broker then logs to syslog,
    /// what these tests read (JournalCapture reads the journal).
    static let hideJournal = "if [ -d /run/systemd/journal ]; then mount -t tmpfs tmpfs /run/systemd/journal; fi; "

    /// Every message received so far.
    func messages() -> [String] {
        var found: [String] = []
        var buffer = [UInt8](repeating: 0, count: 8192)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { return found }
            found.append(String(decoding: buffer[..<count], as: UTF8.self))
        }
    }
}
