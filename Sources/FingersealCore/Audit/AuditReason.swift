import FingersealWire

/// What did not succeed, as the audit trail stores it (its word) and says it
/// (`Messages.auditFailure`).
public enum AuditAction: String, CaseIterable, Sendable {
    case unlock
    case signIn = "sign-in"
    case signOut = "sign-out"
    case tokenRefresh = "token refresh"
    case pinReset = "PIN reset"
    case fingerprintScan = "fingerprint scan"
    /// Touch to sign in turned on or off.
    case identify
}

/// Why an attempt did not succeed, as the audit trail stores it (one word) and says it
/// (`Messages.auditReason`): an outcome, what lay behind one, or a refusal of a sign-in or of
/// a new account. Each has its own sentence, so no new outcome reaches a listing as its name.
public enum AuditReason: Equatable, Sendable {
    case outcome(Outcome)
    case cause(FingersealError.Cause)
    case refusal(Refusal)
    /// A word this fingerseal does not know: a trail another version wrote.
    case unknown(String)

    /// Why the identity provider's sign-in, or the making of a new account, was refused.
    public enum Refusal: String, CaseIterable, Sendable {
        // A sign-in.
        case identityMismatch, redirectFromOtherAccount, signInRefused
        // A new account (issue 22 §2).
        case rateLimited, requirement, nameTaken, otherName, noName, invalidName, identityUnknown, brokerStopped
        case authTimeMissing, authNotFresh, subjectProvisioned, reservedName, reservedNamesUnknown
        case emailDomainMissing, emailUnverified, emailDomain
    }

    /// The word the trail stores.
    public var word: String {
        switch self {
        case let .outcome(outcome): return outcome.rawValue
        case let .cause(cause): return cause.rawValue
        case let .refusal(refusal): return refusal.rawValue
        case let .unknown(word): return word
        }
    }

    /// The reason a stored word names.
    public init(word: String) {
        if let outcome = Outcome(wireName: word) {
            self = .outcome(outcome)
        } else if let cause = FingersealError.Cause(rawValue: word) {
            self = .cause(cause)
        } else if let refusal = Refusal(rawValue: word) {
            self = .refusal(refusal)
        } else {
            self = .unknown(word)
        }
    }
}

extension FingersealError {
    /// The reason the audit trail records: the cause, else the outcome.
    public var auditReason: AuditReason { cause.map(AuditReason.cause) ?? .outcome(outcome) }
}
