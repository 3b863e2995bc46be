#!/usr/bin/python3
"""What a screen reader sees of a window (AT-SPI), and what a window manager does to it (X11).

Debian's /usr/bin/python3 (python3-pyatspi, python3-xlib), in DesktopSession's environment
(DISPLAY, AT_SPI_BUS_ADDRESS).

    desktop_probe.py tree NAME [--focused NAME | --focus-leaves NAME] [--showing TEXT] [--timeout S]
        The first top-level window named NAME (any application) as JSON on one line: role,
        name, description, states, and text (for text) or length (for password text; never the
        characters), children. --focused: waits until the focused node is named so;
        --focus-leaves: until a node other than one so named has the focus; --showing: until a
        node is named TEXT or holds it as its text. Exit 1 on timeout, printing what it saw.
    desktop_probe.py events NAME --contains TEXT [--role ROLE] [--timeout S]
        Listens for name, description and text changes, prints `listening` once the bus routes
        them here, then waits for one from NAME's application (from a node of ROLE) whose new
        value or source name holds TEXT; prints it as JSON. Exit 1 on timeout, with all it saw.
    desktop_probe.py window TITLE [--gone] [--timeout S]
        Waits until a mapped top-level X11 window is titled exactly TITLE and prints its id
        (decimal); with --gone, until none is. Woken by the X server's events, not by polling;
        a window destroyed while it is read is passed over. Exit 1 on timeout.
    desktop_probe.py close XID
        Asks the X11 window XID (hex) to close as a window manager's close button does
        (WM_PROTOCOLS / WM_DELETE_WINDOW).
"""
import argparse
import json
import sys
import time

import gi

gi.require_version("Atspi", "2.0")
from gi.repository import Atspi, GLib  # noqa: E402

EVENTS = [
    "object:property-change:accessible-name",
    "object:property-change:accessible-description",
    "object:text-changed:insert",
]


def role_name(accessible):
    return accessible.get_role().value_nick.replace("-", " ")


def node(accessible, depth=0):
    out = {
        "role": role_name(accessible),
        "name": accessible.get_name() or "",
        "description": accessible.get_description() or "",
        "states": sorted(s.value_nick for s in accessible.get_state_set().get_states()),
    }
    if "Text" in accessible.get_interfaces():
        count = Atspi.Text.get_character_count(accessible)
        if accessible.get_role() == Atspi.Role.PASSWORD_TEXT:
            out["length"] = count  # how many were typed, never what
        else:
            out["text"] = Atspi.Text.get_text(accessible, 0, count)
    if depth < 40:
        out["children"] = [node(child, depth + 1) for child in children(accessible)]
    return out


def children(accessible):
    result = []
    for index in range(min(accessible.get_child_count(), 200)):
        try:
            child = accessible.get_child_at_index(index)
        except GLib.Error:
            continue  # gone meanwhile
        if child is not None:
            result.append(child)
    return result


def find_window(name):
    for app in children(Atspi.get_desktop(0)):
        try:
            for window in children(app):
                if window.get_name() == name:
                    return window
        except GLib.Error:
            continue  # an application that exited
    return None


def focused_name(tree):
    if "focused" in tree["states"]:
        return tree["name"]
    for child in tree.get("children", []):
        found = focused_name(child)
        if found is not None:
            return found
    return None


def showing(tree, text):
    if tree["name"] == text or tree.get("text") == text:
        return True
    return any(showing(child, text) for child in tree.get("children", []))


def wanted(tree, args):
    focus = focused_name(tree)
    if args.focused is not None and focus != args.focused:
        return False
    if args.focus_leaves is not None and (focus is None or focus == args.focus_leaves):
        return False
    return args.showing is None or showing(tree, args.showing)


def tree(args):
    deadline = time.monotonic() + args.timeout
    seen = None
    while True:
        try:
            window = find_window(args.name)
            if window is not None:
                seen = node(window)
                if wanted(seen, args):
                    print(json.dumps(seen))
                    return 0
        except GLib.Error as error:
            seen = {"error": str(error)}
        if time.monotonic() >= deadline:
            print(json.dumps({"timeout": args.timeout, "window": args.name, "seen": seen}))
            return 1
        # A bounded poll: GTK publishes its tree and focus asynchronously.
        time.sleep(0.05)


def events(args):
    deadline = time.monotonic() + args.timeout
    seen = []
    found = []
    loop = GLib.MainLoop()
    application = []

    def on_event(event):
        try:
            source = event.source
            entry = {
                "type": event.type,
                "role": role_name(source),
                "name": source.get_name() or "",
                "data": event.any_data if isinstance(event.any_data, str) else "",
            }
            pid = source.get_application().get_process_id()
        except (GLib.Error, AttributeError):
            return
        seen.append(entry)
        if not application or pid != application[0]:
            return
        if args.role is not None and entry["role"] != args.role:
            return
        if args.contains in entry["data"] or args.contains in entry["name"]:
            found.append(entry)
            loop.quit()

    listener = Atspi.EventListener.new(on_event)
    for kind in EVENTS:
        listener.register(kind)
    # Registering only sends the match rules; finding the window makes calls on the same
    # connection, which the bus answers after it applied them.
    window = find_window(args.name)
    while window is None and time.monotonic() < deadline:
        time.sleep(0.05)
        window = find_window(args.name)
    if window is None:
        print(json.dumps({"timeout": args.timeout, "window": args.name}))
        return 1
    application.append(window.get_application().get_process_id())
    # Read the window as a screen reader does when it appears: GTK realizes a node's AT-SPI
    # object, and from then on reports its changes, when it is first asked for.
    node(window)
    print("listening", flush=True)
    GLib.timeout_add(max(int((deadline - time.monotonic()) * 1000), 1), loop.quit)
    loop.run()
    if found:
        print(json.dumps(found[0]))
        return 0
    print(json.dumps({"timeout": args.timeout, "contains": args.contains, "seen": seen}))
    return 1


def find_named(accessible, role, name, depth=0):
    if depth > 30:
        return None
    if role_name(accessible) == role and accessible.get_name() == name:
        return accessible
    for child in children(accessible):
        found = find_named(child, role, name, depth + 1)
        if found is not None:
            return found
    return None


def press(args):
    """Activates the push button `button` of window `name` through its AT-SPI action, as a
    screen reader or switch access does (no keyboard focus needed)."""
    window = find_window(args.name)
    button = find_named(window, "push button", args.button) if window is not None else None
    if button is None:
        print(f"no button {args.button!r} in window {args.name!r}")
        return 1
    return 0 if button.get_action_iface().do_action(0) else 1


def titled_windows(connection, title):
    """The ids of the root's mapped children titled `title`, watching each for a new title (no
    window manager here, so top-level windows are the root's children)."""
    from Xlib import X, error

    found = []
    for window in connection.screen().root.query_tree().children:
        try:
            window.change_attributes(event_mask=X.PropertyChangeMask | X.StructureNotifyMask)
            if window.get_attributes().map_state != X.IsViewable:
                continue
            name = window.get_full_text_property(connection.intern_atom("_NET_WM_NAME")) or window.get_wm_name()
        except (error.BadWindow, error.BadDrawable):
            continue  # destroyed while being read
        if name == title:
            found.append(window.id)
    return found


def window(args):
    import select

    from Xlib import X, display

    connection = display.Display()
    connection.set_error_handler(lambda *_: None)  # a window gone between two requests is not an error here
    connection.screen().root.change_attributes(event_mask=X.SubstructureNotifyMask)
    deadline = time.monotonic() + args.timeout
    while True:
        connection.sync()
        while connection.pending_events():
            connection.next_event()
        found = titled_windows(connection, args.title)
        if args.gone and not found:
            return 0
        if found and not args.gone:
            print(found[-1])
            return 0
        left = deadline - time.monotonic()
        if left <= 0:
            print(f"after {args.timeout} s, windows titled {args.title!r}: {found}")
            return 1
        select.select([connection.fileno()], [], [], left)


def close(args):
    from Xlib import X, display, protocol

    connection = display.Display()
    window = connection.create_resource_object("window", int(args.xid, 16))
    protocols = connection.intern_atom("WM_PROTOCOLS")
    delete = connection.intern_atom("WM_DELETE_WINDOW")
    if delete not in (window.get_wm_protocols() or []):
        print(f"window {args.xid} does not take WM_DELETE_WINDOW")
        return 1
    message = protocol.event.ClientMessage(window=window, client_type=protocols, data=(32, [delete, X.CurrentTime, 0, 0, 0]))
    window.send_event(message, event_mask=X.NoEventMask)
    connection.sync()
    return 0


def main():
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    tree_parser = commands.add_parser("tree")
    tree_parser.add_argument("name")
    focus = tree_parser.add_mutually_exclusive_group()
    focus.add_argument("--focused")
    focus.add_argument("--focus-leaves")
    tree_parser.add_argument("--showing")
    tree_parser.add_argument("--timeout", type=float, default=10)
    events_parser = commands.add_parser("events")
    events_parser.add_argument("name")
    events_parser.add_argument("--contains", required=True)
    events_parser.add_argument("--role")
    events_parser.add_argument("--timeout", type=float, default=10)
    close_parser = commands.add_parser("close")
    close_parser.add_argument("xid")
    window_parser = commands.add_parser("window")
    window_parser.add_argument("title")
    window_parser.add_argument("--gone", action="store_true")
    window_parser.add_argument("--timeout", type=float, default=10)
    press_parser = commands.add_parser("press")
    press_parser.add_argument("name")
    press_parser.add_argument("button")
    args = parser.parse_args()
    return {"tree": tree, "events": events, "close": close, "press": press, "window": window}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
