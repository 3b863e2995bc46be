import FingersealWire
import SystemdKit
import SystemKit

/// Where a request's audit events came from, as the broker knows it when it takes the request
/// (the PAM service, the channel): set for the request's thread (`AuditOrigin.$current`),
/// so that every event the request records says it in the journal without each place that
/// records one passing it on. Nil outside a request (a tally written when its count ends).
public struct AuditOrigin: Sendable, Equatable {
    /// The PAM service of a PAM host's request ("sudo", "gdm-password"); nil from the CLI and
    /// applications.
    public let service: String?
    /// Whether a root host named the service (the system's PAM stack), or a host running as
    /// the user did (a lock screen), which could name any.
    public let serviceFromRoot: Bool
    public let channel: AuditChannel

    public init(service: String?, serviceFromRoot: Bool, channel: AuditChannel) {
        self.service = service
        self.serviceFromRoot = serviceFromRoot
        self.channel = channel
    }

    @TaskLocal public static var current: AuditOrigin?
}

/// One audit event as the system's log gets it: the sentence syslog has always had, and for
/// the journal a MESSAGE_ID per kind of event (`AuditMessageID`, explained in
/// systemd/fingerseal.catalog) with the fields a fleet's collector searches by. Only what the
/// trail itself holds goes out: names, outcomes and reasons, never a secret.
struct AuditJournalRecord {
    let entry: AuditEntry
    let chain: AuditChain
    /// The entry's number in its chain, when it was recorded.
    let seq: UInt64?
    let account: UserAccount
    let origin: AuditOrigin?
    /// "audit: user alice, event 12: Unlocked with a finger at a system sign-in (PAM)."
    let line: String

    var journalEntry: JournalEntry {
        var fields: [(name: String, value: String)] = [
            ("MESSAGE", line),
            ("PRIORITY", String(priority)),
            ("SYSLOG_IDENTIFIER", "fingersealed"),
            ("SYSLOG_FACILITY", "10"), // LOG_AUTHPRIV, as the syslog line
            ("FINGERSEAL_EVENT", entry.event),
            ("FINGERSEAL_USER", account.name),
            ("FINGERSEAL_UID", String(account.uid)),
            ("FINGERSEAL_OUTCOME", outcome),
            ("FINGERSEAL_CHAIN", chain.rawValue),
        ]
        if let id = AuditMessageID.id(for: entry.event) { fields.insert(("MESSAGE_ID", id), at: 1) }
        if let seq { fields.append(("FINGERSEAL_SEQ", String(seq))) }
        if let origin, let service = origin.service {
            fields.append((origin.serviceFromRoot ? "FINGERSEAL_SERVICE" : "FINGERSEAL_SERVICE_CLAIMED", AuditText.clean(service)))
        }
        if let channel = origin?.channel { fields.append(("FINGERSEAL_CHANNEL", channel.rawValue)) }
        let details: [(String, String?)] = [
            ("METHOD", entry.method), ("VIA", entry.via), ("REASON", entry.reason), ("ISSUER", entry.issuer), ("FLOW", entry.flow),
            ("CONTEXT", entry.context), ("FILE", entry.file), ("ACTION", entry.action), ("BUS_NAME", entry.bus),
            ("EXECUTABLE", entry.exe), ("APP_ID", entry.app), ("APP_NAME", entry.name),
        ]
        for (name, value) in details { if let value { fields.append(("FINGERSEAL_" + name, value)) } }
        return JournalEntry(fields: fields, syslogLevel: .notice, syslogLine: line)
    }

    /// One word for how it ended: an `Outcome` name where the event carries one (a fallback's,
    /// a failure's, a step-up's), "locked" for a lockout, the setting for a switch, else
    /// "success" (the event is what succeeded).
    var outcome: String {
        switch entry.event {
        case "fallback", "failure": return entry.reason ?? "?"
        case "lockout": return "locked"
        case "identify-ambiguous": return "ambiguous"
        case AuditEntry.counted: return "counted"
        default: return entry.result ?? "success"
        }
    }

    /// syslog's priorities: what an administrator should look at (a lock, a finger two
    /// accounts share, a vault replaced) is a warning; failures and sensitive data opened are
    /// notices; the day's ordinary unlocks are information.
    var priority: Int32 {
        switch entry.event {
        case "lockout", "identify-ambiguous", "vault-replaced": return 4
        case "account-vault": return entry.result == AccountVaultChange.setAside.rawValue ? 4 : 5
        case "failure", "reveal", "pin-reset", "provisioning", AuditEntry.counted: return 5
        case "step-up": return entry.result == Outcome.success.rawValue ? 6 : 5
        default: return 6
        }
    }
}

/// The journal's MESSAGE_ID of each kind of audit event: fixed 128-bit ids, made once (never
/// change one: fleets search by them), each explained in systemd/fingerseal.catalog
/// (`journalctl -x`). `journalctl MESSAGE_ID=<reveal>` lists every reveal of a machine.
public enum AuditMessageID {
    public static let signIn = "c7fe81a29b2b4a41928f03c1c52b8767"
    public static let unlock = "204e0af593044acc81307091ed31f64f"
    public static let fallback = "a208600e037d4958acd64a1024f3cd6c"
    public static let stepUp = "6917aafb09e44e438e556cf2b2eb14cf"
    public static let reveal = "61ead7d765f048759acc44da2450dbc2"
    public static let lockout = "463bf51b7a0a412b81dd0faff4218fb7"
    public static let failure = "69135ac880b042328d2896cd23da8115"
    public static let logout = "aeb0c9919ed24f8787360b1f4aecfdbf"
    public static let pinReset = "cd19bc4b512f4659a9c11fd48b286374"
    public static let fprintdSetConfirmed = "0cc15083aee44a7d9d105055bcf827df"
    public static let sealedToTPM = "bd1a4e957d2443b7bfc9a71bbf30b7bf"
    public static let pinLeftTPMLockout = "5a94bff9c4f94078abec3390064d393a"
    public static let vaultReplaced = "9a88aef1cd3048e898e0db4cc14630dc"
    public static let provisioned = "70887c8dbff947a18f5f9f6b502cf9ef"
    public static let provisioning = "1dfb25e8b5d446009bd4f46769ef40bf"
    public static let fingerUnlockSetting = "7d3b6d155b0f4e23b1a97a3df012ff46"
    public static let identifySetting = "b6b3e5a14ab84114b8d47bf21bab144d"
    public static let identifyAmbiguous = "618f9fefdcbb412c969cb71549fe2db0"
    public static let keyring = "dfc5b79a7d894a82b58144d8bc4a8c31"
    public static let application = "e817d23d83fc45e4b11cd308e0d5a58c"
    public static let attemptsCounted = "ac8e29f3421c491cbb8f058a745c1d06"
    public static let accountVault = "586eabe6a0c24068bd7941c038fe9387"

    /// By the event's name in the trail ("reveal"); nil for what is no event (a rotation).
    public static func id(for event: String) -> String? { byEvent[event] }

    /// Every event name with its id: what the catalog must explain.
    public static let byEvent: [String: String] = [
        "sign-in": signIn, "unlock": unlock, "fallback": fallback, "step-up": stepUp, "reveal": reveal, "lockout": lockout,
        "failure": failure, "logout": logout, "pin-reset": pinReset, "fprintd-set-confirmed": fprintdSetConfirmed,
        "sealed-to-tpm": sealedToTPM, "pin-left-tpm-lockout": pinLeftTPMLockout, "vault-replaced": vaultReplaced,
        "provisioned": provisioned, "provisioning": provisioning, "finger-unlock": fingerUnlockSetting, "identify": identifySetting,
        "identify-ambiguous": identifyAmbiguous, "keyring": keyring, "application": application, AuditEntry.counted: attemptsCounted,
        "account-vault": accountVault,
    ]
}
