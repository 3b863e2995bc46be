import FingersealWire
import SystemKit
import Testing

/// Control characters in a caller's text (issue 31 §7): one rule on the wire names the field
/// of a request that holds one, whichever it is, and one escape keeps a log line one line.
@Suite struct RequestTextTests {
    /// A line break, an escape, DEL, and C1's NEL and CSI.
    static let controls = ["\n", "\r", "\t", "\u{1b}", "\u{7f}", "\u{85}", "\u{9b}", "\u{0}"]

    static let items = PAMItems(user: "alice", service: "sudo", tty: "/dev/pts/1", rhost: "host.example", ruser: "bob",
                                xdisplay: ":0")
    static let arguments = ["pin", "timeout=9"]
    static let application = Application(busName: ":1.42", executable: "/usr/bin/meander", appID: "org.example.Meander",
                                         name: "Meander Ærlig")

    /// A request from `origin` with plain text in every other field a client fills in.
    static func plain(_ origin: Origin = .pamHost(items, moduleArguments: arguments)) -> Request {
        var request = Request(origin.application == nil ? .pamAuthenticate : .unlock, from: origin)
        request.options.set(field: "device", "virtual")
        request.arguments = ["payroll"]
        request.ticket = "t-1"
        request.language = "nb_NO.UTF-8"
        request.timeZone = "Europe/Oslo"
        return request
    }

    /// A PAM host's request with one of its items changed.
    static func pam(_ change: (inout PAMItems) -> Void) -> Request {
        var items = Self.items
        change(&items)
        return plain(.pamHost(items, moduleArguments: arguments))
    }

    /// An application's request with what the agent says of it changed.
    static func app(_ change: (inout Application) -> Void) -> Request {
        var application = Self.application
        change(&application)
        return plain(.application(application))
    }

    /// Each field, the request with `text` in it, and the name the rule gives it.
    static var fields: [(String, (String) -> Request)] { [
        ("pam.user", { t in pam { $0.user = t } }), ("pam.service", { t in pam { $0.service = t } }),
        ("pam.tty", { t in pam { $0.tty = t } }), ("pam.rhost", { t in pam { $0.rhost = t } }),
        ("pam.ruser", { t in pam { $0.ruser = t } }), ("pam.xdisplay", { t in pam { $0.xdisplay = t } }),
        ("option", { t in plain(.pamHost(items, moduleArguments: arguments + [t])) }),
        ("opt.device", { t in var request = plain(); request.options.set(field: "device", t); return request }),
        ("arg", { t in var request = plain(); request.arguments.append(t); return request }),
        ("ticket", { t in var request = plain(); request.ticket = t; return request }),
        ("language", { t in var request = plain(); request.language = t; return request }),
        ("time-zone", { t in var request = plain(); request.timeZone = t; return request }),
        ("app.bus-name", { t in app { $0.busName = t } }), ("app.executable", { t in app { $0.executable = t } }),
        ("app.id", { t in app { $0.appID = t } }), ("app.name", { t in app { $0.name = t } }),
    ] }

    @Test func everyFieldACallerFillsInIsChecked() {
        #expect(Self.plain().fieldWithControlCharacters == nil, "plain text, letters beyond ASCII included")
        #expect(Self.plain(.application(Self.application)).fieldWithControlCharacters == nil)
        for (name, make) in Self.fields {
            for control in Self.controls {
                let request = make("su" + control + "x")
                #expect(request.fieldWithControlCharacters == name, "\(name) with \(control.unicodeScalars.map(\.value))")
            }
        }
    }

    /// Just past each range, and what looks like a control but is text, pass.
    @Test func theNeighboursOfTheControlsAreText() {
        for text in ["\u{20}", "\u{7e}", "\u{a0}", "\u{2028}", "\\n", "é"] {
            #expect(!ControlCharacters.found(in: "a" + text + "b"), "\(text.unicodeScalars.map(\.value))")
        }
    }

    @Test func escapingKeepsALineOneLine() {
        #expect(ControlCharacters.escaped("plain å") == "plain å")
        #expect(ControlCharacters.escaped("sudo\nfake\u{1b}[2J\u{7f}\u{85}\u{9b}") == "sudo\\x0afake\\x1b[2J\\x7f\\x85\\x9b")
        // A literal backslash is escaped too: "\x0a" typed by a caller is not a line break.
        #expect(ControlCharacters.escaped("a\\x0ab") == "a\\x5cx0ab")
    }
}
