#!/usr/bin/python3
"""A short client of fingerseal-agent (org.fingerseal.Agent1), the way an application uses it.

    fingerseal-app.py capabilities
    fingerseal-app.py unlock                     # a fresh access token, read from a descriptor
    fingerseal-app.py unlock --fetch URL         # ... then GET URL with it (a DPoP proof when bound)
    fingerseal-app.py step-up CONTEXT [REASON] [--max-age SECONDS] [--fresh]
    fingerseal-app.py reveal CONTEXT SEALED-FILE # the plaintext, read from a descriptor
    fingerseal-app.py end-context CONTEXT

Common options: --prompt app (draw the prompt yourself: the Status sentences are printed, and
a PIN or password the request asks for is read from standard input and given with Answer),
--methods finger,pin,password, --app-name NAME, --use-password (skip to the account password),
--cancel-at STATE (cancel the last request when it reaches STATE), --hold (stay connected after a
step-up: the confirmation lasts while this program does), --json (one JSON line per event).

Needs PyGObject (Debian: python3-gi). Secrets never pass through a string on the bus: the token
or the plaintext comes from Take() as a file descriptor, a PIN goes to Answer() as one.
"""
import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request

from gi.repository import Gio, GLib

BUS_NAME = "org.fingerseal.Agent1"
PATH = "/org/fingerseal/Agent1"
IFACE = "org.fingerseal.Agent1"
REQUEST = "org.fingerseal.Agent1.Request"


def say(args, kind, **fields):
    if args.json:
        print(json.dumps(dict(event=kind, **fields)), flush=True)
    else:
        text = fields.get("sentence") or fields.get("text") or ""
        print(f"{kind}: {text}" if text else kind, flush=True)


def options(args):
    opts = {"handle_token": GLib.Variant("s", f"t{os.getpid()}_{args.serial}")}
    if args.prompt:
        opts["prompt"] = GLib.Variant("s", args.prompt)
    if args.methods:
        opts["methods"] = GLib.Variant("as", args.methods.split(","))
    if args.app_name:
        opts["app_name"] = GLib.Variant("s", args.app_name)
    if getattr(args, "max_age", None):
        opts["max_age"] = GLib.Variant("u", args.max_age)
    if getattr(args, "fresh", False):
        opts["fresh"] = GLib.Variant("b", True)
    return opts


def request_path(bus, token):
    sender = bus.get_unique_name()[1:].replace(".", "_")
    return f"{PATH}/request/{sender}/{token}"


def run_request(bus, args, method, parameters, fd_list=None):
    """Calls METHOD, follows its request object to the Response, and returns (code, results)."""
    loop = GLib.MainLoop()
    token = parameters[-1]["handle_token"].get_string()
    path = request_path(bus, token)
    outcome = {}

    def call_request(name):
        bus.call_sync(BUS_NAME, path, REQUEST, name, None, None, Gio.DBusCallFlags.NONE, 5000, None)

    def on_status(_bus, _sender, _path, _iface, _signal, params):
        state, sentence = params.unpack()
        say(args, "status", state=state, sentence=sentence)
        if args.cancel_at == state and args.serial == args.repeat - 1:
            call_request("Cancel")
        elif args.use_password and state == "waiting-for-finger" and not outcome.get("skipped"):
            outcome["skipped"] = True
            call_request("UsePassword")
        elif args.use_pin and state == "needs-password" and not outcome.get("turned"):
            outcome["turned"] = True
            call_request("UsePIN")
        elif state in ("needs-pin", "needs-password") and args.prompt == "app":
            secret = sys.stdin.readline().rstrip("\n").encode()
            read_end, write_end = os.pipe()
            os.write(write_end, secret)
            os.close(write_end)
            fds = Gio.UnixFDList.new_from_array([read_end])
            bus.call_with_unix_fd_list_sync(BUS_NAME, path, REQUEST, "Answer", GLib.Variant("(h)", (0,)), None,
                                            Gio.DBusCallFlags.NONE, 5000, fds, None)

    def on_response(_bus, _sender, _path, _iface, _signal, params):
        outcome["code"], outcome["results"] = params.unpack()
        loop.quit()

    # Subscribed before the call: a quick Response cannot be missed.
    bus.signal_subscribe(BUS_NAME, REQUEST, "Status", path, None, Gio.DBusSignalFlags.NONE, on_status)
    bus.signal_subscribe(BUS_NAME, REQUEST, "Response", path, None, Gio.DBusSignalFlags.NONE, on_response)
    signature = {"Unlock": "(a{sv})", "StepUp": "(ssa{sv})", "Reveal": "(hsa{sv})", "SetEnabled": "(ba{sv})"}[method]
    bus.call_with_unix_fd_list_sync(BUS_NAME, PATH, IFACE, method, GLib.Variant(signature, tuple(parameters)),
                                    None, Gio.DBusCallFlags.NONE, 10000, fd_list, None)
    loop.run()
    code, results = outcome["code"], outcome["results"]
    args.token_type = results.get("token_type", "Bearer")
    say(args, "response", code=code, outcome=results.get("outcome"), sentence=results.get("sentence"),
        method=results.get("method"))
    taken = None
    if code == 0 and results.get("take"):
        reply, fds = bus.call_with_unix_fd_list_sync(BUS_NAME, path, REQUEST, "Take", None, GLib.VariantType("(h)"),
                                                     Gio.DBusCallFlags.NONE, 5000, None, None)
        fd = fds.get(reply.unpack()[0])
        with os.fdopen(fd, "rb") as f:
            taken = f.read()
    if args.take_again:
        # Take when there is nothing (left) to take: the documented error, not a missing object.
        try:
            bus.call_with_unix_fd_list_sync(BUS_NAME, path, REQUEST, "Take", None, GLib.VariantType("(h)"),
                                            Gio.DBusCallFlags.NONE, 5000, None, None)
            say(args, "take", text="taken")
        except GLib.Error as error:
            name = Gio.DBusError.get_remote_error(error) or ""
            Gio.DBusError.strip_remote_error(error)
            say(args, "take", error=name, sentence=error.message)
    return code, taken


def fetch(bus, args, token):
    """GET args.fetch with the token, as an application calls its API. A token bound to this
    computer (token_type DPoP, RFC 9449) needs a proof for each request, from MakeProof: the key
    stays with fingerseal. A server that answers use_dpop_nonce gets one more try with its nonce."""
    nonce = None
    for attempt in range(2):
        headers = {"Authorization": f"{args.token_type} {token.decode()}"}
        if args.token_type == "DPoP":
            proof_options = {"nonce": GLib.Variant("s", nonce)} if nonce else {}
            reply = bus.call_sync(BUS_NAME, PATH, IFACE, "MakeProof", GLib.Variant("(ssa{sv})", ("GET", args.fetch, proof_options)),
                                  GLib.VariantType("(s)"), Gio.DBusCallFlags.NONE, 10000, None)
            headers["DPoP"] = reply.unpack()[0]
        try:
            with urllib.request.urlopen(urllib.request.Request(args.fetch, headers=headers), timeout=10) as response:
                return response.status
        except urllib.error.HTTPError as error:
            offered = error.headers.get("DPoP-Nonce")
            if error.code == 401 and offered and attempt == 0 and args.token_type == "DPoP":
                nonce = offered
                continue
            return error.code
    return 401


def main():
    parser = argparse.ArgumentParser(description="A client of fingerseal-agent.")
    parser.add_argument("command", choices=["capabilities", "status", "set-enabled", "unlock", "step-up", "reveal", "end-context"])
    parser.add_argument("context", nargs="?", help="CONTEXT; for set-enabled: on or off")
    parser.add_argument("extra", nargs="?", help="REASON for step-up, SEALED-FILE for reveal")
    parser.add_argument("--prompt", choices=["dialog", "app"])
    parser.add_argument("--methods")
    parser.add_argument("--app-name")
    parser.add_argument("--max-age", type=int)
    parser.add_argument("--fresh", action="store_true")
    parser.add_argument("--use-password", action="store_true")
    parser.add_argument("--use-pin", action="store_true", help="turn from the password to the PIN once it is asked")
    parser.add_argument("--cancel-at")
    parser.add_argument("--hold", action="store_true", help="stay on the bus after a step-up until stdin closes")
    parser.add_argument("--repeat", type=int, default=1, help="do it this many times on one connection")
    parser.add_argument("--pause", type=float, default=0, help="seconds to wait between repeats")
    parser.add_argument("--end-between", action="store_true", help="EndContext between repeats")
    parser.add_argument("--take-again", action="store_true", help="call Take once more after the request ended (tests)")
    parser.add_argument("--fetch", metavar="URL", help="after unlock: GET URL with the token (and a proof, when bound)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
    status = 0
    for serial in range(args.repeat):
        args.serial = serial
        if serial and args.pause:
            time.sleep(args.pause)
        if serial and args.end_between:
            bus.call_sync(BUS_NAME, PATH, IFACE, "EndContext", GLib.Variant("(s)", (args.context,)), None,
                          Gio.DBusCallFlags.NONE, 10000, None)
            say(args, "ended", text=args.context)
        if args.command == "capabilities":
            reply = bus.call_sync(BUS_NAME, PATH, IFACE, "GetCapabilities", None, GLib.VariantType("(a{sv})"),
                                  Gio.DBusCallFlags.NONE, 10000, None)
            print(json.dumps(reply.unpack()[0], sort_keys=True), flush=True)
            continue
        if args.command == "status":
            # A settings page: the switch, since when, last verified, each also as a sentence.
            reply = bus.call_sync(BUS_NAME, PATH, IFACE, "GetStatus", None, GLib.VariantType("(a{sv})"),
                                  Gio.DBusCallFlags.NONE, 10000, None)
            print(json.dumps(reply.unpack()[0], sort_keys=True, ensure_ascii=False), flush=True)
            continue
        if args.command == "set-enabled":
            code, _ = run_request(bus, args, "SetEnabled", [args.context == "on", options(args)])
            status = status or code
            continue
        if args.command == "end-context":
            bus.call_sync(BUS_NAME, PATH, IFACE, "EndContext", GLib.Variant("(s)", (args.context,)), None,
                          Gio.DBusCallFlags.NONE, 10000, None)
            say(args, "ended", text=args.context)
            continue
        if args.command == "unlock":
            code, token = run_request(bus, args, "Unlock", [options(args)])
            if token is not None:
                # The token itself: a real application sends it to its server, never prints it.
                say(args, "token", length=len(token), token_type=args.token_type)
                if args.fetch:
                    say(args, "fetched", status=fetch(bus, args, token))
        elif args.command == "step-up":
            code, _ = run_request(bus, args, "StepUp", [args.context, args.extra or "", options(args)])
        else:
            with open(args.extra, "rb") as sealed:
                fds = Gio.UnixFDList.new_from_array([os.dup(sealed.fileno())])
            code, plaintext = run_request(bus, args, "Reveal", [0, args.context, options(args)], fds)
            if plaintext is not None:
                sys.stdout.buffer.write(plaintext)
                sys.stdout.flush()
        status = status or code
    if args.hold:
        sys.stdin.read()
    sys.exit(status)


if __name__ == "__main__":
    main()
