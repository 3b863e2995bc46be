import CLinux
import Glibc

/// An account's entry in /etc/shadow (root only), lent to a closure and wiped after it.
public enum ShadowEntry {
    /// Calls `body` with the password hash and the day of its last change; nil when there is
    /// no entry, or it has no hash.
    public static func withPasswordHash<T>(of name: String, _ body: (UnsafeRawBufferPointer, Int) -> T) -> T? {
        var entry = spwd()
        var result: UnsafeMutablePointer<spwd>? = nil
        var buffer = [CChar](repeating: 0, count: 4096)
        defer { buffer.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } } }
        guard getspnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil, let hash = entry.sp_pwdp else { return nil }
        return body(UnsafeRawBufferPointer(start: hash, count: strlen(hash)), entry.sp_lstchg)
    }
}
