import CPAM
import FoundationEssentials
import Glibc
import FingersealCore
import PAMKit
import SystemKit
import Testing
@testable import TestSupport

/// Touch to sign in (issue 22 §1): a real PAM stack started with no user name
/// (`pam_start_confdir` with a NULL user), pam_fingerseal with `identify identify_group=`,
/// a broker of the test's own on libfprint's virtual_device. Three members of the group are
/// enrolled and opted in, each with a finger of their own (the virtual sensor's ids); a
/// fourth account opted in but is outside the group.
@Suite(.serialized) struct IdentifyTests {
    static let pin = "5193"
    static let service = "fingerseal-identify-test"
    static let group = "fs-kiosk"
    static let members = ["fs-kiosk-a", "fs-kiosk-b", "fs-kiosk-c"]
    static let outsider = "fs-kiosk-x"

    /// Makes the group and the accounts (useradd, groupadd; kept for later runs, as
    /// `TestUsers` does).
    static func ensureAccounts(_ names: [String]) throws {
        if getgrnam(group) == nil {
            #expect(Child.runQuietly("/usr/sbin/groupadd", [group]) == 0)
        }
        for name in names + [outsider] where getpwnam(name) == nil {
            #expect(Child.runQuietly("/usr/sbin/useradd", ["--create-home", "--shell", "/bin/sh", name]) == 0)
        }
        for name in names {
            #expect(Child.runQuietly("/usr/sbin/usermod", ["-a", "-G", group, name]) == 0)
        }
    }

    struct Rig {
        let rig: ReaderBroker
        /// virtual_image: the one connection that carries images (made once the reader is open).
        let images: Bool
        private let imageSensor = Box<VirtualImageSensor>()
        var services: String { rig.files.file("pam.d") }

        /// `images` false: libfprint's virtual_device_storage, a match-on-chip reader that
        /// identifies on the chip, each account's finger the sensor id `id-NAME`. True:
        /// virtual_image, identify on the host (NBIS), each account's finger a fixture image
        /// (`fingers`). `members`: each account's vault, finger and opt-in, made by root with
        /// the CLI (`--user`).
        /// `config`: the broker's fingerseal.conf; `wrap`: its command line changed (`--idle-exit`).
        /// `environment`: more of the broker's environment (a private system bus).
        init(members: [String] = IdentifyTests.members, options: String = "max_tries=1", images: Bool = false,
             fingers: [String: String] = [:], config: String = "", environment: [String: String] = [:],
             wrap: (([String]) -> (String, [String]))? = nil) throws {
            try IdentifyTests.ensureAccounts(members)
            self.images = images
            rig = images ? try ReaderBroker(driver: "virtual_image", variable: "FP_VIRTUAL_IMAGE", config: config,
                                            extraEnvironment: environment, wrap: wrap)
                : try ReaderBroker(driver: "virtual_device_storage", variable: "FP_VIRTUAL_DEVICE_STORAGE", config: config,
                                   extraEnvironment: environment, wrap: wrap)
            #expect(mkdir(services, 0o755) == 0)
            for name in members + [IdentifyTests.outsider] {
                try prepare(name, finger: fingers[name] ?? "id-" + name)
            }
            let module = "\(Paths.module) socket=\(rig.broker.socketPath) identify identify_group=\(IdentifyTests.group) \(options)"
            writeFile(services + "/" + IdentifyTests.service, Array("auth required \(module)\n".utf8), mode: 0o644)
        }

        func prepare(_ name: String, finger: String) throws {
            let pin = IdentifyTests.pin + "\n"
            let set = try rig.cli(["pin", "set", "--user", name, "--pin-fd", "3"], fd3: pin)
            #expect(set.status == 0, "\(set.all)")
            let enroll = ["enroll", "--user", name, "--finger", "right-index-finger", "--pin-fd", "3"]
            let enrolled: Child.Result
            if images {
                // Each image when the reader asks for one.
                let child = try rig.startCLI(enroll + ["--events-fd", "1"], fd3: pin)
                while let line = child.readLine() {
                    if line.contains("finger-needed") { try touch(finger) }
                }
                enrolled = child.finish()
            } else {
                enrolled = try rig.scan(enroll, Array(repeating: "SCAN \(finger)", count: 5), fd3: pin)
            }
            #expect(enrolled.status == 0, "\(enrolled.all)")
            let on = try rig.cli(["identify", "on", "--user", name, "--pin-fd", "3"], fd3: pin)
            #expect(on.status == 0, "\(on.all)")
            #expect(on.stdout.contains(Messages.identifyTurnedOn), "\(on.all)")
        }

        /// A finger on the reader: the sensor id, or the fixture image.
        func touch(_ finger: String) throws {
            guard images else {
                _ = try VirtualSensor.send("SCAN \(finger)", to: rig.sensor)
                return
            }
            // A connection per image: the reader (and its socket) may have been closed and
            // opened again between two requests.
            imageSensor.value = nil
            imageSensor.value = try VirtualImageSensor(path: rig.sensor)
            try imageSensor.value?.send(try VirtualImageSensor.fixture(finger))
        }

        /// One login with no user name: at the identify prompt `touch` is scanned; at the user
        /// name prompt `typed` is given, and at the finger prompt after it `then` is scanned.
        /// The unlocks `name`'s audit trail records (the broker writes each right after its result).
        func unlocks(_ name: String) -> Int {
            guard let uid = getpwnam(name)?.pointee.pw_uid,
                  let trail = readFile(rig.broker.vaultDirectory(uid: uid) + "/audit.jsonl") else { return 0 }
            return String(decoding: trail, as: UTF8.self).components(separatedBy: "\"event\":\"unlock\"").count - 1
        }

        /// `pin`: the answer to a hidden question (the PIN, with the stack's `pin`), instead of Enter.
        func login(touch: String?, typed: String? = nil, then: String? = nil, pin: String? = nil, abortIdentify: Bool = false)
            throws -> (status: Int32, user: String?, shown: [PAMClient.Message]) {
            var shown: [PAMClient.Message] = []
            var identifyPrompts = 0
            let unlocksBefore = typed.map(unlocks) ?? 0
            let client = try PAMClient.start(service: IdentifyTests.service, user: nil, configDirectory: services) { message in
                shown.append(message)
                switch message {
                case let .textInfo(text) where text.contains(IdentifyTests.signInWords):
                    identifyPrompts += 1
                    if abortIdentify { return .abort }
                    if let touch { try? self.touch(touch) }
                    return .none
                case .promptEchoOn:
                    return typed.map { .text($0) } ?? .abort
                case .promptEchoOff:
                    if let pin { return .text(pin) }
                    // A host without Ctrl-C: its question, asked once the reader is armed, is the
                    // scan's one sentence. The finger on the reader, then Enter, once the broker
                    // has the match (Enter before it means the password instead).
                    if let typed, let then {
                        try? self.touch(then)
                        _ = ReaderBroker.waitUntil(10) { self.unlocks(typed) > unlocksBefore }
                    }
                    return .text("")
                default:
                    return .none
                }
            }
            #expect(client.setItem(.tty, "/dev/pts/0") == PAM_SUCCESS)
            let status = client.authenticate()
            #expect(identifyPrompts <= 1, "\(shown)")
            return (status, client.user(), shown)
        }
    }

    /// What every identify prompt says (each whole sentence ends so).
    static let signInWords = "to sign in"

    /// Each of three members is signed in by their finger alone: PAM_USER is theirs.
    @Test func eachMemberIsIdentifiedByTheirFinger() throws {
        let rig = try Rig()
        for name in IdentifyTests.members {
            let login = try rig.login(touch: "id-" + name)
            #expect(login.status == PAM_SUCCESS, "\(name): \(login.shown)")
            #expect(login.user == name, "\(login.shown)")
            #expect(!login.shown.contains { if case .promptEchoOn = $0 { return true } else { return false } }, "\(login.shown)")
        }
        let status = try rig.rig.cli(["status", "--user", IdentifyTests.members[0]])
        #expect(status.stdout.contains(Messages.statusIdentifyOn), "\(status.all)")
        // The touch is the account's last verification: today, at the minute it was made.
        #expect(status.stdout.contains("Last verified: today at "), "\(status.all)")
        let json = try rig.rig.cli(["status", "--json", "--user", IdentifyTests.members[0]])
        #expect(json.stdout.contains("\"last_verified\" : \""), "\(json.all)")
        // Each account's trail has the unlock.
        for name in IdentifyTests.members {
            let trail = try rig.rig.cli(["audit", "--user", name])
            #expect(trail.stdout.contains(Messages.auditIdentifyOn), "\(trail.all)")
            #expect(trail.stdout.contains(Messages.auditUnlocked(method: "finger", via: "pam")), "\(trail.all)")
        }
    }

    /// Issue 31 §1: a member removed with a plain userdel, and a new account given the uid
    /// (and the group): the old finger finds nobody, since the old vault is not the new
    /// account's and leaves the gallery.
    @Test func aRemovedMembersFingerSignsInNobody() throws {
        let gone = "fs-kiosk-gone", next = "fs-kiosk-next"
        let removeBoth = { for name in [gone, next] where getpwnam(name) != nil { _ = Child.runQuietly("/usr/sbin/userdel", ["--remove", name]) } }
        removeBoth()
        defer { removeBoth() }
        let rig = try Rig(members: IdentifyTests.members + [gone])
        let uid = try #require(getpwnam(gone)?.pointee.pw_uid)
        #expect(try rig.login(touch: "id-" + gone).user == gone)

        #expect(Child.runQuietly("/usr/sbin/userdel", [gone]) == 0)
        #expect(Child.runQuietly("/usr/sbin/useradd", ["--uid", String(uid), "--groups", IdentifyTests.group, next]) == 0)
        let login = try rig.login(touch: "id-" + gone)
        #expect(login.user == nil && login.status != PAM_SUCCESS, "\(login.shown)")
        #expect(login.shown.contains(.errorMessage(Messages.identifyNoMatch)), "\(login.shown)")
        #expect(access(rig.rig.broker.vaultDirectory(uid: uid) + "/vault", F_OK) != 0, "the old vault was set aside")
    }

    /// A finger nobody enrolled: nobody is signed in, the reason is said, the user name is
    /// asked, and the typed account's own finger then signs it in as without identify.
    @Test func noMatchAsksForTheUserName() throws {
        let rig = try Rig()
        let name = IdentifyTests.members[1]
        let login = try rig.login(touch: "id-stranger", typed: name, then: "id-" + name)
        #expect(login.shown.contains(.errorMessage(Messages.identifyNoMatch)), "\(login.shown)")
        #expect(login.shown.contains { if case .promptEchoOn = $0 { return true } else { return false } }, "\(login.shown)")
        #expect(login.status == PAM_SUCCESS, "\(login.shown)")
        #expect(login.user == name)
        // Nobody's failures were counted for a finger that is nobody's.
        for member in IdentifyTests.members {
            #expect(try rig.rig.store(for: member).lockoutCounters().fingerFailures == 0)
        }
    }

    /// An account outside identify_group is never found, even opted in with a finger.
    @Test func aNonMemberIsNeverMatched() throws {
        let rig = try Rig()
        let login = try rig.login(touch: "id-" + IdentifyTests.outsider)
        #expect(login.status != PAM_SUCCESS)
        #expect(login.user == nil, "\(login.shown)")
        #expect(login.shown.contains(.errorMessage(Messages.identifyNoMatch)), "\(login.shown)")
    }

    /// The host ends the conversation at the identify prompt (a cancel): nothing is counted,
    /// and the user name is asked.
    @Test func aCancelAsksForTheUserName() throws {
        let rig = try Rig()
        let name = IdentifyTests.members[0]
        let login = try rig.login(touch: nil, typed: name, then: "id-" + name, abortIdentify: true)
        #expect(login.shown.contains { if case .promptEchoOn = $0 { return true } else { return false } }, "\(login.shown)")
        #expect(login.status == PAM_SUCCESS, "\(login.shown)")
        #expect(login.user == name)
    }

    /// The computer goes to sleep while the identify prompt waits for a touch (issue 32):
    /// the host is told why the scan stopped, then asked for the user name. logind is
    /// python3-dbusmock's template on a private system bus, sending PrepareForSleep.
    @Test(.enabled(if: PrivateSystemBus.available)) func sleepAtTheIdentifyPromptSaysWhy() throws {
        let bus = try PrivateSystemBus(fprintd: false)
        defer { bus.stop() }
        try bus.startLogindMock(lidClosed: false)
        let rig = try Rig(environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        var shown: [PAMClient.Message] = []
        let client = try PAMClient.start(service: IdentifyTests.service, user: nil, configDirectory: rig.services) { message in
            shown.append(message)
            switch message {
            case let .textInfo(text) where text.contains(IdentifyTests.signInWords):
                // The reader waits for a touch: the computer sleeps now.
                do { try bus.prepareForSleep(true) } catch { Issue.record("\(error)") }
                return .none
            case .promptEchoOn:
                // The user name: the test ends here.
                return .abort
            default:
                return .none
            }
        }
        #expect(client.setItem(.tty, "/dev/pts/0") == PAM_SUCCESS)
        #expect(client.authenticate() != PAM_SUCCESS)
        let said = shown.firstIndex(of: .textInfo(Messages.scanStoppedForSleep))
        let asked = shown.firstIndex { if case .promptEchoOn = $0 { return true } else { return false } }
        #expect(said != nil && asked != nil && said! < asked!, "\(shown)")
        for member in IdentifyTests.members {
            #expect(try rig.rig.store(for: member).lockoutCounters().fingerFailures == 0)
        }
    }

    /// The same finger enrolled for two accounts (virtual_image, identify on the host): nobody
    /// is signed in, both trails record it, and the user name is asked.
    @Test func aFingerOfTwoAccountsSignsNobodyIn() throws {
        let names = IdentifyTests.members
        let rig = try Rig(images: true, fingers: [names[0]: "whorl.fpimg", names[1]: "loop-right.fpimg",
                                                  names[2]: "whorl.fpimg", IdentifyTests.outsider: "tented_arch.fpimg"])
        let login = try rig.login(touch: "whorl_dx12_dy-8_rot10.fpimg")
        #expect(login.status != PAM_SUCCESS)
        #expect(login.user == nil, "\(login.shown)")
        #expect(login.shown.contains(.errorMessage(Messages.identifyAmbiguous)), "\(login.shown)")
        for name in [names[0], names[2]] {
            let trail = try rig.rig.cli(["audit", "--user", name])
            #expect(trail.stdout.contains(Messages.auditIdentifyAmbiguous(1)), "\(trail.all)")
        }
        // On the host (NBIS matching), another member's second impression finds them.
        let other = try rig.login(touch: "loop-right_dx8_dy-6_rot4.fpimg")
        #expect(other.status == PAM_SUCCESS, "\(other.shown)")
        #expect(other.user == names[1])
    }

    /// Without `identify` the stack asks for the user name first, as always; and turning it
    /// off for an account takes it out of the gallery.
    @Test func optingOutTakesTheAccountOut() throws {
        let rig = try Rig()
        let name = IdentifyTests.members[0]
        let off = try rig.rig.cli(["identify", "off", "--user", name, "--pin-fd", "3"], fd3: IdentifyTests.pin + "\n")
        #expect(off.status == 0, "\(off.all)")
        #expect(off.stdout.contains(Messages.identifyTurnedOff))
        let login = try rig.login(touch: "id-" + name)
        #expect(login.user == nil, "\(login.shown)")
        #expect(login.status != PAM_SUCCESS)
    }

    /// Fingers nobody matched, five in a row: touch to sign in pauses for the whole machine
    /// (the user name is asked at once, with the reason), so a stranger cannot try finger
    /// after finger against the gallery.
    @Test func unknownFingersPauseIdentify() throws {
        let rig = try Rig()
        for attempt in 1...5 {
            let login = try rig.login(touch: "id-stranger-\(attempt)")
            #expect(login.shown.contains(.errorMessage(Messages.identifyNoMatch)), "\(login.shown)")
        }
        let paused = try rig.login(touch: "id-" + IdentifyTests.members[0])
        #expect(paused.user == nil, "\(paused.shown)")
        #expect(paused.shown.first == .textInfo(Messages.identifyPaused(minutes: 1)), "\(paused.shown)")
        #expect(!paused.shown.contains { IdentifyTests.prompts.contains($0) }, "no scan while paused: \(paused.shown)")

        // Issue 31 §4: the pause is the machine's, not the broker process's.
        try rig.rig.broker.restart()
        let afterRestart = try rig.login(touch: "id-" + IdentifyTests.members[0])
        #expect(afterRestart.user == nil && afterRestart.shown.first == .textInfo(Messages.identifyPaused(minutes: 1)),
                "\(afterRestart.shown)")
    }

    /// Every identify prompt there is.
    static let prompts = [false, true].flatMap { swipe in
        [ScanHint.none, .pressCtrlCForPassword].map { PAMClient.Message.textInfo(Messages.identifyPrompt(swipe: swipe, cancelHint: $0)) }
    }

    /// Issue 31 §4: `identify_lock_after` unknown fingers (however spread out) lock touch to
    /// sign in until someone signs in with a user name (here with the PIN). `identify_daily_max`
    /// stops it for the day: a sign-in does not lift that, nor does a restart of the broker.
    @Test func unknownFingersLockIdentifyUntilANamedSignIn() throws {
        let name = IdentifyTests.members[0]
        let rig = try Rig(options: "max_tries=1 pin", config: "identify_pause_after=100\nidentify_lock_after=3\nidentify_daily_max=5\n")
        for attempt in 1...3 {
            let login = try rig.login(touch: "id-stranger-\(attempt)")
            #expect(login.shown.contains(.errorMessage(Messages.identifyNoMatch)), "\(login.shown)")
        }
        let locked = try rig.login(touch: nil, typed: name, pin: IdentifyTests.pin)
        #expect(locked.shown.first == .textInfo(Messages.identifyLocked), "\(locked.shown)")
        #expect(!locked.shown.contains { IdentifyTests.prompts.contains($0) }, "no scan while locked: \(locked.shown)")
        #expect(locked.status == PAM_SUCCESS && locked.user == name, "the typed name and the PIN sign in: \(locked.shown)")
        let touched = try rig.login(touch: "id-" + name)
        #expect(touched.status == PAM_SUCCESS && touched.user == name, "the named sign-in ended the lock: \(touched.shown)")

        for attempt in 4...5 { _ = try rig.login(touch: "id-stranger-\(attempt)") }
        let limited = try rig.login(touch: nil, typed: name, pin: IdentifyTests.pin)
        #expect(limited.shown.first == .textInfo(Messages.identifyDailyLimit), "\(limited.shown)")
        #expect(limited.status == PAM_SUCCESS, "\(limited.shown)")
        try rig.rig.broker.restart()
        let still = try rig.login(touch: "id-" + name)
        #expect(still.user == nil && still.shown.first == .textInfo(Messages.identifyDailyLimit),
                "neither a sign-in nor a restart ends the day's limit: \(still.shown)")
    }

    /// Issue 31 §4: the broker does not exit while a pause runs (`--idle-exit 1`), and exits
    /// once it has ended.
    @Test func theBrokerStaysWhileIdentifyIsPaused() throws {
        let rig = try Rig(config: "identify_pause_after=1\nidentify_pause=10\n",
                          wrap: { command in (command[0], Array(command.dropFirst()) + ["--idle-exit", "1"]) })
        let login = try rig.login(touch: "id-stranger")
        #expect(login.shown.contains(.errorMessage(Messages.identifyNoMatch)), "\(login.shown)")
        let paused = VirtualSensor.now()
        #expect(!ReaderBroker.waitUntil(4) { rig.rig.broker.ended() != nil }, "the broker stayed three seconds past its idle time")
        #expect(ReaderBroker.waitUntil(15) { rig.rig.broker.ended() != nil }, "the broker left once the pause had ended")
        #expect(VirtualSensor.now() - paused >= 9, "not before the pause's ten seconds")
    }

    /// Only root's hosts (login, a display manager) may identify: a PAM host a user runs is
    /// refused, and so learns nothing of who a finger is.
    @Test func aUsersOwnHostCannotIdentify() throws {
        TestUsers.ensure(TestUsers.alice)
        let rig = try Rig()
        let asked = try rig.rig.broker.wire(["pam.identify", "option=identify", "option=identify_group=\(IdentifyTests.group)"],
                                            as: TestUsers.alice)
        #expect(asked.stdout == "result: notPermitted \(Messages.identifyOnlyForSystemHosts)\n", "\(asked.all)")
    }

    /// login(1) on a console (Debian's, from shadow) through pam_wrapper, on a terminal it
    /// leads: it starts PAM with no user name, the prompt offers Ctrl-C for the user name, the
    /// finger signs the member in, and login starts their shell.
    @Test func loginOnAConsoleSignsInByTouch() throws {
        let rig = try Rig()
        let name = IdentifyTests.members[2]
        let security = "/lib/\(Pamtester.multiarch)/security"
        let module = "\(Paths.module) socket=\(rig.rig.broker.socketPath) identify identify_group=\(IdentifyTests.group) max_tries=1"
        writeFile(rig.services + "/login", Array("""
            auth required \(module)
            account required \(security)/pam_permit.so
            session required \(security)/pam_permit.so
            password required \(security)/pam_deny.so

            """.utf8), mode: 0o644)
        struct Session: Decodable {
            let ok: Bool
            let transcript: String
            let status: Int32
        }
        let prompt = Messages.identifyPrompt(swipe: true, cancelHint: .pressCtrlCForPassword)
        let steps = [[prompt, "@sensor SCAN id-\(name)"], ["$ ", "id -un; exit\r"]]
        var environment = Pamtester.environment(rig.services)
        environment["PTY_SENSOR"] = rig.rig.sensor
        environment["TERM"] = "dumb"
        let script = Paths.packageRoot + "/Tests/TestSupport/pty_session.py"
        let run = try Child.run("/usr/bin/python3", [script, String(decoding: try JSONEncoder().encode(steps), as: UTF8.self),
                                                     "--", "/bin/login"], environment: environment)
        #expect(run.status == 0, "\(run.all)")
        let session = try JSONDecoder().decode(Session.self, from: Data(run.stdout.utf8))
        #expect(session.ok, "\(session.transcript)")
        #expect(session.transcript.contains(prompt), "\(session.transcript)")
        #expect(!session.transcript.contains("login:"), "no user name was asked: \(session.transcript)")
        #expect(session.transcript.contains("\n\(name)\r") || session.transcript.contains("\n\(name)\n"), "\(session.transcript)")
    }

    /// `identify on` needs an enrolled finger, and says so.
    @Test func turningOnNeedsAFinger() throws {
        try IdentifyTests.ensureAccounts([])
        let rig = try ReaderBroker()
        let name = IdentifyTests.outsider
        let set = try rig.cli(["pin", "set", "--user", name, "--pin-fd", "3"], fd3: IdentifyTests.pin + "\n")
        #expect(set.status == 0, "\(set.all)")
        let on = try rig.cli(["identify", "on", "--user", name, "--pin-fd", "3"], fd3: IdentifyTests.pin + "\n")
        #expect(on.status != 0)
        #expect(on.stderr.contains(Messages.identifyNeedsFinger), "\(on.all)")
    }
}

/// A value a non-mutating method fills in later.
final class Box<Value> {
    var value: Value?
}

extension VaultStore {
    /// The lockout counters of this vault, as the broker keeps them.
    func lockoutCounters() throws -> LockoutState { try LockoutLedger(store: self, policy: LockoutPolicy()).current() }
}
