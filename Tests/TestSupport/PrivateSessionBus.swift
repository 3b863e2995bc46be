import Glibc

/// A private session bus for one test: `dbus-daemon --session` on a socket in a temp
/// directory, owned by `user` (root when nil), ready once the socket accepts a connection.
/// Dropping it kills the daemon. Clients reach it through `environment`.
final class PrivateSessionBus {
    let temp: TempDirectory
    let address: String
    private var daemon: Child?

    init(user: String? = nil) throws {
        guard access("/usr/bin/dbus-daemon", X_OK) == 0 else { throw TestFailure("dbus-daemon is missing (scripts/install-deps)") }
        temp = try TempDirectory()
        let socket = temp.file("session_bus_socket")
        address = "unix:path=" + socket
        let config = temp.file("session.conf")
        let policy = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>\(address)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """
        writeFile(config, Array(policy.utf8), mode: 0o644)
        var command = ["/usr/bin/dbus-daemon", "--config-file=" + config, "--nofork", "--nopidfile"]
        if let user {
            guard let entry = getpwnam(user) else { throw TestFailure("no user \(user)") }
            chown(temp.path, entry.pointee.pw_uid, entry.pointee.pw_gid)
            command = ["/usr/bin/setpriv", "--reuid=\(entry.pointee.pw_uid)", "--regid=\(entry.pointee.pw_gid)", "--init-groups", "--"]
                + command
        }
        daemon = try Child(command[0], Array(command.dropFirst()), environment: ["PATH": "/usr/bin:/bin"], logFile: temp.file("bus.log"))
        // Ready: the daemon listens (bounded).
        close(try VirtualSensor.connect(socket, timeout: 10))
    }

    deinit { stop() }

    func stop() {
        guard let daemon else { return }
        kill(-daemon.pid, SIGKILL)
        daemon.signal(SIGKILL)
        _ = daemon.finish(limit: 5)
        self.daemon = nil
    }

    /// A client's environment on this bus.
    var environment: [String: String] {
        ["DBUS_SESSION_BUS_ADDRESS": address, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "NO_COLOR": "1"]
    }
}
