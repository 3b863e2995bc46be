import FingersealWire
import SystemKit
import Testing

/// Control characters in a caller's text (issue 31 §7): one rule on the wire names the field
/// of a request that holds one, whichever it is, and one escape keeps a log line one line.
@Suite struct RequestTextTests {
    /// A line break, an escape, DEL, and C1's NEL and CSI.
    static let controls = ["\n", "\r", "\t", "\u{1b}", "\u{7f}", "\u{85}", "\u{9b}", "\u{0}"]

    /// A request with plain text in every field a client fills in.
    static func plain() -> Request {
        var request = Request(.unlock)
        request.pam = PAMItems(user: "alice", service: "sudo", tty: "/dev/pts/1", rhost: "host.example", ruser: "bob",
                               xdisplay: ":0")
        request.moduleOptions = ["pin", "timeout=9"]
        request.options.set(field: "device", "virtual")
        request.arguments = ["payroll"]
        request.ticket = "t-1"
        request.language = "nb_NO.UTF-8"
        request.timeZone = "Europe/Oslo"
        request.application = Application(busName: ":1.42", executable: "/usr/bin/meander", appID: "org.example.Meander",
                                          name: "Meander Ærlig")
        return request
    }

    /// Each field with each control character in it, and the name the rule gives it.
    static var fields: [(String, (inout Request, String) -> Void)] { [
        ("pam.user", { $0.pam?.user = $1 }), ("pam.service", { $0.pam?.service = $1 }), ("pam.tty", { $0.pam?.tty = $1 }),
        ("pam.rhost", { $0.pam?.rhost = $1 }), ("pam.ruser", { $0.pam?.ruser = $1 }), ("pam.xdisplay", { $0.pam?.xdisplay = $1 }),
        ("option", { $0.moduleOptions.append($1) }), ("opt.device", { $0.options.set(field: "device", $1) }),
        ("arg", { $0.arguments.append($1) }), ("ticket", { $0.ticket = $1 }), ("language", { $0.language = $1 }),
        ("time-zone", { $0.timeZone = $1 }), ("app.bus-name", { $0.application?.busName = $1 }),
        ("app.executable", { $0.application?.executable = $1 }), ("app.id", { $0.application?.appID = $1 }),
        ("app.name", { $0.application?.name = $1 }),
    ] }

    @Test func everyFieldACallerFillsInIsChecked() {
        #expect(Self.plain().fieldWithControlCharacters == nil, "plain text, letters beyond ASCII included")
        for (name, set) in Self.fields {
            for control in Self.controls {
                var request = Self.plain()
                set(&request, "su" + control + "x")
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
