import FoundationEssentials
import Glibc

/// A private desktop for GUI tests: an X server (Xvfb, on a display it picks), a session bus,
/// and the accessibility (AT-SPI) bus with its registry, as a screen reader would find them.
/// Clients get `environment`. Every wait is bounded and checks readiness (the display number
/// Xvfb reports once it listens, the bus address dbus-daemon prints, the registry's bus name);
/// `stop()` (or dropping it) ends every process it started, with whatever they started.
final class DesktopSession {
    static let python = "/usr/bin/python3"
    static let probe = Paths.packageRoot + "/Tests/TestSupport/desktop_probe.py"

    /// Why a desktop cannot be made here, or nil (scripts/install-deps installs all of it).
    static let missing: String? = {
        let tools = ["/usr/bin/Xvfb", "/usr/bin/dbus-daemon", "/usr/bin/gdbus", "/usr/libexec/at-spi-bus-launcher",
                     "/usr/libexec/at-spi2-registryd", "/usr/bin/xdotool", "/usr/bin/xprop", "/usr/bin/xwd",
                     "/usr/bin/xwdtopnm", "/usr/bin/pnmtopng", "/bin/bash", python]
        for tool in tools where access(tool, X_OK) != 0 {
            return "\(tool) is missing (scripts/install-deps installs it)"
        }
        let probe = try? Child.run(python, ["-c", "import gi; gi.require_version('Atspi', '2.0'); from gi.repository import Atspi; import Xlib"])
        if probe?.status != 0 { return "pyatspi or python3-xlib is missing for \(python) (scripts/install-deps installs them)" }
        return nil
    }()

    let temp: TempDirectory
    /// ":N", for DISPLAY.
    private(set) var display = ""
    private(set) var sessionBusAddress = ""
    private(set) var accessibilityBusAddress = ""
    /// What a client of this desktop needs (DISPLAY, the buses, GDK_BACKEND=x11, a private
    /// XDG_RUNTIME_DIR and HOME); add GDK_SCALE and the like per client.
    private(set) var environment: [String: String] = [:]
    private var daemons: [Child] = []

    init() throws {
        if let missing = DesktopSession.missing { throw TestFailure(missing) }
        temp = try TempDirectory()
        let runtime = temp.file("runtime")
        let home = temp.file("home")
        mkdir(runtime, 0o700)
        mkdir(home, 0o700)
        var environment = ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "HOME": home,
                           "XDG_RUNTIME_DIR": runtime, "GDK_BACKEND": "x11",
                           // No dconf here; GSettings would warn on every start without this.
                           "GSETTINGS_BACKEND": "memory"]
        do {
            // -displayfd: Xvfb picks a free display and writes its number once it accepts
            // connections. -noreset: it stays as it is when the last client leaves.
            let xvfb = try spawn("/usr/bin/Xvfb", ["-displayfd", "1", "-screen", "0", "1600x1200x24", "-nolisten", "tcp", "-noreset"],
                                 environment: environment, errorLog: "xvfb.log")
            guard let number = xvfb.readLine(timeout: 15), !number.isEmpty, number.allSatisfy(\.isNumber) else {
                throw TestFailure("Xvfb reported no display: \(log("xvfb.log"))")
            }
            display = ":" + number
            try DesktopSession.waitFor(path: "/tmp/.X11-unix/X" + number, what: "the X server's socket")
            environment["DISPLAY"] = display

            // The session bus, its socket in our runtime directory; it prints its address
            // when it listens.
            let bus = try spawn("/usr/bin/dbus-daemon", ["--session", "--nofork", "--nopidfile", "--print-address=1",
                                                         "--address=unix:dir=" + runtime],
                                environment: environment, errorLog: "session-bus.log")
            guard let address = bus.readLine(timeout: 15), address.hasPrefix("unix:") else {
                throw TestFailure("the session bus reported no address: \(log("session-bus.log"))")
            }
            sessionBusAddress = address
            environment["DBUS_SESSION_BUS_ADDRESS"] = address

            // The AT-SPI bus: the launcher owns org.a11y.Bus on the session bus and starts the
            // accessibility bus at once (--launch-immediately: otherwise only when the desktop's
            // settings enable accessibility; GTK 4.8 itself needs no setting, only the bus).
            try spawn("/usr/libexec/at-spi-bus-launcher", ["--launch-immediately"], environment: environment, errorLog: "at-spi.log")
            try gdbus(["wait", "--session", "--timeout", "15", "org.a11y.Bus"], environment: environment)
            let reply = try gdbus(["call", "--session", "--dest", "org.a11y.Bus", "--object-path", "/org/a11y/bus",
                                   "--method", "org.a11y.Bus.GetAddress"], environment: environment)
            // "('unix:path=…,guid=…',)"
            let quoted = reply.split(separator: "'")
            guard quoted.count >= 2, quoted[1].hasPrefix("unix:") else { throw TestFailure("org.a11y.Bus.GetAddress said \(reply)") }
            accessibilityBusAddress = String(quoted[1])
            // The registry (which applications and screen readers meet through) is started by
            // the accessibility bus on first use: start it, and wait until it owns its name.
            try gdbus(["wait", "--address", accessibilityBusAddress, "--activate", "org.a11y.atspi.Registry", "--timeout", "15",
                       "org.a11y.atspi.Registry"], environment: environment)
            // Where GTK and pyatspi look first (before the X root window's property).
            environment["AT_SPI_BUS_ADDRESS"] = accessibilityBusAddress
        } catch {
            stop()
            throw error
        }
        self.environment = environment
    }

    deinit { stop() }

    /// Ends every process this started, and what they started in turn (the accessibility
    /// bus, the registry, services the buses activated): each daemon leads a process session
    /// of its own, and everything still in that session is signalled. SIGTERM first, so that
    /// Xvfb removes its socket and lock file; SIGKILL for whatever is left after 3 s.
    func stop() {
        for daemon in daemons.reversed() {
            for pid in DesktopSession.members(ofSession: daemon.pid) { kill(pid, SIGTERM) }
            _ = daemon.finish(limit: 3)
            for pid in DesktopSession.members(ofSession: daemon.pid) { kill(pid, SIGKILL) }
        }
        daemons = []
    }

    // MARK: - What a person does

    /// Gives the X11 window `handle` ("x11:HEX") the keyboard focus, as a window manager would
    /// when it appears (there is none here); returns once the server moved it.
    func focus(_ handle: String) throws {
        try run("/usr/bin/xdotool", ["windowfocus", "--sync", try DesktopSession.windowID(handle)])
    }

    /// Presses keys (xdotool names: "Escape", "Tab", "alt+u", "Return").
    func key(_ keys: String...) throws {
        try run("/usr/bin/xdotool", ["key", "--delay", "30"] + keys)
    }

    /// Types `text` on the keyboard.
    func type(_ text: String) throws {
        try run("/usr/bin/xdotool", ["type", "--delay", "30", "--", text])
    }

    /// Activates the button named `button` in the window named `window` through AT-SPI (its
    /// action, as a screen reader does): no keyboard focus needed.
    func press(_ button: String, in window: String) throws {
        try run(DesktopSession.python, [DesktopSession.probe, "press", window, button])
    }

    /// The mapped top-level window titled exactly `title` ("x11:HEX"), once there is one.
    func window(titled title: String, limit: Double = 30) throws -> String {
        let found = try Child(DesktopSession.python, [DesktopSession.probe, "window", title, "--timeout", String(limit)],
                              environment: environment).finish(limit: limit + 15)
        guard found.status == 0, let decimal = found.stdout.split(separator: "\n").first, let id = UInt(decimal) else {
            throw TestFailure("no window titled \(title): \(found.all)")
        }
        return "x11:" + String(id, radix: 16)
    }

    /// Returns once no mapped top-level window is titled `title`; throws after `limit` seconds.
    func waitUntilGone(titled title: String, limit: Double = 30) throws {
        let gone = try Child(DesktopSession.python, [DesktopSession.probe, "window", title, "--gone", "--timeout", String(limit)],
                             environment: environment).finish(limit: limit + 15)
        guard gone.status == 0 else { throw TestFailure("the window \(title) is still there: \(gone.all)") }
    }

    /// What a window manager's close button does: WM_DELETE_WINDOW to `handle`.
    func requestClose(_ handle: String) throws {
        try run(DesktopSession.python, [DesktopSession.probe, "close", try DesktopSession.windowID(handle)])
    }

    /// An X11 property of `handle`, as xprop prints it ("WM_TRANSIENT_FOR(WINDOW): window id # 0x…").
    func property(_ name: String, of handle: String) throws -> String {
        try run("/usr/bin/xprop", ["-id", try DesktopSession.windowID(handle), name]).stdout
    }

    // MARK: - What a screen reader sees

    /// The accessible tree of the top-level window named `window`, once it is there and, with
    /// `focused`, the focused node has that name; with `focusLeaves`, another node has the
    /// focus; with `showing`, a node is named so or holds it as its text.
    func accessibleTree(_ window: String, focused: String? = nil, focusLeaves: String? = nil, showing: String? = nil,
                        timeout: Double = 10) throws -> AccessibleNode {
        var arguments = [DesktopSession.probe, "tree", window, "--timeout", String(timeout)]
        if let focused { arguments += ["--focused", focused] }
        if let focusLeaves { arguments += ["--focus-leaves", focusLeaves] }
        if let showing { arguments += ["--showing", showing] }
        let result = try Child(DesktopSession.python, arguments, environment: environment).finish(limit: timeout + 15)
        guard result.status == 0 else {
            throw TestFailure("no such accessible tree (\(result.status)): \(result.all)")
        }
        return try JSONDecoder().decode(AccessibleNode.self, from: Data(result.stdout.utf8))
    }

    /// Starts listening for name, description and text changes in `window`'s application;
    /// returns once they are routed to the listener, so that a change made next is heard.
    func listen(_ window: String, role: String? = nil, contains: String, timeout: Double = 10) throws -> AccessibleEvents {
        var arguments = [DesktopSession.probe, "events", window, "--contains", contains, "--timeout", String(timeout)]
        if let role { arguments += ["--role", role] }
        let child = try Child(DesktopSession.python, arguments, environment: environment)
        guard child.readLine(timeout: timeout + 15) == "listening" else {
            throw TestFailure("the event listener did not start: \(child.finish(limit: 5).all)")
        }
        return AccessibleEvents(child: child, timeout: timeout)
    }

    // MARK: - What it looks like

    /// A PNG of the X11 window `handle` (xwd, converted by netpbm) in the test output directory
    /// (`outputDirectory(for:)`); returns its path and size in pixels.
    @discardableResult
    func screenshot(_ handle: String, named name: String, suite: String) throws -> (path: String, width: Int, height: Int) {
        let path = try DesktopSession.outputDirectory(for: suite) + "/" + name + ".png"
        try run("/bin/bash", ["-o", "pipefail", "-c", "xwd -silent -id \"$1\" | xwdtopnm 2>/dev/null | pnmtopng > \"$2\"", "screenshot",
                              try DesktopSession.windowID(handle), path])
        guard let png = readFile(path), png.count > 24, png.starts(with: [0x89, 0x50, 0x4e, 0x47]) else {
            throw TestFailure("the screenshot \(path) is not a PNG")
        }
        // IHDR: width and height, big-endian, at bytes 16 and 20.
        func integer(_ offset: Int) -> Int { png[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) } }
        return (path, integer(16), integer(20))
    }

    /// Where tests leave files for a person to look at: FINGERSEAL_TEST_OUTPUT, or
    /// .build/test-output, one directory per suite (made if missing).
    static func outputDirectory(for suite: String) throws -> String {
        let base = getenv("FINGERSEAL_TEST_OUTPUT").map { String(cString: $0) } ?? Paths.packageRoot + "/.build/test-output"
        let path = base + "/" + suite
        guard Child.runQuietly("/bin/mkdir", ["-p", path]) == 0 else { throw TestFailure("cannot make \(path)") }
        return path
    }

    // MARK: - Processes

    @discardableResult
    private func spawn(_ path: String, _ arguments: [String], environment: [String: String], errorLog: String) throws -> Child {
        let child = try Child(path, arguments, environment: environment, errorLog: temp.file(errorLog))
        daemons.append(child)
        return child
    }

    @discardableResult
    private func gdbus(_ arguments: [String], environment: [String: String]) throws -> String {
        let result = try Child("/usr/bin/gdbus", arguments, environment: environment).finish(limit: 30)
        guard result.status == 0 else {
            throw TestFailure("gdbus \(arguments.joined(separator: " ")) failed: \(result.all)\n\(log("at-spi.log"))")
        }
        return String(result.stdout.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }

    @discardableResult
    private func run(_ path: String, _ arguments: [String]) throws -> Child.Result {
        let result = try Child(path, arguments, environment: environment).finish(limit: 20)
        guard result.status == 0 else {
            throw TestFailure("\(path) \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.all)")
        }
        return result
    }

    private func log(_ name: String) -> String { String(decoding: readFile(temp.file(name)) ?? [], as: UTF8.self) }

    private static func windowID(_ handle: String) throws -> String {
        guard handle.hasPrefix("x11:"), UInt(handle.dropFirst(4), radix: 16) != nil else {
            throw TestFailure("not an X11 window handle: \(handle)")
        }
        return "0x" + handle.dropFirst(4)
    }

    /// Waits (bounded) for a path to appear.
    static func waitFor(path: String, what: String, limit: Double = 15) throws {
        let deadline = VirtualSensor.now() + limit
        while access(path, F_OK) != 0 {
            guard VirtualSensor.now() < deadline else { throw TestFailure("\(what) (\(path)) did not appear in \(limit) s") }
            // A bounded poll: nothing signals a socket file's creation to another process.
            usleep(10_000)
        }
    }

    /// The processes whose session is `leader`'s (field 6 of /proc/PID/stat).
    static func members(ofSession leader: pid_t) -> [pid_t] {
        guard let directory = opendir("/proc") else { return [] }
        defer { closedir(directory) }
        var members: [pid_t] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let pid = pid_t(name), let stat = readFile("/proc/\(name)/stat"),
                  let close = stat.lastIndex(of: UInt8(ascii: ")")) else { continue }
            // After "pid (comm)": state ppid pgrp session …
            let fields = stat[(close + 1)...].split(separator: UInt8(ascii: " "))
            if fields.count > 3, pid_t(String(decoding: fields[3], as: UTF8.self)) == leader { members.append(pid) }
        }
        return members
    }
}

/// One node of an accessible tree, as desktop_probe.py prints it.
struct AccessibleNode: Decodable, Sendable {
    let role: String
    let name: String
    let description: String
    let states: [String]
    /// The text of a text node (labels, headings, status bars).
    let text: String?
    /// How many characters a password entry holds (never what they are).
    let length: Int?
    let children: [AccessibleNode]?

    /// This node and all below it, depth first.
    var all: [AccessibleNode] { [self] + (children ?? []).flatMap(\.all) }
    var focused: AccessibleNode? { all.first { $0.states.contains("focused") } }
    func first(role: String, name: String? = nil) -> AccessibleNode? {
        all.first { $0.role == role && (name == nil || $0.name == name) }
    }
    func all(role: String) -> [AccessibleNode] { all.filter { $0.role == role } }
}

/// An event an AT-SPI listener heard.
struct AccessibleEvent: Decodable, Sendable {
    /// "object:property-change:accessible-name", "object:text-changed:insert", …
    let type: String
    let role: String
    let name: String
    /// The new value (a name, a description, inserted text).
    let data: String
}

/// A listener started by `DesktopSession.listen`.
final class AccessibleEvents {
    private let child: Child
    private let timeout: Double

    fileprivate init(child: Child, timeout: Double) {
        self.child = child
        self.timeout = timeout
    }

    /// The first matching event; throws, with every event heard, if none came in time.
    func wait() throws -> AccessibleEvent {
        let result = child.finish(limit: timeout + 15)
        guard result.status == 0 else { throw TestFailure("no matching accessibility event: \(result.all)") }
        return try JSONDecoder().decode(AccessibleEvent.self, from: Data(result.stdout.utf8))
    }
}
