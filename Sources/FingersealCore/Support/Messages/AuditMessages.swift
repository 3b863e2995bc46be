import FingersealWire
import Localization

/// The audit trail: what `fingerseal audit` lists and syslog receives, and what `audit --verify`
/// finds. The sentences only the broker says are in the broker
/// (Sources/Broker/Messages/AuditMessages.swift).
extension Messages {
    // Audit trail: what `fingerseal audit` lists and syslog receives (one sentence per event)
    public static func auditSignedIn(_ issuer: String, _ flow: String) -> String { tr("Signed in to %1$s with the %2$s sign-in.", issuer, flow) }
    public static func auditUnlocked(method: String, via: String) -> String {
        switch (method, via) {
        case ("finger", "pam"): return tr("Unlocked with a finger at a system sign-in (PAM).")
        case ("finger", "cli"): return tr("Unlocked with a finger, using the fingerseal command.")
        case ("pin", "pam"): return tr("Unlocked with the PIN at a system sign-in (PAM).")
        case ("pin", "cli"): return tr("Unlocked with the PIN, using the fingerseal command.")
        case ("finger", "application"): return tr("Unlocked with a finger for an application.")
        case ("pin", "application"): return tr("Unlocked with the PIN for an application.")
        case ("password", "application"): return tr("Unlocked with the account password for an application.")
        default: return tr("Unlocked with %1$s (%2$s).", method, via)
        }
    }
    /// What the session agent said of the application that asked: a claim, never proof.
    public static func auditApplication(name: String?, executable: String?, appID: String?, busName: String) -> String {
        let program = executable ?? tr("an unknown program")
        switch (name, appID) {
        case let (name?, appID?):
            return tr("The session agent said %1$s asked (%2$s, Flatpak app %3$s, bus name %4$s); the system cannot vouch for this.",
                      name, program, appID, busName)
        case let (name?, nil):
            return tr("The session agent said %1$s asked (%2$s, bus name %3$s); the system cannot vouch for this.", name, program, busName)
        case let (nil, appID?):
            return tr("The session agent said %1$s asked (Flatpak app %2$s, bus name %3$s); the system cannot vouch for this.",
                      program, appID, busName)
        case (nil, nil):
            return tr("The session agent said %1$s asked (bus name %2$s); the system cannot vouch for this.", program, busName)
        }
    }
    public static func auditFallback(_ reason: String) -> String { tr("Moved on to the next way to sign in: %1$s.", embedded(reason)) }
    public static func auditStepUp(_ context: String, _ result: String) -> String { tr("Step-up for %1$s: %2$s.", context, result) }
    public static func auditReveal(_ context: String, _ file: String) -> String { tr("Revealed %1$s for %2$s.", file, context) }
    public static func auditLockout(_ method: String) -> String {
        method == "finger" ? tr("Fingerprint unlock was locked after too many failed scans.")
            : method == "pin" ? tr("The PIN was locked after too many wrong tries.") : tr("%1$s was locked.", method)
    }
    /// Each action that did not succeed has its own sentence.
    public static func auditFailure(_ action: AuditAction, _ reason: String) -> String {
        let reason = embedded(reason)
        switch action {
        case .unlock: return tr("Unlock did not succeed: %1$s.", reason)
        case .signIn: return tr("Sign-in did not succeed: %1$s.", reason)
        case .signOut: return tr("Sign-out did not succeed: %1$s.", reason)
        case .tokenRefresh: return tr("Token refresh did not succeed: %1$s.", reason)
        case .pinReset: return tr("PIN reset did not succeed: %1$s.", reason)
        case .fingerprintScan: return tr("Fingerprint scan did not succeed: %1$s.", reason)
        case .identify: return tr("Turning touch to sign in on or off did not succeed: %1$s.", reason)
        }
    }
    /// An action a trail names that this fingerseal does not know (another version wrote it).
    public static func auditFailureOfUnknownAction(_ action: String, _ reason: String) -> String {
        tr("%1$s did not succeed: %2$s.", action, embedded(reason))
    }
    public static var auditLoggedOut: String { tr("Signed out.") }
    public static var auditPINReset: String { tr("A forgotten PIN was replaced with a new one.") }
    public static func auditRotated(_ file: String) -> String { tr("Older events were moved to %1$s.", file) }
    /// An entry of attempts counted, not recorded one by one (`AttemptTally`); the kinds follow.
    public static func auditCounted(_ total: UInt64, _ from: String, _ to: String) -> String {
        trn("%1$s more attempt, from %2$s to %3$s, was counted and not listed one by one.",
            "%1$s more attempts, from %2$s to %3$s, were counted and not listed one by one.", Int(clamping: total), total, from, to)
    }
    /// One kind in such a count: how often, and the sentence an attempt of that kind has.
    public static func auditCountedKind(_ count: UInt64, _ sentence: String) -> String {
        trn("%1$s time: %2$s", "%1$s times: %2$s", Int(clamping: count), count, sentence)
    }
    public static func auditCountedOther(_ count: UInt64) -> String {
        trn("%1$s time: another kind of attempt.", "%1$s times: other kinds of attempt.", Int(clamping: count), count)
    }
    public static func auditUnknownEvent(_ event: String) -> String { tr("An event this fingerseal does not know: %1$s.", event) }
    /// Why an attempt did not succeed, as words: every reason has its own.
    public static func auditReason(_ reason: AuditReason) -> String {
        switch reason {
        case let .outcome(outcome): return auditReason(outcome)
        case let .cause(cause): return auditReason(cause)
        case let .refusal(refusal): return auditReason(refusal)
        case let .unknown(word): return tr("a reason this fingerseal does not know (%1$s)", word)
        }
    }
    static func auditReason(_ outcome: Outcome) -> String {
        switch outcome {
        case .success: return tr("success")
        case .noMatch: return tr("the fingerprint did not match")
        case .wrongPIN: return tr("the PIN was wrong")
        case .triesExhausted: return tr("too many failed tries")
        case .lockedOut: return tr("locked after too many failures")
        case .signInRequired: return tr("a new sign-in is required")
        case .tokenUnavailable: return tr("no access token")
        case .noReader: return tr("no fingerprint reader")
        case .noPrints: return tr("no print for this reader")
        case .notEnrolled: return tr("no finger enrolled")
        case .fingersChanged: return tr("the fingers enrolled in fprintd changed")
        case .noVault: return tr("not set up")
        case .noPIN: return tr("no PIN")
        case .timedOut: return tr("timed out")
        case .cancelled: return tr("cancelled")
        case .remoteSession: return tr("a remote session")
        case .vaultUnusable: return tr("the vault could not be used")
        case .unavailable: return tr("not available")
        case .unknownUser: return tr("unknown user")
        case .badConfiguration: return tr("bad configuration")
        case .conversationAgain: return tr("interrupted")
        case .notPermitted: return tr("not permitted")
        case .notApplicable: return tr("nothing to do")
        case .usage: return tr("wrong usage")
        case .systemError: return tr("a system error")
        }
    }
    static func auditReason(_ cause: FingersealError.Cause) -> String {
        switch cause {
        case .tpmChanged: return tr("the TPM the vault is sealed to is gone")
        case .tpmLockedOut: return tr("the TPM's lockout refused the PIN")
        case .tpmPCRsChanged: return tr("the firmware or boot software changed since the key was sealed")
        case .tpmNotSealed: return tr("the key the finger opens is not sealed to the TPM yet (tpm=require)")
        case .accountPasswordRefused: return tr("the account password was not accepted")
        case .fingerUnlockOff: return tr("fingerprint unlock is turned off")
        case .passwordAfterBoot: return tr("the first sign-in after a restart needs the account password")
        case .passwordAfter: return tr("the account password was not used for too long")
        case .vaultOfAnotherAccount: return tr("the vault under this user id belongs to another account")
        }
    }
    static func auditReason(_ refusal: AuditReason.Refusal) -> String {
        switch refusal {
        case .identityMismatch: return tr("the identity provider named another account")
        case .redirectFromOtherAccount: return tr("another account on this computer tried to complete the browser sign-in")
        case .signInRefused: return tr("the identity provider refused the sign-in")
        // Provisioning (issue 22 §2).
        case .rateLimited: return tr("too many new accounts in the last hour")
        case .requirement: return tr("the identity lacks the claim value this computer requires")
        case .nameTaken: return tr("the name is taken here")
        case .otherName: return tr("the identity provider names another user name")
        case .noName: return tr("the identity provider gave no user name")
        case .invalidName: return tr("the user name cannot be used here")
        case .identityUnknown: return tr("the identity provider did not say who signed in")
        case .brokerStopped: return tr("the broker stopped while making it")
        case .authTimeMissing: return tr("the identity provider did not say when the person signed in")
        case .authNotFresh: return tr("the person did not sign in again after the code was shown")
        case .subjectProvisioned: return tr("this identity already has an account made here")
        case .reservedName: return tr("the name is kept for the system or for administrators")
        case .reservedNamesUnknown: return tr("the names kept for administrators could not be read")
        case .emailDomainMissing: return tr("no e-mail domain is set for new accounts")
        case .emailUnverified: return tr("the e-mail address is not verified")
        case .emailDomain: return tr("the e-mail address is in another domain")
        }
    }
    public static func auditKeyring(_ change: KeyringChange) -> String {
        switch change {
        case .on: return tr("The login password was sealed for the keyring.")
        case .off: return tr("The login password sealed for the keyring was removed.")
        case .updated: return tr("The login password sealed for the keyring was replaced by the new one.")
        case .dropped: return tr("The login password sealed for the keyring no longer worked and was removed.")
        }
    }
    public static var auditFingerUnlockOn: String { tr("Fingerprint unlock was turned on.") }
    public static var auditFingerUnlockOff: String { tr("Fingerprint unlock was turned off.") }
    public static var auditIdentifyOn: String { tr("Touch to sign in was turned on; the PIN confirmed it.") }
    public static var auditIdentifyOff: String { tr("Touch to sign in was turned off; the PIN confirmed it.") }
    public static func auditIdentifyAmbiguous(_ others: Int) -> String {
        trn("At touch to sign in, a finger matched this account and %1$s other account, so nobody was signed in.",
            "At touch to sign in, a finger matched this account and %1$s other accounts, so nobody was signed in.", others, others)
    }
    public static func auditFprintdSetConfirmed(_ fingers: Int) -> String {
        trn("The PIN confirmed the %1$s finger now enrolled in fprintd.", "The PIN confirmed the %1$s fingers now enrolled in fprintd.", fingers, fingers)
    }
    public static func auditSealedToTPM(slots: [String]) -> String {
        switch (slots.contains("pin"), slots.contains("device")) {
        case (true, true): return tr("The PIN and the device key were sealed to this computer's TPM.")
        case (true, false): return tr("The PIN was sealed to this computer's TPM.")
        default: return tr("The device key was sealed to this computer's TPM.")
        }
    }
    public static var auditPINLeftTPMLockout: String { tr("The PIN was sealed to this computer's TPM again, outside the TPM's lockout that every account shares: wrong PINs for this vault no longer count towards it.") }
    public static func auditVaultReplaced(_ previous: String) -> String {
        tr("The vault %1$s was sealed to a TPM this computer no longer has; after the account password, this new vault replaced it.", previous)
    }
    public static func auditTampered(_ problem: String) -> String { tr("The audit trail is not intact: %1$s.", embedded(problem)) }
    public static func auditUnreadable(_ file: String, _ line: Int) -> String { tr("line %1$s of %2$s is not an audit entry (edited or damaged)", line, file) }
    public static func auditEdited(_ file: String, _ line: Int, _ entry: UInt64) -> String {
        tr("line %1$s of %2$s, event %3$s, does not match its seal (edited)", line, file, entry)
    }
    public static func auditInserted(_ file: String, _ line: Int) -> String { tr("line %1$s of %2$s was not written by fingerseal (inserted)", line, file) }
    public static func auditDuplicate(_ file: String, _ line: Int, _ entry: UInt64) -> String {
        tr("line %1$s of %2$s is a second copy of event %3$s (inserted)", line, file, entry)
    }
    public static func auditDoesNotFollow(_ file: String, _ line: Int) -> String {
        tr("line %1$s of %2$s does not follow the entry before it (inserted or deleted)", line, file)
    }
    public static func auditDeleted(_ file: String, _ line: Int, _ from: UInt64, _ to: UInt64) -> String {
        from == to ? tr("event %1$s is missing before line %2$s of %3$s (deleted)", from, line, file)
            : tr("events %1$s to %2$s are missing before line %3$s of %4$s (deleted)", from, to, line, file)
    }
    public static func auditDeletedBefore(_ file: String, _ line: Int, _ entry: UInt64) -> String {
        tr("the events before event %1$s, on line %2$s of %3$s, are missing (deleted)", entry, line, file)
    }
    public static func auditFileMissing(_ file: String, _ recorded: UInt64) -> String {
        trn("the file %1$s is missing or empty, but the vault recorded %2$s event (deleted)", "the file %1$s is missing or empty, but the vault recorded %2$s events (deleted)", Int(clamping: recorded), file, recorded)
    }
    public static func auditOlderFileMissing(_ file: String, _ from: UInt64, _ to: UInt64) -> String {
        tr("the file %1$s with events %2$s to %3$s is missing or empty (deleted)", file, from, to)
    }
    public static func auditReordered(_ file: String, _ line: Int, _ entry: UInt64) -> String {
        tr("event %1$s on line %2$s of %3$s is out of order (reordered)", entry, line, file)
    }
    public static func auditTruncated(_ file: String, _ last: UInt64, _ recorded: UInt64) -> String {
        tr("%1$s ends at event %2$s, but the vault recorded %3$s (truncated: the last events were cut off)", file, last, recorded)
    }
    public static func auditTornLine(_ file: String, _ line: Int, _ entry: UInt64) -> String {
        tr("the last line of %1$s, line %2$s, is incomplete and event %3$s is cut off (torn last line)", file, line, entry)
    }
    public static func auditWrongVault(_ file: String, _ line: Int) -> String {
        tr("line %1$s of %2$s belongs to another vault (wrong vault)", line, file)
    }
    public static func auditOversized(_ file: String) -> String { tr("%1$s is larger than fingerseal ever writes it (edited)", file) }
    public static func auditNotRecorded(_ entry: UInt64) -> String {
        tr("event %1$s is not the one the vault recorded (the trail was replaced)", entry)
    }
}
