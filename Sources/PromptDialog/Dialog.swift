import CGtk

/// The prompt: a modal dialog with a heading, the reason, a status sentence, an optional
/// PIN/password entry and its buttons. Owns its GTK objects and destroys them on `close()`
/// or when dropped. Main thread only (see `PromptDialog`).
///
/// Keyboard: Esc, the Cancel button and closing the window all cancel, reported once through
/// `onCancel`, after which the dialog closes itself; Enter in the entry sends it; Tab reaches
/// every control; labels' mnemonics work with Alt.
public final class Dialog {
    /// The person cancelled (Esc, Cancel, or closed the window). The dialog is closed already.
    public var onCancel: (() -> Void)?
    /// The person chose the other way in ("Use password instead", "Use PIN instead").
    public var onOtherWay: (() -> Void)?
    /// The typed PIN or password (UTF-8, no terminator), lent only for the call: the bytes
    /// are GTK's own mlocked buffer, wiped and the entry emptied as soon as the call returns.
    /// Copy them into secure memory if they must live longer; never into a String.
    public var onSecret: ((UnsafeRawBufferPointer) -> Void)?
    /// The dialog was drawn for the first time, with its window's handle in
    /// xdg-desktop-portal's form ("x11:1e00004"), nil on a backend without one here (Wayland
    /// exports handles asynchronously). Tests take screenshots and send keys then.
    public var onShown: ((_ windowHandle: String?) -> Void)?
    public private(set) var isClosed = false

    private let text: DialogText
    private let parentWindow: String?
    private let window: Widget
    private let statusLabel: Widget
    /// The fingerprint icon beside the sentence, shown while a finger is wanted.
    private let fingerprintIcon: Widget?
    private let secretRow: Widget
    private let secretCaption: Widget
    private let entry: Widget
    /// "Use password instead" or "Use PIN instead", as `update` says.
    private let otherWayButton: Widget?
    private var otherWay: OtherWay? = .password
    /// The button's label now.
    private var otherWayLabel: String?
    private let cancelButton: Widget
    private let submitButton: Widget
    private var state = DialogState.waitingForFinger
    private var cancelReported = false
    /// While `onSecret` holds the entry's bytes: nothing else may clear or wipe them.
    private var lending = false
    private var frameClock: OpaquePointer?
    private var initialFocusTimer: guint = 0
    /// The secret field's label (nil: no field) for a layout waiting for GTK to send the
    /// controls' descriptions (`apply`), and its idle source.
    private var pendingLayout: String??
    private var layoutSource: guint = 0
    /// The control that gets the focus once the window is first active (see `becameActive`).
    private var initialFocus: Widget?
    private var hasBeenActive = false
    /// Whether `present` was called. Until then the controls stay undescribed: the window's
    /// description carries the sentence into the announcement, and a control's description set
    /// before GTK made its accessible object was sent after the focus arrived under load
    /// (CI: Orca said the instruction again right after the focused field).
    private var presented = false
    /// Whether the initial focus was given (after that, each state moves the focus itself),
    /// and where GTK had put it when the window became active.
    private var focusGiven = false
    private var focusAtActivation: Widget?
    /// The state's sentence, and the control left undescribed while it stands (`giveInitialFocus`).
    private var sentence = ""
    private var quiet: (control: Widget, sentence: String)?
    /// The description each control was last given, so that a control is described anew
    /// only when its words change: a screen reader speaks every change.
    private var descriptions: [Widget: String] = [:]
    /// Whether a dialog of this process was ever active (see `becameActive`). Main thread only.
    nonisolated(unsafe) private static var processHadActiveDialog = false

    /// `parentWindow`: the requesting application's window as xdg-desktop-portal passes it
    /// ("x11:XID" in hex, or "wayland:HANDLE" from xdg-foreign); the dialog stays above it.
    /// Unknown forms, or a form for another backend than the one in use, are ignored.
    /// nil when GTK is not initialized (`PromptDialog.initialize()`).
    public init?(text: DialogText, parentWindow: String?) {
        guard gtk_is_initialized() != 0, let widgets = Widgets(text: text) else { return nil }
        self.text = text
        self.parentWindow = parentWindow
        window = widgets.window
        statusLabel = widgets.status
        fingerprintIcon = widgets.fingerprint
        secretRow = widgets.secretRow
        secretCaption = widgets.secretCaption
        entry = widgets.entry
        otherWayButton = widgets.otherWay
        otherWayLabel = text.usePasswordLabel ?? text.usePINLabel
        cancelButton = widgets.cancel
        submitButton = widgets.submit
        // GTK owns a toplevel until gtk_window_destroy; this reference keeps the object (not
        // its children) valid until deinit, whoever destroys it.
        g_object_ref(window.raw)

        let me = Unmanaged.passUnretained(self).toOpaque()
        _ = fs_gtk_connect_bool(window.raw, "close-request", Callbacks.closeRequest, me)
        _ = fs_gtk_connect_notify(window.raw, "notify::is-active", Callbacks.activeChanged, me)
        _ = fs_gtk_connect_void(cancelButton.raw, "clicked", Callbacks.cancel, me)
        _ = fs_gtk_connect_void(submitButton.raw, "clicked", Callbacks.submit, me)
        _ = fs_gtk_connect_void(entry.raw, "activate", Callbacks.submit, me)
        if let otherWayButton {
            _ = fs_gtk_connect_void(otherWayButton.raw, "clicked", Callbacks.otherWay, me)
        }
        // Esc: a plain GtkWindow has no binding for it (GtkDialog's "close" is deprecated).
        let escape = gtk_shortcut_new(gtk_shortcut_trigger_parse_string("Escape"), gtk_callback_action_new(Callbacks.escape, me, nil))
        gtk_shortcut_controller_add_shortcut(widgets.shortcuts, escape)
        gtk_widget_add_controller(window, widgets.shortcutController)

        apply(state: .waitingForFinger, sentence: "", secretLabel: nil)
    }

    deinit {
        close()
        g_object_unref(window.raw)
    }

    /// Shows the dialog (above its parent, when given and usable).
    public func present() {
        guard !isClosed else { return }
        presented = true
        // Realized first: the parent is set on the surface before the window is mapped,
        // which is when window managers read it.
        gtk_widget_realize(window)
        if let surface = gtk_native_get_surface(window.opaque) {
            if let parentWindow { _ = Dialog.attach(surface, to: parentWindow) }
            if frameClock == nil, let clock = gdk_surface_get_frame_clock(surface) {
                frameClock = clock
                _ = fs_gtk_connect_void(UnsafeMutableRawPointer(clock), "after-paint", Callbacks.painted,
                                        Unmanaged.passUnretained(self).toOpaque())
            }
        }
        gtk_window_present(window.window)
    }

    /// Shows `state` with `sentence` (already translated). A `secretLabel` (or, for
    /// `.needsPIN`/`.needsPassword`, the text's) shows the PIN/password entry with that label
    /// and moves the focus to it; none hides the entry and wipes whatever was typed in it.
    /// Without an entry the focus goes to the other way's button, or Cancel when there is none.
    /// `.working` and `.done` leave the focus where it is (unless its control went away).
    /// `fingerWanted`: the reader waits for a finger (the fingerprint icon shows), also while
    /// the PIN may be typed beside it; nil: as `state` says. `otherWay`: what the button beside
    /// Cancel turns to (nil: no button); hidden where the state asks for that way already.
    public func update(state: DialogState, sentence: String, secretLabel: String? = nil, fingerWanted: Bool? = nil,
                       otherWay: OtherWay? = .password) {
        guard !isClosed else { return }
        self.otherWay = otherWay
        if let fingerprintIcon { gtk_widget_set_visible(fingerprintIcon, (fingerWanted ?? state.wantsFinger) ? 1 : 0) }
        apply(state: state, sentence: sentence, secretLabel: secretLabel)
    }

    /// Closes the dialog without reporting anything (the agent decided). Idempotent.
    public func close() {
        guard !isClosed else { return }
        // An onSecret that closes the dialog: the lending call wipes once it returns.
        if !lending { clearEntry(lendingTo: nil) }
        isClosed = true
        let me = Unmanaged.passUnretained(self).toOpaque()
        for object in [window, cancelButton, submitButton, entry, otherWayButton].compactMap({ $0 }) {
            fs_gtk_disconnect_all(object.raw, me)
        }
        if let frameClock { fs_gtk_disconnect_all(UnsafeMutableRawPointer(frameClock), me) }
        for source in [initialFocusTimer, layoutSource] where source != 0 { g_source_remove(source) }
        (initialFocusTimer, layoutSource) = (0, 0)
        frameClock = nil
        // Also frees the children and controllers (the Esc shortcut's action with them).
        gtk_window_destroy(window.window)
    }

    // MARK: - State

    private func apply(state: DialogState, sentence: String, secretLabel: String?) {
        self.state = state
        // GtkLabel makes its text its accessible name: each change is a name-changed event.
        gtk_label_set_text(statusLabel.opaque, sentence)
        // Colour only repeats what the sentence says.
        if state.isFailure {
            gtk_widget_add_css_class(statusLabel, "error")
        } else {
            gtk_widget_remove_css_class(statusLabel, "error")
        }
        // The sentence also describes every control: a screen reader reads the focused
        // object's description when it changes, and with the control when the focus arrives.
        // Every control, so that the one the focus moves to is described already: GTK 4.8
        // sends a description change after a focus change made in the same turn of the main
        // loop, whatever the order of the calls, and Orca 43.1 would say the sentence with the
        // control, then again as a change (its check for an unchanged description never
        // matches). Orca ignores the change on the controls without the focus.
        // The dialog is described by its heading, its reason and this sentence: Orca 43.1 says
        // a dialog's description as the focus enters it, and then skips the description of the
        // control that took the focus.
        let described = ([text.heading] + (text.description.map { [$0] } ?? []) + (sentence.isEmpty ? [] : [sentence]))
            .joined(separator: "\n")
        // Only until the focus is first given: Orca reads the description live as it
        // announces the dialog, and a sentence that changed just before would be said in the
        // announcement and again as the focused control's change.
        if !focusGiven, descriptions[window] != described {
            descriptions[window] = described
            fs_gtk_accessible_set_string(window.raw, GTK_ACCESSIBLE_PROPERTY_DESCRIPTION, described)
        }
        if quiet?.sentence != sentence { quiet = nil }
        self.sentence = sentence
        describeControls()
        let secret: String? = secretLabel ?? (state.asksForSecret ? text.secretLabel : nil)
        pendingLayout = .some(secret)
        if !hasBeenActive {
            // Not shown yet, or never announced: nothing to keep in order.
            layOut()
        } else if layoutSource == 0 {
            // The rest (the controls shown, the focus) once GTK sent the descriptions.
            layoutSource = g_idle_add_full(G_PRIORITY_LOW, Callbacks.layOut, Unmanaged.passUnretained(self).toOpaque(), nil)
        }
    }

    /// The controls for the current state, and the focus (`apply`).
    fileprivate func layOut() {
        layoutSource = 0
        guard !isClosed, let secret = pendingLayout else { return }
        pendingLayout = nil
        if let secret {
            gtk_label_set_text_with_mnemonic(secretCaption.opaque, secret)
            Widgets.name(entry, withoutMnemonic(secret))
            gtk_widget_set_visible(secretRow, 1)
        } else {
            if !lending { clearEntry(lendingTo: nil) }
            gtk_widget_set_visible(secretRow, 0)
        }
        gtk_editable_set_editable(entry.opaque, state.acceptsInput ? 1 : 0)
        gtk_widget_set_visible(submitButton, secret != nil ? 1 : 0)
        gtk_widget_set_sensitive(submitButton, state.acceptsInput ? 1 : 0)
        if let otherWayButton {
            let label = otherWay == .pin ? text.usePINLabel : otherWay == .password ? text.usePasswordLabel : nil
            if let label, label != otherWayLabel {
                otherWayLabel = label
                Widgets.relabel(otherWayButton, label)
            }
            // Asked for that way already, or done: the button would lead nowhere new.
            let leadsNowhere = state == .done || (otherWay == .password && state == .needsPassword)
                || (otherWay == .pin && state == .needsPIN)
            gtk_widget_set_visible(otherWayButton, label == nil || leadsNowhere ? 0 : 1)
        }

        let focus = focusGiven ? focusedControl() : initialFocus
        if state.movesFocus || focus.map(Dialog.canTakeFocus) != true {
            let target = secret != nil ? entry : (otherWayButton.flatMap { Dialog.canTakeFocus($0) ? $0 : nil } ?? cancelButton)
            // Until the window is first active the focus waits (`becameActive`): a control
            // focused earlier is never announced.
            if focusGiven { gtk_window_set_focus(window.window, target) } else { initialFocus = target }
        }
    }

    /// The window became active (or stopped being). The first time, the focus goes to its
    /// control: Orca 43.1 announces a dialog only through a focus event that follows the
    /// window's activation (GTK 4.8 gives a dialog-role window no AT-SPI `active` state, so
    /// Orca ignores its activation): Orca then says the dialog's name and description (its
    /// title, and the heading naming the program), the control, and the control's description
    /// (the state's sentence), each once.
    /// The first dialog of a process waits a little longer: GTK 4.8 registers the process with
    /// the AT-SPI registry only when its first window maps, and a screen reader drops every
    /// event that comes before the registration (it cannot look the sender up).
    fileprivate func becameActive() {
        guard !isClosed, !hasBeenActive, gtk_window_is_active(window.window) != 0 else { return }
        hasBeenActive = true
        focusAtActivation = focusedControl()
        let first = !Dialog.processHadActiveDialog
        Dialog.processHadActiveDialog = true
        guard first else { return focusOnceDescribed() }
        initialFocusTimer = g_timeout_add(Dialog.registrationGrace, Callbacks.registered,
                                          Unmanaged.passUnretained(self).toOpaque())
    }

    /// The initial focus, once GTK sent what it holds back for an idle moment (the controls'
    /// descriptions, set as the dialog was made): sent after the focus arrived, a description
    /// is said as a change of the focused control (CI, on a loaded machine: Orca said the
    /// instruction twice).
    fileprivate func focusOnceDescribed() {
        initialFocusTimer = g_idle_add_full(G_PRIORITY_LOW, Callbacks.initialFocus, Unmanaged.passUnretained(self).toOpaque(), nil)
    }

    /// Milliseconds the first dialog of a process waits, once active, before its focus moves:
    /// GTK's registration is one round trip to the registry, and the screen reader's look-up
    /// of the new application another.
    static let registrationGrace: guint = 300

    fileprivate func giveInitialFocus() {
        initialFocusTimer = 0
        guard !isClosed, !focusGiven else { return }
        focusGiven = true
        let target = initialFocus
        initialFocus = nil
        // The person moved the focus already (Tab): it stays where they put it.
        guard let target, focusedControl() == focusAtActivation else { return }
        // GTK focused the first control itself as the window mapped, unannounced: the focus
        // leaves and comes back, so that the screen reader hears it arrive.
        let control = Dialog.canTakeFocus(target) ? target : cancelButton
        // The dialog's announcement says the sentence already (the dialog's description), and
        // GTK 4.8 sends a control's description again after its first focus when its
        // accessible object was made late (a field shown after the window mapped): Orca would
        // say the sentence twice. The control is described again from the next sentence on.
        quiet = (control, sentence)
        describeControls()
        gtk_window_set_focus(window.window, nil)
        gtk_window_set_focus(window.window, control)
    }

    /// Describes every control by the sentence, but the one in `quiet`, which has none; none
    /// before the dialog is presented.
    private func describeControls() {
        for control in controls {
            let description = !presented || quiet?.control == control ? "" : sentence
            guard (descriptions[control] ?? "") != description else { continue }
            descriptions[control] = description
            fs_gtk_accessible_set_string(control.raw, GTK_ACCESSIBLE_PROPERTY_DESCRIPTION, description)
        }
    }

    private var controls: [Widget] { [entry, otherWayButton, cancelButton, submitButton].compactMap { $0 } }

    /// Which of our controls holds the focus (the entry's focus is on its inner text widget).
    private func focusedControl() -> Widget? {
        guard let focus = gtk_window_get_focus(window.window) else { return nil }
        return controls.first { $0 == focus || gtk_widget_is_ancestor(focus, $0) != 0 }
    }

    private static func canTakeFocus(_ widget: Widget) -> Bool {
        gtk_widget_get_visible(widget) != 0 && gtk_widget_is_sensitive(widget) != 0
    }

    // MARK: - Events

    fileprivate func cancel() {
        guard !isClosed, !cancelReported else { return }
        cancelReported = true
        let handler = onCancel
        close()
        handler?()
    }

    fileprivate func turnToOtherWay() {
        guard !isClosed else { return }
        onOtherWay?()
    }

    fileprivate func submit() {
        guard !isClosed, !lending, state.acceptsInput, gtk_widget_get_visible(secretRow) != 0,
              let buffer = fs_gtk_password_entry_buffer(entry), gtk_entry_buffer_get_bytes(buffer) > 0 else {
            return // Nothing typed: Enter does nothing.
        }
        clearEntry(lendingTo: onSecret)
    }

    /// Lends the entry's bytes to `borrower` (if any), then empties the entry and wipes them.
    private func clearEntry(lendingTo borrower: ((UnsafeRawBufferPointer) -> Void)?) {
        guard let buffer = fs_gtk_password_entry_buffer(entry) else {
            // Not GTK 4.8's secure buffer (GTK changed inside): at least empty the entry.
            gtk_editable_set_text(entry.opaque, "")
            return
        }
        // Held across the call: a borrower that closes the dialog frees the entry.
        g_object_ref(UnsafeMutableRawPointer(buffer))
        defer { g_object_unref(UnsafeMutableRawPointer(buffer)) }
        let count = Int(gtk_entry_buffer_get_bytes(buffer))
        let bytes = gtk_entry_buffer_get_text(buffer)
        if let borrower, count > 0, let bytes {
            lending = true
            borrower(UnsafeRawBufferPointer(start: bytes, count: count))
            lending = false
        }
        gtk_entry_buffer_delete_text(buffer, 0, -1)
        // GtkPasswordEntryBuffer deletes by moving the terminator to the start: the bytes stay
        // behind it in its mlocked block. Wipe them there, unless the text has moved.
        if count > 0, let bytes, gtk_entry_buffer_get_text(buffer) == bytes {
            fs_gtk_wipe(UnsafeMutableRawPointer(mutating: bytes), count + 1)
        }
    }

    fileprivate func painted() {
        guard let frameClock else { return }
        fs_gtk_disconnect_all(UnsafeMutableRawPointer(frameClock), Unmanaged.passUnretained(self).toOpaque())
        self.frameClock = nil
        // The first frame reached the display server (for a screenshot taken by another client).
        gdk_display_sync(gtk_widget_get_display(window))
        let surface = gtk_native_get_surface(window.opaque)
        let x11 = fs_gtk_x11_window(surface)
        onShown?(x11 != 0 ? "x11:" + String(x11, radix: 16) : nil)
    }

    /// GTK 4.8 has no call for a foreign parent (gtk_window_set_transient_for takes a
    /// GtkWindow of this process); the backends' own calls do it, as xdg-desktop-portal-gtk
    /// does: XSetTransientForHint on X11, xdg-foreign's imported handle on Wayland.
    private static func attach(_ surface: OpaquePointer, to parent: String) -> Bool {
        if parent.hasPrefix("x11:") {
            var hex = parent.dropFirst(4)
            if hex.hasPrefix("0x") || hex.hasPrefix("0X") { hex = hex.dropFirst(2) }
            guard let xid = UInt(hex, radix: 16), xid != 0 else { return false }
            return fs_gtk_set_transient_for_x11(surface, xid) != 0
        }
        if parent.hasPrefix("wayland:") {
            let handle = String(parent.dropFirst(8))
            guard !handle.isEmpty else { return false }
            return fs_gtk_set_transient_for_wayland(surface, handle) != 0
        }
        return false
    }
}

/// The dialog's widgets, made and laid out; nil if GTK made none of one.
private struct Widgets {
    let window: Widget
    let status: Widget
    let fingerprint: Widget?
    let secretRow: Widget
    let secretCaption: Widget
    let entry: Widget
    let otherWay: Widget?
    let cancel: Widget
    let submit: Widget
    /// A GtkShortcutController, which is also its GtkEventController (both opaque in Swift).
    let shortcutController: OpaquePointer
    var shortcuts: OpaquePointer { shortcutController }

    init?(text: DialogText) {
        // A plain window with the dialog role: GtkDialog's own buttons and response ids are
        // deprecated after 4.8 and would add nothing here.
        guard let window = fs_gtk_new_with_role(gtk_window_get_type(), GTK_ACCESSIBLE_ROLE_DIALOG),
              let content = gtk_box_new(GTK_ORIENTATION_VERTICAL, 12),
              let heading = Widgets.label(text.heading, role: GTK_ACCESSIBLE_ROLE_HEADING),
              let status = Widgets.label("", role: GTK_ACCESSIBLE_ROLE_STATUS),
              let secretRow = gtk_box_new(GTK_ORIENTATION_VERTICAL, 6),
              let secretCaption = Widgets.label("", role: GTK_ACCESSIBLE_ROLE_LABEL),
              let entry = gtk_password_entry_new(),
              let buttons = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6),
              let cancel = Widgets.button(text.cancelLabel),
              let submit = Widgets.button(text.submitLabel),
              let shortcutController = gtk_shortcut_controller_new()
        else { return nil }
        let description = text.description.flatMap { Widgets.label($0, role: GTK_ACCESSIBLE_ROLE_LABEL) }
        let otherWay = (text.usePasswordLabel ?? text.usePINLabel).flatMap(Widgets.button)
        // The platform's look: the theme's fingerprint beside the sentence, an image with a
        // name of its own (the sentence, not the icon, says what to do).
        fingerprint = text.fingerprintIcon.flatMap { name in
            gtk_image_new_from_icon_name("auth-fingerprint-symbolic").map { icon in
                gtk_image_set_pixel_size(icon.opaque, 48)
                fs_gtk_accessible_set_string(icon.raw, GTK_ACCESSIBLE_PROPERTY_LABEL, name)
                return icon
            }
        }
        (self.window, self.status, self.secretRow, self.secretCaption, self.entry) = (window, status, secretRow, secretCaption, entry)
        (self.otherWay, self.cancel, self.submit, self.shortcutController) = (otherWay, cancel, submit, shortcutController)

        gtk_window_set_title(window.window, text.title)
        gtk_window_set_modal(window.window, 1)
        // The focus ring from the start: a keyboard user sees where Enter and Space go.
        gtk_window_set_focus_visible(window.window, 1)
        fs_gtk_accessible_set_string(window.raw, GTK_ACCESSIBLE_PROPERTY_LABEL, text.title)
        // Its description (the heading, the reason and the state's sentence): `Dialog.apply`.
        fs_gtk_accessible_set_bool(window.raw, GTK_ACCESSIBLE_PROPERTY_MODAL, 1)

        for setMargin in [gtk_widget_set_margin_top, gtk_widget_set_margin_bottom, gtk_widget_set_margin_start, gtk_widget_set_margin_end] {
            setMargin(content, 18)
        }
        gtk_window_set_child(window.window, content)
        Widgets.emphasize(heading)
        gtk_box_append(content.box, heading)
        if let description { gtk_box_append(content.box, description) }
        // The sentence for the current state: role status (AT-SPI "status bar"), so that
        // screen readers treat its changes as news.
        if let fingerprint { gtk_box_append(content.box, fingerprint) }
        gtk_box_append(content.box, status)

        gtk_label_set_mnemonic_widget(secretCaption.opaque, entry)
        gtk_box_append(secretRow.box, secretCaption)
        gtk_box_append(secretRow.box, entry)
        gtk_widget_set_visible(secretRow, 0)
        gtk_box_append(content.box, secretRow)

        gtk_widget_set_halign(buttons, GTK_ALIGN_END)
        gtk_widget_set_margin_top(buttons, 6)
        gtk_widget_set_visible(submit, 0)
        // The theme's emphasis for the default action: decoration only, its label says it.
        gtk_widget_add_css_class(submit, "suggested-action")
        for button in [otherWay, cancel, submit].compactMap({ $0 }) {
            gtk_box_append(buttons.box, button)
        }
        gtk_box_append(content.box, buttons)
    }

    private static func label(_ text: String, role: GtkAccessibleRole) -> Widget? {
        guard let label = fs_gtk_new_with_role(gtk_label_get_type(), role) else { return nil }
        gtk_label_set_text(label.opaque, text)
        gtk_label_set_wrap(label.opaque, 1)
        // Long words (and 200 % text) wrap inside the dialog instead of widening it.
        gtk_label_set_wrap_mode(label.opaque, PANGO_WRAP_WORD_CHAR)
        gtk_label_set_max_width_chars(label.opaque, 44)
        gtk_label_set_xalign(label.opaque, 0)
        return label
    }

    /// GTK 4.8 names a control by its label property followed by its labelled-by relation,
    /// which a mnemonic label sets: a button's name was "_Cancel Cancel" (the marked text, then
    /// the label), and with a plain label property "Cancel Cancel". The explicit label without
    /// the relation says it once.
    static func name(_ control: Widget, _ name: String) {
        fs_gtk_accessible_set_string(control.raw, GTK_ACCESSIBLE_PROPERTY_LABEL, name)
        fs_gtk_accessible_reset_relation(control.raw, GTK_ACCESSIBLE_RELATION_LABELLED_BY)
    }

    private static func emphasize(_ label: Widget) {
        let attributes = pango_attr_list_new()
        pango_attr_list_insert(attributes, pango_attr_weight_new(PANGO_WEIGHT_BOLD))
        pango_attr_list_insert(attributes, pango_attr_scale_new(1.2))
        gtk_label_set_attributes(label.opaque, attributes)
        pango_attr_list_unref(attributes)
    }

    private static func button(_ label: String) -> Widget? {
        guard let button = gtk_button_new_with_mnemonic(label) else { return nil }
        relabel(button, label)
        return button
    }

    /// A mnemonic `label` on `button`, named once.
    static func relabel(_ button: Widget, _ label: String) {
        gtk_button_set_label(button.button, label)
        Widgets.name(button, withoutMnemonic(label))
        // GTK 4.8 shows a button's label as a node of its own under the button: a screen
        // reader exploring the dialog would read each button twice.
        if let child = gtk_button_get_child(button.button) { fs_gtk_accessible_set_hidden(child.raw, 1) }
    }
}

/// C signal handlers: user data is the Dialog, unretained (it disconnects them all before it
/// goes away).
private enum Callbacks {
    static func dialog(_ data: UnsafeMutableRawPointer?) -> Dialog? {
        data.map { Unmanaged<Dialog>.fromOpaque($0).takeUnretainedValue() }
    }

    static let cancel: fs_gtk_void_handler = { _, data in dialog(data)?.cancel() }
    static let otherWay: fs_gtk_void_handler = { _, data in dialog(data)?.turnToOtherWay() }
    static let submit: fs_gtk_void_handler = { _, data in dialog(data)?.submit() }
    static let painted: fs_gtk_void_handler = { _, data in dialog(data)?.painted() }
    static let activeChanged: fs_gtk_notify_handler = { _, _, data in dialog(data)?.becameActive() }
    static let layOut: GSourceFunc = { data in
        dialog(data)?.layOut()
        return 0
    }
    /// Once (G_SOURCE_REMOVE).
    static let registered: GSourceFunc = { data in
        dialog(data)?.focusOnceDescribed()
        return 0
    }
    /// Once (G_SOURCE_REMOVE).
    static let initialFocus: GSourceFunc = { data in
        dialog(data)?.giveInitialFocus()
        return 0
    }
    /// The window's close button: a cancel. TRUE: the dialog destroys itself in cancel().
    static let closeRequest: fs_gtk_bool_handler = { _, data in
        dialog(data)?.cancel()
        return 1
    }
    static let escape: GtkShortcutFunc = { _, _, data in
        dialog(data)?.cancel()
        return 1
    }
}
