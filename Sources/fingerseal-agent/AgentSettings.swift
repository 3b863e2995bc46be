import Glibc
import FingersealWire
import Localization

/// How this agent runs: from its command line and its own session's environment (the agent
/// runs as the user; nothing here is trusted by the broker).
struct AgentSettings {
    /// The broker's socket (`--socket`, else FINGERSEAL_SOCKET, else the system's).
    var socketPath = defaultBrokerSocket
    /// The person's language, for the broker's sentences and the agent's own.
    var language: String? = nil
    /// The person's time zone, for the times in the broker's sentences (`ClientTimeZone`).
    var timeZone: String? = nil
    /// Seconds without a request or a confirmation held before the agent ends; nil: never.
    var idleExit: Double? = 60
    /// Whether a dialog can be shown at all (a display in the agent's environment, and GTK
    /// able to open it).
    var canShowDialog: Bool { DialogPrompt.available }

    /// The agent's dialog for a request, with its heading; nil without a display.
    func makeDialog(_ words: DialogWords, _ parentWindow: String?, passwordAllowed: Bool) -> DialogPrompt? {
        DialogPrompt(words, parentWindow: parentWindow, passwordAllowed: passwordAllowed)
    }
}
