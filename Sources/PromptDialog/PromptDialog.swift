import CGtk

/// The agent's prompt dialog (issue 21 §2) over GTK 4: only GTK lives here. The agent decides
/// what happens and words every sentence; this target shows them, accessibly.
///
/// Main thread only: GTK is single-threaded. Call `initialize()`, make, update and close
/// dialogs, and run the GLib main loop (which delivers the callbacks) on one thread, the
/// process's main thread.
public enum PromptDialog {
    /// Opens the default display (GTK's `gtk_init_check`). False when there is none that GTK
    /// can use (no DISPLAY or WAYLAND_DISPLAY, or the server refuses): the caller falls back
    /// (the application draws its own prompt). Safe to call again; once true, stays true.
    public static func initialize() -> Bool {
        if gtk_is_initialized() != 0 { return true }
        return fs_gtk_init_check() != 0
    }

    /// The process's name as screen readers list it: GTK 4.8 names its AT-SPI application by
    /// GLib's program name ("Unnamed" without one, as gtk_init, given no arguments, sets
    /// none); the application name (window lists) is the same. Call before `initialize()`.
    public static func setApplicationName(_ name: String) {
        g_set_prgname(name)
        g_set_application_name(name)
    }

    /// Draws with GTK's cairo renderer unless the person chose one (GSK_RENDERER): a small
    /// dialog gains nothing from OpenGL, and a resident process that loaded the GL driver keeps
    /// it (measured under Xvfb with Mesa's llvmpipe: 162 MiB resident against 92 MiB). Call
    /// before `initialize()`.
    public static func preferSoftwareRendering() {
        setenv("GSK_RENDERER", "cairo", 0)
    }
}

/// The button beside Cancel: the other way in, when the current one is not what the person
/// wants (`Dialog.update`).
public enum OtherWay: Sendable, Equatable { case password, pin }

/// What the dialog says, every string from the caller, already translated. Button and secret
/// labels may mark a mnemonic with an underscore ("_Cancel": Alt+C), "__" for an underscore
/// itself; their accessible names are the same text without the marks. Give each control a
/// different mnemonic: GTK moves the focus between controls that share one instead of
/// activating either ("_Use password instead" and "_Unlock" would).
public struct DialogText: Sendable, Equatable {
    /// The window's title and the dialog's accessible name ("Unlock").
    public var title: String
    /// The first line, large ("Meander wants to unlock with your fingerprint").
    public var heading: String
    /// Why, under the heading; with the heading, the dialog's accessible description.
    public var description: String?
    public var cancelLabel: String
    /// nil: no "Use password instead" button.
    public var usePasswordLabel: String?
    /// nil: no "Use PIN instead" button (the same button, relabelled: `Dialog.update`).
    public var usePINLabel: String?
    /// The button that sends the typed PIN or password (Enter in the entry does the same).
    public var submitLabel: String
    /// The entry's label when `update` is given `.needsPIN` or `.needsPassword` without one.
    public var secretLabel: String?
    /// The accessible name of the fingerprint icon beside the sentence while a finger is
    /// wanted (the icon theme's auth-fingerprint-symbolic); nil: no icon.
    public var fingerprintIcon: String?

    public init(title: String, heading: String, description: String? = nil, cancelLabel: String,
                usePasswordLabel: String? = nil, usePINLabel: String? = nil, submitLabel: String, secretLabel: String? = nil,
                fingerprintIcon: String? = nil) {
        self.usePINLabel = usePINLabel
        self.fingerprintIcon = fingerprintIcon
        self.title = title
        self.heading = heading
        self.description = description
        self.cancelLabel = cancelLabel
        self.usePasswordLabel = usePasswordLabel
        self.submitLabel = submitLabel
        self.secretLabel = secretLabel
    }
}

/// Where the exchange stands. It chooses the focus and which controls are shown; the meaning
/// is always in the sentence given with it (never in colour alone).
public enum DialogState: Sendable, Equatable, CaseIterable {
    case waitingForFinger
    case retry
    case noMatch
    case locked
    case needsPIN
    case needsPassword
    /// Checking what was given: the entry stays, read-only, and cannot be sent again.
    case working
    case done

    var asksForSecret: Bool { self == .needsPIN || self == .needsPassword }
    /// A finger is what the reader waits for (the fingerprint icon shows).
    var wantsFinger: Bool { self == .waitingForFinger || self == .retry || self == .noMatch }
    /// Whether the focus moves to this state's control; while working, or done, it stays put
    /// so that a screen reader is not sent elsewhere mid-sentence.
    var movesFocus: Bool { self != .working && self != .done }
    var acceptsInput: Bool { movesFocus }
    var isFailure: Bool { self == .noMatch || self == .locked }
}

/// A mnemonic label's text without its marks: "_Use password" → "Use password", "a__b" → "a_b".
/// GTK 4.8 puts the marked text into a button's accessible name ("_Use password instead Use
/// password instead"), so every control gets this as its explicit accessible label.
func withoutMnemonic(_ label: String) -> String {
    var plain = ""
    var characters = label.makeIterator()
    while let character = characters.next() {
        if character == "_" {
            if let next = characters.next() { plain.append(next) }
        } else {
            plain.append(character)
        }
    }
    return plain
}
