import Glibc

/// A private system bus in a temp directory: `dbus-daemon` with a system-type config,
/// python3-dbusmock's polkitd (allowing everything), and optionally `fprintd -t` on
/// libfprint's virtual_device, as Benchmarks/system-bench.py's `Fprintd` sets them up.
/// Clients reach it through `address` (DBUS_SYSTEM_BUS_ADDRESS, or SystemBus.open(address:)).
/// Every wait is bounded; `stop()` (or dropping it) kills every process it started.
final class PrivateSystemBus {
    static let fprintdPath = "/usr/libexec/fprintd"
    static let python = "/usr/bin/python3"

    /// Why the fprintd tests cannot run here, or nil (scripts/install-deps installs them).
    static let missing: String? = {
        for tool in ["/usr/bin/dbus-daemon", "/usr/bin/gdbus", fprintdPath, "/usr/bin/fprintd-enroll", python]
        where access(tool, X_OK) != 0 {
            return "\(tool) is missing (scripts/install-deps installs it)"
        }
        let probe = try? Child.run(python, ["-c", "import dbusmock, dbus"])
        if probe?.status != 0 { return "python3-dbusmock is missing (scripts/install-deps installs it)" }
        return nil
    }()
    static var available: Bool { missing == nil }

    let temp: TempDirectory
    /// The bus's D-Bus address, for DBUS_SYSTEM_BUS_ADDRESS.
    let address: String
    /// virtual_device's socket: fprintd's libfprint creates it when the device is opened
    /// (on Claim), and removes it when closed.
    let sensorPath: String
    /// fprintd's STATE_DIRECTORY (its prints: <user>/virtual_device/0/<finger number>).
    let stateDirectory: String
    /// What a client process needs to use this bus (PATH, LANG, DBUS_SYSTEM_BUS_ADDRESS).
    let environment: [String: String]
    private var daemons: [Child] = []
    private var logind: Child?

    /// `fprintd`: start fprintd too. `activatable`: D-Bus names the bus could activate
    /// (service files whose Exec touches `activationMarker(name)`; never meant to run).
    init(fprintd: Bool = true, activatable: [String] = []) throws {
        if let missing = PrivateSystemBus.missing { throw TestFailure(missing) }
        temp = try TempDirectory()
        sensorPath = temp.file("sensor.sock")
        stateDirectory = temp.file("state")
        let socket = temp.file("system_bus_socket")
        address = "unix:path=" + socket
        environment = ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "DBUS_SYSTEM_BUS_ADDRESS": address]

        let services = temp.file("services")
        mkdir(services, 0o755)
        for name in activatable {
            let unit = "[D-BUS Service]\nName=\(name)\nExec=/usr/bin/touch \(activationMarker(name))\nUser=root\n"
            writeFile(services + "/" + name + ".service", Array(unit.utf8), mode: 0o644)
        }
        let config = temp.file("system-bus.conf")
        writeFile(config, Array(try PrivateSystemBus.config(socket: socket, services: services).utf8), mode: 0o644)
        do {
            try spawn("/usr/bin/dbus-daemon", ["--config-file=" + config, "--nofork", "--nopidfile"], log: "bus.log")
            // Readiness: the socket accepts connections (bounded; the daemon creates it when it listens).
            close(try VirtualSensor.connect(socket, timeout: 10))
            try spawn(PrivateSystemBus.python, ["-m", "dbusmock", "--system", "--template", "polkitd"], log: "daemons.log")
            try waitForName("org.freedesktop.PolicyKit1")
            try gdbus(["call", "--system", "--dest", "org.freedesktop.PolicyKit1", "--object-path",
                       "/org/freedesktop/PolicyKit1/Authority", "--method", "org.freedesktop.DBus.Mock.AllowUnknown", "true"])
            if fprintd { try startFprintd() }
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    func activationMarker(_ name: String) -> String { temp.file("activated-" + name) }

    private func startFprintd() throws {
        let runtime = temp.file("runtime")
        mkdir(stateDirectory, 0o700)
        mkdir(runtime, 0o700)
        var fprintdEnvironment = environment
        fprintdEnvironment["FP_DRIVERS_WHITELIST"] = "virtual_device"
        fprintdEnvironment["FP_VIRTUAL_DEVICE"] = sensorPath
        fprintdEnvironment["STATE_DIRECTORY"] = stateDirectory
        fprintdEnvironment["RUNTIME_DIRECTORY"] = runtime
        // -t: no idle exit.
        try spawn(PrivateSystemBus.fprintdPath, ["-t"], environment: fprintdEnvironment, log: "daemons.log")
        try waitForName("net.reactivated.Fprint")
    }

    /// python3-dbusmock's logind template on this bus, with Manager.LidClosed set (the
    /// template has no such property: added through the mock's AddProperty).
    func startLogindMock(lidClosed: Bool) throws {
        guard logind == nil else { throw TestFailure("the logind mock runs already") }
        logind = try spawn(PrivateSystemBus.python, ["-m", "dbusmock", "--system", "--template", "logind"], log: "daemons.log")
        try waitForName("org.freedesktop.login1")
        try gdbus(["call", "--system", "--dest", "org.freedesktop.login1", "--object-path", "/org/freedesktop/login1",
                   "--method", "org.freedesktop.DBus.Mock.AddProperty", "org.freedesktop.login1.Manager", "LidClosed",
                   lidClosed ? "<true>" : "<false>"])
    }

    /// logind's PrepareForSleep from the logind mock: `sleeping` before sleep, false after
    /// waking (the mock's EmitSignal; the template itself never suspends anything). As logind
    /// does, Manager.PreparingForSleep says the same before the signal goes out.
    func prepareForSleep(_ sleeping: Bool) throws {
        guard logind != nil else { throw TestFailure("the logind mock is not running") }
        try gdbus(["call", "--system", "--dest", "org.freedesktop.login1", "--object-path", "/org/freedesktop/login1",
                   "--method", "org.freedesktop.DBus.Properties.Set", "org.freedesktop.login1.Manager", "PreparingForSleep",
                   sleeping ? "<true>" : "<false>"])
        try gdbus(["call", "--system", "--dest", "org.freedesktop.login1", "--object-path", "/org/freedesktop/login1",
                   "--method", "org.freedesktop.DBus.Mock.EmitSignal", "org.freedesktop.login1.Manager", "PrepareForSleep",
                   "b", sleeping ? "[<true>]" : "[<false>]"])
    }

    /// Runs `fprintd-enroll -f <finger> <user>` and answers its scans with `SCAN <scanID>`
    /// (virtual_device: a verify matches when its SCAN id equals the enrolled one).
    func enrollWithFprintdEnroll(user: String, finger: String = "right-index-finger", scanID: String,
                                 stages: Int = 5) throws {
        let enroll = try Child("/usr/bin/fprintd-enroll", ["-f", finger, user], environment: environment)
        for _ in 0..<stages { try VirtualSensor.send("SCAN \(scanID)", to: sensorPath) }
        let result = enroll.finish(limit: 30)
        guard result.status == 0, result.stdout.contains("enroll-completed") else {
            throw TestFailure("fprintd-enroll did not complete (\(result.status)): \(result.all)")
        }
    }

    /// Sends one virtual_device command (waits, bounded, for the device to be open).
    @discardableResult
    func sensor(_ command: String) throws -> String {
        try VirtualSensor.send(command, to: sensorPath)
    }

    /// Claims the device from a fresh connection (and releases it): "claimed", or fprintd's
    /// error name ("net.reactivated.Fprint.Error.AlreadyInUse" while someone holds a claim).
    func claimFromAnotherClient(user: String = "root", device: String = "/net/reactivated/Fprint/Device/0") throws -> String {
        let script = """
            import dbus, sys
            bus = dbus.bus.BusConnection(sys.argv[1])
            device = dbus.Interface(bus.get_object('net.reactivated.Fprint', sys.argv[2]), 'net.reactivated.Fprint.Device')
            try:
                device.Claim(sys.argv[3])
            except dbus.exceptions.DBusException as error:
                print(error.get_dbus_name())
                sys.exit(0)
            device.Release()
            print('claimed')
            """
        let result = try Child(PrivateSystemBus.python, ["-c", script, address, device, user], environment: environment)
            .finish(limit: 15)
        guard result.status == 0 else { throw TestFailure("claim probe failed: \(result.all)") }
        return result.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    /// What the daemons (polkit mock, fprintd, logind mock) logged.
    var daemonLog: String { String(decoding: readFile(temp.file("daemons.log")) ?? [], as: UTF8.self) }

    func waitForName(_ name: String) throws {
        try gdbus(["wait", "--system", "--timeout", "10", name])
    }

    /// Kills every process this started and waits for each.
    func stop() {
        for child in ([logind].compactMap { $0 } + daemons).reversed() {
            child.signal(SIGKILL)
            _ = child.finish(limit: 5)
        }
        logind = nil
        daemons = []
    }

    @discardableResult
    private func spawn(_ path: String, _ arguments: [String], environment: [String: String]? = nil,
                       log: String) throws -> Child {
        let child = try Child(path, arguments, environment: environment ?? self.environment, logFile: temp.file(log))
        daemons.append(child)
        return child
    }

    private func gdbus(_ arguments: [String]) throws {
        let result = try Child("/usr/bin/gdbus", arguments, environment: environment).finish(limit: 15)
        guard result.status == 0 else {
            throw TestFailure("gdbus \(arguments.joined(separator: " ")) failed: \(result.all)\n\(daemonLog)")
        }
    }

    /// Support/system-bus.conf (shared with Benchmarks/system-bench.py) for this bus.
    static func config(socket: String, services: String) throws -> String {
        let template = Paths.packageRoot + "/Tests/TestSupport/system-bus.conf"
        guard let bytes = readFile(template) else { throw TestFailure("missing \(template)") }
        return String(decoding: bytes, as: UTF8.self).replacing("{path}", with: socket)
            .replacing("{servicedir}", with: services)
    }
}
