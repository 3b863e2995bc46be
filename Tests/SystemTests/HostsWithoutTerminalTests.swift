import FoundationEssentials
import Glibc
import FingersealCore
import SystemKit
import Testing
@testable import TestSupport

/// PAM hosts where Ctrl-C does not lead to the password (issue 21 §3): greetd, driven by a
/// greeter over its IPC, and pkexec's own text agent under the real polkitd. Neither is told
/// to press Ctrl-C; Enter alone at the question shown while the reader waits goes on to the
/// password at once, with nothing counted; a finger touched while that question is shown
/// still succeeds once Enter is pressed.
///
/// Each runs in a mount namespace of its own (and a PID namespace, so that every process it
/// starts ends with it): its /etc/pam.d, /run/dbus and polkit rules are bind mounts there,
/// and nothing on the machine changes, whatever happens to the test. The broker runs
/// outside, as it would (`interactive_services=` names the service: without a VT greetd sets
/// no PAM_TTY, and without logind the helper is in no login session).
@Suite(.enabled(if: getuid() == 0 && Pamtester.available)) struct HostsWithoutTerminalTests {
    static let greetd = "/usr/sbin/greetd"
    static let polkitd = "/usr/lib/polkit-1/polkitd"
    static let pkexec = "/usr/bin/pkexec"
    static var support: String { Paths.packageRoot + "/Tests/TestSupport" }

    /// Root's vault with one finger, a broker that takes `service` as one a person answers,
    /// and a PAM service directory: fingerseal first, then pam_matrix as the password
    /// ("secret" for root).
    struct Host {
        let rig: ModuleFingerprintTests.Rig
        let services: TempDirectory

        init(service: String, moduleOptions: String = "timeout=30") throws {
            rig = try ModuleFingerprintTests.Rig(moduleOptions: "", config: "interactive_services=\(service)\n")
            services = try TempDirectory()
            #expect(chmod(services.path, 0o755) == 0)
            let passdb = services.file("passdb")
            writeFile(passdb, Array("root:secret:\(service)\n".utf8), mode: 0o644)
            let stack = """
                auth [success=done default=ignore] \(Paths.module) socket=\(rig.rig.broker.socketPath) \(moduleOptions)
                auth [success=1 default=ignore] \(PamtesterTests.matrix) passdb=\(passdb)
                auth requisite pam_deny.so
                auth required pam_permit.so
                account required pam_permit.so
                session required pam_permit.so

                """
            writeFile(services.file(service), Array(stack.utf8), mode: 0o644)
            writeFile(services.file("other"), Array("auth required pam_deny.so\naccount required pam_deny.so\n".utf8), mode: 0o644)
        }

        /// The broker's audit trail and attempts of root's vault, as text.
        func trail() throws -> String {
            let directory = try rig.store.location.directory
            return String(decoding: (readFile(directory + "/audit.jsonl") ?? []) + (readFile(directory + "/attempts.jsonl") ?? []),
                          as: UTF8.self)
        }

        /// Nothing counted: no failed scan or PIN, no failure in the trail.
        func expectNothingCounted() throws {
            let counters = try rig.rig.lockout()
            #expect(counters.fingerFailures == 0 && counters.pinFailures == 0, "\(counters)")
            let trail = try trail()
            #expect(!trail.contains("\"failure\""), "\(trail)")
        }
    }

    // MARK: greetd

    /// What greetd_greeter.py prints.
    struct GreeterTranscript: Decodable {
        struct Message: Decodable {
            let type: String
            let text: String
            let at: Double
        }
        let messages: [Message]
        let result: String?
        let ok: Bool

        var questions: [Message] { messages.filter { $0.type == "secret" || $0.type == "visible" } }
    }

    /// greetd 0.9 with no VT, its greeter greetd_greeter.py as root playing `steps` for root.
    static func greet(_ host: Host, _ steps: [[String]]) throws -> GreeterTranscript {
        let work = host.services
        let stepsFile = work.file("steps.json")
        writeFile(stepsFile, Array(String(decoding: try JSONEncoder().encode(steps), as: UTF8.self).utf8), mode: 0o600)
        let run = try startGreetd(work, greeter: "root \(stepsFile)").finish()
        guard let line = run.stdout.split(separator: "\n").first(where: { $0.hasPrefix("{\"messages\"") }) else {
            throw TestFailure("the greeter said nothing: \(run.all)")
        }
        return try JSONDecoder().decode(GreeterTranscript.self, from: Data(line.utf8))
    }

    /// Starts greetd 0.9 with no VT, its greeter greetd_greeter.py (as root) with `greeter` as
    /// its arguments, in mount and PID namespaces of its own where `work` (the PAM services,
    /// to which the greeter's own is added) is /etc/pam.d. It exits once its greeter does
    /// without starting a session.
    static func startGreetd(_ work: TempDirectory, greeter arguments: String) throws -> Child {
        let config = """
            [terminal]
            vt = "none"
            [general]
            runfile = "\(work.file("greetd.run"))"
            [default_session]
            command = "/usr/bin/python3 \(support)/greetd_greeter.py \(arguments)"
            user = "root"

            """
        writeFile(work.file("greetd-greeter"), Array("auth required pam_permit.so\naccount required pam_permit.so\nsession required pam_permit.so\n".utf8),
                  mode: 0o644)
        writeFile(work.file("greetd.toml"), Array(config.utf8), mode: 0o644)
        return try Child("/usr/bin/unshare", [
            "--mount", "--propagation", "private", "--pid", "--fork", "--kill-child", "--", "/bin/sh", "-c",
            #"mount --bind "$0" /etc/pam.d && exec "$1" --config "$2" --socket-path "$3""#,
            work.path, greetd, work.file("greetd.toml"), work.file("greetd.sock"),
        ])
    }

    static var greetdMissing: String? { access(greetd, X_OK) == 0 ? nil : "greetd is missing (scripts/install-deps installs it)" }

    /// Enter alone at the question goes on to the password at once (the scan's timeout is 30
    /// s), nothing counted, and nothing greetd was told mentions Ctrl-C.
    @Test(.enabled(if: greetdMissing == nil)) func greetdEnterAloneGoesOnToThePasswordAtOnce() throws {
        let host = try Host(service: "greetd")
        let transcript = try Self.greet(host, [["answer", ""], ["answer", "secret"]])
        #expect(transcript.ok && transcript.result == "success", "\(transcript)")
        for message in transcript.messages {
            #expect(!message.text.contains("Ctrl-C"), "\(message)")
        }
        let questions = transcript.questions
        #expect(questions.map(\.text) == [Messages.fingerThenEnterPrompt(swipe: true), "Password: "], "\(transcript)")
        // One sentence per prompt: the question names the reader's way, and no sentence says it again.
        #expect(!transcript.messages.contains { $0.type == "info" && $0.text.contains("your finger") }, "\(transcript)")
        let entered = try #require(transcript.messages.first { $0.type == "answered" && $0.text.isEmpty })
        let password = try #require(questions.last)
        #expect(password.at - entered.at < 3, "Enter alone took \(password.at - entered.at) s to reach the password")
        try host.expectNothingCounted()
        #expect(try host.trail().contains("\"fallback\""))
    }

    /// The finger matches while greetd still shows the question (a PAM conversation cannot be
    /// withdrawn); the person then presses Enter, as the question says, and is in: no
    /// password asked.
    @Test(.enabled(if: greetdMissing == nil)) func greetdFingerWhileTheQuestionIsShownSucceeds() throws {
        let host = try Host(service: "greetd")
        let audit = try host.rig.store.location.directory + "/audit.jsonl"
        let transcript = try Self.greet(host, [
            ["sensor", host.rig.socket, "SCAN finger-a"],
            // The broker has answered with the match (it records it right after).
            ["until", audit, "\"unlock\""],
            ["answer", ""],
        ])
        #expect(transcript.ok && transcript.result == "success", "\(transcript)")
        #expect(transcript.questions.map(\.text) == [Messages.fingerThenEnterPrompt(swipe: true)], "\(transcript)")
        let trail = try host.trail()
        #expect(trail.contains("\"method\":\"finger\""), "\(trail)")
        try host.expectNothingCounted()
    }

    // MARK: polkit

    static var polkitMissing: String? {
        for tool in [polkitd, pkexec, "/usr/bin/dbus-daemon", "/usr/bin/gdbus", "/usr/bin/setpriv"] where access(tool, X_OK) != 0 {
            return "\(tool) is missing (scripts/install-deps installs it)"
        }
        return nil
    }

    /// pkexec run by alice on a terminal of its own, its own text agent asking as root (the
    /// admin the test's rule names). Its helper runs the `polkit-1` service inside pkexec's
    /// foreground process group, where Ctrl-C ends pkexec: it is not told to press it, and
    /// Enter alone at its question reaches the password. Without logind polkitd refuses the
    /// helper's answer ("No session for cookie"), which the helper reports only after PAM
    /// succeeded: PAM's verdict is judged, not the authorization.
    @Test(.enabled(if: polkitMissing == nil)) func pkexecEnterAloneGoesOnToThePassword() throws {
        try #require(TestUsers.ensure(TestUsers.alice))
        let host = try Host(service: "polkit-1")
        let work = host.services
        let rules = work.file("rules")
        #expect(mkdir(rules, 0o755) == 0 && mkdir(work.file("no-services"), 0o755) == 0)
        writeFile(rules + "/00-fingerseal-test.rules",
                  Array(#"polkit.addAdminRule(function(action, subject) { return ["unix-user:0"]; });"#.utf8), mode: 0o644)
        // The default address, in this namespace only: pkexec is setuid and ignores DBUS_SYSTEM_BUS_ADDRESS.
        let bus = try PrivateSystemBus.config(socket: "/run/dbus/system_bus_socket", services: work.file("no-services"))
        writeFile(work.file("bus.conf"), Array(bus.utf8), mode: 0o644)
        let question = Messages.fingerThenEnterPrompt(swipe: true)
        // Typed once the agent reads without echo: it flushes what was typed before.
        let steps = [[question, "@noecho \n"], ["Password: ", "@noecho secret\n"], ["No session for cookie", ""]]
        let script = """
            set -e
            mount -t tmpfs -o mode=755 tmpfs /run/dbus
            mount --bind "$0" /etc/pam.d
            mount --bind "$1" /etc/polkit-1/rules.d
            # --fork returns once the bus listens.
            dbus-daemon --config-file="$2" --fork --nopidfile
            \(Self.polkitd) --no-debug >/dev/null 2>&1 &
            gdbus wait --system --timeout 10 org.freedesktop.PolicyKit1
            # Not exec'd: pkexec refuses a parent that is PID 1 ("dead parents"), as this shell is here.
            /usr/bin/python3 "$3" "$4" -- setpriv --reuid="$5" --regid="$5" --init-groups \(Self.pkexec) /bin/true
            """
        let alice = try #require(TestUsers.uid(TestUsers.alice))
        let run = try Child.run("/usr/bin/unshare", [
            "--mount", "--propagation", "private", "--pid", "--fork", "--kill-child", "--", "/bin/sh", "-c", script,
            work.path, rules, work.file("bus.conf"), Self.support + "/pty_session.py",
            String(decoding: try JSONEncoder().encode(steps), as: UTF8.self), "\(alice)",
        ])
        #expect(run.stdout.contains("\"ok\": true"), "\(run.all)")
        #expect(run.stdout.contains(question), "\(run.all)")
        // The only sentence that names the reader: no line before the question says it again.
        #expect(run.stdout.components(separatedBy: "Swipe your finger").count == 2, "\(run.all)")
        #expect(!run.stdout.contains("Ctrl-C"), "\(run.all)")
        try host.expectNothingCounted()
        #expect(try host.trail().contains("\"fallback\""))
    }
}
