import Glibc
import SessionBusKit
import SystemKit

/// The application behind a call, as the session bus and /proc tell the agent: its bus name,
/// its process (the bus daemon read it from the socket), its executable, and inside Flatpak
/// its app id. The broker records all of it as the agent's claim: the kernel vouches for the
/// agent, not for what the agent says of others.
struct AskingApplication {
    let busName: String
    let pid: pid_t
    let executable: String?
    let appID: String?
    /// For an interpreter (python3, perl, gjs, …): the script it runs, as its command line
    /// names it (the program's own word, like `app_name`: a title's, never the vouched part).
    let script: String?
    /// What the application calls itself (`app_name`): its own claim, which anything can
    /// make ("Files", "System Update"); nil when it names none, or one that cannot be shown
    /// as plain text beside another.
    let claimedName: String?

    /// What the system vouches for: the app id Flatpak wrote into the sandbox, else the
    /// executable as the kernel names it (/proc/PID/exe), else the name the bus gave the
    /// connection.
    var vouchedName: String { appID ?? executable ?? busName }

    /// How a person is told who asks: what is vouched for beside any claim ("Meander
    /// (org.example.Meander)", "Meander (/usr/bin/meander)"), what is vouched for alone when
    /// there is no claim, never the claim alone.
    var displayName: String {
        guard let claimedName, claimedName != vouchedName else { return vouchedName }
        return AgentStrings.claimedBeside(claimedName, vouched: vouchedName)
    }

    /// What a window title calls it: its own name for itself, else the last part of what is
    /// vouched for ("meander" for /usr/bin/meander). The heading beneath says who vouches.
    var shortName: String {
        if let claimedName { return claimedName }
        if let appID { return appID }
        if let script { return script }
        if let executable, let last = executable.split(separator: "/").last { return String(last) }
        return busName
    }

    /// Interpreters whose program is the script they run.
    static let interpreters = ["python", "perl", "ruby", "node", "gjs", "sh", "bash", "dash", "lua", "php"]

    /// The script an interpreter runs: its first argument that is no option, without its
    /// directory and extension ("meander" for `python3 /opt/meander/meander.py`); nil for any
    /// other program, or a name that is no plain text.
    static func script(executable: String?, arguments: [String]) -> String? {
        guard let executable, let program = executable.split(separator: "/").last,
              interpreters.contains(where: { program == $0 || (program.hasPrefix($0) && program.dropFirst($0.count).allSatisfy { $0.isNumber || $0 == "." }) })
        else { return nil }
        guard let path = arguments.dropFirst().first(where: { !$0.hasPrefix("-") }), let file = path.split(separator: "/").last else { return nil }
        let name = file.split(separator: ".").first.map(String.init) ?? String(file)
        return shownText(name, limit: 100)
    }

    enum Refusal: Error {
        /// Another user's connection: the agent acts for its own user only.
        case otherUser
        case unknown
    }

    static func identify(_ busName: String, on bus: SessionBus, claimedName: String?) throws -> AskingApplication {
        guard let (pid, uid) = try? bus.credentials(of: busName), let pid else { throw Refusal.unknown }
        guard uid == getuid() else { throw Refusal.otherUser }
        let executable = symbolicLinkTarget("/proc/\(pid)/exe")
        let appID = flatpakAppID(pid)
        return AskingApplication(busName: busName, pid: pid, executable: executable, appID: appID,
                                 script: script(executable: executable, arguments: commandLine(pid)),
                                 claimedName: claimedName.flatMap { shownText($0, limit: 100) })
    }

    /// An application's words as they may be shown (a claimed name, a reason, a label): at
    /// most `limit` bytes, and plain text. A line break or escape (`ControlCharacters`) would end
    /// the sentence or drive a terminal; a bidi control would make what follows it, the
    /// vouched-for part, read otherwise than it is.
    static func shownText(_ name: String, limit: Int = 256) -> String? {
        guard !name.isEmpty, name.utf8.count <= limit,
              !name.unicodeScalars.contains(where: { ControlCharacters.contains($0) || ControlCharacters.isBidiControl($0) })
        else { return nil }
        return name
    }

    /// /proc/PID/cmdline's arguments (at most 4 KiB read).
    private static func commandLine(_ pid: pid_t) -> [String] {
        let bytes = readPlainFileHead("/proc/\(pid)/cmdline", limit: 4096) ?? []
        return bytes.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Flatpak writes /.flatpak-info into every sandbox: `[Application]` then `name=APP-ID`.
    private static func flatpakAppID(_ pid: pid_t) -> String? {
        let fd = open("/proc/\(pid)/root/.flatpak-info", O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 16384)
        let count = read(fd, &bytes, bytes.count)
        guard count > 0 else { return nil }
        var inApplication = false
        for line in String(decoding: bytes[..<count], as: UTF8.self).split(separator: "\n") {
            let trimmed = line.trimmingCharacters()
            if trimmed.hasPrefix("[") { inApplication = trimmed == "[Application]"; continue }
            if inApplication, trimmed.hasPrefix("name=") { return String(trimmed.dropFirst(5)) }
        }
        return nil
    }
}

extension Substring {
    func trimmingCharacters() -> Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" || first == "\r" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" || last == "\r" { text = text.dropLast() }
        return text
    }
}
