import Glibc
import SodiumKit
import SystemKit

/// The per-login-session files under `$XDG_RUNTIME_DIR/fingerseal/` (tmpfs): the session's
/// access token and the step-up grants. Dropped when the session closes.
public enum SessionFiles {
    public static let directory = "fingerseal"
    public static let accessToken = "access-token"
    public static let grants = "grants"

    /// `$XDG_RUNTIME_DIR` as the session sees it, else systemd's `/run/user/UID`.
    public static func runtimeDirectory(for account: UserAccount, environment: String?) -> String {
        if let environment, environment.hasPrefix("/") { return environment }
        return "/run/user/\(account.uid)"
    }

    /// Writes the session's access token (an `AccessTokenFile`, 0600, as the user, atomically)
    /// into a 0700 `fingerseal` directory under the user's runtime directory. Only when that
    /// is in memory (tmpfs, as /run/user/UID is): a token is never written to a disk. Returns
    /// whether it was placed.
    @discardableResult
    public static func placeAccessToken(_ file: UnsafeRawBufferPointer, for account: UserAccount,
                                        runtimeDirectory: String) throws -> Bool {
        var bytes = Array(file)
        defer { Sodium.wipe(&bytes) }
        return try VaultStore.guarded("place the session's access token") {
            try asUser(account) {
                let runtime = try SafeDirectory(path: runtimeDirectory, owner: account.uid)
                guard runtime.isMemoryBacked else { return false }
                try runtime.makeSubdirectory(directory, mode: 0o700).replace(accessToken, with: bytes, mode: 0o600)
                return true
            }
        }
    }

    /// The session's access token, when there is one in the format; nil otherwise (no
    /// runtime directory, no file, or a file that is not ours, which is then ignored).
    public static func readAccessToken(for account: UserAccount, runtimeDirectory: String) -> AccessTokenFile? {
        try? asUser(account) { () -> AccessTokenFile? in
            guard let runtime = try? SafeDirectory(path: runtimeDirectory, owner: account.uid),
                  let ours = try runtime.subdirectory(directory),
                  var bytes = try ours.read(accessToken, sizeLimit: AccessTokenFile.maxSize) else { return nil }
            defer { Sodium.wipe(&bytes) }
            return bytes.withUnsafeBytes { AccessTokenFile.parse($0) }
        } ?? nil
    }

    /// Removes the session's access token (logout). Returns whether there was one.
    public static func dropAccessToken(for account: UserAccount, runtimeDirectory: String) throws -> Bool {
        try VaultStore.guarded("remove the session's access token") {
            try asUser(account) {
                guard let runtime = try? SafeDirectory(path: runtimeDirectory, owner: account.uid),
                      let ours = try runtime.subdirectory(directory), try ours.exists(accessToken) else { return false }
                try ours.remove(accessToken)
                return true
            }
        }
    }

    /// Removes the access token and every grant, as the user. Returns what was removed.
    public static func drop(for account: UserAccount, runtimeDirectory: String) throws -> [String] {
        try VaultStore.guarded("clear the session's fingerseal files") {
            try asUser(account) {
                guard let runtime = try? SafeDirectory(path: runtimeDirectory, owner: account.uid),
                      let ours = try runtime.subdirectory(directory) else { return [] }
                var removed: [String] = []
                if try ours.exists(accessToken) {
                    try ours.remove(accessToken)
                    removed.append(accessToken)
                }
                if let grantDirectory = try ours.subdirectory(grants) {
                    for name in try grantDirectory.entries() { try grantDirectory.remove(name) }
                    try ours.removeDirectory(grants)
                    removed.append(grants)
                }
                return removed
            }
        }
    }
}

/// The account check: says when the vault needs a new sign-in. It never denies an account:
/// that is the password stack's business. No vault: no opinion (PAM_IGNORE).
public enum AccountCheck {
    public static func run(_ store: VaultStore, prompter: Prompter) -> AuthenticationResult {
        do {
            guard let status = try Vault.status(store) else { return AuthenticationResult(.notApplicable, "no vault") }
            if status.signIn == .required {
                prompter.info(Messages.signInRequiredNotice)
                return AuthenticationResult(.success, "sign-in required")
            }
            return AuthenticationResult(.success, "vault fine")
        } catch {
            return AuthenticationResult(.notApplicable, "vault unreadable: \(error)")
        }
    }
}
