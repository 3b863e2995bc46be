import FingersealWire

/// The agent's own dialog (GTK 4), for requests that do not draw their own prompt.
final class DialogPrompt: PromptSurface {
    /// Whether a dialog can be shown in this session.
    static var available: Bool { false }

    init?(heading: String, parentWindow: String?) {
        return nil
    }

    func attach(_ request: AgentRequest) {}

    func show(_ state: RequestState, sentence: String, field: Ask.Purpose?, canUsePassword: Bool) {}

    func close() {}
}
