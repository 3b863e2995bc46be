import Glibc
import Testing
@testable import FingersealCore
import SystemKit
@testable import TestSupport

/// The phone's rule through a real PAM stack (issue 23 §1): pamtester under pam_wrapper, the
/// stack pam-auth-update writes (fingerseal first, pam_unix with the account's real password,
/// then the profile fingerseal-password's line), a broker of the
/// test's own with libfprint's virtual_device. The broker learns the password from the
/// module's `password_used` line after pam_unix and checks it itself with its own PAM
/// service; a restart is the broker started again with another boot id.
@Suite(.serialized) struct PasswordRuleSystemTests {
    static let pin = "4826"
    static let service = "fingerseal-password-rule"
    static let password = "correct horse"
    static var available: Bool { Pamtester.available && getuid() == 0 }
    static let security = "/lib/\(Pamtester.multiarch)/security"
    static let pamUnix = security + "/pam_unix.so"

    struct Rig {
        let rig: ReaderBroker
        let user = TestUsers.alice
        var services: String { rig.files.file("pam.d") }

        init(config: String) throws {
            try #require(TestUsers.ensure(TestUsers.alice, password: PasswordRuleSystemTests.password))
            rig = try ReaderBroker(config: config)
            let pin = PasswordRuleSystemTests.pin + "\n"
            let made = try rig.cli(["pin", "set", "--user", user, "--pin-fd", "3"], fd3: pin)
            try #require(made.status == 0, "\(made.all)")
            let enrolled = try rig.scan(["enroll", "--user", user, "--finger", "right-index-finger", "--pin-fd", "3"],
                                        Array(repeating: "SCAN finger-a", count: 5), fd3: pin)
            try #require(enrolled.status == 0, "\(enrolled.all)")
            #expect(mkdir(services, 0o755) == 0)
            writeFile(services + "/" + PasswordRuleSystemTests.service, Array("""
                auth [success=2 default=ignore] \(Paths.module) socket=\(rig.broker.socketPath)
                auth [success=1 default=ignore] \(PasswordRuleSystemTests.pamUnix)
                auth requisite \(PasswordRuleSystemTests.security)/pam_deny.so
                auth required \(PasswordRuleSystemTests.security)/pam_permit.so
                auth optional \(Paths.module) socket=\(rig.broker.socketPath) password_used

                """.utf8), mode: 0o644)
        }

        /// pamtester authenticates alice, with `answers` on stdin and `scans` sent to the
        /// virtual sensor.
        func signIn(answers: [String] = [], scans: [String] = []) throws -> Child.Result {
            let child = try Pamtester.start(services: services, service: PasswordRuleSystemTests.service, user: user,
                                            answers: answers)
            for scan in scans { try VirtualSensor.send(scan, to: rig.sensor) }
            return child.finish()
        }

        var ledger: LockoutLedger { get throws { LockoutLedger(store: try rig.store(for: user), policy: LockoutPolicy()) } }

        /// Waits until the broker recorded a password it checked in the current boot.
        func passwordSeen() throws -> Bool {
            try ReaderBroker.waitUntil { try ledger.current().passwordSeen?.boot == rig.broker.bootID }
        }
    }

    @Test(.enabled(if: available)) func theFirstSignInAfterARestartNeedsThePasswordOnce() throws {
        let rig = try Rig(config: "password_after_boot=yes\n")
        let due = Messages.passwordDue(.afterBoot)
        // Before the broker ever checked the password: the finger is not offered.
        let first = try rig.signIn(answers: [PasswordRuleSystemTests.password])
        #expect(first.status == 0, "\(first.all)")
        #expect(first.all.contains(due), "\(first.all)")
        #expect(first.stderr.contains("Password: ") && !first.all.contains("Swipe your finger"), "\(first.all)")
        #expect(try rig.passwordSeen(), "the password_used line handed the password over and the broker checked it")
        #expect(try rig.rig.cli(["audit"], as: rig.user).stdout.contains(Messages.auditReason(.cause(.passwordAfterBoot))))

        // From then on the finger, no password.
        let second = try rig.signIn(scans: ["SCAN finger-a"])
        #expect(second.status == 0, "\(second.all)")
        #expect(!second.all.contains(due) && !second.stderr.contains("Password: "), "\(second.all)")
        #expect(try rig.rig.cli(["status"], as: rig.user).stdout.contains(Messages.statusPasswordNext(.later(at: nil, afterRestart: true))))

        // A restart: once more.
        try rig.rig.broker.restartAfterABoot()
        #expect(try rig.rig.cli(["status"], as: rig.user).stdout.contains(Messages.statusPasswordNext(.now(.afterBoot))))
        let afterRestart = try rig.signIn(answers: [PasswordRuleSystemTests.password])
        #expect(afterRestart.status == 0 && afterRestart.all.contains(due), "\(afterRestart.all)")
        #expect(try rig.passwordSeen())
        #expect(try rig.signIn(scans: ["SCAN finger-a"]).status == 0)
    }

    /// A caller cannot get round it: not with the PIN, not from the command line, not with
    /// a stack line of its own (a host the user runs gets no say in policy).
    @Test(.enabled(if: available)) func nothingACallerSendsSkipsIt() throws {
        let rig = try Rig(config: "password_after_boot=yes\n")
        let pin = PasswordRuleSystemTests.pin + "\n"
        let unlock = try rig.rig.cli(["step-up", "test", "--pin-fd", "3"], fd3: pin, as: rig.user)
        #expect(unlock.status != 0, "\(unlock.all)")
        #expect(unlock.all.contains(Messages.passwordDue(.afterBoot)), "\(unlock.all)")
        // A host alice runs herself (a lock screen), whose stack line says no: policy is not
        // a user's host's to set, so the finger is still not offered.
        writeFile(rig.services + "/" + PasswordRuleSystemTests.service, Array("""
            auth [success=done default=ignore] \(Paths.module) socket=\(rig.rig.broker.socketPath) password_after_boot=no
            auth required \(PasswordRuleSystemTests.pamUnix)

            """.utf8), mode: 0o644)
        let entry = try #require(getpwnam(rig.user)?.pointee)
        let host = try Child("/usr/bin/setpriv", ["--reuid=\(entry.pw_uid)", "--regid=\(entry.pw_gid)", "--init-groups", "--",
                                                 "/usr/bin/pamtester", "-I", "tty=/dev/pts/0", PasswordRuleSystemTests.service, rig.user,
                                                 "authenticate"],
                             environment: Pamtester.environment(rig.services), stdin: Array("not the password\n".utf8),
                             terminal: .leader)
        let refused = host.finish()
        #expect(refused.status != 0, "\(refused.all)")
        #expect(refused.all.contains(Messages.passwordDue(.afterBoot)) && !refused.all.contains("Swipe your finger"), "\(refused.all)")
        #expect(try rig.ledger.current().passwordSeen == nil)
        let asUser = try rig.rig.cli(["status", "--json"], as: rig.user)
        #expect(asUser.stdout.filter { !$0.isWhitespace }.contains("\"needed_now\":true"), "\(asUser.all)")
    }

    /// Issue 31 §8: what the PIN gates needs the password first too. After a restart, a shell
    /// as the user with the PIN cannot enroll or forget a finger, change the PIN or turn touch to
    /// sign in on until the account password was given: each says why and changes nothing.
    /// Given first (here from the same descriptor, the password's line before the PIN's), the
    /// PIN then does it.
    @Test(.enabled(if: available)) func pinGatedCommandsNeedThePasswordFirst() throws {
        let rig = try Rig(config: "password_after_boot=yes\n")
        let pin = PasswordRuleSystemTests.pin + "\n"
        let due = Messages.passwordDueBeforePIN(.afterBoot)
        for command in [["enroll", "--finger", "left-index-finger"], ["pin", "change"], ["forget", "right-index-finger"], ["identify", "on"]] {
            let refused = try rig.rig.cli(command + ["--pin-fd", "3"], fd3: pin + "1357\n", as: rig.user)
            #expect(refused.status != 0 && refused.all.contains(due), "\(command): \(refused.all)")
        }
        #expect(try rig.ledger.current().pinFailures == 0, "no PIN was asked, so none was counted")
        let fingers = try rig.rig.cli(["fingers"], as: rig.user)
        #expect(fingers.stdout.contains("right-index-finger") && !fingers.stdout.contains("left-index-finger"), "\(fingers.all)")
        let wrong = try rig.rig.cli(["pin", "change", "--pin-fd", "3", "--password-fd", "3"],
                                    fd3: "not the password\n" + pin + "1357\n", as: rig.user)
        #expect(wrong.status != 0 && wrong.all.contains(Messages.accountPasswordRefused), "\(wrong.all)")

        let enrolled = try rig.rig.startCLI(["enroll", "--finger", "left-index-finger", "--pin-fd", "3", "--password-fd", "3"],
                                            fd3: PasswordRuleSystemTests.password + "\n" + pin, as: rig.user)
        for _ in 0..<5 { try VirtualSensor.send("SCAN finger-b", to: rig.rig.sensor) }
        let done = enrolled.finish()
        #expect(done.status == 0 && done.all.contains(due), "\(done.all)")
        #expect(try rig.passwordSeen(), "the broker checked the password and the rule counts from it")
        // The password given in this boot, the PIN alone does it again.
        let changed = try rig.rig.cli(["pin", "change", "--pin-fd", "3"], fd3: pin + "1357\n", as: rig.user)
        #expect(changed.status == 0 && !changed.all.contains(due), "\(changed.all)")
    }

    /// `password_after`: counted from the last password the broker checked, by its own clock
    /// (the record is written here as two hours old: the broker's clock cannot be moved).
    @Test(.enabled(if: available)) func passwordAfterCountsFromTheLastCheckedPassword() throws {
        let rig = try Rig(config: "password_after=1h\n")
        let now = Int64(time(nil))
        let old = LockoutLedger(store: try rig.rig.store(for: rig.user), policy: LockoutPolicy(), clock: FixedClock(time: now - 7200))
        old.passwordSucceeded(boot: rig.rig.broker.bootID)
        let due = Messages.passwordDue(.afterTime)
        let stale = try rig.signIn(answers: [PasswordRuleSystemTests.password])
        #expect(stale.status == 0 && stale.all.contains(due), "\(stale.all)")
        #expect(try ReaderBroker.waitUntil { (try rig.ledger.current().passwordSeen?.at ?? 0) >= now })
        let fresh = try rig.signIn(scans: ["SCAN finger-a"])
        #expect(fresh.status == 0 && !fresh.all.contains(due) && !fresh.stderr.contains("Password: "), "\(fresh.all)")
    }
}
