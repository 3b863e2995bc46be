/// Where prompts and messages go: the PAM conversation, or the terminal. Plain sentences a
/// screen reader can speak.
public protocol Prompter {
    func info(_ text: String)
    func error(_ text: String)
}
