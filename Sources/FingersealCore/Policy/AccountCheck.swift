import FingersealWire
import SystemKit

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
