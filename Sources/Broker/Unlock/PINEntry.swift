import FingersealCore
import FingersealWire
import SodiumKit

/// The PIN, asked through the client: for the unlock's fallback and for every command that
/// needs the PIN itself (enroll, forget, a PIN change, sign-out).
enum PINEntry {
    /// The PIN, asked through the client (its terminal, its --pin-fd, a dialog). Nothing
    /// typed is never a wrong PIN: on the command line a mistake; in a PAM conversation or an
    /// application's dialog, "the password instead" (the stack's, or the broker's check).
    static func ask(_ call: Call, prompt: String = Messages.enterPIN) throws -> SecureBytes {
        guard let pin = try call.conversation.askSecret(.pin, prompt) else {
            if call.channel.skippedPIN == .mistake { throw FingersealError(.usage, Messages.pinEmptyInput) }
            throw FingersealError(.cancelled, Messages.cancelled, detail: "PIN skipped")
        }
        return pin
    }

    /// A new PIN, checked against the rules; asked twice unless the client answers from a
    /// descriptor (--pin-fd), where a typing mistake cannot happen.
    static func askNew(_ call: Call) throws -> SecureBytes {
        guard let pin = try call.conversation.askSecret(.newPIN, Messages.enterNewPIN) else {
            throw FingersealError(.usage, Messages.pinEmptyInput)
        }
        try PINRules.check(pin)
        if !call.answersFromDescriptor {
            guard let again = try call.conversation.askSecret(.newPIN, Messages.repeatNewPIN) else {
                throw FingersealError(.usage, Messages.pinEmptyInput)
            }
            guard pin.isEqual(to: again) else { throw FingersealError(.usage, Messages.pinMismatch) }
        }
        return pin
    }

    /// The vault opened with the PIN; lockout rules apply (the try is counted first).
    static func unlock(_ call: Call, store: VaultStore, prompt: String = Messages.enterPIN) throws -> UnlockedVault {
        try unlock(call, session: VaultSession(store), prompt: prompt)
    }

    /// The same, within a request's vault session.
    static func unlock(_ call: Call, session: VaultSession, prompt: String = Messages.enterPIN) throws -> UnlockedVault {
        guard let vault = try unlock(call, session: session, prompt: prompt, skippable: false) else {
            throw FingersealError(.cancelled, Messages.cancelled, detail: "PIN skipped")
        }
        return vault
    }

    /// The same; with `skippable`, nil when the person skipped the PIN for the account
    /// password (an application's dialog).
    static func unlock(_ call: Call, session: VaultSession, prompt: String = Messages.enterPIN,
                       skippable: Bool) throws -> UnlockedVault? {
        guard let status = try session.status() else { throw FingersealError(.noVault, Messages.noVault) }
        try PasswordDue.requireBeforePIN(call, status)
        call.conversation.turning(to: .pin)
        let pin: SecureBytes
        if skippable && call.channel.skippedPIN == .accountPassword {
            guard let typed = try call.conversation.askSecret(.pin, prompt) else { return nil }
            pin = typed
        } else {
            pin = try ask(call, prompt: prompt)
        }
        do {
            return try session.unlock(pin: call.pinKeyslot(pin), ledger: call.ledger(session.store))
        } catch let error as FingersealError {
            // The CLI shows a command's error itself; a PAM host shows only what is sent.
            if call.channel.showsOnlyTheConversation { call.conversation.error(error.message) }
            throw error
        }
    }
}
