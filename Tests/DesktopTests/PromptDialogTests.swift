import Glibc
import Testing
@testable import TestSupport

/// The agent's prompt dialog (issue 21 §2) as a screen-reader and keyboard user meets it:
/// dialog-demo on a private X server and AT-SPI bus (DesktopSession), read through pyatspi,
/// driven with xdotool. Each test has a desktop of its own; serialized, so that two dialogs
/// never compete for the machine's two cores.
@Suite(.serialized, .enabled(if: DesktopSession.missing == nil, Comment(rawValue: DesktopSession.missing ?? "")))
struct PromptDialogTests {
    static let heading = "Meander wants to unlock with your fingerprint"
    static let reason = "To open your contact assignments."
    static let touch = "Touch the fingerprint reader."

    @Test func theWindowIsAModalDialogNamedByItsTitleAndDescribedByItsReason() throws {
        let desktop = try DesktopSession()
        let dialog = try DemoDialog(desktop)
        let tree = try desktop.accessibleTree("Unlock", focused: "Use password instead")
        #expect(tree.role == "dialog")
        #expect(tree.name == "Unlock")
        #expect(tree.description.contains(Self.heading) && tree.description.contains(Self.reason))
        #expect(tree.states.contains("modal"))
        #expect(tree.first(role: "heading")?.text == Self.heading)
        #expect(tree.first(role: "status bar")?.text == Self.touch)
        // Every control named once, without mnemonic marks (GTK 4.8 gave "_Cancel Cancel").
        #expect(tree.all(role: "push button").map(\.name) == ["Use password instead", "Cancel"])
        #expect(!tree.all.contains { $0.name.contains("_") || $0.name.hasPrefix("Gtk") })
        // Waiting for a finger, the focus is on the way out of the scan.
        #expect(tree.focused?.role == "push button")
        // The sentence is said with the dialog (the end of its description); the control
        // that first takes the focus is described by it from the next sentence on
        // (Dialog.giveInitialFocus).
        #expect(tree.description.hasSuffix(Self.touch))
        #expect(dialog.close().stdout.contains("closed"))
    }

    @Test func theFocusIsOnWhatEachStateNeedsFirst() throws {
        let desktop = try DesktopSession()
        let dialog = try DemoDialog(desktop)

        dialog.state("needs-pin|Enter your PIN.")
        var tree = try desktop.accessibleTree("Unlock", focused: "PIN", showing: "Enter your PIN.")
        #expect(tree.focused?.role == "password text")
        // Said with the dialog when the focus first arrives (the end of its description), or
        // as the field's description when it came after (Dialog.giveInitialFocus).
        #expect(tree.description.hasSuffix("Enter your PIN.") || tree.focused?.description == "Enter your PIN.")
        #expect(tree.focused?.states.contains("editable") == true)
        #expect(tree.first(role: "push button", name: "Unlock")?.states.contains("sensitive") == true)

        // Checking: the focus stays; nothing can be typed or sent meanwhile.
        dialog.state("working|Checking your PIN.|_PIN")
        tree = try desktop.accessibleTree("Unlock", focused: "PIN", showing: "Checking your PIN.")
        #expect(tree.focused?.states.contains("editable") == false)
        #expect(tree.first(role: "push button", name: "Unlock")?.states.contains("sensitive") == false)

        dialog.state("locked|Too many tries. Use your password.")
        tree = try desktop.accessibleTree("Unlock", focused: "Use password instead", showing: "Too many tries. Use your password.")
        #expect(tree.first(role: "password text") == nil)

        dialog.state("needs-password|Enter your password.|_Password")
        tree = try desktop.accessibleTree("Unlock", focused: "Password", showing: "Enter your password.")
        #expect(tree.first(role: "push button", name: "Use password instead") == nil)

        dialog.state("done|Unlocked.")
        tree = try desktop.accessibleTree("Unlock", focused: "Cancel", showing: "Unlocked.")
        #expect(tree.first(role: "password text") == nil)
        _ = dialog.close()

        // Without "Use password instead", waiting for a finger focuses Cancel.
        let plain = try DemoDialog(desktop, title: "Confirm", usePassword: false)
        tree = try desktop.accessibleTree("Confirm", focused: "Cancel")
        #expect(tree.all(role: "push button").map(\.name) == ["Cancel"])
        _ = plain.close()
    }

    @Test func escapeCancelOrClosingTheWindowCancelsOnce() throws {
        let desktop = try DesktopSession()
        // Esc twice: the first cancels and closes the dialog, the second finds nothing.
        let escaped = try DemoDialog(desktop, title: "Escape")
        try desktop.key("Escape", "Escape")
        let afterEscape = escaped.finish()
        #expect(afterEscape.status == 0)
        #expect(afterEscape.lines == ["cancel", "closed"], "\(afterEscape.all)")

        // The Cancel button's mnemonic.
        let mnemonic = try DemoDialog(desktop, title: "Mnemonic")
        try desktop.key("alt+c")
        #expect(mnemonic.finish().lines == ["cancel", "closed"])

        // A window manager's close button.
        let closed = try DemoDialog(desktop, title: "Closed")
        try desktop.requestClose(closed.handle)
        #expect(closed.finish().lines == ["cancel", "closed"])
    }

    @Test func aPINTypedOnTheKeyboardIsLentOnceAndTheEntryEmptied() throws {
        let desktop = try DesktopSession()
        let dialog = try DemoDialog(desktop, state: "needs-pin|Enter your PIN.")
        _ = try desktop.accessibleTree("Unlock", focused: "PIN")
        // Enter on an empty entry sends nothing: the first secret reported is the typed one.
        try desktop.key("Return")
        try desktop.type("2580")
        try desktop.key("Return")
        #expect(dialog.line() == "secret 4")
        let tree = try desktop.accessibleTree("Unlock", focused: "PIN")
        #expect(tree.focused?.length == 0)
        // Emptied, not only wiped: what is typed next is sent alone.
        try desktop.type("7")
        try desktop.key("Return")
        #expect(dialog.line() == "secret 1")
        let result = dialog.close()
        #expect(result.lines == ["closed"])
        #expect(!result.all.contains("2580"))
    }

    @Test func tabReachesEveryControlAndAltUChoosesThePassword() throws {
        let desktop = try DesktopSession()
        let dialog = try DemoDialog(desktop, state: "needs-pin|Enter your PIN.")
        var focus = try #require(try desktop.accessibleTree("Unlock", focused: "PIN").focused?.name)
        var visited = [focus]
        for _ in 0..<4 {
            try desktop.key("Tab")
            focus = try #require(try desktop.accessibleTree("Unlock", focusLeaves: focus).focused?.name)
            visited.append(focus)
        }
        #expect(visited == ["PIN", "Use password instead", "Cancel", "Unlock", "PIN"])

        try desktop.key("alt+u")
        #expect(dialog.line() == "use-password")
        // Still open: the agent decides what comes next.
        #expect(try desktop.accessibleTree("Unlock").role == "dialog")
        _ = dialog.close()
    }

    @Test func aStateChangeIsAnnouncedWithItsSentence() throws {
        let desktop = try DesktopSession()
        let dialog = try DemoDialog(desktop)
        let sentence = "The finger moved too fast. Try again, more slowly."
        let events = try desktop.listen("Unlock", role: "status bar", contains: sentence)
        dialog.state("retry|" + sentence)
        let event = try events.wait()
        #expect(event.type == "object:property-change:accessible-name")
        #expect(event.data == sentence)
        // The focused control is described by the sentence too, for screen readers that read
        // only what has the focus.
        let tree = try desktop.accessibleTree("Unlock", showing: sentence)
        #expect(tree.focused?.description == sentence)
        _ = dialog.close()
    }

    @Test func screenshotsAtTwiceTheScaleAreTwiceTheSize() throws {
        let desktop = try DesktopSession()
        var sizes: [(width: Int, height: Int)] = []
        for scale in [1, 2] {
            let dialog = try DemoDialog(desktop, title: "Scale \(scale)", state: "needs-pin|Enter your PIN.",
                                        environment: ["GDK_SCALE": String(scale)])
            let shot = try desktop.screenshot(dialog.handle, named: "prompt-dialog-scale-\(scale)", suite: "PromptDialogTests")
            print("screenshot at GDK_SCALE=\(scale): \(shot.path) (\(shot.width)×\(shot.height))")
            #expect(access(shot.path, R_OK) == 0)
            sizes.append((shot.width, shot.height))
            _ = dialog.close()
        }
        let (one, two) = (sizes[0], sizes[1])
        #expect(one.width > 200 && one.height > 100)
        #expect((1.8...2.2).contains(Double(two.width) / Double(one.width)), "\(sizes)")
        #expect((1.8...2.2).contains(Double(two.height) / Double(one.height)), "\(sizes)")
    }

    @Test func theDialogStaysAboveTheApplicationThatAsked() throws {
        let desktop = try DesktopSession()
        let application = try DemoDialog(desktop, title: "Meander")
        let dialog = try DemoDialog(desktop, extra: ["--parent", application.handle])
        let hint = try desktop.property("WM_TRANSIENT_FOR", of: dialog.handle)
        #expect(hint.contains("window id # 0x" + application.handle.dropFirst(4)), "\(hint)")
        _ = dialog.close()

        // A Wayland handle on X11 cannot be used: the dialog shows without a parent.
        let foreign = try DemoDialog(desktop, title: "Foreign", extra: ["--parent", "wayland:abc123"])
        #expect(try desktop.property("WM_TRANSIENT_FOR", of: foreign.handle).contains("not found"))
        _ = foreign.close()
        _ = application.close()
    }
}

/// Runs without a desktop: what happens where there is no display at all.
@Suite struct PromptDialogWithoutDisplayTests {
    @Test func withoutADisplayTheDemoSaysSoAndFails() throws {
        let result = try Child(Paths.buildDirectory + "/dialog-demo", ["--title", "Unlock", "--heading", "Unlock"],
                               environment: ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/nonexistent"]).finish(limit: 30)
        #expect(result.status == 1)
        #expect(result.stderr.contains("cannot show the dialog: no display could be opened"), "\(result.all)")
        #expect(result.stdout.isEmpty)
    }
}

/// dialog-demo on a DesktopSession, shown and given the keyboard focus.
final class DemoDialog {
    let child: Child
    /// "x11:HEX".
    let handle: String

    init(_ desktop: DesktopSession, title: String = "Unlock", usePassword: Bool = true,
         state: String = "waiting-for-finger|" + PromptDialogTests.touch, extra: [String] = [],
         environment: [String: String] = [:]) throws {
        var arguments = ["--title", title, "--heading", PromptDialogTests.heading, "--description", PromptDialogTests.reason,
                         "--cancel", "_Cancel", "--submit", "Un_lock", "--secret-label", "_PIN", "--state", state]
        if usePassword { arguments += ["--use-password", "_Use password instead"] }
        child = try Child(Paths.buildDirectory + "/dialog-demo", arguments + extra,
                          environment: desktop.environment.merging(environment) { $1 }, openInput: true)
        guard let shown = child.readLine(timeout: 20), shown.hasPrefix("shown x11:") else {
            throw TestFailure("the dialog did not show: \(child.finish(limit: 5).all)")
        }
        handle = String(shown.dropFirst("shown ".count))
        // No window manager here to give a new window the keyboard, as one would.
        try desktop.focus(handle)
    }

    /// "NAME|SENTENCE[|SECRET LABEL]".
    func state(_ spec: String) { child.send("state \(spec)\n") }

    /// The next line the demo printed (a callback), nil after 10 s without one.
    func line() -> String? { child.readLine(timeout: 10) }

    /// Closes it as the agent would, and collects the rest of its output.
    func close() -> DemoResult {
        child.send("close\n")
        return finish()
    }

    /// What it printed from now until it exits (it exits by itself after a cancel).
    func finish() -> DemoResult { DemoResult(child.finish(limit: 15)) }
}

struct DemoResult {
    let status: Int32
    let stdout: String
    let all: String
    var lines: [String] { stdout.split(separator: "\n").map(String.init) }

    init(_ result: Child.Result) {
        status = result.status
        stdout = result.stdout
        all = result.all
    }
}
