#!/usr/bin/python3
"""The benchmarks that need daemons: fingerseal through its broker (fingersealed), beside
baselines measured in the same run. Prints figures; asserts nothing. Run by scripts/bench.

    system-bench.py --release DIR --work DIR [--pam-runs N] [--runs N] [--unlock-runs N] [--proof-runs N] [--only PART]...

1. PAM, side by side on libfprint's virtual_device, both through pamtester on a pty
   (PAM_TTY set, so the request counts as interactive), services through pam_wrapper:
   pam_fprintd + fprintd (private system bus, mocked polkit; design §6) and pam_fingerseal +
   fingersealed. Whole pamtester run, prompt -> PAM_SUCCESS (the SCAN is sent the moment the
   prompt is seen; PAM_SUCCESS when pamtester prints that pam_authenticate succeeded), and
   prompt -> the host's exit.
2. The module's overhead over pam_permit.so with no vault for the user: a broker running
   (socket=), and no broker at all.
3. `fingerseal token` with a token cached for the session, beside `fingerseal --version`; then
   `fingerseal proof GET URL` beside `fingerseal token` in the same session, for a sign-in bound
   by a software key and one bound by the TPM's key (a swtpm).
4. Match -> access token in hand: `fingerseal unlock --print-token` from the SCAN to the token
   on stdout, against the local IdP, beside the IdP's own refresh round trip: a bearer sign-in
   (a second broker with dpop=off), one bound with DPoP (RFC 9449) by a software key and one
   by the TPM's key (a third broker on a swtpm of its own), interleaved.

Every process started here is killed (its whole process group) on the way out, also on
SIGINT/SIGTERM/SIGHUP; every wait is bounded. Readiness: the broker's READY=1 over
NOTIFY_SOCKET, dbus-daemon's --print-address, bus names through `gdbus wait`, swtpm's pid
written into a FIFO (after it listens).
"""
import argparse
import base64
import fcntl
import hashlib
import json
import math
import os
import pty
import re
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import termios
import time
import urllib.parse
import urllib.request

PROMPT = re.compile(rb"(Place|Swipe) your [^\n]*finger")
FINGER_ID = "bench-finger"
PIN = "4826"
IDP_USER, IDP_PASSWORD, IDP_CLIENT = "alice", "wonderland-7", "fingerseal-test"
# `fingerseal proof`: the request a proof is made for; what the broker says when its proof budget
# (Sources/Broker/Resources/ProofBudget.swift: a burst of 40, then 20 a second) is spent.
PROOF_METHOD, PROOF_URL = "GET", "https://api.example/x"
PROOFS_TOO_FAST = "faster than this computer allows"
PROOF_WARMUP = 3
PROOF_BUDGET_USED = 35    # at most, per broker: 1 checked + PROOF_WARMUP + --proof-runs


class Skip(Exception):
    """A part that cannot run on this tree or machine; the reason is printed."""


class WrongSetUp(Exception):
    """What would be measured is not what the label says (a sign-in bound, or not, against
    what was asked): the bench stops with the reason rather than print such a figure."""


def now():
    return time.monotonic()


def median(values):
    return statistics.median(values)


def p95(values):
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def dpop_proof_problem(proof, method, url, access_token):
    """What is wrong with `proof` as a DPoP proof (RFC 9449 §4.2) for `method url` with
    `access_token`, or None: a JWS of 3 parts, typ dpop+jwt, ES256, the public key in the header
    (no private member), htm, htu, ath = the token's SHA-256, iat and jti; the signature is
    checked with that key where the `cryptography` package is at hand (else "signature not
    checked" is returned as the second of the pair)."""
    parts = proof.split(".")
    if len(parts) != 3 or not all(parts):
        return f"not a JWS of 3 parts ({len(parts)} part(s): {proof[:60]!r})", None
    try:
        header, claims = (json.loads(b64url_decode(part)) for part in parts[:2])
        signature = b64url_decode(parts[2])
    except ValueError as error:
        return f"a part is not base64url JSON: {error}", None
    ath = base64.urlsafe_b64encode(hashlib.sha256(access_token.encode()).digest()).rstrip(b"=").decode()
    jwk = header.get("jwk") or {}
    wrong = [what for what, ok in (
        ("typ", header.get("typ") == "dpop+jwt"), ("alg", header.get("alg") == "ES256"),
        ("jwk", jwk.get("kty") == "EC" and jwk.get("crv") == "P-256" and "d" not in jwk),
        ("htm", claims.get("htm") == method), ("htu", claims.get("htu") == url), ("ath", claims.get("ath") == ath),
        ("iat", isinstance(claims.get("iat"), int)), ("jti", bool(claims.get("jti"))),
        ("signature length", len(signature) == 64)) if not ok]
    if wrong:
        return f"wrong or missing: {', '.join(wrong)} (header {json.dumps(header)}, claims {json.dumps(claims)})", None
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
    except ImportError:
        return None, "signature not checked (no cryptography package)"
    key = ec.EllipticCurvePublicNumbers(int.from_bytes(b64url_decode(jwk["x"]), "big"),
                                        int.from_bytes(b64url_decode(jwk["y"]), "big"), ec.SECP256R1()).public_key()
    try:
        key.verify(encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")),
                   f"{parts[0]}.{parts[1]}".encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return "the signature does not verify with the header's key", None
    return None, "signature verified"


def ms(seconds):
    return seconds * 1000.0


def verdict(ok):
    return "met" if ok else "NOT met"


# ---------------------------------------------------------------------------------------------
# Processes: each in its own session (process group), killed on the way out.

class Processes:
    def __init__(self):
        self.started = []

    def start(self, argv, **kwargs):
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        process = subprocess.Popen(argv, start_new_session=True, **kwargs)
        self.started.append(process)
        return process

    def stop(self, process, grace=3.0):
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        # The group may outlive its leader (children it started).
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            print(f"bench: pid {process.pid} did not exit", file=sys.stderr)
        if process in self.started:
            self.started.remove(process)

    def stop_all(self):
        for process in reversed(list(self.started)):
            self.stop(process)


def run(argv, env, limit=30, stdin=None, pass_fds=(), check=True, what=None):
    """Runs to completion within `limit` seconds; output captured."""
    try:
        result = subprocess.run(argv, env=env, input=stdin, pass_fds=pass_fds, capture_output=True,
                                timeout=limit, start_new_session=True)
    except subprocess.TimeoutExpired as error:
        raise Skip(f"{what or argv[0]} did not finish within {limit} s") from error
    if check and result.returncode != 0:
        said = (result.stderr or result.stdout).decode(errors="replace").strip().splitlines()
        raise Skip(f"{what or argv[0]} failed (exit {result.returncode}): {said[-1] if said else 'no message'}")
    return result


def secret_pipes(texts):
    """One pipe per text (a line each), for --pin-fd N / --password-fd N; the read ends."""
    ends = []
    for text in texts:
        read_end, write_end = os.pipe()
        os.write(write_end, (text + "\n").encode())
        os.close(write_end)
        ends.append(read_end)
    return ends


def run_with_fds(argv, env, texts, limit=60, check=True, what=None):
    """Runs argv (its "{0}", "{1}", ... replaced by the fds holding texts[0], texts[1], ...)."""
    ends = secret_pipes(texts)
    try:
        argv = [arg.format(*ends) for arg in argv]
        process = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, pass_fds=ends, start_new_session=True)
    finally:
        for fd in ends:
            os.close(fd)
    try:
        out, err = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired as error:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise Skip(f"{what or argv[0]} did not finish within {limit} s") from error
    if check and process.returncode != 0:
        said = (err or out).decode(errors="replace").strip().splitlines()
        raise Skip(f"{what or argv[0]} failed (exit {process.returncode}): {said[-1] if said else 'no message'}")
    return process.returncode, out, err


# ---------------------------------------------------------------------------------------------
# libfprint's virtual_device: one command per connection; EOF = taken. The socket exists while
# the device is open (libfprint creates it at open), so connecting is retried, bounded.

def sensor_send(path, command, limit=10.0, waiting=None):
    """`waiting`: the process whose request opens the device; no use waiting once it exited."""
    deadline = now() + limit
    while True:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.connect(path)
            break
        except OSError:
            connection.close()
            if waiting is not None and waiting.poll() is not None:
                raise Skip(f"{os.path.basename(waiting.args[0])} exited (status {waiting.returncode}) before the reader opened")
            if now() > deadline:
                raise Skip(f"the virtual sensor {path} did not appear within {limit} s")
            time.sleep(0.002)
    with connection:
        connection.settimeout(limit)
        connection.sendall(command.encode())
        while connection.recv(64):
            pass


# ---------------------------------------------------------------------------------------------
# A program on a pty, the SCAN sent when the prompt shows; times taken with the monotonic
# clock, the exit seen through a pidfd (no polling).

class Timed:
    # success: when the host printed that pam_authenticate returned PAM_SUCCESS.
    start = prompt = line = success = end = None
    status = None
    output = b""
    stdout = b""


def run_on_pty(argv, env, sensor, scan=f"SCAN {FINGER_ID}", stdout_pipe=False, limit=30.0):
    master, slave = pty.openpty()
    tty = os.ttyname(slave)
    argv = [arg.replace("@TTY@", tty) for arg in argv]
    timed = Timed()
    process = None
    try:
        timed.start = now()
        # The pty is the host's controlling terminal and the host its foreground group, as under
        # a login: then Ctrl-C reaches it and the module's prompt need not wait for Enter.
        process = subprocess.Popen(argv, env=env, stdin=slave, stdout=subprocess.PIPE if stdout_pipe else slave,
                                   stderr=slave, start_new_session=True,
                                   preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        os.close(slave)
        slave = None
        pidfd = os.pidfd_open(process.pid)
        watched = [master, pidfd] + ([process.stdout.fileno()] if stdout_pipe else [])
        deadline = timed.start + limit
        try:
            while timed.end is None:
                remaining = deadline - now()
                if remaining <= 0:
                    raise Skip(f"{os.path.basename(argv[0])} did not finish within {limit} s; it said: "
                               + timed.output.decode(errors="replace")[-300:])
                ready, _, _ = select.select(watched, [], [], remaining)
                for fd in ready:
                    if fd == pidfd:
                        timed.end = now()
                    elif fd == master:
                        try:
                            chunk = os.read(master, 4096)
                        except OSError:  # EIO: every holder of the slave closed it
                            chunk = b""
                        if not chunk:
                            watched.remove(master)
                            continue
                        timed.output += chunk
                        if timed.success is None and b"successfully authenticated" in timed.output:
                            timed.success = now()
                        if timed.prompt is None and PROMPT.search(timed.output):
                            timed.prompt = now()
                            sensor_send(sensor, scan, waiting=process)
                    else:
                        chunk = os.read(fd, 4096)
                        if not chunk:
                            watched.remove(fd)
                            continue
                        timed.stdout += chunk
                        if timed.line is None and b"\n" in timed.stdout:
                            timed.line = now()
        finally:
            os.close(pidfd)
        timed.status = process.wait(timeout=5)
        # What is left on the pty and the pipe.
        while select.select([master], [], [], 0)[0]:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            timed.output += chunk
        if stdout_pipe:
            timed.stdout += process.stdout.read()
        return timed
    finally:
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)
        if process is not None and process.stdout:
            process.stdout.close()
        if slave is not None:
            os.close(slave)
        os.close(master)


def scan_five_times(processes, enroll, sensor, what):
    """Answers an enrollment's five virtual scans; returns what it said. Skip when it hangs."""
    try:
        for _ in range(5):
            sensor_send(sensor, f"SCAN {FINGER_ID}", waiting=enroll)
        return enroll.communicate(timeout=30)[0]
    except subprocess.TimeoutExpired:
        raise Skip(f"{what} did not finish within 30 s")
    finally:
        processes.stop(enroll)


def minimal_swift_module(work):
    """A PAM module in Swift that does nothing, linked like pam_fingerseal.so (static standard
    library, -z nodelete, pam_sm_* only, no implicit _StringProcessing or _Concurrency); None
    when swiftc is not at hand."""
    swiftc = shutil.which("swiftc") or ("/opt/swift/usr/bin/swiftc" if os.path.exists("/opt/swift/usr/bin/swiftc") else None)
    if not swiftc:
        return None
    source, exports, module = (os.path.join(work, name) for name in ("floor.swift", "floor.map", "libfloor.so"))
    with open(source, "w") as f:
        f.write('@_cdecl("pam_sm_authenticate")\n'
                'public func pam_sm_authenticate(_ h: OpaquePointer?, _ f: Int32, _ c: Int32, _ v: OpaquePointer?) -> Int32 { 25 }\n'
                '@_cdecl("pam_sm_setcred")\n'
                'public func pam_sm_setcred(_ h: OpaquePointer?, _ f: Int32, _ c: Int32, _ v: OpaquePointer?) -> Int32 { 0 }\n')
    with open(exports, "w") as f:
        f.write("{ global: pam_sm_*; local: *; };\n")
    built = subprocess.run([swiftc, "-O", "-parse-as-library", "-emit-library", "-static-stdlib", "-use-ld=lld",
                            "-Xlinker", "-znodelete", "-Xlinker", f"--version-script={exports}",
                            "-Xfrontend", "-disable-implicit-string-processing-module-import",
                            "-Xfrontend", "-disable-implicit-concurrency-module-import", source, "-o", module],
                           capture_output=True, timeout=300)
    return module if built.returncode == 0 else None


# ---------------------------------------------------------------------------------------------
# Commands timed in turn (A, B, C, A, B, C, ...), so that load from elsewhere on a shared machine
# falls on all of them alike; posix_spawn, the exit seen through a pidfd.

def interleaved(commands, env, runs, warmup=10, limit=30.0, own_session=True, stderr_to=None):
    """Returns, per command, the wall times in ms of the measured runs. Each run in a process
    session of its own, unless `own_session` is false (then the caller's). `stderr_to`: a file each
    run's stderr goes to (emptied each run; its last line says why a run failed), else /dev/null."""
    programs = []
    for argv in commands:
        path = argv[0] if "/" in argv[0] else shutil.which(argv[0], path=env.get("PATH"))
        if not path:
            raise Skip(f"{argv[0]} not found")
        programs.append((path, argv))
    quiet = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
             (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
             (os.POSIX_SPAWN_OPEN, 2, stderr_to, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600) if stderr_to else
             (os.POSIX_SPAWN_OPEN, 2, "/dev/null", os.O_WRONLY, 0)]
    results = [[] for _ in commands]
    for index in range(warmup + runs):
        for (path, argv), times in zip(programs, results):
            start = now()
            pid = os.posix_spawn(path, argv, env, file_actions=quiet, setsid=own_session)
            pidfd = os.pidfd_open(pid)
            try:
                if not select.select([pidfd], [], [], limit)[0]:
                    (os.killpg if own_session else os.kill)(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    raise Skip(f"{' '.join(argv)} did not finish within {limit} s")
                end = now()
            finally:
                os.close(pidfd)
            _, status = os.waitpid(pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                said = ""
                if stderr_to:
                    with open(stderr_to, errors="replace") as f:
                        lines = f.read().strip().splitlines()
                    said = f": {lines[-1]}" if lines else ""
                raise Skip(f"{' '.join(argv)} failed (exit {os.waitstatus_to_exitcode(status)}){said}")
            if index >= warmup:
                times.append(ms(end - start))
    return results


def peak_rss(commands, env, runs=20):
    """Median peak RSS in MB (10^6 bytes) per command, from /usr/bin/time (a small C parent: a
    child's peak RSS counts the memory it had before exec, so a Python parent would inflate it)."""
    results = [[] for _ in commands]
    for _ in range(runs):
        for argv, kib in zip(commands, results):
            result = run(["/usr/bin/time", "-f", "%M"] + argv, env, limit=30, what=f"{argv[0]} under /usr/bin/time")
            kib.append(int(result.stderr.decode().strip().splitlines()[-1]))
    return [median(kib) * 1024 / 1e6 for kib in results]


# ---------------------------------------------------------------------------------------------
# fprintd without systemd (design §6): a private system bus, polkit mocked to allow all.

# The private system bus's configuration, shared with the Swift tests' PrivateSystemBus.
DBUS_CONFIG = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))),
                           "Tests", "TestSupport", "system-bus.conf")


class Fprintd:
    def __init__(self, processes, work):
        self.processes = processes
        self.work = os.path.join(work, "fprintd")
        os.makedirs(self.work, mode=0o700)
        self.sensor = os.path.join(self.work, "sensor.sock")
        self.env = None

    def start(self):
        for tool in ("/usr/libexec/fprintd", "/usr/bin/dbus-daemon", "/usr/bin/gdbus", "/usr/bin/fprintd-enroll"):
            if not os.access(tool, os.X_OK):
                raise Skip(f"{tool} is missing (scripts/install-deps installs it)")
        config = os.path.join(self.work, "system-bus.conf")
        services = os.path.join(self.work, "services")
        os.makedirs(services, mode=0o700)
        with open(DBUS_CONFIG) as template, open(config, "w") as f:
            f.write(template.read().format(path=os.path.join(self.work, "system_bus_socket"), servicedir=services))
        bus = self.processes.start(["/usr/bin/dbus-daemon", f"--config-file={config}", "--nofork", "--nopidfile",
                                    "--print-address=1"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        # Readiness: the address, printed once the bus listens.
        if not select.select([bus.stdout], [], [], 10)[0]:
            raise Skip("dbus-daemon printed no address within 10 s")
        address = bus.stdout.readline().decode().strip()
        if not address:
            raise Skip("dbus-daemon exited without an address")
        base = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "DBUS_SYSTEM_BUS_ADDRESS": address}
        self.env = base
        log = open(os.path.join(self.work, "daemons.log"), "ab")
        self.processes.start(["/usr/bin/python3", "-m", "dbusmock", "--system", "--template", "polkitd"],
                             env=base, stdout=log, stderr=log)
        self.wait_for_name("org.freedesktop.PolicyKit1")
        run(["gdbus", "call", "--system", "--dest", "org.freedesktop.PolicyKit1",
             "--object-path", "/org/freedesktop/PolicyKit1/Authority",
             "--method", "org.freedesktop.DBus.Mock.AllowUnknown", "true"], base, limit=10, what="polkit mock AllowUnknown")
        for name in ("state", "runtime"):
            os.makedirs(os.path.join(self.work, name), mode=0o700)
        self.processes.start(["/usr/libexec/fprintd", "-t"],
                             env=dict(base, FP_DRIVERS_WHITELIST="virtual_device", FP_VIRTUAL_DEVICE=self.sensor,
                                      STATE_DIRECTORY=os.path.join(self.work, "state"),
                                      RUNTIME_DIRECTORY=os.path.join(self.work, "runtime")),
                             stdout=log, stderr=log)
        self.wait_for_name("net.reactivated.Fprint")

    def wait_for_name(self, name):
        run(["gdbus", "wait", "--system", "--timeout", "10", name], self.env, limit=15, what=f"waiting for {name}")

    def enroll(self, user):
        enroll = self.processes.start(["fprintd-enroll", "-f", "right-index-finger", user], env=self.env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out = scan_five_times(self.processes, enroll, self.sensor, "fprintd-enroll")
        if b"enroll-completed" not in out:
            raise Skip("fprintd-enroll did not complete: " + out.decode(errors="replace").strip()[-300:])


# ---------------------------------------------------------------------------------------------
# A software TPM (swtpm) on two adjacent free ports of 127.0.0.1 (its server, then its control
# port), as scripts/bench and the tests' SwtpmProcess start it. It serves one connection at a
# time: one broker only. Ready once it has written its pid, which it does after binding both
# ports: the pid file is a FIFO read here, so no connection is spent on asking.

class Swtpm:
    def __init__(self, processes, work, name):
        self.processes = processes
        self.work = os.path.join(work, name)
        self.port = None
        self.process = None

    @property
    def tcti(self):
        return f"swtpm:host=127.0.0.1,port={self.port}"

    def start(self):
        if shutil.which("swtpm") is None:
            raise Skip("swtpm is not installed (scripts/install-deps installs it)")
        # Another process may take the ports between the probe and swtpm's bind: fresh ones.
        for attempt in range(5):
            state = os.path.join(self.work, f"state-{attempt}")
            os.makedirs(state, mode=0o700)
            pid_fifo = os.path.join(state, "pid")
            os.mkfifo(pid_fifo, 0o600)
            port = free_port_pair()
            said = os.open(pid_fifo, os.O_RDONLY | os.O_NONBLOCK)
            with open(os.path.join(self.work, "swtpm.log"), "ab") as log:
                process = self.processes.start(
                    ["swtpm", "socket", "--tpm2", "--server", f"type=tcp,port={port},bindaddr=127.0.0.1",
                     "--ctrl", f"type=tcp,port={port + 1},bindaddr=127.0.0.1", "--tpmstate", f"dir={state}",
                     "--pid", f"file={pid_fifo}", "--flags", "not-need-init,startup-clear"], stdout=log, stderr=log)
            pidfd = os.pidfd_open(process.pid)
            written = b""
            try:
                # A FIFO no writer has opened yet is not readable (no end of file before it is).
                deadline = now() + 10
                while (remaining := deadline - now()) > 0:
                    ready = select.select([said, pidfd], [], [], remaining)[0]
                    if said in ready:
                        chunk = os.read(said, 64)
                        if not chunk:  # swtpm closed its pid file: both ports listen
                            break
                        written += chunk
                    elif pidfd in ready:  # exited (a port taken, say)
                        break
            finally:
                os.close(pidfd)
                os.close(said)
            if written.strip() == str(process.pid).encode() and process.poll() is None:
                self.port, self.process = port, process
                return
            self.processes.stop(process)
        raise Skip("swtpm did not start (5 attempts): " + self.said())

    def said(self):
        try:
            with open(os.path.join(self.work, "swtpm.log"), "rb") as f:
                return f.read().decode(errors="replace").strip()[-300:] or "no message"
        except OSError:
            return "no log"


def free_port_pair():
    """A free port P of 127.0.0.1 whose neighbour P+1 is free too (at the time of asking)."""
    for _ in range(50):
        first = socket.socket()
        second = socket.socket()
        try:
            first.bind(("127.0.0.1", 0))
            port = first.getsockname()[1]
            if port < 65535:
                second.bind(("127.0.0.1", port + 1))
                return port
        except OSError:
            pass
        finally:
            first.close()
            second.close()
    raise Skip("no two adjacent free ports on 127.0.0.1 for swtpm")


# ---------------------------------------------------------------------------------------------
# fingersealed in the foreground, ready when it says READY=1 over NOTIFY_SOCKET.

class Broker:
    def __init__(self, processes, work, name, release):
        self.processes = processes
        self.release = release
        self.work = os.path.join(work, name)
        os.makedirs(self.work, mode=0o700)
        self.socket = os.path.join(self.work, "socket")
        self.state = os.path.join(self.work, "state")
        self.sensor = os.path.join(self.work, "sensor.sock")
        self.config = os.path.join(self.work, "fingerseal.conf")
        self.log = os.path.join(self.work, "broker.log")
        self.process = None

    def start(self, config="", extra_env=None, wrap=()):
        with open(self.config, "w") as f:
            f.write(config)
        notify_path = os.path.join(self.work, "notify")
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if os.path.exists(notify_path):  # a restart (identify-bench.py)
            os.unlink(notify_path)
        notify.bind(notify_path)
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "NOTIFY_SOCKET": notify_path,
               # What libfprint sees: the virtual reader only.
               "FP_DRIVERS_WHITELIST": "virtual_device", "FP_VIRTUAL_DEVICE": self.sensor}
        env.update(extra_env or {})
        try:
            with open(self.log, "ab") as log:
                self.process = self.processes.start(
                    list(wrap) + [os.path.join(self.release, "fingersealed"), "--socket", self.socket, "--state", self.state,
                     "--config", self.config], env=env, stdout=log, stderr=log)
            deadline = now() + 20
            while now() < deadline:
                if select.select([notify], [], [], 0.2)[0]:
                    if b"READY=1" in notify.recv(4096):
                        return
                if self.process.poll() is not None:
                    break
            raise Skip("fingersealed did not say READY=1 within 20 s: " + self.said())
        finally:
            notify.close()

    def said(self):
        try:
            with open(self.log, "rb") as f:
                return f.read().decode(errors="replace").strip()[-300:] or "no message"
        except OSError:
            return "no log"

    def cli_env(self, work):
        return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "NO_COLOR": "1",
                "HOME": os.environ.get("HOME", "/root"), "FINGERSEAL_SOCKET": self.socket}


# ---------------------------------------------------------------------------------------------

def pam_wrapper_env(base, services):
    multiarch = subprocess.run(["gcc", "-print-multiarch"], capture_output=True, text=True).stdout.strip() or "x86_64-linux-gnu"
    wrapper = f"/usr/lib/{multiarch}/libpam_wrapper.so"
    if not os.path.exists(wrapper):
        raise Skip(f"{wrapper} is missing (libpam-wrapper)")
    return dict(base, LD_PRELOAD=wrapper, PAM_WRAPPER="1", PAM_WRAPPER_SERVICE_DIR=services)


def module_dir():
    multiarch = subprocess.run(["gcc", "-print-multiarch"], capture_output=True, text=True).stdout.strip() or "x86_64-linux-gnu"
    return f"/lib/{multiarch}/security"


class Bench:
    def __init__(self, args):
        self.args = args
        self.release = os.path.realpath(args.release)
        self.work = os.path.realpath(args.work)
        self.cli = os.path.join(self.release, "fingerseal")
        # The module that ships: Embedded Swift (scripts/build-module), not a SwiftPM product.
        self.module = os.path.realpath(args.module)
        self.processes = Processes()
        self.services = os.path.join(self.work, "pam.d")
        os.makedirs(self.services, exist_ok=True)
        self.user = subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
        self.broker = None        # with this user's vault and an enrolled finger, once set up
        self.broker_ready = None  # why not, when not
        self.idp_dir = os.path.join(self.work, "idp")
        self.issuer = None
        self.signed_in = None     # "" once signed in, else why not
        self.bearer_broker = None  # broker B: dpop=off, signed in at the same IdP
        self.tpm_broker = None    # broker T: on a swtpm of its own, its sign-in bound by the TPM's key
        self.tpm_ready = None     # why not, when not
        self.fprintd = None       # fprintd on its private bus, once started
        self.fprintd_broker = None
        self.installed = []       # service files written into /etc/pam.d, removed at the end

    def service(self, name, lines):
        with open(os.path.join(self.services, name), "w") as f:
            f.write("\n".join(lines) + "\n")

    # -- 1 ----------------------------------------------------------------------------------

    def ensure_broker(self):
        """Broker A, set up once; Skip with the reason when it cannot be."""
        if self.broker is None and self.broker_ready is None:
            try:
                self.broker = self.fingerseal_with_finger()
            except Skip as why:
                self.broker_ready = str(why)
        if self.broker is None:
            raise Skip(self.broker_ready)
        return self.broker

    def fingerseal_with_finger(self, name="broker", config=""):
        """Broker A (or another, by name and configuration): this user's vault, PIN, one enrolled
        finger, through the CLI."""
        broker = Broker(self.processes, self.work, name, self.release)
        broker.start(config)
        env = broker.cli_env(self.work)
        uid = os.getuid()
        code, out, err = run_with_fds([self.cli, "pin", "set", "--pin-fd", "{0}"], env, [PIN], check=False,
                                      what="fingerseal pin set")
        if not os.path.isdir(os.path.join(broker.state, str(uid))):
            said = (err or out).decode(errors="replace").strip().splitlines()
            raise Skip("`fingerseal pin set --pin-fd N` made no vault in the broker's store "
                       f"(exit {code}: {said[-1] if said else 'no message'})")
        ends = secret_pipes([PIN])
        try:
            enroll = self.processes.start([self.cli, "enroll", "--pin-fd", str(ends[0])], env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, pass_fds=ends)
        finally:
            for fd in ends:
                os.close(fd)
        out = scan_five_times(self.processes, enroll, broker.sensor, "fingerseal enroll")
        if enroll.returncode != 0:
            said = out.decode(errors="replace").strip().splitlines()
            raise Skip(f"fingerseal enroll failed (exit {enroll.returncode}): {said[-1] if said else 'no message'}")
        return broker

    def fingerseal_through_fprintd(self, fprintd):
        """Broker C: reader=fprintd on fprintd's private bus; the user's vault made after
        fprintd-enroll, so `pin set` binds fprintd's set. Its own libfprint sensor path is
        never created unless it opened a device itself."""
        if fprintd.env is None:
            raise Skip("fprintd is not running")
        broker = Broker(self.processes, self.work, "broker-fprintd", self.release)
        broker.start("reader=fprintd\nfprintd_storage=" + os.path.join(fprintd.work, "state") + "\n",
                     extra_env={"DBUS_SYSTEM_BUS_ADDRESS": fprintd.env["DBUS_SYSTEM_BUS_ADDRESS"]})
        env = broker.cli_env(self.work)
        code, out, err = run_with_fds([self.cli, "pin", "set", "--pin-fd", "{0}"], env, [PIN], check=False,
                                      what="fingerseal pin set (fprintd backend)")
        if code != 0:
            said = (err or out).decode(errors="replace").strip().splitlines()
            raise Skip(f"pin set through fprintd failed (exit {code}): {said[-1] if said else 'no message'}")
        return broker

    def side_by_side(self, wrapper=True):
        """pam_permit, pam_fprintd + fprintd and fingerseal, interleaved on one pty each run.
        `wrapper`: the services through pam_wrapper in the bench's own directory; otherwise
        installed in /etc/pam.d (removed afterwards) and pamtester as it is."""
        runs = self.args.pam_runs
        where = "services through pam_wrapper" if wrapper else "services in /etc/pam.d, no pam_wrapper"
        print(f"{'' if wrapper else chr(10)}== PAM side by side on virtual_device: pamtester on a pty (PAM_TTY set), {where}, "
              f"{runs} runs each after 2 unmeasured, interleaved")
        pamtester = ["pamtester", "-I", "tty=@TTY@"]
        suffix = "" if wrapper else f"-{os.getpid()}"

        def service(name, lines):
            if wrapper:
                self.service(name, lines)
            else:
                path = os.path.join("/etc/pam.d", name + suffix)
                with open(path, "w") as f:
                    f.write("\n".join(lines) + "\n")
                self.installed.append(path)
            return name + suffix

        def env_for(base):
            return pam_wrapper_env(base, self.services) if wrapper else dict(base)

        plain = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
        # The baseline, in the same run: a stack that only says yes (no prompt, no sensor).
        permit = "pam_permit.so only"
        name = service("bench-side-permit", [f"auth required {module_dir()}/pam_permit.so"])
        baseline = (permit, env_for(plain), pamtester + [name, self.user, "authenticate"], None)
        contenders = []
        fprintd = None
        try:
            if self.fprintd is None:
                self.fprintd = Fprintd(self.processes, self.work)
                self.fprintd.start()
                self.fprintd.enroll(self.user)
            fprintd = self.fprintd
            name = service("bench-fprintd", [f"auth required {module_dir()}/pam_fprintd.so"])
            contenders.append(("pam_fprintd + fprintd", env_for(fprintd.env),
                               pamtester + [name, self.user, "authenticate"], fprintd.sensor))
        except Skip as why:
            print(f"pam_fprintd + fprintd: not run: {why}")
        fprintd_broker = None
        if contenders:
            try:
                if self.fprintd_broker is None:
                    self.fprintd_broker = self.fingerseal_through_fprintd(fprintd)
                fprintd_broker = self.fprintd_broker
                name = service("bench-fingerseal-fprintd", [f"auth required {self.module} socket={fprintd_broker.socket}"])
                contenders.append(("pam_fingerseal + fingersealed (fprintd backend)", env_for(plain),
                                   pamtester + [name, self.user, "authenticate"], fprintd.sensor))
            except Skip as why:
                print(f"pam_fingerseal through fprintd: not run: {why}")
        try:
            self.ensure_broker()
            name = service("bench-fingerseal-finger", [f"auth required {self.module} socket={self.broker.socket}"])
            contenders.append(("pam_fingerseal + fingersealed", env_for(plain),
                               pamtester + [name, self.user, "authenticate"], self.broker.sensor))
        except Skip as why:
            print(f"pam_fingerseal + fingersealed: not run: {why}")
        if not contenders:
            return
        contenders.insert(0, baseline)
        whole = {name: [] for name, *_ in contenders}
        after = {name: [] for name, *_ in contenders}
        to_exit = {name: [] for name, *_ in contenders}
        warmup = 2
        try:
            for run_index in range(warmup + runs):
                for name, env, argv, sensor in contenders:
                    timed = run_on_pty(argv, env, sensor)
                    if sensor is None:
                        if timed.status != 0:
                            raise Skip(f"{name} failed (exit {timed.status})")
                        if run_index >= warmup:
                            whole[name].append(ms(timed.end - timed.start))
                        continue
                    if timed.prompt is None or timed.status != 0 or timed.success is None:
                        raise Skip(f"{name}: the finger did not authenticate (exit {timed.status}): "
                                   + timed.output.decode(errors="replace").strip()[-300:])
                    if run_index < warmup:
                        continue
                    whole[name].append(ms(timed.end - timed.start))
                    # PAM_SUCCESS is when pam_authenticate returns: pamtester says so at once.
                    after[name].append(ms(timed.success - timed.prompt))
                    to_exit[name].append(ms(timed.end - timed.prompt))
        except Skip as why:
            print(f"side by side stopped: {why}")
            return
        for name, *_ in contenders:
            print(f"{name}:")
            print(f"  whole pamtester run:   median {median(whole[name]):7.2f} ms, p95 {p95(whole[name]):7.2f} ms")
            if not after[name]:
                continue
            print(f"  prompt -> PAM_SUCCESS: median {median(after[name]):7.2f} ms, p95 {p95(after[name]):7.2f} ms "
                  f"(the host's success line)")
            print(f"  prompt -> host exited: median {median(to_exit[name]):7.2f} ms, p95 {p95(to_exit[name]):7.2f} ms")
        fp, fsd = "pam_fprintd + fprintd", "pam_fingerseal + fingersealed (fprintd backend)"
        if whole.get(fp) and whole.get(fsd):
            extra = median(whole[fsd]) - median(whole[fp])
            print(f"fingerseal through fprintd - pam_fprintd, whole run (medians): {extra:+.2f} ms  "
                  f"(target <= +2 ms: {verdict(extra <= 2.0)})")
            # Never both: the broker's own libfprint never opened a device (it would have made this socket).
            print(f"fingerseal through fprintd opened no device itself: {verdict(not os.path.exists(fprintd_broker.sensor))}")
        if whole.get(fp) and whole.get("pam_fingerseal + fingersealed"):
            fs = "pam_fingerseal + fingersealed"
            ratio_whole = median(whole[fs]) / median(whole[fp])
            ratio_after = median(after[fs]) / median(after[fp])
            print(f"fingerseal / pam_fprintd, whole run (medians):        {ratio_whole:.2f}x  "
                  f"(target <= 0.5x: {verdict(ratio_whole <= 0.5)})")
            print(f"fingerseal / pam_fprintd, prompt -> PAM_SUCCESS:      {ratio_after:.2f}x")
            above_fs, above_fp = median(whole[fs]) - median(whole[permit]), median(whole[fp]) - median(whole[permit])
            ratio_above = above_fs / above_fp if above_fp > 0 else float("inf")
            print(f"time above pam_permit's whole run ({median(whole[permit]):.2f} ms): fingerseal {above_fs:+.2f} ms, "
                  f"pam_fprintd + fprintd {above_fp:+.2f} ms: {ratio_above:.2f}x (target <= 0.25x: {verdict(ratio_above <= 0.25)})")
        fs_name = "pam_fingerseal + fingersealed"
        if after.get(fs_name):
            print(f"fingerseal prompt -> PAM_SUCCESS median {median(after[fs_name]):.2f} ms "
                  f"(target <= 0.5 ms: {verdict(median(after[fs_name]) <= 0.5)})")
            print(f"fingerseal prompt -> host exited median {median(to_exit[fs_name]):.2f} ms "
                  f"(target <= 1.0 ms: {verdict(median(to_exit[fs_name]) <= 1.0)})")

    # -- 2 ----------------------------------------------------------------------------------

    def module_overhead(self):
        runs = self.args.runs
        print(f"\n== PAM module overhead over pam_permit.so, no vault for the user: pamtester (pam_wrapper, PAM_TTY set), "
              f"{runs} runs each after 10 unmeasured, interleaved")
        try:
            empty = Broker(self.processes, self.work, "broker-empty", self.release)
            empty.start()
        except Skip as why:
            print(f"not run: {why}")
            return
        permit = f"auth required {module_dir()}/pam_permit.so"
        # The floor for any PAM module in Swift: one that links the static standard library
        # the same way and does nothing (returns PAM_IGNORE).
        minimal = minimal_swift_module(self.work)
        services = {
            "pam_permit.so only": ("bench-permit", [permit]),
            "pam_fingerseal.so + permit, broker running": (
                "bench-fingerseal-broker", [f"auth sufficient {self.module} socket={empty.socket}", permit]),
            "pam_fingerseal.so + permit, no broker": (
                "bench-fingerseal-nobroker", [f"auth sufficient {self.module} socket={self.work}/no-broker.sock", permit]),
        }
        if minimal:
            services["do-nothing Swift module + permit (the floor)"] = ("bench-swift-floor", [f"auth sufficient {minimal}", permit])
        for service, lines in services.values():
            self.service(service, lines)
        env = pam_wrapper_env({"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}, self.services)
        commands = [["pamtester", "-I", "tty=/dev/pts/0", service, self.user, "authenticate"] for service, _ in services.values()]
        try:
            results = interleaved(commands, env, runs)
            rss = peak_rss(commands, env)
        except Skip as why:
            print(f"not run: {why}")
            return
        medians = [median(times) for times in results]
        for index, name in enumerate(services):
            line = (f"{name + ':':46} median {medians[index]:6.2f} ms, p95 {p95(results[index]):6.2f} ms, "
                    f"peak RSS {rss[index]:5.1f} MB (median of 20)")
            if index and "floor" in name:
                line += f"\n{'':46} {medians[index] - medians[0]:+.2f} ms, {rss[index] - rss[0]:+.1f} MB RSS"
            elif index:
                extra_ms, extra_mb = medians[index] - medians[0], rss[index] - rss[0]
                line += (f"\n{'':46} {extra_ms:+.2f} ms over pam_permit (target <= +0.5 ms: {verdict(extra_ms <= 0.5)}), "
                         f"{extra_mb:+.1f} MB RSS (target <= +1 MB: {verdict(extra_mb <= 1)})")
            print(line)
        size = os.path.getsize(self.module)
        print(f"module size on disk (as installed): {size / 1024:.1f} KiB (target <= 1 MiB: {verdict(size <= 1 << 20)}; "
              f"pam_permit.so {os.path.getsize(os.path.join(module_dir(), 'pam_permit.so')) / 1024:.1f} KiB)")
        self.processes.stop(empty.process)

    # -- 3, 4: signed in ------------------------------------------------------------------------

    def ensure_signed_in(self):
        """This user's vault in broker A signed in at the local IdP, once; Skip with the reason."""
        if self.signed_in is None:
            try:
                self.sign_in()
                self.signed_in = ""
            except Skip as why:
                self.signed_in = str(why)
        if self.signed_in:
            raise Skip(self.signed_in)

    def sign_in(self):
        self.ensure_broker()
        root = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
        line = run([os.path.join(root, "scripts", "local-idp"), "start", self.idp_dir], dict(os.environ), limit=60,
                   what="scripts/local-idp start").stdout.decode()
        self.issuer = re.search(r"issuer=(\S+)", line).group(1)
        self.log_in(self.broker)

    def log_in(self, broker):
        run_with_fds([self.cli, "login", "--issuer", self.issuer, "--client-id", IDP_CLIENT, "--flow", "password",
                      "--idp-user", IDP_USER, "--password-fd", "{0}", "--pin-fd", "{1}"], broker.cli_env(self.work),
                     [IDP_PASSWORD, PIN], what="fingerseal login --flow password")

    def ensure_bearer_broker(self):
        """Broker B: its own vault and finger, `dpop = off`, so that its sign-in at the same IdP
        (which offers DPoP) is bearer. Set up once, after broker A's sign-in (the IdP)."""
        if self.bearer_broker is None:
            self.ensure_signed_in()
            broker = self.fingerseal_with_finger("broker-bearer", "dpop = off\n")
            self.log_in(broker)
            self.bearer_broker = broker
        return self.bearer_broker

    def ensure_tpm_broker(self):
        """Broker T: its own vault and finger, and a swtpm of its own (`tpm_tcti`; a swtpm serves
        one connection, and the broker keeps its), signed in at the same IdP with DPoP
        (dpop=auto): the proof key is then the TPM's. `tpm = off`: its keyslots are made as
        broker A's (no TPM on this machine), so that only the proof key differs. Set up once,
        after broker A's sign-in; Skip with the reason when it cannot be."""
        if self.tpm_broker is None and self.tpm_ready is None:
            try:
                self.ensure_signed_in()
                swtpm = Swtpm(self.processes, self.work, "swtpm-broker-tpm")
                swtpm.start()
                broker = self.fingerseal_with_finger("broker-tpm", f"tpm_tcti = {swtpm.tcti}\ntpm = off\n")
                self.log_in(broker)
                self.tpm_broker = broker
            except Skip as why:
                self.tpm_ready = str(why)
        if self.tpm_broker is None:
            raise Skip(self.tpm_ready)
        return self.tpm_broker

    def checked_tpm_broker(self):
        """Broker T, its sign-in bound by the TPM's key (status --json), else the bench stops."""
        broker = self.ensure_tpm_broker()
        bound, proof_key = self.binding(broker)
        if bound is not True or proof_key != "tpm":
            raise WrongSetUp(f"broker T's sign-in (tpm_tcti = a swtpm) is not bound by the TPM's key (status --json: "
                             f"bound_to_computer {json.dumps(bound)}, proof_key {json.dumps(proof_key)}); "
                             "the TPM figures would be another key's")
        return broker

    def binding(self, broker):
        """What `fingerseal status --json` says of the sign-in: bound_to_computer, proof_key."""
        said = run([self.cli, "status", "--json"], broker.cli_env(self.work), what="fingerseal status --json").stdout
        status = json.loads(said)
        return status.get("bound_to_computer"), status.get("proof_key")

    def dpop_counts(self):
        """The IdP's DPoP counts (/test/dpop): proofs checked, tokens bound, refusals by reason."""
        parts = urllib.parse.urlsplit(self.issuer)
        with urllib.request.urlopen(f"{parts.scheme}://{parts.netloc}/test/dpop", timeout=10) as answer:
            return json.load(answer)

    def vault_reads(self):
        """How many times one finger success opens the vault file, the lock and the lockout
        file: a second broker on broker A's store, under strace, answers one PAM login and one
        `step-up` with the finger, then stops (its after-answer bookkeeping included)."""
        print("\n== Vault file opens per finger success (strace of the broker; target 1 read; before issue 20: "
              "4 reads, the lock 5 times, the lockout file 3 times)")
        try:
            broker_a = self.ensure_broker()
            if shutil.which("strace") is None:
                raise Skip("strace is not installed")
            for name, run in (("PAM login (pamtester, pam_wrapper)", self.pam_finger_success),
                              ("fingerseal step-up with the finger", self.cli_finger_success)):
                traced = Broker(self.processes, self.work, "broker-traced-" + str(len(os.listdir(self.work))), self.release)
                traced.state = broker_a.state
                trace = os.path.join(traced.work, "trace")
                traced.start(wrap=["strace", "-f", "-qq", "-e", "trace=open,openat", "-o", trace])
                run(traced)
                self.processes.stop(traced.process)
                opened = {"vault": 0, "lock": 0, "lockout": 0}
                with open(trace, errors="replace") as f:
                    for line in f:
                        match = re.search(r'open(?:at)?\([^"]*"([^"]*)"', line)
                        file = os.path.basename(match.group(1)) if match else None
                        # The vault and the lockout file as read (their writes go to temp
                        # files); the lock however it is opened.
                        if file in opened and (file == "lock" or "O_RDONLY" in line):
                            opened[file] += 1
                print(f"{name}: vault read {opened['vault']} time(s) {verdict(opened['vault'] <= 1)}, "
                      f"lock opened {opened['lock']}, lockout file read {opened['lockout']}")
        except Skip as why:
            print(f"not run: {why}")

    def pam_finger_success(self, broker):
        self.service("bench-fingerseal-traced", [f"auth required {self.module} socket={broker.socket}"])
        base = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
        timed = run_on_pty(["pamtester", "-I", "tty=@TTY@", "bench-fingerseal-traced", self.user, "authenticate"],
                           pam_wrapper_env(base, self.services), broker.sensor)
        if timed.status != 0:
            raise Skip("the traced PAM login did not succeed: " + timed.output.decode(errors="replace")[-300:])

    def cli_finger_success(self, broker):
        env = dict(broker.cli_env(self.work), FINGERSEAL_SOCKET=broker.socket)
        timed = run_on_pty([self.cli, "step-up", "bench"], env, broker.sensor)
        if timed.status != 0:
            raise Skip("the traced step-up did not succeed: " + timed.output.decode(errors="replace")[-300:])

    def unlock_latency(self):
        runs = self.args.unlock_runs
        print(f"\n== Match -> access token in hand: fingerseal unlock --print-token through the broker, against the local "
              f"IdP on 127.0.0.1 ({runs} runs each after 1 unmeasured, a bearer sign-in, one bound with DPoP by a software "
              f"key and one by the TPM's key (a swtpm), interleaved)")
        try:
            self.ensure_signed_in()
            bearer = self.ensure_bearer_broker()
            # Broker A binds where the provider offers DPoP (dpop=auto, the default), broker B
            # never (dpop=off): each must be so, or its figure is the other's.
            bound, proof_key = self.binding(self.broker)
            if bound is not True:
                raise WrongSetUp(f"broker A's sign-in is not bound to this computer (status --json: bound_to_computer "
                                 f"{json.dumps(bound)}, proof_key {json.dumps(proof_key)}); the DPoP figures would be bearer ones")
            bearer_bound, _ = self.binding(bearer)
            if bearer_bound is not False:
                raise WrongSetUp(f"broker B's sign-in (dpop=off) is not bearer (status --json: bound_to_computer "
                                 f"{json.dumps(bearer_bound)}); the bearer figures would be DPoP ones")
            contenders = {"bearer": bearer, "DPoP": self.broker}
            # Broker T (the TPM's key) where it can be set up; a key that is not the TPM's stops the bench.
            try:
                contenders["DPoP, TPM"] = self.checked_tpm_broker()
            except Skip as why:
                print(f"DPoP with the TPM's key: not run: {why}")
            after_scan = {name: [] for name in contenders}
            whole = {name: [] for name in contenders}
            before = self.dpop_counts()
            # One round unmeasured: the run's first unlock takes several times the others, whichever goes first.
            warmup = 1
            for run_index in range(warmup + runs):
                for name, broker in contenders.items():
                    timed = run_on_pty([self.cli, "unlock", "--print-token", "--timeout", "10"], broker.cli_env(self.work),
                                       broker.sensor, stdout_pipe=True)
                    if timed.status != 0 or timed.prompt is None or timed.line is None or not timed.stdout.strip():
                        raise Skip(f"fingerseal unlock --print-token ({name}) did not give a token (exit {timed.status}): "
                                   + timed.output.decode(errors="replace").strip()[-300:])
                    if run_index < warmup:
                        continue
                    after_scan[name].append(ms(timed.line - timed.prompt))
                    whole[name].append(ms(timed.end - timed.start))
            after = self.dpop_counts()
        except Skip as why:
            print(f"not run: {why}")
            return
        baseline = self.idp_refresh_round_trips(runs)
        dpop_label = f"DPoP on ({proof_key} proof key)"
        print(f"IdP refresh alone (Python urllib, new connection each): median {median(baseline):6.2f} ms, "
              f"p95 {p95(baseline):6.2f} ms")
        print(f"{'SCAN -> token on stdout, bearer:':55} median {median(after_scan['bearer']):6.2f} ms, "
              f"p95 {p95(after_scan['bearer']):6.2f} ms")
        dpop = after_scan["DPoP"]
        print(f"{'SCAN -> token on stdout, ' + dpop_label + ':':55} median {median(dpop):6.2f} ms, "
              f"p95 {p95(dpop):6.2f} ms  (targets with DPoP on: p50 <= 50 ms: {verdict(median(dpop) <= 50)}; "
              f"p95 <= 150 ms: {verdict(p95(dpop) <= 150)})")
        print(f"{'':55} {median(dpop) - median(after_scan['bearer']):+.2f} ms over bearer at p50, "
              f"{p95(dpop) - p95(after_scan['bearer']):+.2f} ms at p95")
        tpm = after_scan.get("DPoP, TPM")
        if tpm:
            print(f"{'SCAN -> token on stdout, DPoP on (tpm proof key):':55} median {median(tpm):6.2f} ms, "
                  f"p95 {p95(tpm):6.2f} ms  (targets with DPoP on: p50 <= 50 ms: {verdict(median(tpm) <= 50)}; "
                  f"p95 <= 150 ms: {verdict(p95(tpm) <= 150)})")
            print(f"{'':55} {median(tpm) - median(after_scan['bearer']):+.2f} ms over bearer at p50, "
                  f"{p95(tpm) - p95(after_scan['bearer']):+.2f} ms at p95; {median(tpm) - median(dpop):+.2f} ms over the "
                  f"{proof_key} key at p50, {p95(tpm) - p95(dpop):+.2f} ms at p95")
        for name, label in (("bearer", "bearer"), ("DPoP", "DPoP on"), ("DPoP, TPM", "DPoP, TPM")):
            if not whole.get(name):
                continue
            print(f"{'whole fingerseal unlock --print-token run, ' + label + ':':55} median {median(whole[name]):6.2f} ms, "
                  f"p95 {p95(whole[name]):6.2f} ms")
        refused = {reason: count - before["refused"].get(reason, 0) for reason, count in after["refused"].items()
                   if count != before["refused"].get(reason, 0)}
        print(f"the IdP checked {after['proofs'] - before['proofs']} DPoP proofs during the {len(contenders) * (warmup + runs)} "
              f"unlocks (refused: {refused or 'none'})")

    def idp_refresh_round_trips(self, runs):
        """The floor of an unlock: the IdP's own refresh (rotation), its own token chain."""
        token_url = self.issuer + "/token/"

        def post(fields):
            body = urllib.parse.urlencode(fields).encode()
            with urllib.request.urlopen(urllib.request.Request(token_url, data=body), timeout=10) as answer:
                return json.load(answer)
        refresh = post({"grant_type": "password", "username": IDP_USER, "password": IDP_PASSWORD,
                        "client_id": IDP_CLIENT, "scope": "openid offline_access"})["refresh_token"]
        times = []
        for _ in range(runs):
            start = now()
            refresh = post({"grant_type": "refresh_token", "refresh_token": refresh, "client_id": IDP_CLIENT})["refresh_token"]
            times.append(ms(now() - start))
        return times

    def in_session(self, broker, script, arguments):
        """Runs a bash `script` ($1 the CLI, $2 this file, then `arguments`) in a process session of
        its own, and scans the finger once for the unlock it starts with: the broker keys the
        cached token by the caller's session, so the unlock, and every command the timer spawns
        there (posix_spawn without setsid), share one. Returns what the script wrote on stderr;
        Skip when it fails."""
        shell = self.processes.start(["bash", "-c", script, "bash", self.cli, os.path.realpath(__file__)] + arguments,
                                     env=broker.cli_env(self.work), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            sensor_send(broker.sensor, f"SCAN {FINGER_ID}", waiting=shell)
            err = shell.communicate(timeout=300)[1]
        except subprocess.TimeoutExpired:
            raise Skip("the unlock and the timing did not finish within 300 s")
        finally:
            self.processes.stop(shell)
        if shell.returncode != 0:
            said = err.decode(errors="replace").strip().splitlines()
            # The broker's proof budget (ProofBudget) is not a figure: the bench asked too fast.
            if any(PROOFS_TOO_FAST in line for line in said):
                raise WrongSetUp(f"a proof was refused for its rate: {said[-1]}")
            raise Skip(f"exit {shell.returncode}: {said[-1] if said else 'no message'}")
        return err

    def cached_token(self):
        runs = self.args.runs
        print(f"\n== fingerseal token with a token cached for the session, vs fingerseal --version ({runs} runs each "
              "after 10 unmeasured, interleaved)")
        try:
            self.ensure_signed_in()
            export = os.path.join(self.work, "token.json")
            # --timeout bounds each: a token that is not cached would wait for a finger.
            script = """set -e
"$1" unlock --timeout 10 >/dev/null
"$1" token --timeout 1 >/dev/null
exec /usr/bin/python3 "$2" time-in-session "$3" "$4" 10 - "$1" --version -- "$1" token --timeout 1
"""
            self.in_session(self.broker, script, [export, str(runs)])
        except Skip as why:
            print(f"not run: {why}")
        else:
            version, token = json.load(open(export))
            print(f"fingerseal --version:        median {median(version):6.2f} ms, p95 {p95(version):6.2f} ms")
            print(f"fingerseal token (cached):   median {median(token):6.2f} ms, p95 {p95(token):6.2f} ms  "
                  f"(target <= 5 ms: {verdict(median(token) <= 5)})")
        self.proof_beside_token()

    def proof_beside_token(self):
        """`fingerseal proof` against `fingerseal token` in the same session, after one unlock: the
        same CLI start and socket round trip, and a proof signed with the sign-in's key. Each
        broker allows an account a burst of 40 proofs (ProofBudget): 1 checked + the warm-up + the
        runs stay within 35."""
        runs, warmup = self.args.proof_runs, PROOF_WARMUP
        print(f"\n== fingerseal proof {PROOF_METHOD} {PROOF_URL} vs fingerseal token, a token cached for the session ({runs} "
              f"runs each after {warmup} unmeasured, interleaved; a sign-in bound by a software key, and one by the TPM's key)")
        try:
            self.ensure_signed_in()
            bound, proof_key = self.binding(self.broker)
            if bound is not True:
                raise WrongSetUp(f"broker A's sign-in is not bound to this computer (status --json: bound_to_computer "
                                 f"{json.dumps(bound)}); there is no proof to time")
        except Skip as why:
            print(f"not run: {why}")
            return
        brokers = [(f"{proof_key} key", self.broker)]
        try:
            brokers.append(("tpm key", self.checked_tpm_broker()))
        except Skip as why:
            print(f"the TPM's key: not run: {why}")
        for label, broker in brokers:
            try:
                token, proof, signature = self.time_proofs(broker, label.split()[0], runs, warmup)
            except Skip as why:
                print(f"{label}: not run: {why}")
                continue
            print(f"{'first proof, ' + label + ':':42} a 3-part JWS, typ dpop+jwt, ES256, htm, htu, ath of the session's "
                  f"token; {signature}")
            print(f"{'fingerseal token (cached), ' + label + ':':42} median {median(token):6.2f} ms, p95 {p95(token):6.2f} ms")
            print(f"{'fingerseal proof, ' + label + ':':42} median {median(proof):6.2f} ms, p95 {p95(proof):6.2f} ms")
            print(f"{'':42} {median(proof) - median(token):+.2f} ms over token at p50, {p95(proof) - p95(token):+.2f} ms at p95")

    def time_proofs(self, broker, name, runs, warmup):
        """One unlock in a session of its own, the token and one proof kept and checked, then the
        timer: `fingerseal token` and `fingerseal proof`, interleaved. The times in ms of each."""
        export, said, first = (os.path.join(self.work, f"proof-{name}.{ext}") for ext in ("json", "token", "proof"))
        script = """set -e
"$1" unlock --timeout 10 >/dev/null
"$1" token --timeout 1 >"$5"
"$1" proof "$6" "$7" >"$8"
exec /usr/bin/python3 "$2" time-in-session "$3" "$4" "$9" "${10}" "$1" token --timeout 1 -- "$1" proof "$6" "$7"
"""
        errors = os.path.join(self.work, f"proof-{name}.errors")
        try:
            self.in_session(broker, script, [export, str(runs), said, PROOF_METHOD, PROOF_URL, first, str(warmup), errors])
            with open(said) as f:
                token = f.read().strip()
            with open(first) as f:
                proof = f.read().strip()
        finally:
            for path in (said, first):
                if os.path.exists(path):
                    os.unlink(path)
        problem, signature = dpop_proof_problem(proof, PROOF_METHOD, PROOF_URL, token)
        if problem:
            raise WrongSetUp(f"fingerseal proof ({name} key) did not print a DPoP proof for the session's token: {problem}")
        with open(export) as f:
            return json.load(f) + [signature]

    def stop(self):
        for path in self.installed:
            try:
                os.unlink(path)
            except OSError:
                pass
        self.processes.stop_all()
        if os.path.isdir(self.idp_dir):
            root = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
            subprocess.run([os.path.join(root, "scripts", "local-idp"), "stop", self.idp_dir], timeout=30,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def time_in_session(arguments):
    """time-in-session OUT RUNS WARMUP ERRORS CMD... -- CMD...: the interleaved timer, run inside a
    process session that the commands must share (no setsid of their own); writes the times as
    JSON. ERRORS: a file for the commands' stderr, or - for none."""
    out, runs, warmup, errors, rest = arguments[0], int(arguments[1]), int(arguments[2]), arguments[3], arguments[4:]
    split = rest.index("--")
    try:
        results = interleaved([rest[:split], rest[split + 1:]], dict(os.environ), runs, warmup=warmup, own_session=False,
                              stderr_to=None if errors == "-" else errors)
    except Skip as why:
        sys.exit(str(why))
    with open(out, "w") as f:
        json.dump(results, f)


def main():
    if sys.argv[1:2] == ["time-in-session"]:
        return time_in_session(sys.argv[2:])
    parser = argparse.ArgumentParser()
    parser.add_argument("--release", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--module", default=".build/embedded/pam_fingerseal.so")
    parser.add_argument("--pam-runs", type=int, default=30)
    parser.add_argument("--runs", type=int, default=200, help="runs of the short commands (module overhead, token)")
    parser.add_argument("--unlock-runs", type=int, default=50)
    parser.add_argument("--proof-runs", type=int, default=30,
                        help=f"runs of fingerseal proof (and token beside it) per broker, at most "
                             f"{PROOF_BUDGET_USED - 1 - PROOF_WARMUP}: the broker's proof budget")
    parser.add_argument("--only", choices=["pam", "overhead", "token", "unlock", "reads"], action="append")
    args = parser.parse_args()
    if not 1 <= args.proof_runs <= PROOF_BUDGET_USED - 1 - PROOF_WARMUP:
        parser.error(f"--proof-runs must be 1 to {PROOF_BUDGET_USED - 1 - PROOF_WARMUP} (the broker allows a burst of 40 "
                     "proofs per account; 1 checked and the warm-up come first)")

    def leave(signum, _frame):
        raise SystemExit(128 + signum)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, leave)
    bench = Bench(args)
    parts = args.only or ["pam", "overhead", "reads", "unlock", "token"]
    try:
        if "pam" in parts:
            bench.side_by_side()
            bench.side_by_side(wrapper=False)
        if "overhead" in parts:
            bench.module_overhead()
        if "reads" in parts:
            bench.vault_reads()
        if "unlock" in parts:
            bench.unlock_latency()
        if "token" in parts:
            bench.cached_token()
    except WrongSetUp as why:
        sys.exit(f"system-bench: stopped: {why}")
    finally:
        bench.stop()


if __name__ == "__main__":
    main()
