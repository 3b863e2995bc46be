// fingersealed: the broker. Owns the store, the reader, the counters, the grants and every
// identity-provider request; the PAM module and the CLI ask it over its socket.
//
//   fingersealed                               under systemd (fingerseal.socket)
//   fingersealed --socket PATH --state DIR [--config FILE] [--idle-exit SECONDS] [--pam-dir DIR]
//                [--boot-id-file FILE]
//                                              in the foreground (tests, the demo, containers)
//
// The configuration: FILE, else /etc/fingerseal/fingerseal.conf, else (only when that does
// not exist) /etc/security/fingerseal.conf.
import Broker
import FingersealWire
import Glibc
import Localization
import SystemKit
import SystemdKit

func fail(_ message: String) -> Never {
    var text = "fingersealed: " + message + "\n"
    _ = text.withUTF8 { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    exit(10)
}

Syslog.open()
var arguments = CommandLine.arguments.dropFirst()
var socketPath: String? = nil
var settings = BrokerSettings(stateDirectory: "/var/lib/fingerseal")
// Under systemd, the state directory comes from StateDirectory= (root's own environment).
if let state = getenv("STATE_DIRECTORY") { settings.stateDirectory = String(cString: state) }
while let argument = arguments.first {
    arguments = arguments.dropFirst()
    func value() -> String {
        guard let next = arguments.first else { fail("\(argument) needs a value.") }
        arguments = arguments.dropFirst()
        return next
    }
    switch argument {
    case "--socket": socketPath = value()
    case "--state": settings.stateDirectory = value()
    case "--config": settings.configPath = value()
    case "--pam-dir": settings.pamServiceDirectory = value()
    case "--boot-id-file": settings.bootIDPath = value()
    case "--idle-exit":
        guard let seconds = Double(value()), seconds > 0 else { fail("--idle-exit needs a number of seconds.") }
        settings.idleExit = seconds
    case "--version":
        print("fingersealed \(Fingerseal.version)")
        exit(0)
    case ReservedNameProbe.option:
        // Provisioning's check of the policy files, run by the broker outside its sandbox
        // (ProvisionNames.reserved): the verdict on one line, nothing else done.
        guard let line = ReservedNameProbe.verdictLine(value()) else { fail("\(ReservedNameProbe.option) needs a user name.") }
        print(line)
        exit(0)
    case "--help":
        print("Usage: fingersealed [--socket PATH --state DIR] [--config FILE] [--idle-exit SECONDS] [--pam-dir DIR] [--boot-id-file FILE]")
        exit(0)
    default: fail("Unknown option \(argument.prefix(64)).")
    }
}
guard settings.stateDirectory.hasPrefix("/") else { fail("--state needs an absolute path.") }
if let directory = settings.pamServiceDirectory, !directory.hasPrefix("/") { fail("--pam-dir needs an absolute path.") }
// Sentences in each request's language (Request.language), from the catalogs installed beside
// the broker (PREFIX/share/locale; FINGERSEAL_LOCALEDIR for the tests). The broker's own
// LANGUAGE would override every thread's locale in gettext, so it goes before any thread starts.
Localization.bindInstalled()
unsetenv("LANGUAGE")
settings.defaultLanguage = BrokerSettings.systemLanguage()
// libtss2 logs to stderr unless told otherwise; said once here, before any thread starts
// (TPMContext would otherwise set it while other threads read the environment).
setenv("TSS2_LOG", "all+none", 0)
// A client that hangs up mid-answer must not kill the broker.
signal(SIGPIPE, SIG_IGN)
do {
    let listener: Listener
    if let socketPath {
        listener = try Listener.bind(path: socketPath)
    } else if let activated = try Listener.activated() {
        listener = activated
        // Socket activation starts it again on the next connection.
        if settings.idleExit == nil { settings.idleExit = 60 }
    } else {
        fail("No socket: start it through fingerseal.socket, or give --socket PATH.")
    }
    let server = try Server(listener: listener, settings: settings)
    // SIGTERM (systemd stopping it) and SIGINT end the loop cleanly: the reader is closed and
    // the socket removed. Blocked before any thread starts, so only the signalfd sees them.
    let stop = try InterruptWatch(signals: [SIGTERM, SIGINT])
    try server.run(stopFD: stop.fd)
    // The last requests' events, still on their way to the journal (bounded: a journald that
    // stopped reading does not keep the broker from exiting).
    Journal.shared.flush(limit: 1)
    if let socketPath, !listener.activated { unlink(socketPath) }
} catch {
    fail("\(error)")
}
