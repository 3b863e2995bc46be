#!/usr/bin/python3
"""Meander: a small GTK 4 application that uses fingerseal the way a phone app uses its
platform's biometric prompt. Copy what you need.

- At start, the app is locked: fingerseal-agent's dialog ("Unlock Meander") asks for a finger
  (or the PIN, or the account password) and a fresh access token arrives on a descriptor.
- "Contact assignments" is a sensitive screen: opening it asks again (StepUp), the
  confirmation is kept while the screen is open, and leaving it ends it (EndContext).
- "Settings" shows the switch for fingerprint unlock and when it was last verified
  (GetStatus), and flipping it asks for a finger or the PIN (SetEnabled).
- Cancel never locks anyone out: the app stays where it was and can ask again.

Every sentence the person reads comes from fingerseal in their language, or from the app's
own catalog (`_`). Needs python3-gi and gir1.2-gtk-4.0.
"""

import gettext
import os
import sys

import gi

gi.require_version("Gtk", "4.0")
from gi.repository import Gio, GLib, Gtk  # noqa: E402

_ = gettext.translation("meander", fallback=True).gettext

AGENT = "org.fingerseal.Agent1"
PATH = "/org/fingerseal/Agent1"
REQUEST = "org.fingerseal.Agent1.Request"
CONTACTS = "contacts"  # an identifier for the context: never shown


class Agent:
    """fingerseal-agent on the session bus: each call starts a request whose Response ends it."""

    def __init__(self):
        self.bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
        self.proxy = Gio.DBusProxy.new_sync(self.bus, Gio.DBusProxyFlags.DO_NOT_LOAD_PROPERTIES, None, AGENT, PATH, AGENT, None)
        self.serial = 0

    def options(self, **extra):
        """The options every call carries: the app's name (translated) and a handle token, so
        the request's path is known before the call and its Response cannot be missed."""
        self.serial += 1
        token = f"meander{os.getpid()}_{self.serial}"
        options = {"app_name": GLib.Variant("s", _("Meander")), "handle_token": GLib.Variant("s", token)}
        for name, value in extra.items():
            options[name] = value
        sender = self.bus.get_unique_name()[1:].replace(".", "_")
        return options, f"{PATH}/request/{sender}/{token}"

    def request(self, method, signature, arguments, path, done):
        """Calls `method` and hands `done(code, results, take)` the Response; `take()` gives the
        secret's bytes once (the token), for a successful Unlock."""
        def on_response(_bus, _sender, _path, _iface, _signal, params):
            self.bus.signal_unsubscribe(subscription)
            code, results = params.unpack()
            if code != 0:
                # Shown by the agent already; said here for the developer.
                print(f"meander: {method}: {results.get('outcome')}: {results.get('sentence')}", file=sys.stderr, flush=True)

            def take():
                reply, fds = self.bus.call_with_unix_fd_list_sync(AGENT, path, REQUEST, "Take", None, GLib.VariantType("(h)"),
                                                                  Gio.DBusCallFlags.NONE, 5000, None, None)
                with os.fdopen(fds.get(reply.unpack()[0]), "rb") as secret:
                    return secret.read()
            done(code, results, take)

        def on_called(proxy, result):
            # A refused call (no display, a mistaken option) has no Response: said, and done.
            try:
                proxy.call_finish(result)
            except GLib.Error as error:
                self.bus.signal_unsubscribe(subscription)
                print(f"meander: {method}: {error.message}", file=sys.stderr, flush=True)
                done(2, {}, None)

        subscription = self.bus.signal_subscribe(AGENT, REQUEST, "Response", path, None, Gio.DBusSignalFlags.NONE, on_response)
        self.proxy.call(method, GLib.Variant(signature, arguments), Gio.DBusCallFlags.NONE, 10000, None, on_called)


class Meander(Gtk.Application):
    def __init__(self):
        super().__init__(application_id="org.example.Meander")
        self.agent = None
        self.token = None

    def do_activate(self):
        self.agent = Agent()
        self.window = Gtk.ApplicationWindow(application=self, title=_("Meander"), default_width=420, default_height=300)
        self.stack = Gtk.Stack()
        self.window.set_child(self.stack)
        self.first_control = {}
        self.add_page("locked", _("Meander is locked."), [(_("_Unlock"), self.unlock)])
        self.add_page("home", _("Welcome back."), [(_("_Contact assignments"), self.open_contacts),
                                                  (_("_Settings"), self.open_settings)])
        self.contacts = Gtk.Label(wrap=True)
        self.add_page("contacts", None, [(_("_Back"), self.leave_contacts)], self.contacts)
        self.switch = Gtk.Switch(valign=Gtk.Align.CENTER)
        self.switch_handler = self.switch.connect("notify::active", self.switch_flipped)
        self.caption = Gtk.Label(wrap=True, xalign=0)
        row = Gtk.Box(spacing=12)
        label = Gtk.Label(label=_("Unlock with your fingerprint"), hexpand=True, xalign=0, mnemonic_widget=self.switch)
        row.append(label)
        row.append(self.switch)
        settings = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=6)
        settings.append(row)
        settings.append(self.caption)
        self.add_page("settings", None, [(_("_Back"), lambda *_: self.show("home"))], settings)
        self.first_control["settings"] = self.switch
        self.window.present()
        self.unlock()

    def add_page(self, name, text, buttons, body=None):
        box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=12, margin_top=24, margin_bottom=24, margin_start=24,
                      margin_end=24)
        if text:
            box.append(Gtk.Label(label=text, wrap=True))
        if body:
            box.append(body)
        for label, action in buttons:
            button = Gtk.Button.new_with_mnemonic(label)
            # GTK 4.8 names a mnemonic button twice ("_Back Back"): its label property, then
            # its labelled-by relation; and shows its label as a node of its own. Once, plainly.
            button.update_property([Gtk.AccessibleProperty.LABEL], [label.replace("_", "")])
            button.reset_relation(Gtk.AccessibleRelation.LABELLED_BY)
            button.get_child().update_state([Gtk.AccessibleState.HIDDEN], [True])
            button.connect("clicked", lambda _button, act=action: act())
            box.append(button)
            self.first_control.setdefault(name, button)
        self.stack.add_named(box, name)

    def show(self, name):
        """Shows a page and puts the focus on its first control, so that a screen reader says
        where the person is now (GTK 4.8 presents a stack's hidden pages too)."""
        self.stack.set_visible_child_name(name)
        self.first_control[name].grab_focus()

    # Story 1: unlock at start.
    def unlock(self):
        options, path = self.agent.options(reason=GLib.Variant("s", _("Your assignments are on the server.")))

        def done(code, _results, take):
            if code == 0:
                self.token = take()  # sent to the app's server, never shown or logged
                self.show("home")
            else:
                self.show("locked")  # cancelled or failed: ask again later
        self.agent.request("Unlock", "(a{sv})", (options,), path, done)

    # Story 2: a sensitive screen, asked once while it is open.
    def open_contacts(self):
        options, path = self.agent.options()

        def done(code, _results, _take):
            if code == 0:
                self.contacts.set_text(_("Kari Nordmann, Storgata 1. Visit on Tuesday."))
                self.show("contacts")
        self.agent.request("StepUp", "(ssa{sv})", (CONTACTS, _("Contact assignments hold personal data."), options), path, done)

    def leave_contacts(self):
        self.contacts.set_text("")
        self.agent.proxy.call("EndContext", GLib.Variant("(s)", (CONTACTS,)), Gio.DBusCallFlags.NONE, 5000, None, None)
        self.show("home")

    # The settings switch.
    def open_settings(self):
        self.show_status()
        self.show("settings")

    def show_status(self):
        status = self.agent.proxy.call_sync("GetStatus", None, Gio.DBusCallFlags.NONE, 10000, None).unpack()[0]
        with self.switch.handler_block(self.switch_handler):
            self.switch.set_active(status.get("enabled", False))
        sentences = status.get("sentences", {})
        self.caption.set_text(" ".join(s for s in (sentences.get("enabled"), sentences.get("last_verified")) if s))

    def switch_flipped(self, switch, _param):
        options, path = self.agent.options()
        # Whatever the answer, the switch shows what is true afterwards.
        self.agent.request("SetEnabled", "(ba{sv})", (switch.get_active(), options), path, lambda *_: self.show_status())


if __name__ == "__main__":
    sys.exit(Meander().run(sys.argv))
