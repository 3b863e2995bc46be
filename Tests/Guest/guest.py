"""A booted Debian 12 guest for the system-test tier (issue 32; ../shared/vm.md): QEMU with
TCG, the image of scripts/system-image opened with snapshot=on (never written), user-mode
networking with restrict=on (the guest reaches only what a test forwards), root's ssh key made
for this run and handed over through fw_cfg, two serial consoles (agetty on each), and QMP for
the display (screendump, send-key) and for sleep (system_wakeup).

Everything here is bounded: every wait has a deadline, and `stop` ends QEMU whatever state the
guest is in. Debian's python3, standard library only.
"""

import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import time


class GuestError(Exception):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Console:
    """One serial console (a QEMU chardev socket): what the guest wrote, and keys typed to it."""

    def __init__(self, path, log):
        self.path = path
        self.buffer = ""
        self.seen = 0
        self.log = open(log, "a", errors="replace")
        deadline = time.monotonic() + 30
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise GuestError(f"the console {path} does not answer")
                time.sleep(0.1)

    def read_some(self, timeout):
        ready, _, _ = select.select([self.sock], [], [], max(timeout, 0))
        if not ready:
            return False
        data = self.sock.recv(65536)
        if not data:
            raise GuestError(f"the console {self.path} closed")
        text = data.decode(errors="replace")
        self.log.write(text)
        self.log.flush()
        self.buffer += text
        return True

    def expect(self, pattern, timeout=60):
        """Waits for `pattern` (a regex) in what the console wrote since the last match; returns
        the match. What came before it is consumed."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            match = regex.search(self.buffer, self.seen)
            if match:
                self.seen = match.end()
                return match
            left = deadline - time.monotonic()
            if left <= 0:
                tail = self.buffer[self.seen:][-600:]
                raise GuestError(f"{pattern!r} did not appear on {os.path.basename(self.path)} within {timeout} s; "
                                 f"it showed: {tail!r}")
            self.read_some(min(left, 0.5))

    def drain(self, quiet=0.3):
        """Reads until the console has been quiet for `quiet` seconds; returns what came."""
        start = len(self.buffer)
        while self.read_some(quiet):
            pass
        return self.buffer[start:]

    def since(self):
        """What came after the last match (not consumed)."""
        return self.buffer[self.seen:]

    def send(self, text):
        self.sock.sendall(text.encode())

    def close(self):
        try:
            self.sock.close()
        finally:
            self.log.close()


class Guest:
    """One QEMU guest. `forwards`: host TCP ports the guest may reach, as (guest address, guest
    port, host port), through QEMU's guestfwd (the only way out of restrict=on)."""

    def __init__(self, image_dir, work, memory=3072, forwards=()):
        self.image_dir = image_dir
        self.work = work
        self.memory = memory
        self.forwards = list(forwards)
        self.key = os.path.join(work, "ssh-key")
        self.ssh_port = free_port()
        self.process = None
        self.consoles = {}
        self.qmp_file = None

    # MARK: life

    @classmethod
    def attached(cls, image_dir, work, ssh_port):
        """A guest another process booted and keeps (development: `system-check --attach`)."""
        guest = cls(image_dir, work)
        guest.ssh_port = ssh_port
        return guest

    def boot(self, limit=240):
        """Starts QEMU and waits for sshd; returns the seconds it took."""
        os.makedirs(self.work, exist_ok=True)
        if not os.path.exists(self.key):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", self.key], check=True)
        netdev = f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{self.ssh_port}-:22"
        for address, guest_port, host_port in self.forwards:
            # A connection of the guest's, each to the host's port when it is made (a chardev
            # would connect once, at QEMU's start).
            netdev += f",guestfwd=tcp:{address}:{guest_port}-cmd:socat - TCP:127.0.0.1:{host_port}"
        argv = [
            "qemu-system-x86_64", "-accel", "tcg,thread=multi,tb-size=512", "-cpu", os.environ.get("FINGERSEAL_GUEST_CPU", Guest.CPU),
            "-m", str(self.memory),
            "-smp", "2", "-M", "pc", "-global", "PIIX4_PM.disable_s3=0", "-nodefaults", "-no-user-config",
            "-kernel", os.path.join(self.image_dir, "vmlinuz"), "-initrd", os.path.join(self.image_dir, "initrd.img"),
            "-append", "root=/dev/vda rw console=ttyS0 quiet systemd.show_status=false",
            "-drive", f"file={os.path.join(self.image_dir, 'image.raw')},format=raw,if=virtio,snapshot=on",
            "-netdev", netdev, "-device", "virtio-net-pci,netdev=n0",
            "-vga", "std", "-display", "none",
            "-qmp", f"unix:{self.work}/qmp.sock,server=on,wait=off",
            "-fw_cfg", f"name=opt/fingerseal/ssh-key,file={self.key}.pub",
        ]
        for index in (0, 1):
            argv += ["-chardev", f"socket,id=s{index},path={self.work}/ttyS{index}.sock,server=on,wait=off,"
                                 f"logfile={self.work}/ttyS{index}.log",
                     "-serial", f"chardev:s{index}"]
        started = time.monotonic()
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=open(os.path.join(self.work, "qemu.log"), "w"),
                                        stderr=subprocess.STDOUT, start_new_session=True)
        # The consoles now: what the guest writes while nobody is connected is lost.
        for index in (0, 1):
            self.consoles[index] = Console(f"{self.work}/ttyS{index}.sock", f"{self.work}/ttyS{index}.seen")
        deadline = started + limit
        while True:
            if self.process.poll() is not None:
                raise GuestError(f"qemu exited with {self.process.returncode}: {open(self.work + '/qemu.log').read()[-800:]}")
            try:
                if self.ssh("true", check=False, timeout=10).returncode == 0:
                    break
            except subprocess.TimeoutExpired:
                pass
            if time.monotonic() > deadline:
                raise GuestError(f"the guest did not answer ssh within {limit} s")
            for console in self.consoles.values():
                console.read_some(1)
        return time.monotonic() - started

    def console(self, index):
        """Serial console `index` (ttyS0, ttyS1), connected on first use."""
        if index not in self.consoles:
            self.consoles[index] = Console(f"{self.work}/ttyS{index}.sock", f"{self.work}/ttyS{index}.seen")
        return self.consoles[index]

    def stop(self):
        """Ends the guest at once (its disk is a snapshot: nothing to keep)."""
        for console in self.consoles.values():
            console.close()
        self.consoles = {}
        if self.qmp_file:
            self.qmp_file.close()
            self.qmp_file = None
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        self.process = None

    # MARK: commands

    def ssh_argv(self, user="root", tty=False):
        argv = ["ssh", "-q", "-i", self.key, "-p", str(self.ssh_port), "-o", "StrictHostKeyChecking=no",
                "-o", "UserKnownHostsFile=/dev/null", "-o", "ConnectTimeout=5", "-o", "BatchMode=yes",
                "-o", "ServerAliveInterval=5"]
        if tty:
            argv.append("-tt")
        return argv + [f"{user}@127.0.0.1"]

    def ssh(self, command, check=True, timeout=120, stdin=None):
        """`command` run by root's shell in the guest; its result (stdout, stderr as text)."""
        result = subprocess.run(self.ssh_argv() + [command], input=stdin, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise GuestError(f"in the guest, {command!r} exited with {result.returncode}: {result.stdout[-400:]}{result.stderr[-400:]}")
        return result

    def copy_in(self, paths, directory):
        self.ssh(f"mkdir -p {directory}")
        subprocess.run(["scp", "-q", "-i", self.key, "-P", str(self.ssh_port), "-o", "StrictHostKeyChecking=no",
                        "-o", "UserKnownHostsFile=/dev/null"] + list(paths) + [f"root@127.0.0.1:{directory}/"],
                       check=True, timeout=300)

    def copy_out(self, path, destination):
        subprocess.run(["scp", "-q", "-i", self.key, "-P", str(self.ssh_port), "-o", "StrictHostKeyChecking=no",
                        "-o", "UserKnownHostsFile=/dev/null", f"root@127.0.0.1:{path}", destination], check=True, timeout=120)

    def wait_for(self, command, limit=60, what=None):
        """Runs `command` in the guest until it succeeds (bounded)."""
        deadline = time.monotonic() + limit
        while True:
            try:
                result = self.ssh(command, check=False, timeout=30)
            except subprocess.TimeoutExpired as timeout:
                result = subprocess.CompletedProcess(timeout.cmd, 124, "", "timed out")
            if result.returncode == 0:
                return result
            if time.monotonic() > deadline:
                raise GuestError(f"{what or command!r} did not happen within {limit} s: {result.stdout[-300:]}{result.stderr[-300:]}")
            time.sleep(0.5)

    # MARK: QMP

    def qmp(self, command, arguments=None):
        if self.qmp_file is None:
            s = socket.socket(socket.AF_UNIX)
            s.connect(f"{self.work}/qmp.sock")
            self.qmp_file = s.makefile("rw")
            self.qmp_file.readline()
            self._qmp_send("qmp_capabilities", None)
        return self._qmp_send(command, arguments)

    def _qmp_send(self, command, arguments):
        message = {"execute": command}
        if arguments:
            message["arguments"] = arguments
        self.qmp_file.write(json.dumps(message) + "\n")
        self.qmp_file.flush()
        while True:
            line = self.qmp_file.readline()
            if not line:
                raise GuestError("QMP closed")
            reply = json.loads(line)
            if "error" in reply:
                raise GuestError(f"QMP {command}: {reply['error']}")
            if "return" in reply:
                return reply["return"]

    def status(self):
        return self.qmp("query-status")["status"]

    def screenshot(self, png):
        """The display as a PNG (QMP screendump writes PPM; netpbm's pnmtopng converts it)."""
        ppm = png[:-4] + ".ppm"
        self.qmp("screendump", {"filename": ppm})
        with open(png, "wb") as out:
            subprocess.run(["pnmtopng", ppm], stdout=out, check=True, timeout=30)
        os.unlink(ppm)
        return png

    # QEMU 7.2's TCG emulates AVX/AVX2 (new in 7.2) wrongly enough that llvmpipe's code (which
    # draws GNOME Shell here) crashes or draws garbage; without them it draws as on hardware.
    CPU = "max,avx=off,avx2=off,fma=off,f16c=off"
    BRIGHT = bytes(range(201, 256))

    def settled_screenshot(self, png, limit=180, bright=300):
        """The display once it has something drawn and has stopped changing: two screendumps a
        second apart that differ in at most one of 64 bands (a blinking caret, the clock), with
        more than `bright` bright bytes on it (more than the pointer has). What the greeter and the session draw has no event of its
        own; this waits for the picture itself. A PNG, as `screenshot`."""
        ppm = png[:-4] + ".ppm"
        deadline, previous = time.monotonic() + limit, None
        while True:
            self.qmp("screendump", {"filename": ppm})
            with open(ppm, "rb") as dump:
                pixels = dump.read().split(b"\n", 3)[3]
            band = max(1, len(pixels) // 64)
            # Text or a dialog on the screen: more bright bytes than a pointer has.
            drawn = len(pixels) - len(pixels.translate(None, Guest.BRIGHT)) > bright
            if drawn and previous is not None and len(previous) == len(pixels):
                changed = sum(previous[i:i + band] != pixels[i:i + band] for i in range(0, len(pixels), band))
                if changed <= 1:
                    break
            if time.monotonic() > deadline:
                raise GuestError(f"the display did not settle within {limit} s ({png})")
            previous = pixels
            time.sleep(1)
        with open(png, "wb") as out:
            subprocess.run(["pnmtopng", ppm], stdout=out, check=True, timeout=30)
        os.unlink(ppm)
        return png

    KEYS = {" ": "spc", "\n": "ret", "-": "minus", ".": "dot", "/": "slash", "_": ("shift", "minus"), ":": ("shift", "semicolon"),
            "=": "equal", ",": "comma", ";": "semicolon", "'": "apostrophe", "\t": "tab", "|": ("shift", "backslash"),
            ">": ("shift", "dot"), "<": ("shift", "comma"), "&": ("shift", "7"), "$": ("shift", "4"), "\"": ("shift", "apostrophe"),
            "(": ("shift", "9"), ")": ("shift", "0"), "*": ("shift", "8"), "?": ("shift", "slash"), "+": ("shift", "equal"),
            "!": ("shift", "1"), "@": ("shift", "2"), "#": ("shift", "3"), "%": ("shift", "5"), "~": ("shift", "grave_accent")}

    def type_keys(self, text):
        """Types `text` on the guest's keyboard (QMP send-key, one key at a time)."""
        for char in text:
            if char.isalpha():
                keys = ["shift", char.lower()] if char.isupper() else [char]
            elif char.isdigit():
                keys = [char]
            else:
                mapped = Guest.KEYS.get(char)
                if mapped is None:
                    raise GuestError(f"no key for {char!r}")
                keys = list(mapped) if isinstance(mapped, tuple) else [mapped]
            self.qmp("send-key", {"keys": [{"type": "qcode", "data": k} for k in keys], "hold-time": 20})
            time.sleep(0.03)

    def press(self, *names):
        self.qmp("send-key", {"keys": [{"type": "qcode", "data": k} for k in names], "hold-time": 30})
