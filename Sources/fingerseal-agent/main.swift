import FingersealWire
import Glibc
import Localization
import SessionBusKit
import SystemKit

// fingerseal-agent: finger unlock and step-up for desktop applications, on the session bus
// (org.fingerseal.Agent1). A thin client of the broker, like the fingerseal command: it runs
// as the user, with no privilege, no store and no reader.

let usage = """
Usage: fingerseal-agent [--replace] [--socket PATH] [--idle-exit SECONDS|never]
       fingerseal-agent --print-interface | --version | --help
Serves org.fingerseal.Agent1 on the session bus (see fingerseal-agent(8)). D-Bus activation
or the systemd user unit fingerseal-agent.service start it; it ends when idle.
"""

func fail(_ sentence: String, status: Int32 = 1) -> Never {
    var text = "fingerseal-agent: " + sentence + "\n"
    _ = text.withUTF8 { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    exit(status)
}

func say(_ text: String) {
    var line = text
    _ = line.withUTF8 { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
}

// First of all: nothing this process will hold (a PIN on its way to the broker, a token on its
// way to an application, grant keys) is there for the user's other processes to read.
do { try makeNotDumpable() } catch { fail("cannot make this process non-dumpable: \(error)") }

Localization.bindInstalled()
let preference = Localization.preference { name in getenv(name).map { String(cString: $0) } }
Localization.adopt(Localization.language(preference))

var settings = AgentSettings()
settings.language = preference ?? "C"
settings.timeZone = ClientTimeZone.name(tz: getenv("TZ").map { String(cString: $0) })
if let socket = getenv("FINGERSEAL_SOCKET"), socket.pointee != 0 { settings.socketPath = String(cString: socket) }
var replace = false
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--replace": replace = true
    case "--socket":
        guard let path = arguments.popFirst(), path.hasPrefix("/") else { fail("--socket takes an absolute path.", status: 2) }
        settings.socketPath = path
    case "--idle-exit":
        guard let value = arguments.popFirst() else { fail("--idle-exit takes a number of seconds, or never.", status: 2) }
        if value == "never" { settings.idleExit = nil } else if let seconds = Double(value), seconds > 0, seconds <= 86_400 {
            settings.idleExit = seconds
        } else {
            fail("--idle-exit takes a number of seconds, or never.", status: 2)
        }
    case "--print-interface":
        say(AgentInterface.xml)
        exit(0)
    case "--version":
        say("fingerseal-agent \(Fingerseal.version) (interface \(AgentInterface.busName) version \(AgentInterface.version))\n")
        exit(0)
    case "--help", "-h":
        say(usage)
        exit(0)
    default:
        fail("unknown argument \(argument).\n" + usage, status: 2)
    }
}

// SIGTERM (the user manager stopping it) and SIGINT end the loop; blocked before any thread starts.
let interrupt: InterruptWatch
do { interrupt = try InterruptWatch(signals: [SIGTERM, SIGINT]) } catch { fail("cannot watch for signals: \(error)") }
// A broker that goes away mid-request must not end the agent.
signal(SIGPIPE, SIG_IGN)

let bus: SessionBus
do { bus = try SessionBus.connect() } catch { fail("cannot reach the session bus: \(error.message)") }
let agent = Agent(bus: bus, socketPath: settings.socketPath, settings: settings)
do { try agent.export() } catch { fail("cannot export \(AgentInterface.path): \(error)") }
do {
    guard try bus.requestName(AgentInterface.busName, replace: replace) else {
        fail("another fingerseal-agent already serves \(AgentInterface.busName) on this session bus.")
    }
} catch {
    fail("cannot own \(AgentInterface.busName): \(error)")
}
// The session's bus gone: no application can reach the agent or hear its answers.
bus.whenClosed { MainLoop.quit() }
MainLoop.whenReadable(interrupt.fd) {
    MainLoop.quit()
    return false
}
MainLoop.run()
