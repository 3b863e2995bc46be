#!/usr/bin/python3
"""Touch to sign in against the gallery's size: scan -> PAM_SUCCESS for 1, 10, 100 and 500
enrolled accounts, on virtual_image (identify on the host, NBIS) and on
virtual_device_storage (identify on the chip), beside a verify of one account with its user
name given (the same reader, the same run). Prints figures; asserts nothing. Run by
scripts/bench.

    identify-bench.py --release DIR --module SO --work DIR [--runs N] [--sizes 1,10,100,500]

The accounts exist for the broker only (nss_wrapper: a passwd and a group file of the
bench's own), so the machine's accounts are not touched. Five vaults are made with the CLI
(PIN, enrollment, `identify on`): four fillers with other fingers and the target (the finger
scanned); a gallery of N is N - 1 copies of the fillers' vaults and, last in the order the
broker reads them (so no matcher can stop early), the target. The
host is a small C program that starts PAM with no user name (login-without-user.c). Every
process is killed on the way out (system-bench.py's Processes).
"""
import argparse
import fcntl
import importlib.util
import os
import pty
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import termios
import time

HERE = os.path.dirname(os.path.realpath(__file__))
spec = importlib.util.spec_from_file_location("system_bench", os.path.join(HERE, "system-bench.py"))
sb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sb)

PIN = "4826"
GROUP, GID, FIRST_UID = "bench-kiosk", 61999, 61000
FIXTURES = os.path.join(os.path.dirname(HERE), "Tests", "Fixtures", "prints")
# The target's finger (enrolled, then its second impression scanned) and the other fingers the
# gallery holds. What a comparison on the host costs depends on the prints' minutiae: libfprint's
# synthetic full-finger test images have many, a real small sensor's captures (egis0570) few,
# so virtual_image runs with each kind of gallery.
TARGET_IMAGE = ("whorl.fpimg", "whorl_dx12_dy-8_rot10.fpimg")
FULL_FINGER_IMAGES = ["arch.fpimg", "tented_arch.fpimg", "loop-right.fpimg", "egis0570.fpimg"]
SENSOR_CAPTURES = ["egis0570.fpimg"] * 4
IDS = {"target": ("target", "target"), "fillers": ["filler-1", "filler-2", "filler-3", "filler-4"]}


def name(index):
    return f"bench-id-{index}"


def accounts_files(work, count):
    """passwd and group files with `count` accounts (and root), for nss_wrapper."""
    passwd, group = os.path.join(work, "passwd"), os.path.join(work, "group")
    with open(passwd, "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\n")
        for index in range(count):
            f.write(f"{name(index)}:x:{FIRST_UID + index}:{GID}::/nonexistent:/usr/sbin/nologin\n")
    with open(group, "w") as f:
        f.write("root:x:0:\n")
        f.write(f"{GROUP}:x:{GID}:" + ",".join(name(index) for index in range(count)) + "\n")
    return passwd, group


class Reader:
    """One driver (and for images, one kind of gallery): how to enroll and how to touch the reader."""

    def __init__(self, driver, variable, fillers=None, label=None):
        self.driver, self.variable, self.images = driver, variable, fillers is not None
        self.fillers = fillers
        self.label = driver if label is None else f"{driver} ({label})"

    def finger(self, role, index=0, probe=False):
        table = {"target": TARGET_IMAGE, "fillers": self.fillers} if self.images else IDS
        entry = table["target"] if role == "target" else (table["fillers"][index], table["fillers"][index])
        return entry[1] if probe else entry[0]

    def touch(self, sensor, finger):
        if self.images:
            with open(os.path.join(FIXTURES, finger), "rb") as f:
                payload = f.read()
            connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            deadline = time.monotonic() + 10
            while True:
                try:
                    connection.connect(sensor)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise sb.Skip(f"the virtual sensor {sensor} did not appear")
                    time.sleep(0.002)
            connection.sendall(payload)
            return connection  # kept open until the scan is read
        sb.sensor_send(sensor, f"SCAN {finger}")
        return None


class IdentifyBench:
    def __init__(self, args):
        self.args = args
        self.release = os.path.realpath(args.release)
        self.cli = os.path.join(self.release, "fingerseal")
        self.module = os.path.realpath(args.module)
        self.work = os.path.realpath(args.work)
        self.processes = sb.Processes()
        os.makedirs(self.work, exist_ok=True)
        self.client = os.path.join(self.work, "login-without-user")
        subprocess.run(["gcc", "-O2", "-Wall", "-o", self.client, os.path.join(HERE, "c-baseline", "login-without-user.c"),
                        "-lpam"], check=True)
        multiarch = subprocess.run(["gcc", "-print-multiarch"], capture_output=True, text=True).stdout.strip()
        self.nss_wrapper = f"/usr/lib/{multiarch or 'x86_64-linux-gnu'}/libnss_wrapper.so"

    def run_driver(self, reader, sizes):
        self.target = max(sizes) - 1
        work = os.path.join(self.work, reader.label.replace(" ", "-").replace("(", "").replace(")", "").replace("'", ""))
        os.makedirs(work)
        if not os.path.exists(self.nss_wrapper):
            raise sb.Skip(f"{self.nss_wrapper} is missing (libnss-wrapper)")
        passwd, group = accounts_files(work, max(sizes))
        broker = sb.Broker(self.processes, work, "broker", self.release)
        self.broker_env = {"FP_DRIVERS_WHITELIST": reader.driver, reader.variable: broker.sensor,
                           "LD_PRELOAD": self.nss_wrapper, "NSS_WRAPPER_PASSWD": passwd, "NSS_WRAPPER_GROUP": group}
        broker.start(extra_env=self.broker_env)
        try:
            self.prepare(broker, reader)
            services = os.path.join(work, "pam.d")
            os.makedirs(services)
            with open(os.path.join(services, "identify"), "w") as f:
                # timeout=120: a whole gallery compared on the host can take longer than the default 15 s.
                f.write(f"auth required {self.module} socket={broker.socket} identify identify_group={GROUP} max_tries=1 timeout=120\n")
            with open(os.path.join(services, "verify"), "w") as f:
                f.write(f"auth required {self.module} socket={broker.socket} max_tries=1\n")
            templates = os.path.join(work, "templates")
            shutil.copytree(broker.state, templates, symlinks=True)
            baseline = self.measure(broker, reader, services, "verify", user=name(self.target))
            print(f"{reader.label}: verify of one account, user name given (baseline): "
                  f"median {sb.median(baseline):.1f} ms, p95 {sb.p95(baseline):.1f} ms")
            for size in sizes:
                self.gallery(broker, templates, size)
                # A returning person: found most recently, so first in the order.
                measured = [("returning", self.measure(broker, reader, services, "identify"))]
                if reader.images:
                    # A person's first touch since the broker started: last in the gallery's
                    # order, so every print is compared on the host before theirs. (A chip
                    # matches against its own storage, which a restart of the virtual driver
                    # empties: not measured there.)
                    measured.insert(0, ("first touch", self.measure(broker, reader, services, "identify", restart=True,
                                                                    runs=self.args.first_runs)))
                for what, times in measured:
                    extra = ""
                    if reader.driver == "virtual_image" and size == 100:
                        extra = f"  (target <= 1000 ms: {sb.verdict(sb.median(times) <= 1000)})"
                    print(f"{reader.label}: identify among {size:3d} accounts, {what:11s}: scan -> PAM_SUCCESS "
                          f"median {sb.median(times):7.1f} ms, p95 {sb.p95(times):7.1f} ms{extra}")
        finally:
            self.processes.stop(broker.process)

    def prepare(self, broker, reader):
        """The five template vaults: the fillers (accounts 0-3) and the target (the last account)."""
        env = broker.cli_env(self.work)
        for index in [0, 1, 2, 3, self.target]:
            role, filler = ("target", 0) if index == self.target else ("fillers", index)
            finger = reader.finger(role, filler)
            sb.run_with_fds([self.cli, "pin", "set", "--user", name(index), "--pin-fd", "{0}"], env, [PIN],
                            what=f"pin set for {name(index)}")
            ends = sb.secret_pipes([PIN])
            enroll = self.processes.start([self.cli, "enroll", "--user", name(index), "--finger", "right-index-finger",
                                           "--pin-fd", str(ends[0]), "--events-fd", "1"], env=env, pass_fds=ends,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            os.close(ends[0])
            held = []
            try:
                if reader.images:
                    for line in enroll.stdout:
                        if b"finger-needed" in line:
                            held.append(reader.touch(broker.sensor, finger))
                else:
                    for _ in range(5):
                        sb.sensor_send(broker.sensor, f"SCAN {finger}", waiting=enroll)
                if enroll.wait(timeout=60) != 0:
                    raise sb.Skip(f"enroll for {name(index)} failed: {enroll.stderr.read().decode(errors='replace')[-200:]}")
            finally:
                for connection in held:
                    connection and connection.close()
                self.processes.stop(enroll)
            sb.run_with_fds([self.cli, "identify", "on", "--user", name(index), "--pin-fd", "{0}"], env, [PIN],
                            what=f"identify on for {name(index)}")

    def gallery(self, broker, templates, size):
        """Exactly `size` accounts take part: the target, the four fillers (made with the CLI),
        and the rest, each with a vault of its own holding the prints of the fillers in turn
        (`fingerseal-bench clone-gallery`: a copied vault directory is another account's and
        would be set aside, issue 31)."""
        fillers = [FIRST_UID + index for index in range(min(4, size - 1))]
        keep = {str(FIRST_UID + self.target)} | {str(uid) for uid in fillers}
        for entry in os.listdir(broker.state):
            if entry.isdigit() and entry not in keep:
                shutil.rmtree(os.path.join(broker.state, entry))
        for uid in fillers:
            if not os.path.exists(os.path.join(broker.state, str(uid))):
                shutil.copytree(os.path.join(templates, str(uid)), os.path.join(broker.state, str(uid)), symlinks=True)
        targets = [f"{FIRST_UID + index}:{name(index)}:{FIRST_UID + index % 4}" for index in range(4, size - 1)]
        if targets:
            sources = [f"source={FIRST_UID + index}:{name(index)}" for index in range(4)]
            subprocess.run([os.path.join(self.release, "fingerseal-bench"), "clone-gallery", broker.state, PIN] + sources + targets,
                           check=True)

    def measure(self, broker, reader, services, service, user=None, restart=False, runs=None):
        """Scan -> PAM_SUCCESS for each run, in milliseconds: after one unmeasured run, or
        (`restart`) each with a broker just started again (nothing remembered). The host runs
        on a pty it leads (as login on a console), so its prompt offers Ctrl-C."""
        times = []
        probe = reader.finger("target", probe=True)
        for run in range((runs or self.args.runs) + (0 if restart else 1)):
            if restart:
                self.processes.stop(broker.process)
                broker.start(extra_env=self.broker_env)
            argv = [self.client, services, service] + ([user] if user else [])
            master, slave = pty.openpty()
            client = None
            held = None
            try:
                client = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                                          preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
                self.processes.started.append(client)
                os.close(slave)
                slave = None
                output, scanned, done = b"", None, None
                deadline = time.monotonic() + 150  # the stack's timeout=120, and then some
                while done is None:
                    if not select.select([master], [], [], max(deadline - time.monotonic(), 0))[0]:
                        raise sb.Skip(f"{service}: no result within 150 s: {output.decode(errors='replace')[-300:]}")
                    try:
                        chunk = os.read(master, 4096)
                    except OSError:
                        chunk = b""
                    if not chunk:
                        raise sb.Skip(f"{service}: the host ended without a result: {output.decode(errors='replace')[-300:]}")
                    output += chunk
                    if scanned is None and b"info: " in output:
                        scanned = time.monotonic()
                        held = reader.touch(broker.sensor, probe)
                    found = re.search(rb"result: ([^\r\n]*)\r?\n", output)
                    if found:
                        done = time.monotonic()
                        if not found.group(1).startswith(b"0 ") or scanned is None:
                            raise sb.Skip(f"{service}: the finger did not sign in: {output.decode(errors='replace')[-300:]}")
                if run > 0 or restart:
                    times.append((done - scanned) * 1000)
                client.wait(timeout=30)
            finally:
                if held:
                    held.close()
                if slave is not None:
                    os.close(slave)
                os.close(master)
                if client is not None:
                    self.processes.stop(client)
        return times


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--release", required=True)
    parser.add_argument("--module", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--first-runs", type=int, default=3, help="runs of a first touch (a broker restart each)")
    parser.add_argument("--sizes", default="1,10,100,500")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]

    def leave(signum, _frame):
        raise SystemExit(128 + signum)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, leave)
    bench = IdentifyBench(args)
    print(f"\n== Touch to sign in: scan -> PAM_SUCCESS against the gallery's size, {args.runs} runs each after 1 unmeasured")
    try:
        for reader in (Reader("virtual_image", "FP_VIRTUAL_IMAGE", SENSOR_CAPTURES, "gallery of a real sensor's captures"),
                       Reader("virtual_image", "FP_VIRTUAL_IMAGE", FULL_FINGER_IMAGES, "gallery of full-finger test images"),
                       Reader("virtual_device_storage", "FP_VIRTUAL_DEVICE_STORAGE")):
            try:
                bench.run_driver(reader, sizes)
            except sb.Skip as why:
                print(f"{reader.label}: not run: {why}")
    finally:
        bench.processes.stop_all()


if __name__ == "__main__":
    main()
