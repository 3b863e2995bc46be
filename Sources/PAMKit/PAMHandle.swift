import CPAM
import SystemKit
#if !hasFeature(Embedded)
import Glibc
#endif

/// The flags libpam passes a module, as far as the module reads them.
public enum PAMFlags {
    /// pam_chauthtok's second pass, when the new password is set (the first only checks).
    public static func updatesAuthtok(_ flags: Int32) -> Bool { flags & Int32(PAM_UPDATE_AUTHTOK) != 0 }
}

/// The PAM handle a module is given. PAM owns it; this only borrows it for one call.
public struct PAMHandle {
    private let raw: OpaquePointer

    public init?(_ raw: OpaquePointer?) {
        guard let raw else { return nil }
        self.raw = raw
    }

    public enum Item {
        case service, rhost, ruser, tty, xdisplay, user

        var code: Int32 {
            switch self {
            case .user: return PAM_USER
            case .service: return PAM_SERVICE
            case .rhost: return PAM_RHOST
            case .ruser: return PAM_RUSER
            case .tty: return PAM_TTY
            case .xdisplay: return PAM_XDISPLAY
            }
        }
    }

    /// The user being authenticated (may run the conversation to ask for it).
    public func user() -> String? {
        var name: UnsafePointer<CChar>? = nil
        guard pam_get_user(raw, &name, nil) == PAM_SUCCESS, let name else { return nil }
        return String(cString: name)
    }

    /// Sets PAM_USER (the account the broker identified the finger as).
    @discardableResult
    public func setUser(_ name: String) -> Bool {
        pam_set_item(raw, PAM_USER, name) == PAM_SUCCESS
    }

    public func item(_ item: Item) -> String? {
        var value: UnsafePointer<CChar>? = nil
        guard fs_pam_get_string_item(raw, item.code, &value) == PAM_SUCCESS, let value else { return nil }
        return String(cString: value)
    }

    /// Lends the host's PAM_AUTHTOK (the password a module of the stack took, or the new one
    /// in a password change) to `body`, never as a String; nil when there is none.
    public func withAuthtok<T>(_ body: (UnsafeRawBufferPointer) -> T) -> T? {
        var value: UnsafePointer<CChar>? = nil
        guard fs_pam_get_string_item(raw, PAM_AUTHTOK, &value) == PAM_SUCCESS, let value else { return nil }
        return body(UnsafeRawBufferPointer(start: value, count: strlen(value)))
    }

    /// Sets PAM_AUTHTOK for the modules below (pam_gnome_keyring). libpam keeps a copy of its
    /// own and wipes it at pam_end; the NUL-terminated temporary made here is wiped at once.
    @discardableResult
    public func setAuthtok(_ bytes: UnsafeRawBufferPointer) -> Bool {
        // A NUL inside would cut the password short: nothing is set rather than a shorter one.
        guard !bytes.contains(0), let buffer = malloc(bytes.count + 1) else { return false }
        if let base = bytes.baseAddress { memcpy(buffer, base, bytes.count) }
        buffer.storeBytes(of: 0, toByteOffset: bytes.count, as: UInt8.self)
        let stored = pam_set_item(raw, PAM_AUTHTOK, buffer) == PAM_SUCCESS
        explicit_bzero(buffer, bytes.count + 1)
        free(buffer)
        return stored
    }

    /// Whether a call of this transaction kept data under `name` (`setSecretData`).
    public func hasData(_ name: String) -> Bool {
        var data: UnsafeRawPointer? = nil
        return pam_get_data(raw, name, &data) == PAM_SUCCESS && data != nil
    }

    /// A variable of the PAM environment (pam_getenv): what pam_env and the host put there
    /// for the session, such as the person's LANG.
    public func environment(_ name: String) -> String? {
        guard let value = pam_getenv(raw, name) else { return nil }
        return String(cString: value)
    }

    public enum LogLevel {
        case error, warning, notice, info, debug

        var priority: Int32 {
            switch self {
            case .error: return LOG_ERR
            case .warning: return LOG_WARNING
            case .notice: return LOG_NOTICE
            case .info: return LOG_INFO
            case .debug: return LOG_DEBUG
            }
        }
    }

    /// Logs through pam_syslog (LOG_AUTHPRIV, prefixed with the module and service), as one
    /// line: what a host passed on (PAM_USER from sshd, off the network) is escaped.
    public func log(_ level: LogLevel, _ message: String) {
        fs_pam_syslog(raw, level.priority | LOG_AUTHPRIV, ControlCharacters.escaped(message))
    }

    /// Shows an informational line to the user; false when the conversation failed (a
    /// graphical host that ended it).
    @discardableResult
    public func info(_ message: String) -> Bool { show(PAM_TEXT_INFO, message) }

    private func show(_ style: Int32, _ message: String) -> Bool {
        var response: UnsafeMutablePointer<CChar>? = nil
        let rc = fs_pam_prompt(raw, style, &response, message)
        free(response)
        return rc == PAM_SUCCESS
    }

    /// Asks for a secret without echo (PAM_PROMPT_ECHO_OFF) and lends the answer to `body`;
    /// PAM's copy is wiped and freed afterwards. nil when the conversation gives no answer.
    public func withSecretAnswer<T, E: Error>(_ prompt: String, _ body: (UnsafeRawBufferPointer) throws(E) -> T) throws(E) -> T? {
        try withAnswer(prompt, echo: false, body)
    }

    /// Asks a question, with echo (PAM_PROMPT_ECHO_ON) or without, and lends the answer to
    /// `body` without making a String of it; PAM's copy is wiped and freed afterwards. nil
    /// when the conversation gives no answer (it failed, or the host ended it).
    public func withAnswer<T, E: Error>(_ prompt: String, echo: Bool, _ body: (UnsafeRawBufferPointer) throws(E) -> T) throws(E) -> T? {
        var response: UnsafeMutablePointer<CChar>? = nil
        let rc = fs_pam_prompt(raw, echo ? PAM_PROMPT_ECHO_ON : PAM_PROMPT_ECHO_OFF, &response, prompt)
        guard let response else { return nil }
        let length = strlen(response)
        defer {
            explicit_bzero(response, length)
            free(response)
        }
        guard rc == PAM_SUCCESS else { return nil }
        return try body(UnsafeRawBufferPointer(start: response, count: length))
    }

    /// Keeps a secret with the PAM handle (pam_set_data) until a later call of the same
    /// transaction (open_session) takes it; PAM's cleanup wipes and frees it at pam_end.
    @discardableResult
    public func setSecretData(_ name: String, _ bytes: UnsafeRawBufferPointer) -> Bool {
        let total = MemoryLayout<Int>.size + bytes.count
        guard let buffer = malloc(total) else { return false }
        buffer.storeBytes(of: bytes.count, as: Int.self)
        if let base = bytes.baseAddress { memcpy(buffer + MemoryLayout<Int>.size, base, bytes.count) }
        let stored = pam_set_data(raw, name, buffer, { _, data, _ in
            guard let data else { return }
            let count = data.load(as: Int.self)
            explicit_bzero(data, MemoryLayout<Int>.size + count)
            free(data)
        })
        if stored != PAM_SUCCESS {
            explicit_bzero(buffer, total)
            free(buffer)
            return false
        }
        return true
    }

    /// Drops what `setSecretData` kept under `name` (its cleanup wipes and frees it).
    public func removeData(_ name: String) {
        _ = pam_set_data(raw, name, nil, nil)
    }

    /// Lends a secret kept with `setSecretData` to `body`; nil when there is none.
    public func withSecretData<T, E: Error>(_ name: String, _ body: (UnsafeRawBufferPointer) throws(E) -> T) throws(E) -> T? {
        var data: UnsafeRawPointer? = nil
        guard pam_get_data(raw, name, &data) == PAM_SUCCESS, let data else { return nil }
        let count = data.load(as: Int.self)
        return try body(UnsafeRawBufferPointer(start: data + MemoryLayout<Int>.size, count: count))
    }

    /// Shows an error line to the user; false when the conversation failed.
    @discardableResult
    public func error(_ message: String) -> Bool { show(PAM_ERROR_MSG, message) }
}
