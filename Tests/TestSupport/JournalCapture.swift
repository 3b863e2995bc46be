import Foundation
import Glibc
import SystemKit

/// A real systemd-journald for a child (the broker), both in a private mount namespace whose
/// /run is a tmpfs of its own: the child finds journald's socket where sd-journal looks
/// (/run/systemd/journal/socket), and journald keeps its files in `directory`/journal, where
/// `journalctl --directory` reads them from outside. Needs root; nothing of the machine's own
/// /run or journal is touched.
final class JournalCapture {
    static let journald = "/lib/systemd/systemd-journald"
    static var available: Bool {
        geteuid() == 0 && access("/usr/bin/unshare", X_OK) == 0 && access(journald, X_OK) == 0 && access("/bin/journalctl", X_OK) == 0
    }

    let directory: String

    init(directory: String) throws {
        self.directory = directory
        guard mkdir(directory + "/journal", 0o755) == 0 else { throw TestFailure("cannot make \(directory)/journal") }
    }

    deinit {
        if let text = readFile(directory + "/journald.pid"), let pid = Int32(String(decoding: text, as: UTF8.self)
            .split(separator: "\n").first ?? "") {
            kill(pid, SIGTERM)
        }
    }

    /// `command` wrapped so that it runs beside its own journald (exec'd: the same pid).
    /// journald does not get the child's NOTIFY_SOCKET: its READY=1 would be taken for the
    /// child's.
    func wrap(_ command: [String]) -> (String, [String]) {
        let script = #"""
            set -e; dir="$0"; journald="$1"; shift
            mount -t tmpfs -o mode=755 tmpfs /run
            mkdir -p /run/systemd/journal /run/log/journal
            mount --bind "$dir/journal" /run/log/journal
            env -u NOTIFY_SOCKET "$journald" </dev/null >"$dir/journald.log" 2>&1 &
            echo $! >"$dir/journald.pid"
            i=0; while [ ! -S /run/systemd/journal/socket ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
            exec "$@"
            """#
        return ("/usr/bin/unshare", ["--mount", "--", "/bin/sh", "-c", script, directory, JournalCapture.journald] + command)
    }

    /// The entries that match `filter` ("MESSAGE_ID=…"), as journalctl's JSON objects (string
    /// fields only), once there are at least `count` of them or `limit` seconds passed.
    func entries(_ filter: String, atLeast count: Int = 1, limit: Double = 10) throws -> [[String: String]] {
        let deadline = monotonicSeconds() + limit
        while true {
            let files = directory + "/journal"
            let result = try Child.run("/bin/journalctl", ["--directory=" + files, "--merge", "-o", "json", "--no-pager", filter])
            let found = result.stdout.split(separator: "\n").compactMap { line -> [String: String]? in
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
                return object.compactMapValues { $0 as? String }
            }
            if found.count >= count || monotonicSeconds() >= deadline { return found }
            usleep(100_000)
        }
    }
}
