import FingersealWire
import SystemdKit
import SystemKit

/// Where an unlock came through.
public enum AuditChannel: String, Codable, Sendable {
    /// The `fingerseal` command.
    case cli
    /// A PAM host (through the broker).
    case pam
    /// An application, through the session agent (`fingerseal-agent`).
    case application
}

/// What happened to a provisioned account, or to an attempt to make one.
public enum ProvisioningEvent: String, Sendable {
    case refused, cancelled, removed, expired
}

/// What happened to a vault when accounts came and went (issue 31 §1).
public enum AccountVaultChange: String, Sendable {
    /// Another account holds the vault's user id now: the vault was set aside.
    case setAside = "set-aside"
    /// Its account was removed (userdel): the vault went with it.
    case removed
    /// An administrator deleted a vault set aside.
    case purged
}

/// What the audit trail records. Never a secret: names, outcomes and reasons only.
public enum AuditEvent: Equatable, Sendable {
    /// `fingerseal login` sealed a new sign-in (`flow`: device, password or browser).
    case signIn(issuer: String, flow: String)
    case unlock(method: UnlockMethod, via: AuditChannel)
    /// The fingerprint (or the PIN) could not be used and the next way in was offered: the
    /// PIN, or the password module.
    case fallback(reason: AuditReason)
    /// A step-up for a context, and how it ended.
    case stepUp(context: String, result: Outcome)
    /// Sensitive data of a context was decrypted (`fileID` names what, never its content).
    case reveal(context: String, fileID: String)
    /// Too many failures locked fingerprint unlock, or the PIN.
    case lockout(UnlockMethod)
    /// An action (unlock, sign-in, fingerprint scan, token refresh, ...) did not succeed.
    case failure(action: AuditAction, reason: AuditReason)
    case logout
    /// A forgotten PIN was replaced (`fingerseal pin reset`: the account password, or root).
    case pinReset
    /// The PIN confirmed fprintd's enrolled set (`fingers` of them) after it changed.
    case fprintdSetConfirmed(fingers: Int)
    /// These keyslots ("pin", "device") were sealed to the TPM: a vault made before one was
    /// usable, upgraded when the PIN was entered (or resealed to new `tpm_pcrs`).
    case sealedToTPM(slots: [String])
    /// The PIN slot, sealed inside the TPM's dictionary-attack lockout (as fingerseal did
    /// before), was sealed again outside it when the PIN was entered.
    case pinLeftTPMLockout
    /// A vault sealed to a TPM this computer no longer has was replaced by a new one (the
    /// account password and a new PIN); `previous` is the old vault's id.
    case vaultReplacedAfterTPMChange(previous: String)
    /// The person turned fingerprint unlock on or off (a finger or the PIN confirmed it).
    case fingerUnlockSetting(on: Bool)
    /// Touch to sign in was turned on or off for the account (the PIN confirmed it).
    case identifySetting(on: Bool)
    /// The login password sealed for the keyring: turned on or off, replaced by a new one, or
    /// dropped because it no longer was the password.
    case keyring(KeyringChange)
    /// A finger touch to sign in found matched this account and `otherAccounts` more:
    /// nobody was signed in.
    case identifyAmbiguous(otherAccounts: Int)
    /// The request the events beside it record came from an application, as the session
    /// agent named it: its claim, which the system cannot vouch for (the caller the kernel
    /// knows is the agent). `succeeded` places it in the chain of what it accompanies.
    case application(busName: String, executable: String?, appID: String?, name: String?, succeeded: Bool)
    /// The account was made at its first sign-in (issue 22 §2), with this provider's
    /// identity (its subject). Recorded in the new account's own trail.
    case provisioned(issuer: String, subject: String)
    /// A provisioning event for an account that has no vault (any more): refused, cancelled,
    /// removed, expired. Logged, never recorded in a vault (there is none to record it in).
    case provisioning(ProvisioningEvent, reason: String)
    /// The vault left its account (`AccountVaultChange`); `reason` names why it was set aside
    /// (`OwnerMismatch.Reason`). Recorded in the vault's own trail where it can still be
    /// opened, and always logged.
    case accountVault(AccountVaultChange, reason: String)
}

/// Where each event's log line goes, besides the audit file. The core reaches no log of its
/// own: a store carries the sink its maker gave it (the broker's: `VaultStore.auditSink`).
public enum AuditSink: Sendable {
    /// Journal entries to the process's log: the broker's sends each to the journal with its
    /// fields where journald listens, else to syslog(3) at LOG_AUTHPRIV.
    case journal(@Sendable (JournalEntry) -> Void)
    /// Lines to a function of the caller's (tests).
    case custom(@Sendable (Syslog.Level, String) -> Void)
    case none

    /// A line that is no event (a problem recording one, a count starting).
    func log(_ level: Syslog.Level, _ message: String) {
        switch self {
        case let .journal(send):
            send(JournalEntry(fields: [("MESSAGE", message), ("PRIORITY", level == .notice ? "5" : "4"),
                                                      ("SYSLOG_IDENTIFIER", "fingersealed"), ("SYSLOG_FACILITY", "10")],
                                             syslogLevel: level, syslogLine: message))
        case let .custom(log): log(level, message)
        case .none: break
        }
    }

    /// An event: its sentence, and in the journal its fields.
    func log(_ record: AuditJournalRecord) {
        switch self {
        case let .journal(send): send(record.journalEntry)
        case let .custom(log): log(.notice, record.line)
        case .none: break
        }
    }
}

/// The last entry of an audit chain (its number and MAC), kept in the vault document: one
/// per chain (`auditHead`, `attemptsHead`).
///
/// Why there and not in a file of its own: the document is MAC'd with the vault key already
/// and is the one file a vault cannot do without. Cutting entries off the end of
/// `audit.jsonl`, or deleting it, no longer matches the head; deleting the head would mean
/// deleting the vault. A separate head file could be deleted together with the trail, and
/// the trail would look as if it never existed. The price is one more atomic vault write per
/// append (same temp file, fsync, rename, fsync as every vault update).
struct AuditHead: Codable, Equatable {
    var seq: UInt64
    var mac: String

    static let none = AuditHead(seq: 0, mac: Encoding.hex(AuditLine.genesis))
}

/// One event as `fingerseal audit` lists it.
public struct AuditRecord: Equatable, Sendable {
    public let chain: AuditChain
    /// Its number in its chain.
    public let seq: UInt64
    public let time: Int64
    public let event: String
    /// An attempt: the newest security event's number when it was written.
    let after: UInt64?
    /// A plain sentence saying what happened.
    public let sentence: String
    /// The entry as stored: one JSON object.
    public let json: String
}

/// The events as stored (read without the vault key, so not verified), and how many lines
/// could not be read as entries.
public struct AuditListing: Equatable, Sendable {
    public let records: [AuditRecord]
    public let unreadableLines: Int
}

/// What is wrong with an audit trail: the first problem found, in file order.
public struct AuditProblem: Error, Equatable, Sendable {
    public enum Damage: String, Sendable {
        /// An entry's content changed (or a line is not an entry at all).
        case edited
        /// Entries are missing: a gap in the numbers, or a missing file.
        case deleted
        /// A line fingerseal did not write there (a forged entry, or a copy of one).
        case inserted
        /// Authentic entries in the wrong order.
        case reordered
        /// The trail ends before the last entry the vault recorded.
        case truncated
        /// The last line is incomplete and held a recorded entry.
        case tornLastLine = "torn-last-line"
        /// An entry of another vault.
        case wrongVault = "wrong-vault"
    }

    public let kind: Damage
    public let file: String
    /// 1-based line number, when one line is to blame.
    public let line: Int?
    /// The entry number concerned, when known.
    public let entry: UInt64?
    /// The problem as a plain sentence fragment.
    public let message: String
}

/// The result of `AuditTrail.verify`, over both chains.
public struct AuditVerification: Equatable, Sendable {
    /// Events verified in both chains (before the problem, if there is one; rotation entries
    /// not counted).
    public let events: Int
    /// The first problem: the security chain's, else the attempts'.
    public let problem: AuditProblem?
    /// A current file ends in an incomplete line after the last recorded entry: an append
    /// a crash cut short. It never held a recorded event; the next append removes it.
    public let interruptedAppend: Bool
    /// The chains whose oldest entries were rotated away; empty when both still hold every
    /// entry since the vault was made.
    public var rotatedAway: [AuditRotation] = []

    public var intact: Bool { problem == nil }
}

/// What rotation took from one chain: entries 1 to `through` (numbers as listed; rotation
/// entries count), and when the oldest entry still kept was written.
public struct AuditRotation: Equatable, Sendable {
    public let chain: AuditChain
    public let through: UInt64
    public let oldestKept: Int64
}

extension AuditEvent {
    /// Which chain records it. Attempts are what anyone running as the user can cause without
    /// a finger, the PIN or the account password, as often as they like: a fallback, a
    /// failure, a step-up that did not succeed. Everything else needs one of those, or is rare
    /// by nature (a lock engages once until the next success). Exhaustive on purpose: a new
    /// event must be placed.
    public var chain: AuditChain {
        switch self {
        case .fallback, .failure: return .attempts
        case let .stepUp(_, result): return result == .success ? .security : .attempts
        case let .application(_, _, _, _, succeeded): return succeeded ? .security : .attempts
        case .signIn, .unlock, .reveal, .lockout, .logout, .pinReset, .fprintdSetConfirmed, .sealedToTPM, .pinLeftTPMLockout,
             .vaultReplacedAfterTPMChange, .provisioned, .provisioning, .identifySetting, .identifyAmbiguous, .fingerUnlockSetting, .keyring,
             .accountVault:
            return .security
        }
    }

    func entry(time: Int64, vault: String) -> AuditEntry {
        var entry = AuditEntry(seq: 0, time: time, vault: vault, event: "", prev: "")
        switch self {
        case let .signIn(issuer, flow):
            entry.event = "sign-in"
            entry.issuer = AuditText.clean(issuer)
            entry.flow = AuditText.clean(flow)
        case let .unlock(method, via):
            entry.event = "unlock"
            entry.method = method.rawValue
            entry.via = via.rawValue
        case let .fallback(reason):
            entry.event = "fallback"
            entry.reason = AuditText.clean(reason.word)
        case let .stepUp(context, result):
            entry.event = "step-up"
            entry.context = AuditText.clean(context)
            entry.result = result.rawValue
        case let .reveal(context, fileID):
            entry.event = "reveal"
            entry.context = AuditText.clean(context)
            entry.file = AuditText.clean(fileID)
        case let .lockout(method):
            entry.event = "lockout"
            entry.method = method.rawValue
        case let .failure(action, reason):
            entry.event = "failure"
            entry.action = action.rawValue
            entry.reason = AuditText.clean(reason.word)
        case .logout:
            entry.event = "logout"
        case .pinReset:
            entry.event = "pin-reset"
        case let .fprintdSetConfirmed(fingers):
            entry.event = "fprintd-set-confirmed"
            entry.reason = String(fingers)
        case let .sealedToTPM(slots):
            entry.event = "sealed-to-tpm"
            entry.reason = AuditText.clean(slots.joined(separator: ","))
        case .pinLeftTPMLockout:
            entry.event = "pin-left-tpm-lockout"
        case let .vaultReplacedAfterTPMChange(previous):
            entry.event = "vault-replaced"
            entry.reason = AuditReason.cause(.tpmChanged).word
            entry.file = AuditText.clean(previous)
        case let .provisioned(issuer, subject):
            entry.event = "provisioned"
            entry.issuer = AuditText.clean(issuer)
            entry.reason = AuditText.clean(subject)
        case let .provisioning(what, reason):
            entry.event = "provisioning"
            entry.result = what.rawValue
            entry.reason = AuditText.clean(reason)
        case let .fingerUnlockSetting(on):
            entry.event = "finger-unlock"
            entry.result = on ? "on" : "off"
        case let .identifySetting(on):
            entry.event = "identify"
            entry.result = on ? "on" : "off"
        case let .keyring(change):
            entry.event = "keyring"
            entry.result = change.rawValue
        case let .identifyAmbiguous(others):
            entry.event = "identify-ambiguous"
            entry.reason = String(others)
        case let .accountVault(change, reason):
            entry.event = "account-vault"
            entry.result = change.rawValue
            entry.reason = AuditText.clean(reason)
        case let .application(busName, executable, appID, name, _):
            entry.event = "application"
            entry.bus = AuditText.clean(busName)
            entry.exe = executable.map(AuditText.clean)
            entry.app = appID.map(AuditText.clean)
            entry.name = name.map(AuditText.clean)
        }
        return entry
    }
}

extension AuditEntry {
    /// What happened, as one plain sentence.
    var sentence: String {
        switch event {
        case "sign-in": return Messages.auditSignedIn(issuer ?? "?", flow ?? "?")
        case "unlock": return Messages.auditUnlocked(method: method ?? "?", via: via ?? "?")
        case "fallback": return Messages.auditFallback(Messages.auditReason(AuditReason(word: reason ?? "?")))
        case "step-up": return Messages.auditStepUp(context ?? "?", Messages.auditReason(AuditReason(word: result ?? "?")))
        case "reveal": return Messages.auditReveal(context ?? "?", file ?? "?")
        case "lockout": return Messages.auditLockout(method ?? "?")
        case "failure":
            let why = Messages.auditReason(AuditReason(word: reason ?? "?"))
            guard let known = AuditAction(rawValue: action ?? "") else { return Messages.auditFailureOfUnknownAction(action ?? "?", why) }
            return Messages.auditFailure(known, why)
        case "logout": return Messages.auditLoggedOut
        case "pin-reset": return Messages.auditPINReset
        case "fprintd-set-confirmed": return Messages.auditFprintdSetConfirmed(Int(reason ?? "") ?? 0)
        case "sealed-to-tpm": return Messages.auditSealedToTPM(slots: (reason ?? "").split(separator: ",").map(String.init))
        case "pin-left-tpm-lockout": return Messages.auditPINLeftTPMLockout
        case "vault-replaced": return Messages.auditVaultReplaced(file ?? "?")
        case "provisioned": return Messages.auditProvisioned(issuer ?? "?")
        case "provisioning": return Messages.auditProvisioning(ProvisioningEvent(rawValue: result ?? "") ?? .refused, reason ?? "?")
        case "finger-unlock": return result == "on" ? Messages.auditFingerUnlockOn : Messages.auditFingerUnlockOff
        case "identify": return result == "on" ? Messages.auditIdentifyOn : Messages.auditIdentifyOff
        case "keyring": return Messages.auditKeyring(KeyringChange(rawValue: result ?? "") ?? .dropped)
        case "identify-ambiguous": return Messages.auditIdentifyAmbiguous(Int(reason ?? "") ?? 0)
        case "account-vault": return Messages.auditAccountVault(AccountVaultChange(rawValue: result ?? "") ?? .setAside, reason ?? "?")
        case "application": return Messages.auditApplication(name: name, executable: exe, appID: app, busName: bus ?? "?")
        case AuditEntry.rotated: return Messages.auditRotated(trail == AuditChain.attempts.entryTag ? AuditFiles.olderAttempts : AuditFiles.older)
        case AuditEntry.counted:
            let kinds = counts ?? [], others = other ?? 0
            let total = kinds.reduce(others) { $0 &+ $1.count }
            let parts = kinds.map { Messages.auditCountedKind($0.count, $0.example.sentence) }
                + (others > 0 ? [Messages.auditCountedOther(others)] : [])
            return ([Messages.auditCounted(total, isoTimestamp(since ?? time), isoTimestamp(until ?? time))] + parts)
                .joined(separator: " ")
        default: return Messages.auditUnknownEvent(event)
        }
    }
}

/// Text that goes into an entry: no control or bidi-override characters (a listing must
/// read as it is), at most `AuditFiles.maxField` bytes.
enum AuditText {
    static func clean(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        var bytes = 0
        for scalar in text.unicodeScalars {
            let kept: Unicode.Scalar = ControlCharacters.contains(scalar) || ControlCharacters.isBidiControl(scalar) ? " " : scalar
            bytes += String(kept).utf8.count
            if bytes > AuditFiles.maxField { break }
            out.append(kept)
        }
        return String(out)
    }
}

/// What happened to the login password sealed for the keyring.
public enum KeyringChange: String, Sendable {
    case on, off
    /// A password change (or a sign-in with a password the copy no longer matched) replaced it.
    case updated
    /// It no longer was the password, and was removed.
    case dropped
}
