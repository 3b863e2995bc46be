import Glibc
import Testing
@testable import TestSupport

/// The agent's own dialog (issue 21 §2) as an application gets it: the example client asks
/// fingerseal-agent on a private desktop (Xvfb, session bus, AT-SPI) with no prompt of its
/// own, in front of a broker on virtual_device; a screen reader's view through pyatspi, a
/// keyboard user's through xdotool.
@Suite(.serialized, .enabled(if: DesktopSession.missing == nil && AgentRig.missing == nil,
                             Comment(rawValue: DesktopSession.missing ?? AgentRig.missing ?? "")))
struct AgentDialogTests {
    static let title = "Confirm it is you"
    /// The name the application gives itself, with its executable (what the kernel vouches
    /// for) beside it (issue 31 §6).
    static var heading: String { "Meander (\(AgentRig.pythonExecutable)) wants to confirm it is you to open contact assignments." }

    /// The dialog's X11 handle, once it is mapped: found by its title, given the keyboard (no
    /// window manager here does that).
    static func dialogHandle(_ desktop: DesktopSession) throws -> String {
        let found = try Child.run("/usr/bin/xdotool", ["search", "--sync", "--onlyvisible", "--name", title],
                                  environment: desktop.environment)
        guard found.status == 0, let decimal = found.stdout.split(separator: "\n").last, let id = UInt(decimal) else {
            throw TestFailure("no dialog window: \(found.all)")
        }
        let handle = "x11:" + String(id, radix: 16)
        try desktop.focus(handle)
        return handle
    }

    @Test func aStepUpShowsAnAccessibleDialogThatAFingerCloses() throws {
        let desktop = try DesktopSession()
        let agent = try AgentRig(desktop: desktop.environment)
        let shownAfter = VirtualSensor.now()
        let client = try agent.client(["step-up", "contacts", "open contact assignments", "--app-name", "Meander"])
        #expect(client.waitForLine(containing: "waiting-for-finger"))
        let handle = try Self.dialogHandle(desktop)
        let shown = VirtualSensor.now()
        print("agent dialog: shown \(Int((shown - shownAfter) * 1000)) ms after the application asked, "
              + "\(Int((shown - agent.agentStarted) * 1000)) ms after the agent started")
        // The finger, or the PIN: the focus is in the PIN's field, the sentence says both.
        let tree = try desktop.accessibleTree(Self.title, focused: "PIN", showing: "Swipe your finger across the reader, or type your PIN.")
        #expect(tree.role == "dialog" && tree.name == Self.title)
        #expect(tree.states.contains("modal"))
        // The sentence is said with the dialog (its description); the focused field is
        // described by it from the next sentence on (Dialog.giveInitialFocus).
        #expect(tree.focused?.role == "password text" && tree.description.hasSuffix("Swipe your finger across the reader, or type your PIN."))
        #expect(tree.description.contains(Self.heading), "\(tree.description)")
        #expect(tree.first(role: "heading")?.text == Self.heading)
        #expect(tree.all(role: "push button").map(\.name) == ["Use password instead", "Cancel", "Continue"])
        let small = try desktop.screenshot(handle, named: "agent-step-up-scale-1", suite: "AgentDialogTests")
        print("screenshot: \(small.path)")
        try VirtualSensor.send("SCAN finger-a", to: agent.rig.sensor)
        let run = ClientRun(client.finish(limit: 30))
        #expect(run.result.status == 0 && run.responses.first?.method == "finger", "\(run.result.all)")
        // The dialog is gone with the request.
        let gone = try Child.run("/usr/bin/xdotool", ["search", "--onlyvisible", "--name", Self.title], environment: desktop.environment)
        #expect(gone.stdout.isEmpty, "\(gone.all)")
    }

    @Test func escapeCancelsAndNothingIsCounted() throws {
        let desktop = try DesktopSession()
        let agent = try AgentRig(desktop: desktop.environment)
        let client = try agent.client(["step-up", "contacts", "open contact assignments", "--app-name", "Meander"])
        #expect(client.waitForLine(containing: "waiting-for-finger"))
        _ = try Self.dialogHandle(desktop)
        _ = try desktop.accessibleTree(Self.title, focused: "PIN")
        try desktop.key("Escape")
        let run = ClientRun(client.finish(limit: 30))
        #expect(run.result.status == 1 && run.responses.first?.outcome == "cancelled", "\(run.result.all)")
        #expect(try agent.rig.lockout().fingerFailures == 0)
    }

    @Test func aPINTypedInTheDialogConfirms() throws {
        let desktop = try DesktopSession()
        let agent = try AgentRig(enroll: false, desktop: desktop.environment)
        let client = try agent.client(["step-up", "contacts", "open contact assignments", "--app-name", "Meander", "--methods", "pin"])
        #expect(client.waitForLine(containing: "needs-pin"))
        _ = try Self.dialogHandle(desktop)
        let tree = try desktop.accessibleTree(Self.title, focused: "PIN")
        #expect(tree.focused?.role == "password text")
        try desktop.type(AgentRig.pin)
        try desktop.key("Return")
        let run = ClientRun(client.finish(limit: 30))
        #expect(run.result.status == 0 && run.responses.first?.method == "pin", "\(run.result.all)")
        #expect(!run.result.all.contains(AgentRig.pin))
    }

    @Test func theDialogIsReadableAtTwiceTheScale() throws {
        var sizes: [(Int, Int)] = []
        for scale in ["1", "2"] {
            let desktop = try DesktopSession()
            let agent = try AgentRig(desktop: desktop.environment, agentEnvironment: ["GDK_SCALE": scale])
            let client = try agent.client(["step-up", "contacts", "open contact assignments", "--app-name", "Meander",
                                           "--cancel-at", "never"])
            #expect(client.waitForLine(containing: "waiting-for-finger"))
            let handle = try Self.dialogHandle(desktop)
            _ = try desktop.accessibleTree(Self.title, focused: "PIN")
            let shot = try desktop.screenshot(handle, named: "agent-step-up-scale-\(scale)", suite: "AgentDialogTests")
            print("screenshot at GDK_SCALE=\(scale): \(shot.path) (\(shot.width)×\(shot.height))")
            sizes.append((shot.width, shot.height))
            try desktop.key("Escape")
            _ = client.finish(limit: 30)
        }
        guard sizes.count == 2 else { return }
        let (wide, high) = (Double(sizes[1].0) / Double(sizes[0].0), Double(sizes[1].1) / Double(sizes[0].1))
        #expect((1.8...2.2).contains(wide) && (1.8...2.2).contains(high), "\(sizes)")
    }
}
