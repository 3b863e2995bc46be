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
    /// What it does and for which program, so the window list and a screen reader's first
    /// words say who asks (issue 33 §1).
    static let title = "Meander: confirm it is you"
    /// The name the application gives itself, with its executable (what the kernel vouches
    /// for) beside it (issue 31 §6).
    static var heading: String { "Meander (\(AgentRig.pythonExecutable)) wants to confirm it is you." }
    /// The program's own words, beneath (issue 33 §2: no fragment glued into a sentence).
    static let reason = "Contact assignments hold personal data."

    /// The dialog's X11 handle, once it is mapped: found by its title, given the keyboard (no
    /// window manager here does that).
    static func dialogHandle(_ desktop: DesktopSession, title: String = title, limit: Double = 120) throws -> String {
        let handle = try desktop.window(titled: title, limit: limit)
        try desktop.focus(handle)
        return handle
    }

    @Test func aStepUpShowsAnAccessibleDialogThatAFingerCloses() throws {
        let desktop = try DesktopSession()
        let agent = try AgentRig(desktop: desktop.environment)
        let shownAfter = VirtualSensor.now()
        let client = try agent.client(["step-up", "contacts", Self.reason, "--app-name", "Meander"])
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
        #expect(tree.description.contains(Self.heading) && tree.description.contains(Self.reason), "\(tree.description)")
        #expect(!tree.description.contains("contacts"), "the context is an identifier, never shown: \(tree.description)")
        #expect(tree.first(role: "heading")?.text == Self.heading)
        // The theme's fingerprint beside the sentence, named (issue 33): an image, no meaning of its own.
        #expect(tree.first(role: "image")?.name == "Fingerprint reader", "\(tree.all.map(\.role))")
        #expect(tree.all(role: "push button").map(\.name) == ["Use password instead", "Cancel", "Continue"])
        let small = try desktop.screenshot(handle, named: "agent-step-up-scale-1", suite: "AgentDialogTests")
        print("screenshot: \(small.path)")
        try VirtualSensor.send("SCAN finger-a", to: agent.rig.sensor)
        let run = ClientRun(client.finish(limit: 30))
        #expect(run.result.status == 0 && run.responses.first?.method == "finger", "\(run.result.all)")
        // The dialog is gone with the request.
        #expect(throws: Never.self) { try desktop.waitUntilGone(titled: Self.title, limit: 10) }
    }

    /// Also: a script that gives no name is titled by the script, not its interpreter
    /// (issue 33 §8: "python3.11 wants…").
    @Test func escapeCancelsAndNothingIsCounted() throws {
        let desktop = try DesktopSession()
        let agent = try AgentRig(desktop: desktop.environment)
        let client = try agent.client(["step-up", "contacts", Self.reason])
        #expect(client.waitForLine(containing: "waiting-for-finger"))
        let title = "fingerseal-app: confirm it is you"
        _ = try Self.dialogHandle(desktop, title: title)
        let tree = try desktop.accessibleTree(title, focused: "PIN")
        #expect(tree.first(role: "heading")?.text == "\(AgentRig.pythonExecutable) wants to confirm it is you.", "\(tree.description)")
        try desktop.key("Escape")
        let run = ClientRun(client.finish(limit: 30))
        #expect(run.result.status == 1 && run.responses.first?.outcome == "cancelled", "\(run.result.all)")
        #expect(try agent.rig.lockout().fingerFailures == 0)
    }

    @Test func aPINTypedInTheDialogConfirms() throws {
        let desktop = try DesktopSession()
        let agent = try AgentRig(enroll: false, desktop: desktop.environment)
        let client = try agent.client(["step-up", "contacts", Self.reason, "--app-name", "Meander", "--methods", "pin"])
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

    /// No reader (issue 33 §3): the password first, the sentence saying why and the program's
    /// reason still there; "Use PIN instead" turns to the PIN, and the PIN confirms.
    @Test func withoutAReaderTheDialogAsksThePasswordFirstAndOffersThePIN() throws {
        let desktop = try DesktopSession()
        let agent = try AgentRig(desktop: desktop.environment)
        try agent.rig.unplugReader()
        let client = try agent.client(["step-up", "contacts", Self.reason, "--app-name", "Meander"])
        #expect(client.waitForLine(containing: "needs-password"))
        _ = try Self.dialogHandle(desktop)
        let password = try desktop.accessibleTree(Self.title, focused: "Password",
                                                  showing: "No fingerprint reader is connected. Enter your account password.")
        #expect(password.description.contains(Self.reason), "\(password.description)")
        #expect(password.all(role: "push button").map(\.name) == ["Use PIN instead", "Cancel", "Continue"])
        try desktop.press("Use PIN instead", in: Self.title)
        let pin = try desktop.accessibleTree(Self.title, focused: "PIN", showing: "Enter your PIN.")
        #expect(pin.all(role: "push button").map(\.name) == ["Use password instead", "Cancel", "Continue"])
        try desktop.type(AgentRig.pin)
        try desktop.key("Return")
        let run = ClientRun(client.finish(limit: 30))
        #expect(run.result.status == 0 && run.responses.first?.method == "pin", "\(run.result.all)")
        let counters = try agent.rig.lockout()
        #expect(counters.pinFailures == 0 && (counters.passwordFailures ?? 0) == 0, "\(counters)")
    }

    /// The example application (examples/apps/meander.py) as its person meets it (issue 33):
    /// at start the agent's dialog says "Unlock Meander" and a finger opens the app; its
    /// sensitive screen asks again, titled by the app, and Escape there leaves the app as it
    /// was (nothing counted); the settings page reads fingerseal's own sentences.
    @Test(.enabled(if: LocalIdP.available)) func theExampleApplicationsStories() throws {
        let idp = try LocalIdP()
        let desktop = try DesktopSession()
        let agent = try AgentRig(desktop: desktop.environment)
        try agent.signIn(at: idp)
        let command = [AgentRig.python, Paths.packageRoot + "/examples/apps/meander.py"]
        let app = try Child(command[0], Array(command.dropFirst()), environment: agent.environment())
        defer { app.signal(SIGTERM); _ = app.finish(limit: 10) }
        do { _ = try Self.dialogHandle(desktop, title: "Unlock Meander") } catch {
            app.signal(SIGTERM)
            throw TestFailure("\(error); the app said: \(app.finish(limit: 10).all); the agent: \(agent.agentLog)")
        }
        let unlock = try desktop.accessibleTree("Unlock Meander", showing: "Your assignments are on the server.")
        #expect(unlock.role == "dialog" && unlock.description.contains("Your assignments are on the server."), "\(unlock.description)")
        try VirtualSensor.send("SCAN finger-a", to: agent.rig.sensor)
        // GTK 4.8 shows every page of a stack to AT-SPI alike; the page shown is where the app
        // puts the focus, so that a screen reader says where the person is.
        try desktop.waitUntilGone(titled: "Unlock Meander")
        let window = try desktop.window(titled: "Meander")
        try desktop.focus(window)
        let welcome = try desktop.accessibleTree("Meander", focused: "Contact assignments")
        #expect(welcome.all(role: "push button").map(\.name).contains("Contact assignments"), "each button named once")
        try desktop.press("Contact assignments", in: "Meander")
        do { _ = try Self.dialogHandle(desktop, title: "Meander: confirm it is you", limit: 30) } catch {
            app.signal(SIGTERM)
            throw TestFailure("\(error) The app said: \(app.finish(limit: 10).all); the agent: \(agent.agentLog)")
        }
        try desktop.key("Escape")
        try desktop.waitUntilGone(titled: "Meander: confirm it is you")
        try desktop.focus(window)
        let home = try desktop.accessibleTree("Meander", focused: "Contact assignments")
        #expect(home.name == "Meander")
        #expect(try agent.rig.lockout().fingerFailures == 0)
    }

    @Test func theDialogIsReadableAtTwiceTheScale() throws {
        var sizes: [(Int, Int)] = []
        for scale in ["1", "2"] {
            let desktop = try DesktopSession()
            let agent = try AgentRig(desktop: desktop.environment, agentEnvironment: ["GDK_SCALE": scale])
            let client = try agent.client(["step-up", "contacts", Self.reason, "--app-name", "Meander",
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
