import FingersealWire
import SharedMessages

/// The command tree: names, help, options, and for each command what it asks the broker.
/// The broker does the work; a command's `shape` only lays out its positionals and what the
/// CLI handles itself (see Invocation).
enum Commands {
    // Option groups several commands share.
    static let json = OptionSpec.wire(.json, N_("Print machine-readable JSON."))
    static let pinFD = OptionSpec.descriptor("--pin-fd", N_("Read PINs from file descriptor N, one per line, instead of the terminal."))
    static let passwordFD = OptionSpec.descriptor(
        "--password-fd", N_("Read your account password from descriptor N instead of the terminal."))
    static let device = OptionSpec.wire(.device, "ID", N_("Use the reader with this id (see: fingerseal devices)."))
    static let timeout = OptionSpec.wire(.scanTimeout, "SECONDS", N_("Wait at most this long for a finger (default 15)."))
    static let eventsFD = OptionSpec.descriptor("--events-fd", N_("Also write reader events as JSON lines to file descriptor N."))
    static let scan = [device, timeout, eventsFD]
    static let ttl = OptionSpec.wire(.ttl, "SECONDS", N_("How long the confirmation lasts (default 300, at most 86400)."))
    static let maxAge = OptionSpec.wire(.maxAge, "SECONDS", N_("Accept a confirmation held only if it was made at most this long ago."))
    static let clientSecretFile = OptionSpec.local(
        "--client-secret-file", "FILE", N_("Read a client secret from FILE (confidential clients); the administrator's, if set, wins."))
    static let noBrowser = OptionSpec.wire(.noBrowser, N_("Browser flow: only print the address; do not start a browser."))
    static let sealOut = OptionSpec.local("--out", "FILE", N_("Write the sealed file here (created 0600) instead of standard output."))
    static let captureOut = OptionSpec.wire(.out, "FILE", N_("Where to write the image (required; written 0600, replacing FILE)."))

    static let root = CommandSpec(
        name: "fingerseal",
        summary: N_("Unlock your identity-provider sign-in with a fingerprint, with a PIN as fallback."),
        options: [.flag("--version", N_("Show the version."))],
        subcommands: [status, login, unlock, token, proof, logout, stepUp, seal, reveal, pin, fingerOn, fingerOff, identify, keyring, reset,
                      devices, enroll, fingers, forget, verify, capture, selftest, audit, doctor, account, completion],
        discussion: N_("Exit codes are listed in the README; 0 always means success.")
    )

    // MARK: the vault

    static let status = CommandSpec(
        name: "status", summary: N_("Show whether fingerseal is set up, and how your vault is protected."),
        options: [json], command: .status)

    static let pin = CommandSpec(
        name: "pin", summary: N_("Set, change or reset the PIN that unlocks your vault when a fingerprint cannot."),
        subcommands: [
            CommandSpec(name: "set", summary: N_("Set up fingerseal with a new PIN (creates your vault)."),
                        options: [pinFD, passwordFD],
                        discussion: N_("With --pin-fd, the first line is the new PIN. Creating the vault needs your account password."),
                        command: .pinSet),
            CommandSpec(name: "change", summary: N_("Change the PIN. The current PIN is needed."),
                        options: [pinFD, passwordFD], discussion: N_("With --pin-fd, the first line is the current PIN, the second the new one."),
                        command: .pinChange),
            CommandSpec(name: "reset", summary: N_("Set a new PIN when you have forgotten it; needs your account password."),
                        options: [pinFD, passwordFD],
                        discussion: N_("With --pin-fd, the first line is the new PIN."),
                        command: .pinReset),
        ])

    static let fingerOn = CommandSpec(
        name: "on", summary: N_("Turn fingerprint unlock back on for your account."),
        options: [pinFD, passwordFD], discussion: N_("Needs the PIN (fingerprint unlock is off until this succeeds)."),
        command: .fingerOn)

    static let fingerOff = CommandSpec(
        name: "off", summary: N_("Turn fingerprint unlock off for your account; the PIN and the password still work."),
        options: [pinFD, passwordFD],
        discussion: N_("Needs a finger or the PIN. Your vault and enrolled fingers are kept; fingerseal on turns it back on."),
        command: .fingerOff)

    static let identify = CommandSpec(
        name: "identify", summary: N_("Turn touch to sign in on or off for your account (kiosks: sign in by touching the reader)."),
        subcommands: [
            CommandSpec(name: "on", summary: N_("Let a login screen that offers touch to sign in find your account by your finger."),
                        options: [pinFD, passwordFD],
                        discussion: N_("Needs the PIN and an enrolled finger. The administrator decides which login screens offer it, and for which group."),
                        command: .identifyOn),
            CommandSpec(name: "off", summary: N_("Stop touch to sign in for your account; you type your user name again."),
                        options: [pinFD, passwordFD], discussion: N_("Needs the PIN."), command: .identifyOff),
        ])

    static let keyring = CommandSpec(
        name: "keyring", summary: N_("Let a finger or PIN at sign-in unlock your login keyring too, or stop it."),
        subcommands: [
            CommandSpec(name: "on", summary: N_("Seal your account password in your vault, so a finger or PIN at sign-in unlocks your keyring."),
                        options: [passwordFD,
                                  .wire(.withoutTPM, N_("Seal it even though your vault is not sealed to a TPM, so that whoever takes this computer's disk can read your password."))],
                        discussion: N_("""
                            Needs your account password. The administrator lists the sign-in services that hand it on (keyring_services=). \
                            A password change through PAM replaces the sealed copy. \
                            Refused while your vault is not sealed to a TPM, since a stolen disk would then give up your password, \
                            unless you give --without-tpm or the administrator set keyring_without_tpm=yes.
                            """),
                        command: .keyringOn),
            CommandSpec(name: "off", summary: N_("Remove your account password from your vault; the keyring asks for it again."),
                        options: [pinFD, passwordFD], discussion: N_("Needs a finger or the PIN."), command: .keyringOff),
        ])

    static let reset = CommandSpec(
        name: "reset", summary: N_("Delete your vault: PIN, enrolled fingers and sign-in."),
        options: [.wire(.yes, N_("Do not ask to type yes (the PIN is still needed).")), pinFD, passwordFD],
        discussion: N_("Needs the PIN. A forgotten PIN: run fingerseal pin reset."),
        command: .reset)

    // MARK: accounts made at a first sign-in (provisioning)

    static let account = CommandSpec(
        name: "account", summary: N_("List or remove the accounts made at a first sign-in, and the vaults set aside (root only)."),
        subcommands: [
            CommandSpec(name: "list", summary: N_("List the accounts fingerseal made, with when each was made and last used, and the vaults set aside."),
                        options: [json],
                        discussion: N_("A vault is set aside when another account holds its user id now: a removed account's user id given to a new one, or a name removed and made again. It is never used for the new account."),
                        command: .accountList),
            CommandSpec(name: "remove", summary: N_("Remove an account fingerseal made, with its vault."),
                        arguments: "USER",
                        discussion: N_("Only accounts fingerseal made can be removed here; its home directory goes too."),
                        command: .accountRemove),
            CommandSpec(name: "expire", summary: N_("Remove now the accounts unused for provision_expire_days (the broker also does this every hour)."),
                        options: [.wire(.daysAhead, "DAYS", N_("Judge as if this many more days had passed.")), json],
                        command: .accountExpire),
            CommandSpec(name: "purge", summary: N_("Delete a vault that was set aside, as fingerseal account list names it."),
                        arguments: "ID", command: .accountPurge),
            CommandSpec(name: "useradd", summary: N_("Tell fingerseal that an account was made (useradd runs this)."),
                        arguments: "NAME",
                        discussion: N_("Run by useradd through /etc/shadow-maint/useradd-post.d/fingerseal. A vault still under the new account's user id is an earlier account's and is set aside."),
                        command: .accountUseradd),
            CommandSpec(name: "userdel", summary: N_("Tell fingerseal that an account is being removed (userdel runs this)."),
                        arguments: "NAME",
                        discussion: N_("Run by userdel through /etc/shadow-maint/userdel-pre.d/fingerseal. The account's vault is removed with it."),
                        command: .accountUserdel),
        ])

    // MARK: sign-in and tokens

    static let login = CommandSpec(
        name: "login", summary: N_("Sign in to your identity provider once; fingerseal keeps the sign-in sealed in your vault."),
        options: [
            .wire(.issuer, "URL", N_("The identity provider (its OIDC issuer URL; default: the configuration's issuer).")),
            .wire(.clientID, "ID", N_("The OAuth client id (default: the configuration's client_id).")),
            clientSecretFile,
            .wire(.scope, "SCOPE", N_("Scopes to ask for (default: the configuration's, else openid offline_access).")),
            .wire(.flow, N_("How to sign in (default: the configuration's, else device).")),
            .wire(.idpUser, "NAME", N_("Password flow: your user name at the identity provider (default: your login name).")),
            .descriptor("--password-fd", N_("""
                Read passwords from descriptor N, one per line, instead of the terminal: \
                the identity provider's (password flow), then your account password (a new vault).
                """)),
            .wire(.noQR, N_("Do not draw the QR code.")),
            noBrowser,
            .wire(.browserTimeout, "S", N_("Browser flow: seconds to wait for the browser (default: 300).")),
            .wire(.redirectPort, "N",
                  N_("Browser flow: listen on 127.0.0.1 port N, for providers that match redirect URIs exactly (default: any free port).")),
            pinFD, json,
        ],
        discussion: N_("""
            Without arguments it signs in as /etc/fingerseal/fingerseal.conf says (issuer, client_id, scope, flow). \
            Arguments change what the administrator did not fix there (fixed=). \
            A new vault asks for a new PIN; an existing one asks for its PIN. A full sign-in clears every lock.
            """),
        command: .login)

    static let unlock = CommandSpec(
        name: "unlock", summary: N_("Unlock your sign-in with a finger (or the PIN) and get a fresh access token."),
        arguments: "[--exec COMMAND ...]",
        options: [
            .wire(.printToken, N_("Write the access token to standard output.")),
            .rest(.exec, "COMMAND ...", N_("Run COMMAND with the access token on an inherited descriptor (see below).")),
            .wire(.pin, N_("Use the PIN, not a finger.")),
            json, pinFD, passwordFD,
        ] + scan,
        discussion: N_("""
            While the reader waits you may type your PIN instead; Enter alone goes straight to the PIN. \
            The token is never shown unless asked for. With --exec, COMMAND gets it on the file descriptor \
            named in FINGERSEAL_ACCESS_TOKEN_FD (read it, for example, with: cat <&"$FINGERSEAL_ACCESS_TOKEN_FD"); \
            it is never put in the arguments or the environment, and fingerseal exits with COMMAND's status. \
            FINGERSEAL_TOKEN_TYPE says how to send it, Bearer or DPoP; a DPoP token needs a proof for each request \
            (fingerseal proof METHOD URL).
            """),
        command: .unlock,
        shape: { parsed, invocation throws(CLIError) in
            // The rest is UnlockOptions.validate's: the command itself stays here.
            let options = invocation.given.group(UnlockOptions.self)
            if options.exec && parsed.positionals.isEmpty { throw CLIError(.usage, Strings.execNeedsCommand) }
            if options.exec {
                invocation.afterSuccess = .exec(parsed.positionals)
            } else if options.printToken && !options.output.json {
                invocation.afterSuccess = .printToken
            }
        })

    static let token = CommandSpec(
        name: "token", summary: N_("Print the access token of this session while it is valid; otherwise unlock first."),
        options: [.wire(.minValid, "SECONDS", N_("Unlock again if the token expires sooner than this (default 60).")),
                  json, pinFD, passwordFD] + scan,
        command: .token,
        shape: { parsed, invocation throws(CLIError) in
            // With --json the broker's output carries it.
            if !invocation.given.command.output.json { invocation.afterSuccess = .printToken }
        })

    static let proof = CommandSpec(
        name: "proof", summary: N_("Print a proof of possession for one request with this session's access token (DPoP)."),
        arguments: "METHOD URL",
        options: [.wire(.nonce, "NONCE", N_("The nonce the server asked for in its DPoP-Nonce header.")), json],
        discussion: N_("""
            Where your sign-in is bound to this computer, each request with its access token needs a new proof, \
            sent in the DPoP header beside Authorization: DPoP TOKEN. The proof is for the token fingerseal unlock \
            or fingerseal token gave this session; no finger is asked for while that token is valid. \
            The key that signs it never leaves the fingerseal service.
            """),
        command: .proof,
        shape: { parsed, invocation throws(CLIError) in
            invocation.request.arguments = parsed.positionals
        })

    static let logout = CommandSpec(
        name: "logout", summary: N_("Sign out: end the sign-in at the identity provider and remove it from your vault."),
        options: [json, pinFD, passwordFD],
        discussion: N_("Needs the PIN. Your PIN and enrolled fingers are kept; fingerseal login signs in again."),
        command: .logout)

    // MARK: step-up, seal, reveal

    static let stepUp = CommandSpec(
        name: "step-up", summary: N_("Confirm it is you before a sensitive action; kept per context for this login session."),
        arguments: "CONTEXT [-- COMMAND ...]",
        options: [
            ttl, maxAge,
            .wire(.fresh, N_("Ask for the PIN even if a confirmation is held (a finger is not enough).")),
            .wire(.check, N_("Only say, by the exit status, whether a confirmation is held (0 yes, 1 no).")),
            .wire(.end, N_("End the confirmation for CONTEXT.")),
            json, pinFD, passwordFD,
        ] + scan,
        discussion: N_("""
            A confirmation held for CONTEXT in this login session means no prompt. Otherwise it asks for a finger \
            (the PIN may be typed while the reader waits, and is asked when there is no reader or the finger fails). \
            With a COMMAND after --, the confirmation lasts exactly as long as the command, and the exit status is \
            the command's. Confirmations live in the memory of the fingerseal service and end at logout. \
            Exit status: 0 confirmed, 1 refused, 3 cancelled, 4 timed out, 5 locked.
            """),
        command: .stepUp,
        shape: { parsed, invocation throws(CLIError) in
            // StepUpOptions.validate found the context, and no command beside --check or --end.
            invocation.request.arguments = Array(parsed.positionals.prefix(1))
            let command = Array(parsed.positionals.dropFirst())
            if !command.isEmpty {
                // The broker holds the confirmation for as long as this connection, which
                // stays open exactly as long as COMMAND runs.
                invocation.request.options.set(field: Option.command.field, "1")
                invocation.afterSuccess = .run(command)
            }
        })

    static let seal = CommandSpec(
        name: "seal", summary: N_("Encrypt sensitive data for a context; revealing it needs a confirmation for that context."),
        arguments: "[FILE]",
        options: [.wire(.context, "CONTEXT", N_("The context to seal for. Required.")), sealOut],
        discussion: N_("Reads FILE, or standard input. Sealing needs no confirmation; revealing does."),
        command: .seal,
        shape: { parsed, invocation throws(CLIError) in
            // SealOptions.validate: --context, at most one file.
            invocation.payload = try LocalFiles.readInput(parsed.positionals.first, limit: LocalFiles.sealLimit)
            if let out = parsed.value(sealOut) { invocation.target = try DataTarget.newFile(out) }
        })

    static let reveal = CommandSpec(
        name: "reveal", summary: N_("Decrypt a sealed file to standard output, after a confirmation for its context."),
        arguments: "FILE",
        options: [.wire(.noNotice, N_("Do not say on standard error that personal data follows.")), ttl, maxAge, pinFD, passwordFD] + scan,
        discussion: N_("The plaintext goes only to standard output, never to a file. Cancel or failure reveals nothing."),
        command: .reveal,
        shape: { parsed, invocation throws(CLIError) in
            // RevealOptions.validate refused more than one; none is this side's to refuse.
            guard let path = parsed.positionals.first else { throw CLIError(.usage, OptionError.revealNeedsFile.message) }
            invocation.payload = try LocalFiles.readInput(path, limit: LocalFiles.revealLimit)
        })

    // MARK: the reader

    static let devices = CommandSpec(name: "devices", summary: N_("List the fingerprint readers connected now."),
                                     options: [json], command: .devices)

    static let enroll = CommandSpec(
        name: "enroll", summary: N_("Enroll a finger. Your PIN is needed."),
        options: [.wire(.finger, "NAME", N_("The finger to enroll (default: the first not yet enrolled, right index first).")),
                  device, timeout, pinFD, passwordFD, eventsFD],
        discussion: N_("""
            Finger names: left-thumb, left-index-finger, left-middle-finger, left-ring-finger, left-little-finger, \
            right-thumb, right-index-finger, right-middle-finger, right-ring-finger, right-little-finger.
            """),
        command: .enroll)

    static let fingers = CommandSpec(name: "fingers", summary: N_("List the enrolled fingers."), options: [json], command: .fingers)

    static let forget = CommandSpec(
        name: "forget", summary: N_("Forget one enrolled finger, or all. Your PIN is needed."),
        arguments: "FINGER", options: [.wire(.all, N_("Forget every enrolled finger.")), pinFD, passwordFD],
        discussion: N_("Prints stored on the reader itself are deleted there too."),
        command: .forget)

    static let verify = CommandSpec(
        name: "verify", summary: N_("Scan once and say whether it matches an enrolled finger (for test rigs)."),
        options: [json] + scan,
        discussion: N_("Exit status 0: match; 1: no match; 3: cancelled; 4: timed out."),
        command: .verify)

    static let capture = CommandSpec(
        name: "capture", summary: N_("Capture one fingerprint image to a PGM file (image readers only)."),
        // --out goes to the broker only for its sentence ("Saved … to PATH"); it never opens it.
        options: [captureOut] + scan,
        command: .capture,
        shape: { parsed, invocation throws(CLIError) in
            guard let path = parsed.value(captureOut), !path.isEmpty else { throw CLIError(.usage, Strings.captureNeedsOut) }
            invocation.target = try DataTarget.replacing(path)
        })

    static let selftest = CommandSpec(
        name: "selftest", summary: N_("Exercise a reader with on-device storage: open, enroll, verify, delete, close."),
        options: [json] + scan,
        discussion: N_("""
            Prints other programs stored on the reader are never touched; the self-test deletes only the print it \
            enrolled, even when a later step failed. A reader whose storage is full fails the enroll step and says so. \
            Your vault is not touched.
            """),
        command: .selftest)

    // MARK: audit

    static let audit = CommandSpec(
        name: "audit", summary: N_("List what happened to your vault (sign-ins, unlocks, lockouts, ...), or verify that the list is intact."),
        options: [
            .wire(.json, N_("Print each event as one JSON object per line (JSON Lines, not an array), exactly as stored.")),
            .wire(.verify, N_("Check every entry with the vault key and say whether the trail is intact, and what was rotated away.")),
        ],
        discussion: N_("""
            Each event is listed as one sentence with its time (UTC), in the order they happened. Attempts that \
            need no finger, PIN or password (fallbacks, failures, step-ups that did not succeed) are kept in a \
            chain of their own and listed as "Attempt N", so no number of them can push an event out; beyond 30 \
            in 10 minutes they are counted and recorded as one entry. --verify opens the vault through its device \
            key (no prompt), checks both chains, names the first entry that was edited, deleted, inserted, \
            reordered or cut off, and says what older entries were rotated away; with --json it prints one JSON \
            object. Exit status: 0 when listed or intact; 9 when the trail was changed or damaged. The listing \
            itself is not verified.
            """),
        command: .audit)

    // MARK: troubleshooting

    static let doctor = CommandSpec(
        name: "doctor", summary: N_("Check everything fingerprint unlock needs here, and say how to fix what is wrong."),
        options: [json.local,
                  .wire(.service, "NAME", N_("Also show the settings in force for this PAM service that differ from the defaults, and where each was set."))],
        discussion: N_("""
            One line per finding, led by OK, Warning or Problem, each problem with its fix. This side checks the \
            service's socket and units, the PAM module and profiles, the udev rules, the group fingerseal-rig, the TPM \
            and the clock; the service checks your reader, vault, PIN, fingers, sign-in, identity provider and the \
            clock against your vault. With --service NAME, the service also lists each setting in force for that PAM \
            service that differs from the defaults, and whether the configuration file's top level or its section \
            [service NAME] set it (module arguments in the PAM stack still win over both). Exit status: 0 when \
            nothing blocks fingerprint unlock (warnings may remain); 8 when something does.
            """),
        command: .doctor, run: Doctor.run)

    static let completion = CommandSpec(
        name: "completion", summary: N_("Print the shell completion script for bash or zsh."),
        arguments: "bash|zsh",
        discussion: N_("Installed by make install; to try it now: source <(fingerseal completion bash)"),
        run: Completion.run)
}
