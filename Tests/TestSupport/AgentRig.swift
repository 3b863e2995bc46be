import FoundationEssentials
import Glibc

/// fingerseal-agent on a private session bus, in front of a broker of its own with the
/// virtual reader: the test user's vault (root's when `user` is nil) with the PIN, `finger-a`
/// enrolled. Applications are played by the example client (examples/apps/fingerseal-app.py
/// with --json), as an application's author would write one.
final class AgentRig {
    static let pin = "2580"
    static let python = "/usr/bin/python3"
    /// The example client's executable as the kernel names it (/proc/PID/exe): what the agent
    /// puts beside the name an application gives itself.
    static let pythonExecutable: String = {
        guard let resolved = realpath(python, nil) else { return python }
        defer { free(resolved) }
        return String(cString: resolved)
    }()

    /// Why the agent's tests cannot run here, or nil.
    static let missing: String? = {
        for tool in ["/usr/bin/dbus-daemon", "/usr/bin/gdbus", python] where access(tool, X_OK) != 0 {
            return "\(tool) is missing (scripts/install-deps installs it)"
        }
        if (try? Child.run(python, ["-c", "from gi.repository import Gio"]))?.status != 0 {
            return "python3-gi is missing (scripts/install-deps installs it)"
        }
        return nil
    }()

    let rig: ReaderBroker
    /// The private session bus, unless the rig runs on a desktop's (`desktop`).
    let bus: PrivateSessionBus?
    /// A desktop's environment (DISPLAY, its session and accessibility buses) the agent and
    /// the clients run in instead of a private bus of the rig's own.
    let desktop: [String: String]?
    /// The account the agent, its bus and the clients run as; nil: root.
    let user: String?
    private(set) var agent: Child?
    /// When the agent was started (monotonic seconds), for the figures.
    private(set) var agentStarted = 0.0

    init(user: String? = nil, enroll: Bool = true, idleExit: String = "never", brokerConfig: String = "",
         desktop: [String: String]? = nil, agentEnvironment: [String: String] = [:]) throws {
        if let missing = AgentRig.missing { throw TestFailure(missing) }
        self.user = user
        self.desktop = desktop
        rig = try ReaderBroker(config: brokerConfig)
        var pinSet = ["pin", "set", "--pin-fd", "3"]
        if let user { pinSet += ["--user", user] }
        let set = try rig.cli(pinSet, fd3: AgentRig.pin + "\n")
        guard set.status == 0 else { throw TestFailure("pin set failed: \(set.all)") }
        if enroll {
            let enrolled = try AgentRig.enrollFinger(rig, as: user)
            guard enrolled.status == 0 else { throw TestFailure("enroll failed: \(enrolled.all)") }
        }
        bus = desktop == nil ? try PrivateSessionBus(user: user) : nil
        try startAgent(idleExit: idleExit, environment: agentEnvironment)
    }

    deinit { stopAgent() }

    /// The rig's vault signed in at `idp` (LocalIdP's password sign-in as alice, the rig's PIN).
    func signIn(at idp: LocalIdP) throws {
        let login = try rig.cli(LocalIdP.passwordLoginArguments(idp), fd3: LocalIdP.passwordLoginAnswers(pin: AgentRig.pin))
        guard login.status == 0 else { throw TestFailure("the sign-in failed: \(login.all)") }
    }

    /// Enrolls finger-a for the rig's account (as that account: enroll acts on the caller).
    private static func enrollFinger(_ rig: ReaderBroker, as user: String?) throws -> Child.Result {
        let child = try rig.startCLI(["enroll", "--finger", "right-index-finger", "--pin-fd", "3"], fd3: AgentRig.pin + "\n", as: user)
        child.waitForLine(containing: "finger", errors: true)
        for _ in 0..<5 { try VirtualSensor.send("SCAN finger-a", to: rig.sensor) }
        return child.finish()
    }

    /// The environment the agent and the clients run with: the private bus, the broker.
    func environment(_ extra: [String: String] = [:]) -> [String: String] {
        (desktop ?? bus?.environment ?? [:]).merging(["FINGERSEAL_SOCKET": rig.broker.socketPath]) { $1 }.merging(extra) { $1 }
    }

    /// Where the agent's output goes.
    private var agentLogPath: String { rig.files.file("agent.log") }

    /// `command` as the rig's account.
    private func asUser(_ command: [String]) throws -> [String] {
        guard let user else { return command }
        guard let entry = getpwnam(user) else { throw TestFailure("no user \(user)") }
        return ["/usr/bin/setpriv", "--reuid=\(entry.pointee.pw_uid)", "--regid=\(entry.pointee.pw_gid)", "--init-groups", "--"] + command
    }

    /// Starts the agent and waits (bounded) for its name on the bus.
    func startAgent(idleExit: String = "never", environment extra: [String: String] = [:]) throws {
        let command = try asUser([Paths.agent, "--idle-exit", idleExit])
        agentStarted = VirtualSensor.now()
        agent = try Child(command[0], Array(command.dropFirst()), environment: environment(extra), logFile: agentLogPath)
        let waited = try gdbus(["wait", "--session", "--timeout", "10", "org.fingerseal.Agent1"])
        guard waited.status == 0 else { throw TestFailure("the agent did not take its name: \(agentLog)") }
    }

    func stopAgent() {
        guard let agent else { return }
        kill(-agent.pid, SIGKILL)
        agent.signal(SIGKILL)
        _ = agent.finish(limit: 5)
        self.agent = nil
    }

    /// The agent's exit status once it ends by itself within `limit` seconds; nil while it
    /// still runs then. Checked every 50 ms: its ending has no other signal to wait on.
    func agentEnds(within limit: Double) -> Int32? {
        guard let agent else { return nil }
        let deadline = VirtualSensor.now() + limit
        while VirtualSensor.now() < deadline {
            var status: Int32 = 0
            if waitpid(agent.pid, &status, WNOHANG) == agent.pid {
                self.agent = nil
                return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
            }
            var pause = timespec(tv_sec: 0, tv_nsec: 50_000_000)
            nanosleep(&pause, nil)
        }
        return nil
    }

    /// What the agent wrote.
    var agentLog: String { String(decoding: readFile(agentLogPath) ?? [], as: UTF8.self) }

    /// Starts the example client with `arguments` (`--json` added), `stdin` its input.
    func client(_ arguments: [String], stdin: String = "", environment extra: [String: String] = [:]) throws -> Child {
        let command = try asUser([AgentRig.python, Paths.packageRoot + "/examples/apps/fingerseal-app.py", "--json"] + arguments)
        return try Child(command[0], Array(command.dropFirst()), environment: environment(extra), stdin: Array(stdin.utf8))
    }

    /// Runs the client; with `scan`, that scan once the request waits for a finger.
    func run(_ arguments: [String], scan: String? = nil, stdin: String = "", environment extra: [String: String] = [:]) throws -> ClientRun {
        let child = try client(arguments, stdin: stdin, environment: extra)
        if let scan {
            guard child.waitForLine(containing: "waiting-for-finger") else { return ClientRun(child.finish()) }
            try VirtualSensor.send(scan, to: rig.sensor)
        }
        return ClientRun(child.finish(limit: 60))
    }

    /// `gdbus call` of `method ARGUMENTS…` on the agent's object, started: it waits for the
    /// request's end. (The broker keeps the reader open between requests, and virtual_device
    /// queues a scan sent before the verify starts.)
    func gdbusWaiting(_ methodAndArguments: [String]) throws -> Child {
        let command = try asUser(["/usr/bin/gdbus", "call", "--session", "--timeout", "60", "--dest", "org.fingerseal.Agent1",
                                  "--object-path", "/org/fingerseal/Agent1", "--method"] + methodAndArguments)
        return try Child(command[0], Array(command.dropFirst()), environment: environment())
    }

    /// gdbus against the agent, as the rig's account.
    func gdbus(_ arguments: [String]) throws -> Child.Result {
        let command = try asUser(["/usr/bin/gdbus"] + arguments)
        return try Child(command[0], Array(command.dropFirst()), environment: environment()).finish(limit: 30)
    }
}

/// One line the client printed.
struct ClientEvent: Decodable {
    let event: String
    var state: String? = nil
    var sentence: String? = nil
    var code: Int? = nil
    var outcome: String? = nil
    var method: String? = nil
    var length: Int? = nil
    var text: String? = nil
    var error: String? = nil
    var tokenType: String? = nil
    /// `fetched`: the HTTP status the resource answered.
    var status: Int? = nil

    enum CodingKeys: String, CodingKey {
        case event, state, sentence, code, outcome, method, length, text, error, status
        case tokenType = "token_type"
    }
}

/// What one client run printed: its JSON lines, and how it ended.
struct ClientRun {
    let result: Child.Result
    let events: [ClientEvent]

    init(_ result: Child.Result) {
        self.result = result
        events = result.stdout.split(separator: "\n").compactMap { try? JSONDecoder().decode(ClientEvent.self, from: Data($0.utf8)) }
    }

    var responses: [ClientEvent] { events.filter { $0.event == "response" } }
    var states: [String] { events.compactMap { $0.event == "status" ? $0.state : nil } }
}
