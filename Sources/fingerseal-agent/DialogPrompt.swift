import FingersealWire
import Glibc
import PromptDialog
import SessionBusKit
import SodiumKit

/// The agent's own dialog (GTK 4, `PromptDialog`) for a request that does not draw its own
/// prompt: it shows the request's state and sentences, takes the PIN or the password, offers
/// "Use password instead" where the application allows it ("Use PIN instead" beside the
/// password), and cancels with Esc. Main thread
/// only.
final class DialogPrompt: PromptSurface {
    private let dialog: Dialog
    private weak var request: AgentRequest?
    private var presented = false
    /// Set while a dialog waits to be shown (`show`'s `settled`).
    private var presentTimer: UInt32 = 0
    /// The longest a dialog waits for its request to settle before it is shown anyway (the
    /// broker may wait for the reader): enough for the broker's next message on a busy machine.
    static let settleGrace = 1.0

    /// Whether a dialog can be shown in this session: a display in the agent's environment
    /// that GTK can open (tried once, on the main thread).
    static var available: Bool {
        if let known = knownAvailable { return known }
        let display = ["DISPLAY", "WAYLAND_DISPLAY"].contains { (name: String) in getenv(name).map { $0.pointee != 0 } ?? false }
        // Named before GTK starts: screen readers list the agent by it, not as "Unnamed".
        if display {
            PromptDialog.setApplicationName("fingerseal")
            PromptDialog.preferSoftwareRendering()
        }
        let available = display && PromptDialog.initialize()
        knownAvailable = available
        return available
    }

    nonisolated(unsafe) private static var knownAvailable: Bool? = nil

    /// nil without a display.
    init?(_ words: DialogWords, parentWindow: String?, passwordAllowed: Bool) {
        guard DialogPrompt.available else { return nil }
        // The PIN is a turn away only from the password, which the application allowed.
        let text = DialogText(title: words.title, heading: words.heading, description: words.description, cancelLabel: AgentStrings.cancel,
                              usePasswordLabel: passwordAllowed ? AgentStrings.usePassword : nil,
                              usePINLabel: passwordAllowed ? AgentStrings.usePIN : nil, submitLabel: AgentStrings.submit,
                              fingerprintIcon: AgentStrings.fingerprintIcon)
        guard let dialog = Dialog(text: text, parentWindow: parentWindow) else { return nil }
        self.dialog = dialog
    }

    /// Wires the person's actions to `request`.
    func attach(_ request: AgentRequest) {
        self.request = request
        dialog.onCancel = { [weak self] in self?.request?.cancel() }
        dialog.onOtherWay = { [weak self] in
            guard let self, let way = self.otherWay else { return }
            self.request?.turn(to: way)
        }
        dialog.onSecret = { [weak self] typed in
            // Into secure memory at once; the dialog wipes its own bytes when this returns.
            guard let request = self?.request, let secret = try? SecureBytes(copying: typed) else { return }
            request.answer(secret)
        }
    }

    /// What the other way's button leads to now.
    private var otherWay: OtherWay?

    /// Shown once the request settled, or after `settleGrace`: a dialog announced with the
    /// broker's preamble ("Confirm it is you.") would get its field and its instruction while
    /// a screen reader speaks, and the focus would move under the person (CI: Orca heard the
    /// instruction twice).
    func show(_ state: RequestState, sentence: String, field: Ask.Purpose?, otherWay: OtherWay?, settled: Bool) {
        self.otherWay = otherWay
        let shown: DialogState
        switch (state, field) {
        case (_, .pin?): shown = .needsPIN
        case (_, .accountPassword?): shown = .needsPassword
        case (.waitingForFinger, _): shown = .waitingForFinger
        case (.retry, _): shown = .retry
        case (.noMatch, _): shown = .noMatch
        case (.locked, _): shown = .locked
        case (.needsPIN, _): shown = .needsPIN
        case (.needsPassword, _): shown = .needsPassword
        case (.checking, _): shown = .working
        }
        let label = field == .pin ? AgentStrings.pinLabel : field == .accountPassword ? AgentStrings.passwordLabel : nil
        let update = { [dialog] in
            dialog.update(state: shown, sentence: sentence, secretLabel: label,
                          fingerWanted: [.waitingForFinger, .retry, .noMatch].contains(state), otherWay: otherWay)
        }
        if presented { return update() }
        // Not shown yet: only the last state before it appears reaches its controls, set once.
        // Each earlier one would be a description change GTK sends later, which a screen reader
        // says after its announcement (CI, loaded: "Confirm it is you." and the instruction again).
        pendingUpdate = update
        if settled {
            present()
        } else if presentTimer == 0 {
            presentTimer = MainLoop.after(DialogPrompt.settleGrace) { [weak self] in
                self?.presentTimer = 0
                self?.present()
            }
        }
    }

    /// The state a dialog not yet shown takes as it appears.
    private var pendingUpdate: (() -> Void)? = nil

    private func present() {
        guard !presented else { return }
        presented = true
        MainLoop.cancel(presentTimer)
        presentTimer = 0
        pendingUpdate?()
        pendingUpdate = nil
        dialog.present()
    }

    func close() {
        MainLoop.cancel(presentTimer)
        presentTimer = 0
        dialog.close()
    }
}
