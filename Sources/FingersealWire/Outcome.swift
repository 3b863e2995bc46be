/// Every way an unlock, a PIN check or a vault operation can end. The PAM module and the CLI
/// both translate an Outcome to their codes here, and nowhere else.
public enum Outcome: String, CaseIterable, Sendable {
    case success
    // Authentication did not succeed.
    case noMatch, wrongPIN, triesExhausted, lockedOut, signInRequired
    /// `require_token` is set and the identity provider gave no token (unreachable beyond
    /// the offline grace, or a bad answer).
    case tokenUnavailable
    // Nothing to authenticate with here: the stack goes on to the next module.
    case noReader, noPrints, notEnrolled, noVault, noPIN, timedOut, cancelled, remoteSession, vaultUnusable, unavailable
    /// fprintd's enrolled set changed outside fingerseal: the finger waits for the PIN to
    /// confirm the new set.
    case fingersChanged
    case unknownUser, badConfiguration, conversationAgain
    /// The authorization table refuses this caller this request (another user's vault, a rig
    /// command outside its group).
    case notPermitted
    /// Account and session calls with nothing to check or do here (no vault): PAM_IGNORE.
    /// Never the result of an error.
    case notApplicable
    /// CLI only: the command line itself was wrong.
    case usage
    case systemError
}

/// Linux-PAM's return values (`_pam_types.h`); a test checks them against libpam's headers
/// so the core needs no C import.
public enum PAMReturn: Int32, Sendable {
    case success = 0
    case serviceError = 3
    case authError = 7
    case authInfoUnavailable = 9
    case userUnknown = 10
    case maxTries = 11
    case ignore = 25
    case incomplete = 31
}

extension Outcome {
    /// The outcome a wire field names, nil for a name it does not know. Not
    /// `init(rawValue:)`: for an enum this large the standard library looks the name up in a
    /// table it builds once and keeps in a global, and in the PAM module, which the host
    /// unloads at pam_end, that table was lost with the module: 1,608 bytes leaked per
    /// transaction that got a result (ValgrindTests; ASan in pam-cycles found it too).
    public init?(wireName: String) {
        guard let named = Outcome.allCases.first(where: { $0.rawValue == wireName }) else { return nil }
        self = named
    }

    /// The PAM code for this outcome: success only for `.success`, PAM_IGNORE only for
    /// `.notApplicable`.
    public var pamReturn: PAMReturn {
        switch self {
        case .success: return .success
        case .triesExhausted: return .maxTries
        case .noReader, .noPrints, .notEnrolled, .noVault, .noPIN, .timedOut, .cancelled, .remoteSession,
             .vaultUnusable, .unavailable, .fingersChanged, .systemError:
            return .authInfoUnavailable
        case .unknownUser: return .userUnknown
        case .badConfiguration, .usage: return .serviceError
        case .noMatch, .wrongPIN, .lockedOut, .signInRequired, .tokenUnavailable, .notPermitted: return .authError
        case .conversationAgain: return .incomplete
        case .notApplicable: return .ignore
        }
    }

    /// The CLI's exit status for this outcome (the table in the README).
    public var exitCode: Int32 {
        switch self {
        case .success: return 0
        case .noMatch, .wrongPIN, .triesExhausted: return 1
        case .usage: return 2
        case .cancelled: return 3
        case .timedOut: return 4
        case .lockedOut: return 5
        case .noVault, .noPIN, .notEnrolled, .noPrints, .fingersChanged, .notApplicable: return 6
        case .signInRequired: return 7
        case .noReader, .remoteSession, .unavailable, .tokenUnavailable, .conversationAgain: return 8
        case .vaultUnusable: return 9
        case .badConfiguration: return 10
        case .unknownUser: return 11
        case .systemError: return 12
        case .notPermitted: return 13
        }
    }
}

public enum Fingerseal {
    public static let version = "0.2.0"
    /// When this version was written (2026-11-30T00:00:00Z): a clock earlier than this is
    /// wrong (`doctor` says so). Moved forward with each release.
    public static let writtenAt: Int64 = 1_795_996_800
}
