import FingersealCore
import FingersealWire
import Glibc
import PAMKit
import SodiumKit
import SystemKit

/// The account password, checked by the broker itself with PAM (design §2): creating a
/// vault and resetting a forgotten PIN need it from a caller other than root. The service
/// is the broker's own, `fingerseal-verify` (pam/fingerseal-verify: pam_unix, never
/// pam_fingerseal, so neither a finger nor the PIN can stand in for the password). PAM's
/// questions go to the client as questions of the request; its messages as sentences.
enum AccountPassword {
    static let service = "fingerseal-verify"
    /// The detail of a check the person skipped for another way in (`skipsTo`).
    static let skipped = "password skipped"

    /// Checks the password unless the caller is root (root may provision for any user).
    static func requireUnlessRoot(_ call: Call) throws {
        if call.caller.isRoot { return }
        try check(call)
    }

    /// Runs pam_authenticate and pam_acct_mgmt for the account acted on, after saying `why`.
    /// Throws `.noMatch` when PAM refuses, `.cancelled`/`.timedOut` when the client cancels,
    /// leaves or does not answer, `.systemError` when PAM cannot be started. Returns the
    /// password PAM was given (nil if it asked for none). With `skipsTo`, nothing typed is a
    /// turn to that way in, never a try: `.cancelled` with the detail `skipped`.
    @discardableResult
    static func check(_ call: Call, why: String = Messages.accountPasswordNeeded, skipsTo: Ask.Purpose? = nil) throws -> SecureBytes? {
        let conversation = call.conversation
        // Counted before PAM is asked (a killed check still counts), per account, with the
        // PIN's delays: so the broker is no faster an oracle than a login prompt.
        let tries = LockoutLedger(store: call.store, options: call.settings)
        try tries.beginPasswordAttempt()
        conversation.turning(to: .password)
        conversation.info(why)
        // PAM's hidden question's answer: a cancel before it gives the try back.
        var answered: SecureBytes? = nil
        // The first error of the conversation (a cancel), rethrown instead of PAM's refusal.
        var interrupted: FingersealError? = nil
        let converse: PAMClient.Converser = { message in
            if interrupted != nil { return .abort }
            do {
                switch message {
                case let .promptEchoOff(prompt):
                    guard let secret = try conversation.askSecret(.accountPassword, prompt, skipsTo: skipsTo) else {
                        guard skipsTo == nil else {
                            interrupted = FingersealError(.cancelled, Messages.cancelled, detail: skipped)
                            return .abort
                        }
                        return .text("")
                    }
                    answered = secret
                    guard let owned = cString(secret) else {
                        interrupted = FingersealError(.systemError, Messages.secureMemory)
                        return .abort
                    }
                    return .owned(owned)
                case let .promptEchoOn(prompt):
                    return .text(try conversation.askText(.other, prompt) ?? "")
                case let .textInfo(text):
                    conversation.info(text)
                    return .none
                case let .errorMessage(text):
                    conversation.error(text)
                    return .none
                }
            } catch let error as FingersealError {
                interrupted = error
                return .abort
            } catch {
                interrupted = FingersealError(.cancelled, Messages.cancelled)
                return .abort
            }
        }
        let status = try run(call, converse)
        if let interrupted {
            if answered == nil { tries.passwordNotChecked() }
            throw interrupted
        }
        guard status == 0 else {
            Syslog.log(.notice, "fingersealed: \(call.request.command.rawValue): the account password of user=\(call.account.name) "
                       + "was not accepted (\(call.caller)): \(PAMClient.describe(status))")
            throw FingersealError(.noMatch, Messages.accountPasswordRefused, cause: .accountPasswordRefused)
        }
        tries.passwordSucceeded(boot: call.state.bootID)
        return answered
    }

    /// Checks a password a PAM host already holds (its PAM_AUTHTOK after the stack's password
    /// module, a new one after a change), asking nobody and saying nothing. `counted`: the
    /// try counts as at a prompt (a host the user runs could otherwise test guesses for
    /// free); a root host's does not, since its password already passed its own stack (one
    /// that another module accepted must not cost the account tries). True when PAM accepts
    /// it; then the password rule counts from now (`PasswordRule`).
    static func verify(_ call: Call, _ secret: SecureBytes, counted: Bool) -> Bool {
        let tries = LockoutLedger(store: call.store, options: call.settings)
        if counted {
            do { try tries.beginPasswordAttempt() } catch {
                Syslog.log(.notice, "fingersealed: \(call.request.command.rawValue): the account password of user=\(call.account.name) "
                           + "was not checked (\(call.caller)): \(error)")
                return false
            }
        }
        var given = false
        let converse: PAMClient.Converser = { message in
            // One answer: the password, to the first hidden question; nothing else is answered.
            switch message {
            case .promptEchoOff where !given:
                guard let owned = cString(secret) else { return .abort }
                given = true
                return .owned(owned)
            case .promptEchoOff, .promptEchoOn: return .abort
            case .textInfo, .errorMessage: return .none
            }
        }
        let status: Int32
        do { status = try run(call, converse) } catch {
            Syslog.log(.warning, "fingersealed: \(call.request.command.rawValue): \(error)")
            if counted { tries.passwordNotChecked() }
            return false
        }
        guard status == 0 else {
            Syslog.log(.notice, "fingersealed: \(call.request.command.rawValue): the account password of user=\(call.account.name) "
                       + "given by the host was not accepted (\(call.caller)): \(PAMClient.describe(status))")
            return false
        }
        tries.passwordSucceeded(boot: call.state.bootID)
        return true
    }

    /// pam_authenticate and pam_acct_mgmt of `fingerseal-verify` for the account acted on;
    /// PAM's status. Throws `.systemError` when PAM cannot be started.
    private static func run(_ call: Call, _ converse: @escaping PAMClient.Converser) throws -> Int32 {
        let pam: PAMClient
        do {
            pam = try PAMClient.start(service: service, user: call.account.name,
                                      configDirectory: call.state.settings.pamServiceDirectory, converse: converse)
        } catch {
            throw FingersealError(.systemError, Messages.systemFailure(.checkAccountPassword), detail: "pam_start: \(error)")
        }
        // Whom PAM's logs should name as asking.
        if let asking = try? UserAccount.withID(call.caller.uid) { _ = pam.setItem(.ruser, asking.name) }
        var status = pam.authenticate()
        if status == 0 { status = pam.accountManagement() }
        return status
    }

    /// A malloc'd, NUL-terminated copy of `secret` for PAM, which frees it (after wiping, as
    /// its modules do). Nil when there is no memory.
    static func cString(_ secret: SecureBytes) -> UnsafeMutablePointer<CChar>? {
        secret.withUnsafeBytes { bytes -> UnsafeMutablePointer<CChar>? in
            // A NUL inside would cut the password short in C: send an empty one, which
            // fingerseal-verify refuses (no nullok), rather than a shorter password.
            let length = bytes.contains(0) ? 0 : bytes.count
            guard let raw = calloc(length + 1, 1) else { return nil }
            if length > 0, let base = bytes.baseAddress { memcpy(raw, base, length) }
            return raw.assumingMemoryBound(to: CChar.self)
        }
    }
}
