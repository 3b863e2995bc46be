#!/usr/bin/python3
"""fingerseal-agent as an application meets it: the dialog after the call, the finger to the
token in hand, and the agent's memory, each beside a baseline measured in the same run.
Prints figures; asserts nothing. Run by scripts/bench.

    agent-bench.py --release DIR --work DIR [--runs N]

- The dialog: StepUp called on the session bus (Gio, in this process) until the X server maps
  the dialog's window (MapNotify on the root window, python3-xlib), with the agent running, and
  as the first dialog of an agent just started. Baseline: dialog-demo, the same PromptDialog in
  a process of its own, from exec to mapped (what a GTK 4 prompt started when asked costs).
- The finger to the token: the reader armed (its Status) to the Response and Take of an Unlock
  (prompt=app), beside the command line's prompt to the token on stdout (fingerseal unlock
  --print-token), against the same broker and local IdP.
- Memory: the agent's resident set idle before its first dialog and after all of them, beside
  dialog-demo's while its dialog shows.

A private Xvfb and session bus, GTK's accessibility bridge off (GTK_A11Y=none) in both the
agent and the baseline: no AT-SPI bus to start. Every process is killed on the way out
(system-bench.py's Processes).
"""
import argparse
import importlib.util
import os
import select
import signal
import subprocess

from gi.repository import Gio, GLib
from Xlib import X, display

HERE = os.path.dirname(os.path.realpath(__file__))
spec = importlib.util.spec_from_file_location("system_bench", os.path.join(HERE, "system-bench.py"))
sb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sb)

BUS_NAME, PATH, IFACE = "org.fingerseal.Agent1", "/org/fingerseal/Agent1", "org.fingerseal.Agent1"
REQUEST = "org.fingerseal.Agent1.Request"


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise sb.Skip(f"no VmRSS for pid {pid}")


class Desktop:
    """Xvfb and a session bus of the bench's own; MapNotify of the root's children watched."""

    def __init__(self, processes):
        self.processes = processes
        xvfb = processes.start(["Xvfb", "-displayfd", "1", "-nolisten", "tcp", "-screen", "0", "1280x800x24"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.display_name = ":" + self.first_line(xvfb, "Xvfb")
        bus = processes.start(["dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=1"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.address = self.first_line(bus, "dbus-daemon")
        self.env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "HOME": os.environ.get("HOME", "/root"),
                    "DISPLAY": self.display_name, "DBUS_SESSION_BUS_ADDRESS": self.address, "GTK_A11Y": "none",
                    "NO_AT_BRIDGE": "1"}
        self.x = display.Display(self.display_name)
        self.x.screen().root.change_attributes(event_mask=X.SubstructureNotifyMask)
        self.x.sync()
        self.bus = Gio.DBusConnection.new_for_address_sync(
            self.address, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION,
            None, None)

    @staticmethod
    def first_line(process, what):
        if not select.select([process.stdout], [], [], 10)[0]:
            raise sb.Skip(f"{what} printed nothing within 10 s")
        line = process.stdout.readline().decode().strip()
        if not line:
            raise sb.Skip(f"{what} exited at once")
        return line

    def drain(self):
        while self.x.pending_events():
            self.x.next_event()

    def wait_mapped(self, limit=20.0):
        """When the next window was mapped (monotonic seconds)."""
        deadline = sb.now() + limit
        while True:
            while self.x.pending_events():
                if self.x.next_event().type == X.MapNotify:
                    return sb.now()
            left = deadline - sb.now()
            if left <= 0:
                raise sb.Skip(f"no window was mapped within {limit} s")
            select.select([self.x.fileno()], [], [], left)

    def close(self):
        self.bus.close_sync(None)
        self.x.close()


class Agent:
    """fingerseal-agent on the desktop, and its requests driven as an application drives them."""

    def __init__(self, processes, desktop, release, broker_socket):
        self.processes, self.desktop = processes, desktop
        self.argv = [os.path.join(release, "fingerseal-agent"), "--idle-exit", "never"]
        self.env = dict(desktop.env, FINGERSEAL_SOCKET=broker_socket)
        self.process = None
        self.serial = 0
        self.signals = []
        self.subscriptions = []

    def start(self):
        self.process = self.processes.start(self.argv, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sb.run(["gdbus", "wait", "--session", "--timeout", "10", BUS_NAME], self.desktop.env, limit=15,
               what="fingerseal-agent taking its name")

    def stop(self):
        self.processes.stop(self.process)

    def call(self, method, signature, parameters, options):
        """Calls METHOD with `options` (a handle_token added); the request's path, with its
        Status and Response signals queued in `self.signals`."""
        self.serial += 1
        token = f"bench{os.getpid()}_{self.serial}"
        sender = self.desktop.bus.get_unique_name()[1:].replace(".", "_")
        path = f"{PATH}/request/{sender}/{token}"
        for subscription in self.subscriptions:
            self.desktop.bus.signal_unsubscribe(subscription)
        self.signals = []
        self.subscriptions = [self.desktop.bus.signal_subscribe(BUS_NAME, REQUEST, name, path, None, Gio.DBusSignalFlags.NONE,
                                                                lambda *a, n=name: self.signals.append((n, a[-1].unpack())))
                              for name in ("Status", "Response")]
        options = dict(options, handle_token=GLib.Variant("s", token))
        self.desktop.bus.call_sync(BUS_NAME, PATH, IFACE, method, GLib.Variant(signature, tuple(parameters + [options])),
                                   None, Gio.DBusCallFlags.NONE, 10000, None)
        return path

    def wait_signal(self, accept, limit=30.0):
        """Iterates the main context until a queued signal satisfies `accept`; returns it."""
        deadline = sb.now() + limit
        context = GLib.MainContext.default()
        # Wakes the blocking iteration now and then, so the deadline is seen.
        ticker = GLib.timeout_add(100, lambda: True)
        try:
            while True:
                while self.signals:
                    signal_ = self.signals.pop(0)
                    if accept(signal_):
                        return signal_
                if sb.now() > deadline:
                    raise sb.Skip(f"the agent sent no such signal within {limit} s")
                context.iteration(True)
        finally:
            GLib.source_remove(ticker)

    def cancel(self, path):
        self.desktop.bus.call_sync(BUS_NAME, path, REQUEST, "Cancel", None, None, Gio.DBusCallFlags.NONE, 5000, None)
        self.wait_signal(lambda s: s[0] == "Response")

    def take(self, path):
        reply, fds = self.desktop.bus.call_with_unix_fd_list_sync(BUS_NAME, path, REQUEST, "Take", None,
                                                                  GLib.VariantType("(h)"), Gio.DBusCallFlags.NONE, 5000,
                                                                  None, None)
        with os.fdopen(fds.get(reply.unpack()[0]), "rb") as f:
            return f.read()


def step_up_to_mapped(agent, desktop):
    desktop.drain()
    start = sb.now()
    path = agent.call("StepUp", "(ssa{sv})", ["bench", "Benchmark."], {"app_name": GLib.Variant("s", "Bench")})
    mapped = desktop.wait_mapped()
    agent.cancel(path)
    return sb.ms(mapped - start)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--release", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()

    def leave(signum, _frame):
        raise SystemExit(128 + signum)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, leave)
    runs = args.runs
    release = os.path.realpath(args.release)
    bench = sb.Bench(argparse.Namespace(release=release, work=args.work, module="/dev/null", pam_runs=0, runs=0,
                                        unlock_runs=runs, only=None))
    print(f"\n== fingerseal-agent: the dialog, the finger to the token, memory (Xvfb, a private session bus; {runs} runs)")
    desktop = None
    try:
        bench.ensure_signed_in()
        desktop = Desktop(bench.processes)
        agent = Agent(bench.processes, desktop, release, bench.broker.socket)

        demo, demo_rss = [], []
        for _ in range(runs):
            desktop.drain()
            start = sb.now()
            shown = bench.processes.start([os.path.join(release, "dialog-demo"), "--title", "Bench: confirm it is you",
                                           "--heading", "Bench wants to confirm it is you.",
                                           "--state", "waiting-for-finger|Swipe your finger across the reader."],
                                          # Its stdin open: it ends at its end.
                                          env=desktop.env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL)
            demo.append(sb.ms(desktop.wait_mapped() - start))
            demo_rss.append(rss_mib(shown.pid))
            bench.processes.stop(shown)

        first, idle_rss = [], None
        for _ in range(max(3, runs // 4)):
            agent.start()
            if idle_rss is None:
                idle_rss = rss_mib(agent.process.pid)
            first.append(step_up_to_mapped(agent, desktop))
            agent.stop()
        agent.start()
        warm = [step_up_to_mapped(agent, desktop) for _ in range(runs)]

        cli, through_agent = [], []
        env = bench.broker.cli_env(bench.work)
        for _ in range(runs):
            timed = sb.run_on_pty([bench.cli, "unlock", "--print-token", "--timeout", "10"], env, bench.broker.sensor,
                                  stdout_pipe=True)
            if timed.status != 0 or timed.prompt is None or timed.line is None:
                raise sb.Skip("fingerseal unlock --print-token gave no token: " + timed.output.decode(errors="replace")[-300:])
            cli.append(sb.ms(timed.line - timed.prompt))
            path = agent.call("Unlock", "(a{sv})", [], {"prompt": GLib.Variant("s", "app"), "app_name": GLib.Variant("s", "Bench")})
            agent.wait_signal(lambda s: s[0] == "Status" and s[1][0] == "waiting-for-finger" and "reader" in s[1][1])
            armed = sb.now()
            sb.sensor_send(bench.broker.sensor, f"SCAN {sb.FINGER_ID}")
            code, results = agent.wait_signal(lambda s: s[0] == "Response")[1]
            if code != 0 or not results.get("take"):
                raise sb.Skip(f"the agent's Unlock did not succeed: {results}")
            if not agent.take(path):
                raise sb.Skip("the agent's Unlock gave an empty token")
            through_agent.append(sb.ms(sb.now() - armed))
        after_rss = rss_mib(agent.process.pid)
    except sb.Skip as why:
        print(f"not run: {why}")
        return
    finally:
        if desktop is not None:
            desktop.close()
        bench.stop()

    def line(what, values, extra=""):
        print(f"{what:<58} median {sb.median(values):7.1f} ms, p95 {sb.p95(values):7.1f} ms{extra}")
    line("dialog-demo, exec to its dialog mapped (baseline):", demo)
    line("StepUp to the dialog mapped, the agent running:", warm,
         f"  (target p50 <= 250 ms: {sb.verdict(sb.median(warm) <= 250)})")
    line("StepUp to the dialog mapped, the agent just started:", first,
         f"  (target p50 <= 1000 ms: {sb.verdict(sb.median(first) <= 1000)})")
    line("command line: prompt -> token on stdout (baseline):", cli)
    gap = sb.median(through_agent) - sb.median(cli)
    line("agent Unlock (prompt=app): reader armed -> token taken:", through_agent,
         f"  (target p50 within 30 ms of the command line's: {sb.verdict(gap <= 30)})")
    print(f"resident memory: dialog-demo showing its dialog {sb.median(demo_rss):.1f} MiB (baseline); the agent idle "
          f"{idle_rss:.1f} MiB, after {runs + len(first) + runs} requests {after_rss:.1f} MiB "
          f"(target <= the baseline: {sb.verdict(after_rss <= sb.median(demo_rss))}; the agent draws with cairo, "
          f"the baseline with GTK's default renderer)")


if __name__ == "__main__":
    main()
