// dialog-demo: shows PromptDialog's dialog for the tests (DesktopTests) and for a person to look
// at. Texts from the arguments; state changes from stdin, one per line:
//
//     state NAME|SENTENCE[|SECRET LABEL]     NAME: waiting-for-finger retry no-match locked
//                                            needs-pin needs-password working done
//     close                                  close the dialog (as the agent would) and exit
//
// End of input closes it too. What the dialog reports goes to stdout, one line each:
// `shown HANDLE` (first drawn; HANDLE "x11:…" or "none"), `cancel`, `use-password`,
// `secret N` (only the length: the secret itself is never printed), `closed`.
// Exit status: 0 after the dialog closed, 1 without a display, 2 for a usage error.
//
//     swift run dialog-demo --title Unlock --heading "Meander wants to unlock with your fingerprint" \
//         --use-password "_Use password instead" --state "waiting-for-finger|Touch the fingerprint reader."
import CGtk
import Glibc
import PromptDialog

let usage = """
    usage: dialog-demo --title TEXT --heading TEXT [--description TEXT] [--cancel LABEL]
                       [--use-password LABEL] [--submit LABEL] [--secret-label LABEL]
                       [--parent x11:XID|wayland:HANDLE] [--state NAME|SENTENCE[|SECRET LABEL]]
    """

/// One line to stdout, unbuffered: the tests read it while the dialog is up.
func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
}

func complain(_ line: String) {
    let bytes = Array(("dialog-demo: " + line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
}

let stateNames: [String: DialogState] = [
    "waiting-for-finger": .waitingForFinger, "retry": .retry, "no-match": .noMatch, "locked": .locked,
    "needs-pin": .needsPIN, "needs-password": .needsPassword, "working": .working, "done": .done,
]

/// "NAME|SENTENCE[|SECRET LABEL]".
func parseState(_ spec: Substring) -> (DialogState, String, String?)? {
    let parts = spec.split(separator: "|", maxSplits: 2, omittingEmptySubsequences: false)
    guard parts.count >= 2, let state = stateNames[String(parts[0])] else { return nil }
    return (state, String(parts[1]), parts.count == 3 ? String(parts[2]) : nil)
}

/// The process's state, reached from C callbacks through user data.
final class Demo {
    let dialog: Dialog
    let loop: OpaquePointer
    var pending: [UInt8] = []

    init(dialog: Dialog, loop: OpaquePointer) {
        self.dialog = dialog
        self.loop = loop
    }

    func finish() {
        dialog.close()
        say("closed")
        g_main_loop_quit(loop)
    }

    /// Reads what stdin has; false (remove the watch) at its end.
    func readInput() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = read(STDIN_FILENO, &chunk, chunk.count)
        if count < 0 && (errno == EINTR || errno == EAGAIN) { return true }
        guard count > 0 else {
            finish()
            return false
        }
        pending += chunk[..<count]
        while let newline = pending.firstIndex(of: 0x0a) {
            let line = String(decoding: pending[..<newline], as: UTF8.self)
            pending.removeSubrange(...newline)
            if !command(line) { return false }
        }
        return true
    }

    private func command(_ line: String) -> Bool {
        if line == "close" {
            finish()
            return false
        }
        if line.hasPrefix("state "), let (state, sentence, secretLabel) = parseState(line.dropFirst(6)) {
            dialog.update(state: state, sentence: sentence, secretLabel: secretLabel)
        } else if !line.isEmpty {
            complain("unknown command: \(line)")
        }
        return true
    }
}

enum Input {
    static let readable: GUnixFDSourceFunc = { _, _, data in
        guard let data else { return 0 }
        return Unmanaged<Demo>.fromOpaque(data).takeUnretainedValue().readInput() ? 1 : 0
    }
}

var options: [String: String] = [:]
var arguments = CommandLine.arguments.dropFirst()
let known = ["--title", "--heading", "--description", "--cancel", "--use-password", "--submit", "--secret-label", "--parent", "--state"]
while let option = arguments.popFirst() {
    guard known.contains(option), let value = arguments.popFirst() else {
        complain(option == "--help" ? usage : "unknown or incomplete option \(option)\n\(usage)")
        exit(option == "--help" ? 0 : 2)
    }
    options[option] = value
}
guard let title = options["--title"], let heading = options["--heading"] else {
    complain("--title and --heading are required\n\(usage)")
    exit(2)
}
let initial = options["--state"].map { parseState(Substring($0)) }
if case .some(.none) = initial {
    complain("--state must be NAME|SENTENCE[|SECRET LABEL]\n\(usage)")
    exit(2)
}

guard PromptDialog.initialize() else {
    complain("cannot show the dialog: no display could be opened (set DISPLAY or WAYLAND_DISPLAY to a running display server).")
    exit(1)
}
let text = DialogText(title: title, heading: heading, description: options["--description"],
                      cancelLabel: options["--cancel"] ?? "_Cancel", usePasswordLabel: options["--use-password"],
                      submitLabel: options["--submit"] ?? "_Unlock", secretLabel: options["--secret-label"])
guard let dialog = Dialog(text: text, parentWindow: options["--parent"]), let loop = g_main_loop_new(nil, 0) else {
    complain("GTK could not make the dialog.")
    exit(1)
}
let demo = Demo(dialog: dialog, loop: loop)
dialog.onCancel = {
    say("cancel")
    demo.finish()
}
dialog.onOtherWay = { say("use-password") }
// The length only: the bytes are the person's secret.
dialog.onSecret = { secret in say("secret \(secret.count)") }
dialog.onShown = { handle in say("shown \(handle ?? "none")") }
if let (state, sentence, secretLabel) = initial.flatMap({ $0 }) {
    dialog.update(state: state, sentence: sentence, secretLabel: secretLabel)
}
dialog.present()
_ = g_unix_fd_add(STDIN_FILENO, GIOCondition(rawValue: G_IO_IN.rawValue | G_IO_HUP.rawValue), Input.readable,
                  Unmanaged.passUnretained(demo).toOpaque())
g_main_loop_run(loop)
g_main_loop_unref(loop)
