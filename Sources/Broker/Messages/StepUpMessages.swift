import FingersealCore
import FingersealWire
import Localization

/// Step-up confirmations and sealed data. Only the broker says these; those the core, the flows or
/// the tests say too are public in FingersealCore (Support/Messages/StepUpMessages.swift).
extension Messages {
    // Step-up and sealed data
    /// A new confirmation, one whole sentence per way it was made and unit of its lifetime;
    /// `context` nil: an application's, whose dialog says what it is for (a context is its
    /// identifier, never words for people).
    static func steppedUp(_ context: String?, _ method: UnlockMethod, ttl: Int) -> String {
        let minutes = ttl / 60
        guard let context else {
            switch (method, minutes > 0) {
            case (.finger, true):
                return trn("Confirmed with your finger, for %1$s minute.", "Confirmed with your finger, for %1$s minutes.", minutes, minutes)
            case (.finger, false):
                return trn("Confirmed with your finger, for %1$s second.", "Confirmed with your finger, for %1$s seconds.", ttl, ttl)
            case (.pin, true):
                return trn("Confirmed with your PIN, for %1$s minute.", "Confirmed with your PIN, for %1$s minutes.", minutes, minutes)
            case (.pin, false):
                return trn("Confirmed with your PIN, for %1$s second.", "Confirmed with your PIN, for %1$s seconds.", ttl, ttl)
            case (.password, true):
                return trn("Confirmed with your password, for %1$s minute.", "Confirmed with your password, for %1$s minutes.",
                           minutes, minutes)
            case (.password, false):
                return trn("Confirmed with your password, for %1$s second.", "Confirmed with your password, for %1$s seconds.", ttl, ttl)
            }
        }
        switch (method, minutes > 0) {
        case (.finger, true):
            return trn("Confirmed with your finger for %1$s, for %2$s minute.", "Confirmed with your finger for %1$s, for %2$s minutes.",
                       minutes, context, minutes)
        case (.finger, false):
            return trn("Confirmed with your finger for %1$s, for %2$s second.", "Confirmed with your finger for %1$s, for %2$s seconds.",
                       ttl, context, ttl)
        case (.pin, true):
            return trn("Confirmed with your PIN for %1$s, for %2$s minute.", "Confirmed with your PIN for %1$s, for %2$s minutes.",
                       minutes, context, minutes)
        case (.pin, false):
            return trn("Confirmed with your PIN for %1$s, for %2$s second.", "Confirmed with your PIN for %1$s, for %2$s seconds.",
                       ttl, context, ttl)
        case (.password, true):
            return trn("Confirmed with your password for %1$s, for %2$s minute.",
                       "Confirmed with your password for %1$s, for %2$s minutes.", minutes, context, minutes)
        case (.password, false):
            return trn("Confirmed with your password for %1$s, for %2$s second.",
                       "Confirmed with your password for %1$s, for %2$s seconds.", ttl, context, ttl)
        }
    }
    static func grantHeld(_ context: String?) -> String {
        context.map { tr("Already confirmed for %1$s in this session.", $0) } ?? tr("Already confirmed.")
    }
    static func stepUpCeiling(_ seconds: Int) -> String {
        trn("The option --ttl takes at most %1$s second on this computer: the administrator's limit (stepup_max_ttl).",
            "The option --ttl takes at most %1$s seconds on this computer: the administrator's limit (stepup_max_ttl).", seconds, seconds)
    }
    static func grantEnded(_ context: String) -> String { tr("The confirmation for %1$s is ended.", context) }
    static func noGrant(_ context: String) -> String { tr("There is no confirmation for %1$s in this session.", context) }
    static func stepUpPrompt(_ context: String?) -> String {
        context.map { tr("Confirm it is you for %1$s.", $0) } ?? tr("Confirm it is you.")
    }
    static var personalDataFollows: String { tr("Personal data follows.") }
    static var payloadBudgetSpent: String {
        tr("The service is holding as much data to seal or reveal as it can at the moment. Try again when your other requests have finished.")
    }
    static var payloadTooSlow: String { tr("The data to seal or reveal did not arrive in time, so nothing was done.") }
}
