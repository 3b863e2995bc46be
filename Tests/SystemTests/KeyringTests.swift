import FoundationEssentials
import Glibc
import Testing
@testable import FingersealCore
import SystemKit
@testable import TestSupport

/// The login keyring unlocked by a finger or PIN sign-in (issue 23 §1): a real
/// gnome-keyring-daemon in a private session of the test's own account (dbus-run-session),
/// its login keyring locked; pamtester under pam_wrapper runs the stack a display manager
/// has (fingerseal, pam_unix, then pam_gnome_keyring), and `secret-tool lookup` in that
/// session answers only if the keyring was unlocked. A password change goes through
/// pam_chauthtok with pam_gnome_keyring and fingerseal's own password line.
@Suite(.serialized) struct KeyringTests {
    static let user = "fs-keyring"
    static let password = "correct horse"
    static let pin = "4826"
    static let service = "fingerseal-keyring"
    static let security = "/lib/\(Pamtester.multiarch)/security"
    static var available: Bool {
        Pamtester.available && getuid() == 0 && access(security + "/pam_gnome_keyring.so", R_OK) == 0
            && access("/usr/bin/gnome-keyring-daemon", X_OK) == 0 && access("/usr/bin/secret-tool", X_OK) == 0
    }

    struct Rig {
        let rig: ReaderBroker
        let entry: passwd
        let runtime: TempDirectory
        /// The account's home for this test alone (HOME of every process it starts): no keyring
        /// file of an earlier test, or of a daemon still on its way out, can be found here.
        let homeDirectory: TempDirectory
        var services: String { rig.files.file("pam.d") }
        var home: String { homeDirectory.path }

        init(keyringServices: String = KeyringTests.service) throws {
            try #require(TestUsers.ensure(KeyringTests.user, password: KeyringTests.password))
            entry = try #require(getpwnam(KeyringTests.user)?.pointee)
            KeyringTests.stopSessions(entry.pw_uid)
            // No TPM here: the administrator accepts the copy in a vault a stolen disk opens.
            rig = try ReaderBroker(config: "keyring_services=\(keyringServices)\nkeyring_without_tpm=yes\n")
            runtime = try TempDirectory()
            homeDirectory = try TempDirectory()
            for directory in [runtime.path, homeDirectory.path] {
                #expect(chown(directory, entry.pw_uid, entry.pw_gid) == 0 && chmod(directory, 0o700) == 0)
            }
            let pin = KeyringTests.pin + "\n"
            let made = try rig.cli(["pin", "set", "--user", KeyringTests.user, "--pin-fd", "3"], fd3: pin)
            try #require(made.status == 0, "\(made.all)")
            #expect(mkdir(services, 0o755) == 0)
            writeFile(services + "/" + KeyringTests.service, Array("""
                auth [success=2 default=ignore] \(Paths.module) socket=\(rig.broker.socketPath) pin
                auth [success=1 default=ignore] \(KeyringTests.security)/pam_unix.so
                auth requisite \(KeyringTests.security)/pam_deny.so
                auth required \(KeyringTests.security)/pam_permit.so
                auth optional \(KeyringTests.security)/pam_gnome_keyring.so
                password [success=1 default=ignore] \(KeyringTests.security)/pam_unix.so
                password requisite \(KeyringTests.security)/pam_deny.so
                password required \(KeyringTests.security)/pam_permit.so
                password optional \(KeyringTests.security)/pam_gnome_keyring.so
                password optional \(Paths.module) socket=\(rig.broker.socketPath)

                """.utf8), mode: 0o644)
            // A login keyring of the account's password, holding one secret, made in a session
            // of its own that ends (the keyring stays on disk, locked).
            let keyring = try asUser(["/usr/bin/dbus-run-session", "--", "/bin/sh", "-c", """
                printf '%s' "$1" | gnome-keyring-daemon --unlock --components=secrets >/dev/null &&
                \(KeyringTests.untilTheDaemonServes) &&
                printf '%s' topsecret | secret-tool store --label=test app fingerseal-test
                """, "sh", KeyringTests.password])
            try #require(keyring.status == 0, "\(keyring.all)")
            KeyringTests.stopSessions(entry.pw_uid)
        }

        /// Runs `command` as the account, in its runtime directory, with `extra` in its environment.
        func asUser(_ command: [String], _ extra: [String: String] = [:]) throws -> Child.Result {
            try startAsUser(command, extra).finish()
        }

        func startAsUser(_ command: [String], _ extra: [String: String] = [:]) throws -> Child {
            let environment = ["HOME": home, "XDG_RUNTIME_DIR": runtime.path, "PATH": "/usr/bin:/bin"].merging(extra) { $1 }
            return try Child("/usr/bin/setpriv", ["--reuid=\(entry.pw_uid)", "--regid=\(entry.pw_gid)", "--init-groups", "--"] + command,
                             environment: environment)
        }

        /// The account's desktop session: its keyring daemon started with the login keyring
        /// locked, until the session is closed.
        struct Session {
            let child: Child
            let bus: String
            let fifo: String
        }

        func startSession() throws -> Session {
            let ready = runtime.file("bus-address"), fifo = runtime.file("end")
            unlink(ready)
            unlink(fifo)
            #expect(mkfifo(fifo, 0o600) == 0 && chown(fifo, entry.pw_uid, entry.pw_gid) == 0)
            let child = try startAsUser(["/usr/bin/dbus-run-session", "--", "/bin/sh", "-c", """
                gnome-keyring-daemon --start --components=secrets >/dev/null && \(KeyringTests.untilTheDaemonServes) &&
                printf '%s' "$DBUS_SESSION_BUS_ADDRESS" > "$1.part" && mv "$1.part" "$1" && read _ < "$2"
                """, "sh", ready, fifo])
            guard ReaderBroker.waitUntil(20, { access(ready, R_OK) == 0 }) else {
                child.signal(SIGKILL)
                throw TestFailure("the keyring session did not start: \(child.finish(limit: 5).all)")
            }
            return Session(child: child, bus: String(decoding: readFile(ready) ?? [], as: UTF8.self), fifo: fifo)
        }

        func end(_ session: Session) {
            _ = try? Child.run("/bin/sh", ["-c", "echo > \"$1\"", "sh", session.fifo])
            _ = session.child.finish(limit: 10)
            KeyringTests.stopSessions(entry.pw_uid)
        }

        /// `secret-tool lookup` in the session: the secret when the keyring is unlocked; a
        /// locked one would need a prompt, and there is no display for one.
        func lookup(_ session: Session) throws -> Child.Result {
            try asUser(["/usr/bin/timeout", "10", "secret-tool", "lookup", "app", "fingerseal-test"],
                       ["DBUS_SESSION_BUS_ADDRESS": session.bus])
        }

        /// pamtester signs the account in with the PIN (a finger's match hands on the same way),
        /// the keyring daemon found through the PAM environment's XDG_RUNTIME_DIR.
        func signIn(answers: [String] = [KeyringTests.pin]) throws -> Child.Result {
            try Pamtester.run(services: services, service: KeyringTests.service, user: KeyringTests.user, answers: answers,
                              extraArguments: ["-E", "XDG_RUNTIME_DIR=\(runtime.path)"])
        }

        /// The same with a finger on the virtual reader.
        func signIn(scanning finger: String) throws -> Child.Result {
            let host = try Pamtester.start(services: services, service: KeyringTests.service, user: KeyringTests.user,
                                           extraArguments: ["-E", "XDG_RUNTIME_DIR=\(runtime.path)"])
            try VirtualSensor.send("SCAN \(finger)", to: rig.sensor)
            return host.finish()
        }

        func enroll(_ finger: String) throws {
            let enrolled = try rig.scan(["enroll", "--user", KeyringTests.user, "--finger", "right-index-finger", "--pin-fd", "3"],
                                        Array(repeating: "SCAN \(finger)", count: 5), fd3: KeyringTests.pin + "\n")
            try #require(enrolled.status == 0, "\(enrolled.all)")
        }

        func audit() throws -> String { try rig.cli(["audit", "--user", KeyringTests.user]).stdout }
    }

    /// Shell that waits (at most 10 s) until the daemon just started owns the Secret Service's
    /// name on the session bus: asked before, the bus would start a second daemon, with no
    /// password, which would want a prompt.
    static let untilTheDaemonServes = """
        i=0; until dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets | grep -q 'boolean true'; do \
        i=$((i+1)); [ $i -gt 200 ] && exit 3; sleep 0.05; done
        """

    /// Every process of the test's account: its sessions' daemons outlive dbus-run-session.
    /// SIGTERM first, so a keyring daemon writes what it holds (a secret just stored, a
    /// password just changed) before it goes; SIGKILL for what is left after 5 s.
    static func stopSessions(_ uid: uid_t) {
        let gone = { Child.runQuietly("/usr/bin/pgrep", ["-U", String(uid)]) != 0 }
        _ = Child.runQuietly("/usr/bin/pkill", ["-TERM", "-U", String(uid)])
        if ReaderBroker.waitUntil(5, gone) { return }
        _ = Child.runQuietly("/usr/bin/pkill", ["-KILL", "-U", String(uid)])
        _ = ReaderBroker.waitUntil(5, gone)
    }

    @Test(.enabled(if: available)) func aPINSignInUnlocksTheKeyringOnceTheAccountOptedIn() throws {
        let rig = try Rig()
        // Before `keyring on`: the stack succeeds, the keyring stays locked.
        var session = try rig.startSession()
        #expect(try rig.signIn().status == 0)
        #expect(try rig.lookup(session).status != 0, "the keyring was unlocked without the password")
        rig.end(session)

        let on = try rig.rig.cli(["keyring", "on", "--password-fd", "3"], fd3: KeyringTests.password + "\n", as: KeyringTests.user)
        #expect(on.status == 0 && on.stdout.contains(Messages.keyringTurnedOn), "\(on.all)")
        #expect(try rig.rig.cli(["status"], as: KeyringTests.user).stdout.contains(Messages.statusKeyringOn))

        session = try rig.startSession()
        let signedIn = try rig.signIn()
        #expect(signedIn.status == 0 && !signedIn.stderr.contains("Password: "), "\(signedIn.all)")
        let found = try rig.lookup(session)
        #expect(found.status == 0 && found.stdout == "topsecret", "\(found.all)")
        rig.end(session)
        #expect(try rig.audit().contains(Messages.auditKeyring(.on)))
    }

    /// A change through pam_chauthtok (pam_unix, then pam_gnome_keyring and fingerseal's line):
    /// the copy is replaced, and the next finger sign-in unlocks the keyring with the new password.
    @Test(.enabled(if: available)) func aPasswordChangeThroughPAMReplacesTheCopy() throws {
        let rig = try Rig()
        try rig.enroll("finger-k")
        defer { _ = try? Child.run("/usr/sbin/chpasswd", [], stdin: Array("\(KeyringTests.user):\(KeyringTests.password)\n".utf8)) }
        let on = try rig.rig.cli(["keyring", "on", "--password-fd", "3"], fd3: KeyringTests.password + "\n", as: KeyringTests.user)
        try #require(on.status == 0, "\(on.all)")
        let new = "battery staple 2"
        // The change while the account's daemon runs: pam_gnome_keyring changes the keyring's
        // password through it (the keyring in this test's home).
        let during = try rig.startSession()
        // As root with PAM_CHANGE_EXPIRED_AUTHTOK, pam_unix asks the current password too, which
        // pam_gnome_keyring needs to change the keyring's.
        let changed = try Pamtester.run(services: rig.services, service: KeyringTests.service, user: KeyringTests.user,
                                        operations: ["chauthtok(PAM_CHANGE_EXPIRED_AUTHTOK)"],
                                        answers: [KeyringTests.password, new, new], items: [], environment: [:],
                                        extraArguments: ["-E", "XDG_RUNTIME_DIR=\(rig.runtime.path)"])
        #expect(changed.status == 0, "\(changed.all)")
        #expect(try ReaderBroker.waitUntil { try rig.audit().contains(Messages.auditKeyring(.updated)) }, "the copy was replaced")
        rig.end(during)

        let session = try rig.startSession()
        let signedIn = try rig.signIn(scanning: "finger-k")
        #expect(signedIn.status == 0 && !signedIn.stderr.contains("PIN: ") && !signedIn.stderr.contains("Password: "), "\(signedIn.all)")
        let found = try rig.lookup(session)
        #expect(found.status == 0 && found.stdout == "topsecret", "\(found.all)")
        rig.end(session)
    }

    /// A password changed behind PAM's back (chpasswd): the copy no longer works, so the next
    /// sign-in drops it, says so once, and records it; the keyring stays locked.
    @Test(.enabled(if: available)) func aCopyThatNoLongerWorksIsDroppedAndSaidOnce() throws {
        let rig = try Rig()
        defer { _ = try? Child.run("/usr/sbin/chpasswd", [], stdin: Array("\(KeyringTests.user):\(KeyringTests.password)\n".utf8)) }
        let on = try rig.rig.cli(["keyring", "on", "--password-fd", "3"], fd3: KeyringTests.password + "\n", as: KeyringTests.user)
        try #require(on.status == 0, "\(on.all)")
        let reset = try Child.run("/usr/sbin/chpasswd", [], stdin: Array("\(KeyringTests.user):another one\n".utf8))
        try #require(reset.status == 0)
        let first = try rig.signIn()
        #expect(first.status == 0 && first.all.contains(Messages.keyringDropped), "\(first.all)")
        let second = try rig.signIn()
        #expect(second.status == 0 && !second.all.contains(Messages.keyringDropped), "said once: \(second.all)")
        #expect(try rig.audit().contains(Messages.auditKeyring(.dropped)))
        #expect(try rig.rig.cli(["status"], as: KeyringTests.user).stdout.contains(Messages.statusKeyringOff))
    }

    /// Only a root host of a listed service gets it: the same stack run by the account itself
    /// (a host it controls could print it) signs in but hands nothing on.
    @Test(.enabled(if: available)) func aHostTheUserRunsGetsNoPassword() throws {
        let rig = try Rig()
        let on = try rig.rig.cli(["keyring", "on", "--password-fd", "3"], fd3: KeyringTests.password + "\n", as: KeyringTests.user)
        try #require(on.status == 0, "\(on.all)")
        let session = try rig.startSession()
        let host = try Child("/usr/bin/setpriv", ["--reuid=\(rig.entry.pw_uid)", "--regid=\(rig.entry.pw_gid)", "--init-groups", "--",
                                                 "/usr/bin/pamtester", "-E", "XDG_RUNTIME_DIR=\(rig.runtime.path)", "-I", "tty=/dev/pts/0",
                                                 KeyringTests.service, KeyringTests.user, "authenticate"],
                             environment: Pamtester.environment(rig.services), stdin: Array((KeyringTests.pin + "\n").utf8),
                             terminal: .leader)
        let signedIn = host.finish()
        #expect(signedIn.status == 0, "\(signedIn.all)")
        #expect(try rig.lookup(session).status != 0, "a host the user runs was handed the password")
        rig.end(session)
    }

    // MARK: the copy and the TPM (issue 31 §3)

    /// A broker of its own with `config` (no reader) and the account's vault, made with its PIN.
    static func vault(config: String) throws -> ReaderBroker {
        try #require(TestUsers.ensure(user, password: password))
        let rig = try ReaderBroker(reader: false, config: config)
        let made = try rig.cli(["pin", "set", "--user", user, "--pin-fd", "3"], fd3: pin + "\n")
        try #require(made.status == 0, "\(made.all)")
        return rig
    }

    static func keyringOn(_ rig: ReaderBroker, _ extra: [String] = []) throws -> Child.Result {
        try rig.cli(["keyring", "on", "--password-fd", "3"] + extra, fd3: password + "\n", as: user)
    }

    struct Status: Decodable {
        let keyring: Bool
        let keyringSealedToTpm: Bool?
    }

    static func status(_ rig: ReaderBroker) throws -> Status {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(Status.self, from: Data(try rig.cli(["status", "--json"], as: user).stdout.utf8))
    }

    /// Where the broker finds no TPM (the device key file beside the vault opens it).
    static let noTPM = "tpm_tcti=device:/dev/fingerseal-no-such-tpm\n"

    /// Without a TPM the copy is refused, before the password is asked for, with a sentence
    /// that says why and what to do, and nothing is sealed; `--without-tpm` lets it in, and
    /// then `keyring on`, `status` (text and JSON) and `doctor` say what a stolen disk gives up.
    @Test(.enabled(if: getuid() == 0)) func withoutATPMThePersonMustAskForTheCopy() throws {
        let rig = try Self.vault(config: Self.noTPM)
        let refused = try Self.keyringOn(rig)
        #expect(refused.status == 2 && refused.stderr.contains(Messages.keyringNeedsTPM(sealable: false)), "\(refused.all)")
        #expect(!refused.all.contains(Messages.keyringNeedsPassword), "the password was asked for in vain: \(refused.all)")
        #expect(try Self.status(rig).keyring == false, "nothing was sealed")
        #expect(try !rig.cli(["audit", "--user", Self.user]).stdout.contains(Messages.auditKeyring(.on)))

        let accepted = try Self.keyringOn(rig, ["--without-tpm"])
        #expect(accepted.status == 0 && accepted.stdout.contains(Messages.keyringTurnedOn), "\(accepted.all)")
        #expect(accepted.stderr.contains(Messages.keyringWithoutTPM), "\(accepted.all)")
        let status = try Self.status(rig)
        #expect(status.keyring && status.keyringSealedToTpm == false)
        let text = try rig.cli(["status"], as: Self.user)
        #expect(text.stdout.contains(Messages.statusKeyringOn) && text.stdout.contains(Messages.keyringWithoutTPM), "\(text.all)")
        let doctor = try rig.cli(["doctor"], as: Self.user)
        #expect(doctor.stdout.contains("Warning: " + Messages.keyringWithoutTPM), "\(doctor.all)")
        #expect(doctor.stdout.contains(Messages.doctorFixKeyringWithoutTPM), "\(doctor.all)")
    }

    /// `keyring_without_tpm=yes`: the administrator accepts it for the machine, so nobody is
    /// asked; what a stolen disk gives up is still said.
    @Test(.enabled(if: getuid() == 0)) func theAdministratorMayAcceptTheCopyWithoutATPM() throws {
        let rig = try Self.vault(config: Self.noTPM + "keyring_without_tpm=yes\n")
        let accepted = try Self.keyringOn(rig)
        #expect(accepted.status == 0 && accepted.stderr.contains(Messages.keyringWithoutTPM), "\(accepted.all)")
        #expect(try Self.status(rig).keyringSealedToTpm == false)
    }

    /// A vault sealed to a TPM (swtpm; `tpm=require`, or `auto` with a TPM there) takes the copy
    /// as before, with nothing to say about the disk.
    @Test(.enabled(if: getuid() == 0 && access("/usr/bin/swtpm", X_OK) == 0), arguments: ["require", "auto"])
    func aVaultSealedToATPMTakesTheCopyUnasked(mode: String) throws {
        let swtpm = try SwtpmProcess()
        let rig = try Self.vault(config: "tpm=\(mode)\ntpm_tcti=\(swtpm.tcti)\n")
        let accepted = try Self.keyringOn(rig)
        #expect(accepted.status == 0 && accepted.stdout.contains(Messages.keyringTurnedOn), "\(accepted.all)")
        #expect(!accepted.all.contains(Messages.keyringWithoutTPM), "\(accepted.all)")
        #expect(try Self.status(rig).keyringSealedToTpm == true)
        let doctor = try rig.cli(["doctor"], as: Self.user)
        #expect(!doctor.stdout.contains(Messages.keyringWithoutTPM), "\(doctor.all)")
    }

    /// A vault made before the TPM was used: the sentence says the PIN seals it, and after
    /// the PIN has, the copy goes in unasked.
    @Test(.enabled(if: getuid() == 0 && access("/usr/bin/swtpm", X_OK) == 0))
    func aVaultNotSealedYetIsSealedByThePINFirst() throws {
        let swtpm = try SwtpmProcess()
        let rig = try Self.vault(config: "tpm=off\ntpm_tcti=\(swtpm.tcti)\n")
        writeFile(rig.broker.config, Array("tpm=auto\ntpm_tcti=\(swtpm.tcti)\n".utf8), mode: 0o644)
        let refused = try Self.keyringOn(rig)
        #expect(refused.status == 2 && refused.stderr.contains(Messages.keyringNeedsTPM(sealable: true)), "\(refused.all)")
        let sealed = try rig.cli(["step-up", "--fresh", "--pin-fd", "3", "tpm"], fd3: Self.pin + "\n", as: Self.user)
        #expect(sealed.status == 0, "\(sealed.all)")
        let accepted = try Self.keyringOn(rig)
        #expect(accepted.status == 0 && !accepted.all.contains(Messages.keyringWithoutTPM), "\(accepted.all)")
        #expect(try Self.status(rig).keyringSealedToTpm == true)
    }
}
