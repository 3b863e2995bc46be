import Glibc
import SystemKit

/// The names provisioning never gives a new account (issue 31 §5). useradd makes a group of
/// the account's name, and a policy file may already grant something to a user or group of a
/// name nobody has yet: Ubuntu's sudoers grants `%admin`, and no group `admin` exists there,
/// so an account provisioned as `admin` would be an administrator. Reserved: root-like and
/// system names (`builtIn`; every account and group below UID_MIN and GID_MIN of
/// /etc/login.defs), every user and group name that sudoers, polkit's rules or the
/// /etc/security files (and pam_wheel's `group=`) name, and the administrator's own
/// (`provision_reserved=`).
public enum ReservedNames {
    /// Reserved whatever the files say.
    public static let builtIn: Set<String> = ["root", "admin", "wheel", "adm", "sudo", "staff"]

    public enum Verdict: Equatable, Sendable {
        case free
        /// Reserved, and what reserves it (a path, "built-in", "provision_reserved", …): for the log.
        case reserved(by: String)
        /// A policy file or directory could not be read safely (unsafe owner or mode, too
        /// large, unreadable): which names it reserves is unknown, so none may be made.
        case unknown(path: String, why: String)

        /// One line, as `fingersealed --reserved-name NAME` prints it for the broker that ran
        /// it outside its sandbox: `free`, `reserved<TAB>BY`, `unknown<TAB>PATH<TAB>WHY`.
        public var line: String {
            // A field holds no separator of the line's own.
            func field(_ text: String) -> String { text.filter { $0 != "\t" && $0 != "\n" } }
            switch self {
            case .free: return "free"
            case let .reserved(by): return "reserved\t" + field(by)
            case let .unknown(path, why): return "unknown\t" + field(path) + "\t" + field(why)
            }
        }

        public init?(line text: String) {
            let fields = text.split(separator: "\n").first.map { $0.split(separator: "\t", omittingEmptySubsequences: false) } ?? []
            switch (fields.first, fields.count) {
            case ("free"?, 1): self = .free
            case ("reserved"?, 2): self = .reserved(by: String(fields[1]))
            case ("unknown"?, 3): self = .unknown(path: String(fields[1]), why: String(fields[2]))
            default: return nil
            }
        }
    }

    /// The broker's option that prints the verdict of the policy files on one name.
    public static let checkOption = "--reserved-name"

    /// Whether `name` is reserved on this machine. `extra`: the administrator's names.
    /// `root`: where the files are looked for (tests; "" on the machine).
    public static func check(_ name: String, extra: [String], root: String = "") -> Verdict {
        if builtIn.contains(name) { return .reserved(by: "built-in") }
        if extra.contains(name) { return .reserved(by: "provision_reserved") }
        var reader = PolicyFileReader(root: root)
        do throws(PolicyFileUnreadable) {
            let limits = try reader.texts(of: PolicySource.loginDefs).first.map(PolicyNames.loginDefs) ?? (uidMin: 1000, gidMin: 1000)
            reader.systemOwnerLimit = limits.uidMin
            if let account = try? UserAccount.named(name), account.uid < limits.uidMin { return .reserved(by: "a system account") }
            if let gid = groupID(named: name), gid < limits.gidMin { return .reserved(by: "a system group") }
            for source in PolicySource.all {
                if try reader.texts(of: source).contains(where: { source.names($0).contains(name) }) { return .reserved(by: root + source.path) }
            }
        } catch {
            return .unknown(path: error.path, why: error.why)
        }
        return .free
    }
}

/// Where policy files name users and groups, and how each kind is read.
struct PolicySource: Sendable {
    enum Layout: Sendable {
        case file
        /// Every regular file in the directory (with this suffix, when one is given).
        case directory(suffix: String?)
        /// Every regular file with this suffix in each subdirectory (polkit's localauthority).
        case subdirectories(suffix: String)
    }

    let path: String
    let layout: Layout
    let names: @Sendable (String) -> Set<String>

    static let loginDefs = PolicySource(path: "/etc/login.defs", layout: .file, names: { _ in [] })

    static let all: [PolicySource] = [
        PolicySource(path: "/etc/sudoers", layout: .file, names: PolicyNames.sudoers),
        PolicySource(path: "/etc/sudoers.d", layout: .directory(suffix: nil), names: PolicyNames.sudoers),
        PolicySource(path: "/etc/polkit-1/rules.d", layout: .directory(suffix: ".rules"), names: PolicyNames.polkit),
        PolicySource(path: "/usr/share/polkit-1/rules.d", layout: .directory(suffix: ".rules"), names: PolicyNames.polkit),
        PolicySource(path: "/etc/polkit-1/localauthority", layout: .subdirectories(suffix: ".pkla"), names: PolicyNames.polkit),
        PolicySource(path: "/var/lib/polkit-1/localauthority", layout: .subdirectories(suffix: ".pkla"), names: PolicyNames.polkit),
        PolicySource(path: "/etc/polkit-1/localauthority.conf.d", layout: .directory(suffix: ".conf"), names: PolicyNames.polkit),
        PolicySource(path: "/etc/security/group.conf", layout: .file, names: { PolicyNames.semicolonFields($0, [2, 4]) }),
        PolicySource(path: "/etc/security/time.conf", layout: .file, names: { PolicyNames.semicolonFields($0, [2]) }),
        PolicySource(path: "/etc/security/access.conf", layout: .file, names: PolicyNames.access),
        PolicySource(path: "/etc/security/access.d", layout: .directory(suffix: ".conf"), names: PolicyNames.access),
        PolicySource(path: "/etc/security/limits.conf", layout: .file, names: PolicyNames.limits),
        PolicySource(path: "/etc/security/limits.d", layout: .directory(suffix: ".conf"), names: PolicyNames.limits),
        PolicySource(path: "/etc/pam.d", layout: .directory(suffix: nil), names: PolicyNames.pamWheel),
        PolicySource(path: "/usr/lib/pam.d", layout: .directory(suffix: nil), names: PolicyNames.pamWheel),
    ]
}

/// Why a policy file could not be read: the path and the reason, for the log.
struct PolicyFileUnreadable: Error {
    let path: String
    let why: String
}

/// Reads policy files as the project reads files a privileged process trusts (no FIFO waited
/// on, regular files only, root's or a system account's, not writable by group or others,
/// bounded), with one allowance: a name in a checked directory may be a symbolic link (only
/// the directory's owner could have put it there, and Fedora's authselect links its PAM
/// files), and what it opens is checked instead. Reading more than is there only reserves
/// more; what cannot be read safely is an error, never skipped.
struct PolicyFileReader {
    static let fileLimit = 1 << 20
    static let totalLimit = 16 << 20
    static let entryLimit = 1024

    let root: String
    /// Owners below this uid are system accounts (polkitd owns polkit's rule directories).
    var systemOwnerLimit: UInt32 = 1000
    private var budget = PolicyFileReader.totalLimit

    init(root: String) { self.root = root }

    /// The texts of `source`'s files; none when it does not exist.
    mutating func texts(of source: PolicySource) throws(PolicyFileUnreadable) -> [String] {
        let path = root + source.path
        switch source.layout {
        case .file:
            let (directory, name) = PolicyFileReader.split(path)
            guard let parent = try openDirectory(directory) else { return [] }
            return try read(name, in: parent, directory).map { [$0] } ?? []
        case let .directory(suffix):
            guard let directory = try openDirectory(path) else { return [] }
            return try files(in: directory, path, suffix: suffix)
        case let .subdirectories(suffix):
            guard let directory = try openDirectory(path) else { return [] }
            var texts: [String] = []
            for name in try entries(of: directory, path) {
                guard let sub = try openDirectory(path + "/" + name, relativeTo: directory, name: name) else { continue }
                texts += try files(in: sub, path + "/" + name, suffix: suffix)
            }
            return texts
        }
    }

    private mutating func files(in directory: FileDescriptor, _ path: String, suffix: String?) throws(PolicyFileUnreadable) -> [String] {
        var texts: [String] = []
        for name in try entries(of: directory, path) where suffix.map({ name.hasSuffix($0) }) ?? true {
            if let text = try read(name, in: directory, path) { texts.append(text) }
        }
        return texts
    }

    /// The directory, checked; nil when it does not exist (or, inside a directory, is a file).
    private func openDirectory(_ path: String, relativeTo parent: FileDescriptor? = nil, name: String? = nil)
        throws(PolicyFileUnreadable) -> FileDescriptor? {
        let absent = parent == nil ? [ENOENT] : [ENOENT, ENOTDIR]
        guard let directory = try open(path, at: parent, name ?? path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW,
                                       absent: absent) else { return nil }
        try check(directory, path, directory: true, owners: [0])
        return directory
    }

    /// The names in a directory (no hidden ones: editors' and package managers' leftovers).
    private func entries(of directory: FileDescriptor, _ path: String) throws(PolicyFileUnreadable) -> [String] {
        // A description of its own: readdir moves its offset (SafeDirectory.entries does the same).
        let raw: Int32
        do {
            raw = try syscall("open", path) { openat(directory.rawValue, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        } catch {
            throw PolicyFileUnreadable(path: path, why: "\(error)")
        }
        guard let stream = fdopendir(raw) else {
            let code = errno
            _ = Glibc.close(raw)
            throw PolicyFileUnreadable(path: path, why: String(cString: strerror(code)))
        }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
            }
            if name.hasPrefix(".") { continue }
            guard names.count < PolicyFileReader.entryLimit else {
                throw PolicyFileUnreadable(path: path, why: "more than \(PolicyFileReader.entryLimit) entries")
            }
            names.append(name)
        }
        return names.sorted()
    }

    /// A regular file's text; nil when it is gone or not a regular file (a subdirectory, a
    /// socket: no policy is read from those).
    private mutating func read(_ name: String, in directory: FileDescriptor, _ directoryPath: String) throws(PolicyFileUnreadable) -> String? {
        let path = directoryPath + "/" + name
        // O_NONBLOCK: a FIFO planted here must not hold the broker. No O_NOFOLLOW (see above).
        guard let file = try open(path, at: directory, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
                                  absent: [ENOENT, ENXIO, EISDIR]),
              let info = try? file.status(), info.st_mode & S_IFMT == S_IFREG else { return nil }
        try check(file, path, directory: false, owners: [0, (try? directory.status().st_uid) ?? 0])
        let limit = min(PolicyFileReader.fileLimit, budget)
        do {
            guard Int(info.st_size) <= limit else { throw SystemError("read", path, code: EFBIG) }
            let bytes = try file.readAll(limit: limit, subject: path)
            budget -= bytes.count
            return String(decoding: bytes, as: UTF8.self)
        } catch let error as SystemError where error.code == EFBIG {
            throw PolicyFileUnreadable(path: path, why: "larger than \(limit) bytes")
        } catch {
            throw PolicyFileUnreadable(path: path, why: "\(error)")
        }
    }

    /// `name` opened relative to `directory` (the working directory for an absolute path),
    /// through the syscall funnel; nil for the errors in `absent`.
    private func open(_ path: String, at directory: FileDescriptor?, _ name: String, _ flags: Int32,
                      absent: [Int32]) throws(PolicyFileUnreadable) -> FileDescriptor? {
        do {
            return FileDescriptor(owning: try syscall("open", path) { openat(directory?.rawValue ?? AT_FDCWD, name, flags) })
        } catch let error as SystemError where absent.contains(error.code) {
            return nil
        } catch let error as SystemError where error.code == ELOOP || error.code == ENOTDIR {
            throw PolicyFileUnreadable(path: path, why: "not a directory")
        } catch {
            throw PolicyFileUnreadable(path: path, why: "\(error)")
        }
    }

    /// Owned by root (or `owners`, or a system account for a directory), not writable by
    /// group or others.
    private func check(_ file: FileDescriptor, _ path: String, directory: Bool, owners: Set<UInt32>) throws(PolicyFileUnreadable) {
        guard let info = try? file.status() else { throw PolicyFileUnreadable(path: path, why: "fstat failed") }
        if directory && info.st_mode & S_IFMT != S_IFDIR { throw PolicyFileUnreadable(path: path, why: "not a directory") }
        guard owners.contains(info.st_uid) || (directory && info.st_uid < systemOwnerLimit) else {
            throw PolicyFileUnreadable(path: path, why: "owned by uid \(info.st_uid)")
        }
        guard info.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            throw PolicyFileUnreadable(path: path, why: "writable by group or others (mode \(String(info.st_mode & 0o7777, radix: 8)))")
        }
    }

    static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        return (slash == path.startIndex ? "/" : String(path[..<slash]), String(path[path.index(after: slash)...]))
    }
}

/// The user and group names each kind of policy file grants something to, from its text: a
/// superset is fine (it only reserves more), so each parser reads the files' grammar loosely
/// and keeps every word that could be a name. Only valid account names (`AccountName`) are
/// kept: no other can be provisioned.
enum PolicyNames {
    /// sudoers(5): the user lists of user specifications, `Defaults:` and `User_Alias`, with
    /// `%group`, `%:group` and `!` read as names (runas lists and the other aliases grant
    /// nothing to who is named there). Lines continue after a `\`; `#` starts a comment
    /// unless a digit follows it (a uid).
    static func sudoers(_ text: String) -> Set<String> {
        var names: Set<String> = []
        for line in logicalLines(text, continued: true) {
            let body = Substring(sudoersComment(line).trimmingSpaces)
            if body.hasPrefix("@include") { continue }
            let keyword = body.prefix { $0 != " " && $0 != "\t" }
            if keyword.hasPrefix("Defaults:") {
                names.formUnion(words(userList(body.dropFirst("Defaults:".count))))
            } else if keyword == "User_Alias" {
                // NAME = list [: NAME = list]: alias names are upper case, so every name-like
                // word after the keyword is a member.
                names.formUnion(words(body.dropFirst(keyword.count)))
            } else if !keyword.hasPrefix("Defaults") && !keyword.hasSuffix("_Alias") {
                names.formUnion(words(userList(body)))
            }
        }
        return names
    }

    /// polkit's JavaScript rules, .pkla files and localauthority.conf: `unix-user:NAME`,
    /// `unix-group:NAME`, `isInGroup("NAME")` and `user == "NAME"`.
    static func polkit(_ text: String) -> Set<String> {
        let bytes = Array(text.utf8)
        var names: Set<String> = []
        for marker in ["unix-group:", "unix-user:"] {
            for start in occurrences(of: marker, in: bytes) { names.formUnion(words(name(in: bytes, at: start))) }
        }
        for marker in ["isInGroup(", ".user=="] {
            for start in occurrences(of: marker, in: bytes, ignoringBlanks: true) {
                var index = start
                while index < bytes.count, [0x20, 0x09, 0x3d, 0x22, 0x27].contains(bytes[index]) { index += 1 } // blanks, =, quotes
                names.formUnion(words(name(in: bytes, at: index)))
            }
        }
        return names
    }

    /// pam_group's group.conf and pam_time's time.conf: `services;ttys;users;times[;groups]`,
    /// the names in `fields` (users lists with ! & | and %group, groups lists).
    static func semicolonFields(_ text: String, _ fields: [Int]) -> Set<String> {
        var names: Set<String> = []
        for line in logicalLines(text, continued: true) {
            let parts = comment(line).split(separator: ";", omittingEmptySubsequences: false)
            for field in fields where field < parts.count { names.formUnion(words(parts[field])) }
        }
        return names
    }

    /// pam_access's access.conf: `permission : users : origins`, users being names,
    /// `(group)`, `user@host` (the user) and `@netgroup` (no local name).
    static func access(_ text: String) -> Set<String> {
        var names: Set<String> = []
        for line in logicalLines(text, continued: false) {
            let parts = comment(line).split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3 else { continue }
            for item in parts[1].split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "," }) where !item.hasPrefix("@") {
                names.formUnion(words(item.prefix { $0 != "@" }))
            }
        }
        return names
    }

    /// pam_limits' limits.conf: the domain, first on each line (a user, `@group`, `%group`).
    static func limits(_ text: String) -> Set<String> {
        var names: Set<String> = []
        for line in logicalLines(text, continued: false) {
            guard let domain = comment(line).split(whereSeparator: { $0 == " " || $0 == "\t" }).first else { continue }
            names.formUnion(words(domain.drop { $0 == "@" || $0 == "%" }))
        }
        return names
    }

    /// PAM service files: the `group=` of pam_wheel (its default, wheel, is built in).
    static func pamWheel(_ text: String) -> Set<String> {
        var names: Set<String> = []
        for line in logicalLines(text, continued: true) {
            let tokens = comment(line).split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard let module = tokens.firstIndex(where: { $0 == "pam_wheel.so" || $0.hasSuffix("/pam_wheel.so") }) else { continue }
            for argument in tokens[(module + 1)...] where argument.hasPrefix("group=") {
                names.formUnion(words(argument.dropFirst("group=".count)))
            }
        }
        return names
    }

    /// login.defs' UID_MIN and GID_MIN (1000 where it does not say).
    static func loginDefs(_ text: String) -> (uidMin: UInt32, gidMin: UInt32) {
        var values: [Substring: UInt32] = [:]
        for line in logicalLines(text, continued: false) {
            let tokens = comment(line).split(whereSeparator: { $0 == " " || $0 == "\t" })
            if tokens.count >= 2, tokens[0] == "UID_MIN" || tokens[0] == "GID_MIN", let value = UInt32(tokens[1]) {
                values[tokens[0]] = value
            }
        }
        return (values["UID_MIN"] ?? 1000, values["GID_MIN"] ?? 1000)
    }

    // MARK: pieces

    /// Lines (a `\` at the end joining the next where `continued`).
    static func logicalLines(_ text: String, continued: Bool) -> [Substring] {
        var lines: [Substring] = []
        var pending = ""
        for raw in text.split(whereSeparator: \.isNewline) {
            if continued, raw.hasSuffix("\\") {
                pending += raw.dropLast() + " "
                continue
            }
            lines.append(pending.isEmpty ? raw : Substring(pending + raw))
            pending = ""
        }
        if !pending.isEmpty { lines.append(Substring(pending)) }
        return lines
    }

    /// The line up to a `#`.
    static func comment(_ line: Substring) -> Substring { line.prefix { $0 != "#" } }

    /// The line up to a `#` that starts a comment in sudoers (one followed by a digit is a uid).
    static func sudoersComment(_ line: Substring) -> Substring {
        var index = line.startIndex
        while let hash = line[index...].firstIndex(of: "#") {
            let next = line.index(after: hash)
            guard next < line.endIndex, line[next].isASCII, line[next].isNumber else { return line[..<hash] }
            index = next
        }
        return line
    }

    /// A sudoers user list at the start of `body`: items separated by commas (blanks around
    /// them allowed), ending at the first blank that no comma follows.
    static func userList(_ body: Substring) -> Substring {
        var expectingItem = true
        var index = body.startIndex
        while index < body.endIndex {
            let character = body[index]
            if character == "," {
                expectingItem = true
            } else if character == " " || character == "\t" {
                let next = body[index...].firstIndex { $0 != " " && $0 != "\t" }
                if !expectingItem && (next.map { body[$0] != "," } ?? true) { return body[..<index] }
            } else if character != "!" {
                expectingItem = false
            }
            index = body.index(after: index)
        }
        return body
    }

    /// The valid account names among the words of `text` (split at everything a name cannot
    /// hold: blanks, commas, `%`, `!`, `:`, quotes, brackets, …).
    static func words(_ text: Substring) -> Set<String> {
        Set(text.split { !isNameCharacter($0) }.map(String.init).filter(AccountName.isValid))
    }

    static func isNameCharacter(_ character: Character) -> Bool {
        character.isASCII && (character.isLetter || character.isNumber || character == "_" || character == "." || character == "-")
    }

    /// The name-like run at `start`.
    static func name(in bytes: [UInt8], at start: Int) -> Substring {
        var end = start
        while end < bytes.count, end - start < 64, isNameCharacter(Character(UnicodeScalar(bytes[end]))) { end += 1 }
        return Substring(String(decoding: bytes[min(start, end)..<end], as: UTF8.self))
    }

    /// Where each occurrence of `marker` ends in `bytes` (blanks in the text skipped between
    /// the marker's characters with `ignoringBlanks`: `user == "x"` as well as `user=="x"`).
    static func occurrences(of marker: String, in bytes: [UInt8], ignoringBlanks: Bool = false) -> [Int] {
        let pattern = Array(marker.utf8)
        guard let first = pattern.first else { return [] }
        var ends: [Int] = []
        var start = 0
        while let found = bytes[start...].firstIndex(of: first) {
            var index = found + 1, matched = 1
            while matched < pattern.count, index < bytes.count {
                if bytes[index] == pattern[matched] {
                    matched += 1
                } else if !(ignoringBlanks && (bytes[index] == 0x20 || bytes[index] == 0x09)) {
                    break
                }
                index += 1
            }
            if matched == pattern.count { ends.append(index) }
            start = found + 1
        }
        return ends
    }
}
