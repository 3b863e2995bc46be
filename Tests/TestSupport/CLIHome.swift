import Glibc
#if canImport(Testing)
import Testing
#endif

/// The CLI as a person runs it, against a broker of its own: the client environment points
/// at the broker (FINGERSEAL_SOCKET) and carries a home and XDG directories of its own, which
/// the CLI must leave alone (the store is the broker's, under `vaultDirectory`). With a
/// `sensor`, the broker (not the CLI) is given libfprint's virtual_device on that socket.
final class CLIHome {
    let broker: TestBroker
    /// HOME, XDG_STATE_HOME, XDG_RUNTIME_DIR and XDG_CONFIG_HOME live here.
    let temp: TempDirectory
    /// The virtual_device socket the broker's libfprint creates; nil without a reader.
    let sensor: String?
    var environment: [String: String]
    /// What `temp` holds before any command ran.
    private let createdDirectories: Set<String>

    /// `brokerConfig`: the text of the broker's configuration file.
    init(reader: Bool = false, brokerEnvironment: [String: String] = [:], brokerConfig: String = "",
         wrapBroker: (([String]) -> (String, [String]))? = nil) throws {
        temp = try TempDirectory()
        var fromBroker = brokerEnvironment
        if reader {
            sensor = temp.file("sensor.sock")
            fromBroker["FP_DRIVERS_WHITELIST"] = fromBroker["FP_DRIVERS_WHITELIST"] ?? "virtual_device"
            fromBroker["FP_VIRTUAL_DEVICE"] = temp.file("sensor.sock")
        } else {
            sensor = nil
        }
        broker = try TestBroker(environment: fromBroker, config: brokerConfig, wrap: wrapBroker)
        let directories = ["home", "home/.local", "home/.local/state", "home/.config", "runtime"]
        for directory in directories { mkdir(temp.file(directory), 0o700) }
        createdDirectories = Set(directories)
        environment = broker.clientEnvironment
        environment["HOME"] = temp.file("home")
        environment["XDG_STATE_HOME"] = temp.file("home/.local/state")
        environment["XDG_CONFIG_HOME"] = temp.file("home/.config")
        environment["XDG_RUNTIME_DIR"] = temp.file("runtime")
    }

    /// The broker's store for root (the tests' own account).
    var vaultDirectory: String { broker.vaultDirectory() }
    var vaultFile: String { vaultDirectory + "/vault" }

    func start(_ arguments: [String], fd3: String? = nil, environment extra: [String: String] = [:],
               newSession: Bool = true) throws -> Child {
        try Child(Paths.cli, arguments, environment: environment.merging(extra) { $1 }, fd3: fd3.map { Array($0.utf8) },
                  newSession: newSession)
    }

    func run(_ arguments: [String], fd3: String? = nil, environment extra: [String: String] = [:],
             newSession: Bool = true) throws -> Child.Result {
        try start(arguments, fd3: fd3, environment: extra, newSession: newSession).finish()
    }

    /// Runs `arguments` while feeding `commands` to the broker's virtual sensor, one at a time.
    func scan(_ arguments: [String], _ commands: [String], fd3: String? = nil, environment extra: [String: String] = [:],
              newSession: Bool = true) throws -> Child.Result {
        let child = try start(arguments, fd3: fd3, environment: extra, newSession: newSession)
        guard let sensor else { throw TestFailure("this home has no reader") }
        for command in commands { try VirtualSensor.send(command, to: sensor) }
        return child.finish()
    }

    /// Everything the CLI left under the home and XDG directories (it must leave nothing).
    func leftInHome() -> [String] {
        let found = (try? Child.run("/usr/bin/find", [temp.path, "-mindepth", "1", "-printf", "%P\n"]).stdout) ?? "find failed"
        return found.split(separator: "\n").map(String.init).filter { !createdDirectories.contains($0) && $0 != "sensor.sock" }
    }
}

/// A client environment whose FINGERSEAL_SOCKET names a socket nobody listens on.
func noBrokerEnvironment(_ temp: TempDirectory) -> [String: String] {
    ["FINGERSEAL_SOCKET": temp.file("no-broker.socket"), "PATH": "/usr/bin:/bin", "NO_COLOR": "1"]
}

// Assertions: only where Swift Testing is (the test builds; TestSupport also builds without).
#if canImport(Testing)
extension CLIHome {
    /// Enrolls `finger` (5 scans of `id`) with the PIN, as a user would.
    func enroll(_ id: String, finger: String = "right-index-finger", pin: String,
                sourceLocation: SourceLocation = #_sourceLocation) throws {
        let result = try scan(["enroll", "--finger", finger, "--pin-fd", "3"], Array(repeating: "SCAN \(id)", count: 5),
                              fd3: pin + "\n")
        #expect(result.status == 0, "\(result.all)", sourceLocation: sourceLocation)
        #expect(result.stdout.contains("Enrolled \(finger.replacing("-", with: " "))."), sourceLocation: sourceLocation)
    }

    /// The vault directory and its files: owned by root, directory 0700, nothing for others.
    func storeIsRootOnly(sourceLocation: SourceLocation = #_sourceLocation) {
        var info = stat()
        #expect(stat(vaultDirectory, &info) == 0, "no vault directory at \(vaultDirectory)", sourceLocation: sourceLocation)
        #expect(info.st_uid == 0 && info.st_mode & 0o777 == 0o700, "\(String(info.st_mode, radix: 8))",
                sourceLocation: sourceLocation)
        let names = (try? Child.run("/bin/ls", ["-A", vaultDirectory]).stdout) ?? ""
        for name in names.split(separator: "\n") {
            var file = stat()
            #expect(lstat(vaultDirectory + "/" + name, &file) == 0, sourceLocation: sourceLocation)
            #expect(file.st_uid == 0 && file.st_mode & 0o077 == 0, "\(name): \(String(file.st_mode, radix: 8))",
                    sourceLocation: sourceLocation)
        }
    }
}
#endif
