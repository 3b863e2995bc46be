import Glibc

/// A local account, resolved through NSS.
public struct UserAccount: Equatable, Sendable {
    public let name: String
    public let uid: UInt32
    public let gid: UInt32
    public let home: String

    public init(name: String, uid: UInt32, gid: UInt32, home: String) {
        self.name = name
        self.uid = uid
        self.gid = gid
        self.home = home
    }

    /// Looks up `name`; nil when no such user exists.
    public static func named(_ name: String) throws -> UserAccount? {
        try lookup { entry, buffer, size, result in getpwnam_r(name, entry, buffer, size, result) }
    }

    public static func withID(_ uid: UInt32) throws -> UserAccount? {
        try lookup { entry, buffer, size, result in getpwuid_r(uid, entry, buffer, size, result) }
    }

    public static func current() throws -> UserAccount? {
        try withID(geteuid())
    }

    private static func lookup(
        _ call: (UnsafeMutablePointer<passwd>, UnsafeMutablePointer<CChar>, Int, UnsafeMutablePointer<UnsafeMutablePointer<passwd>?>) -> Int32
    ) throws -> UserAccount? {
        var size = 4096
        while size <= 1 << 20 {
            var entry = passwd()
            var result: UnsafeMutablePointer<passwd>? = nil
            var buffer = [CChar](repeating: 0, count: size)
            let code = buffer.withUnsafeMutableBufferPointer { buf -> Int32 in
                guard let base = buf.baseAddress else { return ENOMEM }
                return call(&entry, base, size, &result)
            }
            if code == ERANGE { size *= 2; continue }
            if code == EINTR { continue }
            if code != 0 && code != ENOENT && code != ESRCH { throw SystemError("getpwnam", code: code) }
            guard result != nil, let namePointer = entry.pw_name, let homePointer = entry.pw_dir else { return nil }
            return UserAccount(name: String(cString: namePointer), uid: entry.pw_uid, gid: entry.pw_gid,
                               home: String(cString: homePointer))
        }
        throw SystemError("getpwnam", code: ERANGE)
    }
}

extension UserAccount {
    /// Whether the account belongs to `group` (primary or supplementary); false when the group
    /// does not exist.
    public func isMember(ofGroup groupName: String) -> Bool {
        guard let wanted = groupID(named: groupName) else { return false }
        if wanted == gid { return true }
        var count: Int32 = 64
        while count <= 65536 {
            var groups = [gid_t](repeating: 0, count: Int(count))
            var found = count
            if getgrouplist(name, gid, &groups, &found) >= 0 {
                return groups.prefix(Int(found)).contains(wanted)
            }
            count = max(found, count * 2)
        }
        return false
    }
}

/// The id of the group named `name`; nil when there is none.
public func groupID(named name: String) -> UInt32? {
    var entry = Glibc.group()
    var result: UnsafeMutablePointer<Glibc.group>? = nil
    var buffer = [CChar](repeating: 0, count: 16384)
    return buffer.withUnsafeMutableBufferPointer { raw -> UInt32? in
        guard let base = raw.baseAddress, getgrnam_r(name, &entry, base, raw.count, &result) == 0, result != nil else { return nil }
        return entry.gr_gid
    }
}
