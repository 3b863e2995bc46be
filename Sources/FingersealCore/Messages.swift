/// Every sentence a person sees, in one table: plain sentences a screen reader can speak,
/// meaning never in colour or symbols alone. (Translation catalogs hook in here.)
public enum Messages {
    /// Text from elsewhere (libfprint, a system call, an identity provider) as it goes inside
    /// one of our sentences: without its own closing period, so the sentence ends with one
    /// (never "timed out..").
    public static func embedded(_ text: String) -> String {
        var end = text.endIndex
        while end > text.startIndex, [".", " ", "\n", "\t"].contains(text[text.index(before: end)]) {
            end = text.index(before: end)
        }
        return String(text[..<end])
    }

    // Vault
    public static let noVault = "Fingerseal is not set up for this account. Run: fingerseal pin set"
    public static let vaultExists = "A PIN is already set. To change it, run: fingerseal pin change"
    public static let vaultReplaced = "The vault was replaced by another program while in use. Run the command again."
    public static func vaultDamaged(_ file: String, _ why: String) -> String {
        "The fingerseal file \(file) cannot be used: \(embedded(why)). It was left unchanged."
    }
    public static func unsafeFile(_ why: String) -> String {
        "Fingerseal refused to use its files because \(embedded(why)). Fix the ownership or permissions, or remove the file."
    }
    public static let vaultBusy = "Another fingerseal program is using the vault. Try again in a moment."
    public static func systemFailure(_ what: String) -> String { "Fingerseal could not \(what)." }
    public static let secureMemory = "Fingerseal could not allocate protected memory for secrets."

    // PIN
    public static let enterPIN = "PIN: "
    public static let enterOldPIN = "Current PIN: "
    public static let enterNewPIN = "New PIN: "
    public static let repeatNewPIN = "Repeat the new PIN: "
    public static let wrongPIN = "The PIN is not correct."
    public static let pinMismatch = "The two PINs are not the same. Nothing was changed."
    public static func pinTooShort(_ minimum: Int) -> String { "The PIN must have at least \(minimum) characters." }
    public static func pinTooLong(_ maximum: Int) -> String { "The PIN must have at most \(maximum) characters." }
    public static let pinEmptyInput = "No PIN was given."
    public static func pinWait(_ seconds: Int64) -> String {
        "Too many wrong PINs. Wait \(seconds) seconds, then try again."
    }
    public static let pinLocked = "The PIN is locked after too many wrong tries. Sign in again with: fingerseal login"
    public static let pinSet = "The PIN is set. Fingerseal is ready."
    public static let pinChanged = "The PIN is changed."
    public static let noDeviceSlot = "The device key is missing or damaged; only the PIN can unlock the vault. Changing the PIN repairs it."
    public static let fingerLocked = "Fingerprint unlock is locked after too many failed scans. Use your PIN or password."

    public static let pinNeeded = "This change needs your PIN."

    // Readers
    public static let noReader = "No fingerprint reader is connected."
    public static func noSuchReader(_ id: String) -> String { "There is no reader with the id \(id). Run: fingerseal devices" }
    public static func placeFinger(swipe: Bool) -> String {
        swipe ? "Swipe your finger across the reader." : "Place your finger on the reader."
    }
    /// The scan prompt with how to get out of it, as one sentence.
    public static func placeFinger(swipe: Bool, cancelHint: String) -> String {
        (swipe ? "Swipe your finger across the reader" : "Place your finger on the reader") + ", " + cancelHint
    }
    public static let pressCtrlC = "or press Ctrl-C to cancel."
    public static let pressCtrlCForPassword = "or press Ctrl-C to use your password."
    public static let orUsePassword = "or use your password."
    public static func enrollProgress(_ done: Int, _ total: Int, swipe: Bool) -> String {
        done >= total ? "Scan \(done) of \(total) done."
            : "Scan \(done) of \(total) done. " + (swipe ? "Swipe your finger again." : "Lift your finger and place it again.")
    }
    public static let hintGeneral = "The scan did not work. Try again."
    public static let hintTooShort = "The swipe was too short. Swipe your finger again."
    public static let hintCenter = "Your finger was not centred on the reader. Centre it and try again."
    public static let hintRemove = "Remove your finger from the reader, then try again."
    public static let noMatch = "The fingerprint did not match."
    public static let noMatchTryAgain = "The fingerprint did not match. Try again."
    public static let scanTimedOut = "No finger was scanned in time."
    public static let readerRemoved = "The fingerprint reader was disconnected."
    public static func readerFailed(_ detail: String) -> String { "The fingerprint reader reported an error: \(embedded(detail))." }
    public static let readerBusy = "The fingerprint reader is busy. Try again in a moment."
    public static let notEnrolled = "No finger is enrolled. Run: fingerseal enroll"
    // fprintd holds the templates (reader=fprintd, or auto with fprintd on the system bus).
    public static let fingersChanged = "The fingers enrolled for you in fprintd changed since your PIN last confirmed them, so a finger unlocks again only after you enter your PIN once."
    public static let fingersConfirmed = "Your PIN confirmed the fingers now enrolled in fprintd; they unlock fingerseal again."
    public static let anyFprintdFinger = "a finger enrolled in fprintd"
    public static let fingersBound = "The fingers enrolled for you in fprintd now unlock fingerseal."
    public static func notEnrolledHere(_ finger: String) -> String {
        "The finger \(finger) was enrolled with another program (your desktop's settings or fprintd-enroll), so fingerseal does not delete it. Remove it there; fingerseal then asks for your PIN once to confirm the change."
    }
    public static let fprintdUnavailable = "fprintd, which owns the fingerprint reader on this computer, cannot be reached."
    public static let nothingForgottenAtFprintd = "fingerseal enrolled no finger in fprintd, so none was deleted. Fingers enrolled with other programs are removed there."
    public static let needsDirectReader = "fprintd owns the fingerprint reader on this computer, so this command cannot drive it directly. Stop fprintd and set reader=libfprint in the configuration to use it."
    public static let lidClosed = "The lid is closed, so the built-in fingerprint reader is not used."
    public static let noCompatiblePrints = "None of your enrolled fingers were enrolled on this reader. Run: fingerseal enroll"
    public static func alreadyEnrolled(_ finger: String) -> String {
        "The finger \(finger) is already enrolled. To enroll it again, first run: fingerseal forget \(finger)"
    }
    public static let duplicateFinger = "The reader already holds this finger, stored by another program (fprintd, another operating system or another user). Enroll a different finger, or remove that print with the program that stored it."
    public static let readerStorageFull = "The reader's storage is full. fingerseal never deletes other programs' prints to make room: remove prints you no longer need with the program that stored them, then enroll again."
    public static func enrolled(_ finger: String) -> String { "Enrolled \(finger)." }
    public static func forgotten(_ fingers: [String]) -> String {
        fingers.isEmpty ? "No finger was enrolled." : "Forgot " + fingers.joined(separator: ", ") + "."
    }
    public static func notEnrolledFinger(_ finger: String) -> String { "The finger \(finger) is not enrolled." }
    public static let onDeviceTemplateLeft = "The reader is not connected, so its stored copy of the print could not be deleted. Run fingerseal forget again with the reader connected to delete it."
    public static func unknownFinger(_ name: String) -> String {
        "Unknown finger \(name). Use one of: left-thumb, left-index-finger, left-middle-finger, left-ring-finger, left-little-finger, right-thumb, right-index-finger, right-middle-finger, right-ring-finger, right-little-finger."
    }
    public static let captureNotSupported = "This reader cannot capture images."
    public static func captured(_ path: String, _ width: Int, _ height: Int) -> String { "Saved a \(width) by \(height) image to \(path)." }
    public static let selftestNeedsStorage = "The self-test needs a reader that stores prints on the device."

    public static let signInRequired = "Your sign-in has ended. Sign in again with: fingerseal login"
    public static let idpUnreachable = "The identity provider cannot be reached, and the last sign-in check is too long ago to go on without it."
    public static let idpRefused = "The identity provider did not renew your sign-in. Your sign-in is kept; try again later."
    public static let notSignedIn = "This account is not signed in to an identity provider. Sign in with: fingerseal login"
    public static func unlockedWith(_ method: String) -> String { "Unlocked with \(method)." }
    public static func tokenReady(_ minutes: Int) -> String {
        "A fresh access token is ready. It is valid for \(minutes) more minute\(minutes == 1 ? "" : "s")."
    }
    public static let offlineNoToken = "The identity provider cannot be reached, so there is no fresh access token. The offline grace still allows unlocking."
    public static let fingerOrPIN = "or type your PIN and press Enter. Enter alone goes straight to the PIN."
    /// prompt=combined: the one prompt of a host that drops info messages, so it says it all.
    public static let fingerOrPINPrompt = "Touch the fingerprint reader and press Enter, or type your PIN: "
    /// prompt=combined, for hosts that do show the sentence: Enter alone goes to the password.
    public static let fingerOrPINForPAM = "or type your PIN. Enter alone goes on to the password."
    public static let loggedOut = "Signed out. The sign-in is removed from your vault; your PIN and fingers are kept."
    public static func revokeFailed(_ detail: String) -> String {
        "The identity provider could not be told to end the sign-in (\(embedded(detail))). It is removed here; at the provider it ends when it expires."
    }
    // Step-up and sealed data
    public static let badContext = "A context name is 1 to 64 letters, digits, dots, dashes or underscores."
    public static func steppedUp(_ context: String, _ method: String, ttl: Int) -> String {
        "Confirmed with \(method) for \(context), for \(ttl / 60 > 0 ? "\(ttl / 60) minute\(ttl / 60 == 1 ? "" : "s")" : "\(ttl) seconds")."
    }
    public static func grantHeld(_ context: String) -> String { "Already confirmed for \(context) in this session." }
    public static func grantEnded(_ context: String) -> String { "The confirmation for \(context) is ended." }
    public static func noGrant(_ context: String) -> String { "There is no confirmation for \(context) in this session." }
    public static func stepUpPrompt(_ context: String) -> String { "Confirm it is you for \(context)." }
    public static let personalDataFollows = "Personal data follows."
    public static let notSealedFile = "This is not a file sealed by fingerseal, or it is damaged."
    public static let sealedByAnotherVault = "This file was sealed with another fingerseal vault; this vault cannot open it."
    public static let sealedTampered = "This sealed file was changed after it was sealed, or its context was altered. Nothing was revealed."
    public static func sealedFor(_ context: String) -> String { "Sealed for the context \(context)." }
    public static func tooLargeToSeal(_ limit: Int) -> String { "This is too large to seal; the limit is \(limit / (1024 * 1024)) MiB." }
    public static func cannotRead(_ path: String) -> String { "Cannot read \(path)." }
    public static func cannotWrite(_ path: String, _ why: String) -> String { "Cannot write \(path): \(embedded(why))." }
    public static let pinForReset = "Deleting the vault needs its PIN. If the PIN is forgotten, set a new one with: fingerseal pin reset"
    public static func redirectPortBusy(_ port: Int) -> String {
        "Port \(port) on 127.0.0.1 is in use, so the browser cannot come back to fingerseal. Close what uses it, or choose another port."
    }
    public static func cannotRun(_ command: String, _ why: String) -> String { "Cannot run \(command): \(embedded(why))." }
    public static let notRevocable = "The identity provider offers no way to end a sign-in early. It is removed here; at the provider it ends when it expires."
    public static func openAndEnter(_ uri: String, _ code: String) -> String {
        "To sign in, open \(uri) on any device and enter the code \(code)."
    }
    public static let orScanQR = "Or scan this QR code with your phone:"
    public static let waitingForSignIn = "Waiting for you to finish signing in. Press Ctrl-C to cancel."
    public static let codeExpired = "The sign-in code expired before it was used. Run fingerseal login again."
    public static let signInRefused = "The sign-in was refused."
    public static let credentialsRefused = "The identity provider refused the user name or password."
    public static let noRefreshToken = "The identity provider issued no refresh token. Ask for the offline_access scope, or ask your administrator to allow refresh tokens for this client."
    public static func signedIn(_ issuer: String) -> String { "Signed in to \(issuer). The sign-in is sealed in your vault." }
    public static func signedInAs(_ who: String) -> String { "Signed in as \(who)." }
    public static func identityMismatch(_ who: String, _ user: String) -> String {
        "The identity provider signed in \(who), which is not the account \(user) on this computer, so the sign-in was refused and nothing was stored."
    }
    public static func identityClaimMissing(_ who: String, _ claim: String, _ user: String) -> String {
        "The identity provider did not say which account \(who) is here (it sent no \(claim) for the account \(user)), so the sign-in was refused and nothing was stored."
    }
    public static let identityUnknown = "The identity provider did not say who signed in (no ID token and no userinfo), so the sign-in was refused: this computer requires the account to match."
    public static let identityChanged = "The identity provider now names another account than the one that signed in, so a new sign-in is required. Run: fingerseal login"
    public static let offerEnroll = "To unlock with your finger from now on, run: fingerseal enroll"
    public static func passwordPrompt(_ user: String) -> String { "Password for \(user): " }
    public static func providerProblem(_ detail: String) -> String { "The identity provider cannot be used: \(embedded(detail))." }
    public static func providerUnreachable(_ detail: String) -> String { "The identity provider cannot be reached (\(embedded(detail))). Check the network and try again." }
    public static let signInRequiredNotice = "Fingerprint unlock needs a new sign-in. Run: fingerseal login"

    // Browser sign-in (the pages are what the browser shows when it comes back)
    public static let openInBrowser = "Open this address in a browser to sign in:"
    public static let browserTimedOut = "The browser did not come back in time. Run fingerseal login again."
    public static let codeNotAccepted = "The identity provider did not accept the sign-in. Run fingerseal login again."
    public static let browserPageReceived = "You can close this window and return to the terminal."
    public static let browserPageFailed = "The sign-in did not complete. You can close this window and return to the terminal."
    public static let browserPageIgnored = "This page does not belong to the sign-in in progress, so it was ignored."

    // Reset
    public static let resetConfirm = "This deletes the fingerseal vault for this account, with its PIN, enrolled fingers and sign-in. Type yes to continue: "
    public static let resetDone = "The fingerseal vault is deleted."
    public static let resetNothing = "There is no fingerseal vault for this account. Nothing was deleted."
    public static let resetCancelled = "Nothing was deleted."

    // Input
    public static let cancelled = "Cancelled."
    public static let noTerminal = "No terminal to read from. Use --pin-fd to pass the PIN from a file descriptor."

    // Configuration
    public static func badOption(_ option: String, _ why: String) -> String { "The option \(option) is not valid: \(embedded(why))." }
    public static func unknownOption(_ option: String) -> String { "Unknown option \(option) was ignored." }
    public static let unknownUser = "That user does not exist."
    // Fleet configuration: the system file, what it fixes, the client secret it names
    public static func unsafeConfigFile(_ why: String) -> String {
        "Fingerseal refused its configuration because \(embedded(why)). The file must be root's and writable by root only."
    }
    public static func fixedOnlyInFile(_ source: String) -> String {
        "The option fixed in \(source) was ignored: only the configuration file can fix options."
    }
    public static func fixedOptionIgnored(_ option: String, _ source: String) -> String {
        "The option \(option) in \(source) was ignored: the administrator fixed it in the configuration file."
    }
    public static func fixedArgument(_ argument: String, _ option: String) -> String {
        "The administrator fixed \(option) for this machine, so \(argument) cannot change it."
    }
    public static let signInNotConfigured =
        "Say which identity provider and client with --issuer URL --client-id ID, or ask the administrator to set issuer and client_id in /etc/fingerseal/fingerseal.conf."
    public static let administratorSecretWins =
        "The client secret set by the administrator is used; the one from --client-secret-file was not."
    public static func clientSecretFileMissing(_ path: String) -> String {
        "The client secret file \(path) named in the configuration does not exist."
    }
    public static func clientSecretFileReadable(_ path: String, _ mode: UInt32) -> String {
        "The client secret file \(path) can be read by group or others (mode \(String(mode & 0o7777, radix: 8))). Make it readable by root only (chmod 600)."
    }
    public static func unsafeClientSecretFile(_ why: String) -> String {
        "Fingerseal refused the client secret file because \(embedded(why)). It must be root's, in a directory only root can write."
    }
    public static func clientSecretFileEmpty(_ path: String) -> String { "The client secret file \(path) is empty." }

    // Audit trail: what `fingerseal audit` lists and syslog receives (one sentence per event)
    public static func auditSignedIn(_ issuer: String, _ flow: String) -> String { "Signed in to \(issuer) with the \(flow) sign-in." }
    public static func auditUnlocked(method: String, via: String) -> String {
        "Unlocked with " + (method == "finger" ? "a finger" : method == "pin" ? "the PIN" : method)
            + (via == "pam" ? " at a system sign-in (PAM)." : via == "cli" ? ", using the fingerseal command." : " (\(via)).")
    }
    public static func auditFallback(_ reason: String) -> String { "Moved on to the next way to sign in: \(embedded(reason))." }
    public static func auditStepUp(_ context: String, _ result: String) -> String { "Step-up for \(context): \(result)." }
    public static func auditReveal(_ context: String, _ file: String) -> String { "Revealed \(file) for \(context)." }
    public static func auditLockout(_ method: String) -> String {
        method == "finger" ? "Fingerprint unlock was locked after too many failed scans."
            : method == "pin" ? "The PIN was locked after too many wrong tries." : "\(method) was locked."
    }
    public static func auditFailure(_ action: String, _ reason: String) -> String {
        (action.first.map { $0.uppercased() + action.dropFirst() } ?? "An action") + " did not succeed: \(embedded(reason))."
    }
    public static let auditLoggedOut = "Signed out."
    public static let auditPINReset = "A forgotten PIN was replaced with a new one."
    public static func auditRotated(_ file: String) -> String { "Older events were moved to \(file)." }
    public static func auditUnknownEvent(_ event: String) -> String { "An event this fingerseal does not know: \(event)." }
    /// A reason word (usually an outcome name) as words.
    public static func auditReason(_ reason: String) -> String {
        switch reason {
        case "success": return "success"
        case "noMatch": return "the fingerprint did not match"
        case "wrongPIN": return "the PIN was wrong"
        case "triesExhausted": return "too many failed tries"
        case "lockedOut": return "locked after too many failures"
        case "signInRequired": return "a new sign-in is required"
        case "tokenUnavailable": return "no access token"
        case "noReader": return "no fingerprint reader"
        case "noPrints": return "no print for this reader"
        case "notEnrolled": return "no finger enrolled"
        case "identityMismatch": return "the identity provider named another account"
        case "fingersChanged": return "the fingers enrolled in fprintd changed"
        case "noVault": return "not set up"
        case "noPIN": return "no PIN"
        case "timedOut": return "timed out"
        case "cancelled": return "cancelled"
        case "remoteSession": return "a remote session"
        case "vaultUnusable": return "the vault could not be used"
        case "unavailable": return "not available"
        case "unknownUser": return "unknown user"
        case "badConfiguration": return "bad configuration"
        case "conversationAgain": return "interrupted"
        case "usage": return "wrong usage"
        case "systemError": return "a system error"
        default: return reason
        }
    }
    public static func auditListed(_ seq: UInt64, _ time: String, _ sentence: String) -> String { "Event \(seq), \(time): \(sentence)" }
    public static func auditFprintdSetConfirmed(_ fingers: Int) -> String {
        fingers == 1 ? "The PIN confirmed the 1 finger now enrolled in fprintd."
                     : "The PIN confirmed the \(fingers) fingers now enrolled in fprintd."
    }
    public static let auditNone = "No events are recorded yet."
    public static func auditUnreadableLines(_ count: Int) -> String {
        "\(count) line\(count == 1 ? "" : "s") of the audit trail cannot be read. Run: fingerseal audit --verify"
    }
    public static func auditIntact(_ events: Int) -> String { "The audit trail is intact: \(events) event\(events == 1 ? "" : "s")." }
    public static let auditInterruptedAppend = "Its last line is incomplete because an append was interrupted; it held no recorded event, and the next event recorded removes it."
    public static func auditTampered(_ problem: String) -> String { "The audit trail is not intact: \(embedded(problem))." }
    public static func auditUnreadable(_ file: String, _ line: Int) -> String { "line \(line) of \(file) is not an audit entry (edited or damaged)" }
    public static func auditEdited(_ file: String, _ line: Int, _ entry: UInt64) -> String {
        "line \(line) of \(file), event \(entry), does not match its seal (edited)"
    }
    public static func auditInserted(_ file: String, _ line: Int) -> String { "line \(line) of \(file) was not written by fingerseal (inserted)" }
    public static func auditDuplicate(_ file: String, _ line: Int, _ entry: UInt64) -> String {
        "line \(line) of \(file) is a second copy of event \(entry) (inserted)"
    }
    public static func auditDoesNotFollow(_ file: String, _ line: Int) -> String {
        "line \(line) of \(file) does not follow the entry before it (inserted or deleted)"
    }
    public static func auditDeleted(_ file: String, _ line: Int, _ from: UInt64, _ to: UInt64) -> String {
        (from == to ? "event \(from) is" : "events \(from) to \(to) are") + " missing before line \(line) of \(file) (deleted)"
    }
    public static func auditDeletedBefore(_ file: String, _ line: Int, _ entry: UInt64) -> String {
        "the events before event \(entry), on line \(line) of \(file), are missing (deleted)"
    }
    public static func auditFileMissing(_ file: String, _ recorded: UInt64) -> String {
        "the file \(file) is missing or empty, but the vault recorded \(recorded) event\(recorded == 1 ? "" : "s") (deleted)"
    }
    public static func auditOlderFileMissing(_ file: String, _ from: UInt64, _ to: UInt64) -> String {
        "the file \(file) with events \(from) to \(to) is missing or empty (deleted)"
    }
    public static func auditReordered(_ file: String, _ line: Int, _ entry: UInt64) -> String {
        "event \(entry) on line \(line) of \(file) is out of order (reordered)"
    }
    public static func auditTruncated(_ file: String, _ last: UInt64, _ recorded: UInt64) -> String {
        "\(file) ends at event \(last), but the vault recorded \(recorded) (truncated: the last events were cut off)"
    }
    public static func auditTornLine(_ file: String, _ line: Int, _ entry: UInt64) -> String {
        "the last line of \(file), line \(line), is incomplete and event \(entry) is cut off (torn last line)"
    }
    public static func auditWrongVault(_ file: String, _ line: Int) -> String {
        "line \(line) of \(file) belongs to another vault (wrong vault)"
    }
    public static func auditOversized(_ file: String) -> String { "\(file) is larger than fingerseal ever writes it (edited)" }
    public static func auditNotRecorded(_ entry: UInt64) -> String {
        "event \(entry) is not the one the vault recorded (the trail was replaced)"
    }

    // The broker.
    public static let brokerBusy = "The fingerseal service is busy with too many requests. Try again in a moment."
    public static func wrongProtocol(_ version: Int) -> String {
        "This program speaks version \(version) of the fingerseal protocol, and the service another. Update fingerseal."
    }
    public static let readerBusyWaiting = "The fingerprint reader is busy with another request. Waiting for it."
    public static let answerTimedOut = "No answer came in time."
    public static let badAnswer = "The answer could not be read."
    public static func needsWholeNumber(_ option: String) -> String { "The option \(option) needs a whole number." }
    public static let onlyRootNamesUser = "Only root can act for another user."
    public static let notYourAccount = "You can act only for your own account."
    public static func rigOnly(_ group: String) -> String {
        "Only root and members of the group \(group) can use this command, because it reads biometric data or changes the reader."
    }
    public static let notAvailableYet = "This command is not available from the fingerseal service yet."

    // The account password (checked by the service with PAM, service fingerseal-verify).
    public static let accountPasswordRefused = "The account password was not accepted. Nothing was changed."
    public static let accountPasswordNeeded = "This needs your account password (the one you sign in to this computer with)."
    public static let resetWithAccountPassword = "To delete the vault without the PIN, give your account password."
    public static let passwordEmptyInput = "No password was given."

    // pin reset (a forgotten PIN)
    public static let pinResetDone = "The new PIN is set. Your enrolled fingers and sign-in are kept."
    public static let pinResetNoDevice = "The vault cannot be opened without the PIN: its device key is missing or does not match the enrolled fingers. To start again, delete the vault with: fingerseal reset"

    // Tokens held by the service
    public static func cachedTokenReady(_ minutes: Int) -> String {
        "The identity provider cannot be reached, so this session's access token is used. It is valid for \(minutes) more minute\(minutes == 1 ? "" : "s")."
    }
    /// Why the identity provider could not be told to end a sign-in, as words (never an
    /// internal error value).
    public static func revokeFailed(_ failure: TokenFailure) -> String {
        if case .clientAuthenticationRequired = failure { return revokeNeedsClientSecret }
        return revokeFailed(providerFailure(failure))
    }

    /// What went wrong with a request to the identity provider, as the end of a sentence
    /// ("it cannot be reached").
    public static func providerFailure(_ failure: TokenFailure) -> String {
        switch failure {
        case .unreachable: return "it cannot be reached"
        case let .rejected(status, _): return "it refused the request with HTTP status \(status)"
        case .malformed: return "its answer could not be read"
        case .badConfiguration: return "its configuration cannot be used"
        case .chainEnded, .credentialsRefused: return "it no longer knows this sign-in"
        case .clientAuthenticationRequired: return "it asks for a client secret"
        case .accessDenied: return "it refused the request"
        case .authorizationPending, .slowDown, .expiredToken, .identityRejected: return "it gave an unexpected answer"
        }
    }

    public static let revokeNeedsClientSecret = "The identity provider lets only clients with a secret end a sign-in early. It is removed here; at the provider it ends when it expires."

    // Sign-in: a confidential client's secret, asked through the client
    public static let clientSecretPrompt = "Client secret: "

    // Rig commands
    /// The self-test's closing sentence when a step failed; `why` is that step's sentence.
    public static func selftestFailed(_ step: String, _ why: String) -> String {
        "The self-test failed at \(step): \(embedded(why))."
    }
    public static let selftestPassed = "The self-test passed."
    public static let readerDidNotClose = "The reader did not close in time."

    // Doctor (`fingerseal doctor`): what the service sees of the caller's setup. Each finding
    // is one sentence, each fix another.
    public static let doctorBackendFprintd = "The reader backend is fprintd, which owns the fingerprint reader on this computer."
    public static let doctorBackendDirect = "The reader backend is libfprint, driven directly by the fingerseal service."
    public static let doctorFixBackend = "Start fprintd, or set reader=libfprint in /etc/fingerseal/fingerseal.conf."
    public static func doctorReaders(_ names: [String]) -> String {
        names.count == 1 ? "A fingerprint reader is connected: \(names[0])."
                         : "\(names.count) fingerprint readers are connected: \(names.joined(separator: ", "))."
    }
    public static let doctorFixNoReader = "Connect a fingerprint reader, then check it with: fingerseal devices"
    public static let doctorFixReaderBusy = "Run fingerseal doctor again when the reader is free."
    public static let doctorNoVault = "Fingerseal is not set up for this account: there is no vault and no PIN."
    public static let doctorFixNoVault = "Set a PIN, which creates the vault: fingerseal pin set"
    public static let doctorFixVaultUnusable = "Run fingerseal status for details; if the vault cannot be repaired, start again with: fingerseal reset"
    public static func doctorVault(_ created: String) -> String { "Your vault exists; it was created at \(created)." }
    public static let doctorPINSet = "The PIN is set."
    public static let doctorNoPIN = "The vault has no PIN, so nothing can unlock it when a finger fails."
    public static let doctorFixNoPIN = "Set a new PIN with: fingerseal pin reset"
    public static func doctorFingers(_ fingers: [String]) -> String {
        fingers.count == 1 ? "One finger is enrolled: \(fingers[0])."
                           : "\(fingers.count) fingers are enrolled: \(fingers.joined(separator: ", "))."
    }
    public static func doctorFprintdFingers(_ fingers: [String]) -> String {
        fingers.count == 1 ? "One finger is enrolled in fprintd: \(fingers[0])."
                           : "\(fingers.count) fingers are enrolled in fprintd: \(fingers.joined(separator: ", "))."
    }
    public static let doctorNoFingers = "No finger is enrolled, so only the PIN unlocks."
    public static let doctorFixEnroll = "Enroll a finger with: fingerseal enroll"
    public static let doctorFixFingersChanged = "Run fingerseal unlock once and enter your PIN to confirm the fingers."
    public static let doctorNotLocked = "Neither fingerprint unlock nor the PIN is locked."
    public static let doctorFingerLocked = "Fingerprint unlock is locked after too many failed scans."
    public static let doctorFixFingerLocked = "Unlock once with your PIN (fingerseal unlock) or your password; that clears the lock."
    public static let doctorPINLocked = "The PIN is locked after too many wrong tries."
    public static let doctorFixPINLocked = "Sign in again, which clears the lock: fingerseal login"
    public static let doctorNotSignedIn = "You are not signed in to an identity provider, so unlocking gives no access token."
    public static let doctorSignInRequired = "Your sign-in at the identity provider has ended, so unlocking needs a new one."
    public static let doctorFixSignIn = "Sign in with: fingerseal login"
    public static func doctorSignedIn(_ who: String, _ issuer: String) -> String { "Signed in as \(who) at \(issuer)." }
    public static func doctorSignedInTo(_ issuer: String) -> String { "Signed in to \(issuer)." }
    public static let doctorNoProvider = "No identity provider is configured or signed in to, so none was asked."
    public static func doctorProviderAnswers(_ issuer: String) -> String { "The identity provider \(issuer) answers." }
    public static func doctorProviderFailed(_ issuer: String, _ failure: TokenFailure) -> String {
        "The identity provider \(issuer) did not answer its discovery request: \(providerFailure(failure))."
    }
    public static let doctorFixProvider = "Check the network connection and the issuer in /etc/fingerseal/fingerseal.conf."
    public static let doctorClockPlausible = "The system clock is plausible: it is later than the vault's creation and its last sign-in renewal."
    public static func doctorClockBeforeVault(_ now: String, _ created: String) -> String {
        "The system clock says \(now), which is earlier than the creation of your vault at \(created)."
    }
    public static func doctorClockBeforeRefresh(_ now: String, _ refreshed: String) -> String {
        "The system clock says \(now), which is earlier than the last renewal of your sign-in at \(refreshed)."
    }
    public static let doctorFixClock = "Set the clock, for example with: timedatectl set-ntp true"
}
