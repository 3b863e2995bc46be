"""The system-test tier (issue 32): fingerseal's packages installed on a booted Debian 12 with
systemd, logind, polkit, fprintd and GDM, and each flow a person meets run there as they would
meet it. One guest serves every scenario in turn; each scenario is a function whose checks can
fail, reported `ok:` or `FAIL:` with its time, and a failed one does not stop the next (each
says what it needs of the ones before). Exits non-zero when any failed.

    scripts/system-check [--deb FILE] [--keep]     (make system-check; make check runs it)

Run as root (QEMU, the image). What it proves, and what it costs: README, "The system-test tier".
"""

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from guest import Guest, GuestError, free_port  # noqa: E402

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
PASSWORD = "correct horse battery"
PIN = "602914"
SENSOR = "/run/fprint-virt/sock"
# The console waits below look for "your finger", which every finger prompt says: the guest's
# host name, in every shell prompt, has "finger" in it too.
# fprintd waits for a finger (its device's finger-needed property).
FINGER_NEEDED = ("busctl get-property net.reactivated.Fprint /net/reactivated/Fprint/Device/0 net.reactivated.Fprint.Device "
                 "finger-needed | grep -qx 'b true'")
# Where the guest reaches the host's journal-remote and the local IdP (QEMU's guestfwd).
JOURNAL_GUEST = "10.0.2.100"
IDP_GUEST = "10.0.2.101"


class Failure(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Failure(what)



class Tier:
    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="fingerseal-system.", dir=os.path.join(ROOT, ".build"))
        self.results = []
        self.guest = None
        self.timings = {}

    # MARK: the run

    def run(self):
        started = time.monotonic()
        try:
            self.step("image", self.build_image)
            self.step("packages", self.find_packages)
            self.step("boot", self.boot)
            for name, scenario in self.scenarios():
                if self.args.only and name not in self.args.only:
                    continue
                self.step(name, scenario)
        finally:
            if self.guest and not self.args.attach:
                self.guest.stop()
            if getattr(self, "idp_dir", None):
                subprocess.run([os.path.join(ROOT, "scripts", "local-idp"), "stop", self.idp_dir], capture_output=True, timeout=60)
                shutil.rmtree(self.idp_dir, ignore_errors=True)
            if not self.args.keep:
                shutil.rmtree(self.work, ignore_errors=True)
        total = time.monotonic() - started
        failed = [name for name, ok, _ in self.results if not ok]
        print(f"system-check: {len(self.results) - len(failed)} of {len(self.results)} steps passed in {total:.0f} s"
              + (f"; failed: {', '.join(failed)}" if failed else ""))
        return 1 if failed else 0

    def step(self, name, body):
        started = time.monotonic()
        try:
            detail = body()
            ok = True
        except (Failure, GuestError, subprocess.SubprocessError, OSError) as error:
            detail = str(error)
            ok = False
        except Exception as error:  # a mistake of the tier's own: said, and the next step runs
            detail = f"{type(error).__name__}: {error}"
            ok = False
        seconds = time.monotonic() - started
        self.results.append((name, ok, seconds))
        print(f"{'ok' if ok else 'FAIL'}: {name} ({seconds:.1f} s){': ' + detail if detail else ''}", flush=True)
        if not ok and self.guest is not None:
            print(self.guest_journal(seconds), flush=True)
        if not ok and name in ("image", "packages", "boot", "install"):
            raise SystemExit(f"system-check: {name} failed, so nothing after it can run")

    def guest_journal(self, seconds):
        """What the broker and fprintd logged during a failed step (its last 80 lines), so that a
        failure in CI can be read without the guest."""
        try:
            return self.guest.ssh(f"journalctl --no-pager -o short-monotonic --since -{int(seconds) + 5}s "
                                  "-u fingerseal -u fprintd | tail -n 80", check=False, timeout=60).stdout
        except (GuestError, subprocess.SubprocessError, OSError) as error:
            return f"(the guest's journal could not be read: {error})"

    # MARK: before the scenarios

    def build_image(self):
        image = subprocess.run([os.path.join(ROOT, "scripts", "system-image"), os.path.join(ROOT, ".build", "system", "image")],
                               capture_output=True, text=True)
        if image.returncode != 0:
            raise Failure(f"scripts/system-image: {image.stderr[-800:]}")
        self.image_dir = os.path.dirname(image.stdout.strip().splitlines()[-1])
        return self.image_dir

    def find_packages(self):
        deb = self.args.deb
        if deb is None:
            built = subprocess.run([os.path.join(ROOT, "scripts", "build-deb"), os.path.join(ROOT, "build", "deb")],
                                   capture_output=True, text=True)
            match = re.search(r"^build-deb: (.*/fingerseal_[^/]*\.deb)$", built.stdout, re.M)
            if built.returncode != 0 or not match:
                raise Failure(f"scripts/build-deb: {built.stdout[-400:]}{built.stderr[-400:]}")
            deb = match.group(1)
        agent = os.path.join(os.path.dirname(deb), os.path.basename(deb).replace("fingerseal_", "fingerseal-agent_", 1))
        check(os.path.exists(deb) and os.path.exists(agent), f"no packages at {deb} and {agent}")
        self.debs = [deb, agent]
        return ", ".join(os.path.basename(d) for d in self.debs)

    def boot(self):
        self.shots = os.path.join(ROOT, ".build", "system", "screenshots")
        shutil.rmtree(self.shots, ignore_errors=True)
        os.makedirs(self.shots)
        self.journal_port = free_port()
        # The IdP's directory lives outside the repository (scripts/local-idp insists).
        self.idp_dir = tempfile.mkdtemp(prefix="fingerseal-system-idp.")
        idp = subprocess.run([os.path.join(ROOT, "scripts", "local-idp"), "start", self.idp_dir],
                             capture_output=True, text=True, timeout=120)
        found = re.search(r"issuer=(\S+) port=(\d+)", idp.stdout)
        if idp.returncode != 0 or not found:
            raise Failure(f"scripts/local-idp: {idp.stdout}{idp.stderr}")
        self.idp_issuer, self.idp_port = found.group(1), int(found.group(2))
        self.idp_origin = f"http://127.0.0.1:{self.idp_port}"
        if self.args.attach:
            work, port = self.args.attach.rsplit(":", 1)
            self.guest = Guest.attached(self.image_dir, work, int(port))
            self.args.keep = True
            return "attached"
        self.guest = Guest(self.image_dir, os.path.join(self.work, "guest"),
                           forwards=[(JOURNAL_GUEST, 19532, self.journal_port), (IDP_GUEST, self.idp_port, self.idp_port)])
        seconds = self.guest.boot()
        self.guest.wait_for("systemctl is-system-running --wait | grep -qx running", 120, "systemd running")
        return f"sshd answered {seconds:.0f} s after qemu started"

    def scenarios(self):
        if self.args.bench:
            return [("install", self.install), ("cold start", self.cold_start)]
        return [
            ("install", self.install),
            ("console login", self.console_login),
            ("sudo and su", self.sudo_and_su),
            ("ssh", self.ssh_login),
            ("polkit", self.polkit),
            ("suspend and resume", self.suspend_and_resume),
            ("provisioning", self.provisioning),
            ("uid reuse", self.uid_reuse),
            ("journal", self.journal),
            ("GDM", self.gdm),
            ("upgrade and purge", self.upgrade_and_purge),
        ]

    # MARK: helpers

    def as_service(self, command, stdin=None, check=True):
        """`command` run by root as a service of its own (systemd-run --wait --pipe): not in the
        ssh session, which the broker rightly takes as remote (no reader for it)."""
        return self.guest.ssh("systemd-run --wait --pipe --quiet " + command, stdin=stdin, check=check, timeout=180)

    def make_user(self, name, groups="sudo"):
        self.guest.ssh(f"useradd -m -s /bin/bash -G {groups} {name} && echo '{name}:{PASSWORD}' | chpasswd")

    def set_up(self, name, finger):
        """A vault for `name` (root, as for a kiosk: no account password) and its finger
        enrolled through fprintd, five scans: each sent once the last one was taken and fprintd
        wants a finger again (a scan sent between stages would be dropped)."""
        g = self.guest
        self.as_service(f"fingerseal pin set --user {name} --pin-fd 0", stdin=PIN + "\n")
        out = f"/root/enroll-{name}.out"
        g.ssh(f"rm -f {out}; setsid sh -c \"printf '{PIN}\\n' | systemd-run --wait --pipe --quiet fingerseal enroll --user {name} "
              f"--finger right-index-finger --pin-fd 0 > {out} 2>&1; echo EXIT=\\$? >> {out}\" < /dev/null > /dev/null 2>&1 &")
        for taken in range(5):
            g.wait_for(f"test $(grep -c 'Scan [0-9]* of [0-9]* done' {out}) -ge {taken} && {FINGER_NEEDED}", 60,
                       f"fprintd to want scan {taken + 1} of the enrollment")
            g.ssh(f"printf 'SCAN {finger}' | socat -t 20 - UNIX-CONNECT:{SENSOR}", timeout=60)
        g.wait_for(f"grep -q '^EXIT=' {out}", 120, "the enrollment to end")
        said = g.ssh(f"cat {out}").stdout
        check("EXIT=0" in said, f"fingerseal enroll: {said}")

    def login(self, console, name, finger):
        """`name` signs in at a serial console (agetty's login) with `finger`; the console then
        shows the shell's prompt."""
        console.send("\n")
        console.expect(r"login: $", 60)
        console.send(name + "\n")
        prompt = console.expect(r"[^\n]*your finger[^\n]*\n", 60).group(0).strip()
        self.scan(finger)
        console.expect(r"\$ $", 60)
        return prompt

    def answer_secret(self, console, tty, secret):
        """Types `secret` at a password prompt on `tty` once its host has turned echo off: PAM's
        terminal conversation flushes what was typed before (TCSAFLUSH)."""
        self.guest.wait_for(f"stty -F /dev/{tty} -a | grep -qw -- -echo", 60, f"echo off on {tty}")
        console.send(secret + "\n")

    def shell(self, console, command, marker, limit=60):
        """Types `command` at the console's shell; waits for `MARKER=value` and returns the value."""
        console.send(command + "\n")
        # Not the command's own echo ("MARKER=$?"): a value never starts with a $.
        return console.expect(marker + r"=([^$\s]\S*)\r?\n", limit).group(1)

    @staticmethod
    def printed(console, marker, limit=60):
        """Waits for the whole line `MARKER=digits` (the line's end too: "SU=4" may come before
        its "2"); returns the match."""
        return console.expect(marker + r"=(\d+)\r?\n", limit)

    def scan(self, finger, count=1):
        """`finger` on the virtual reader fprintd drives, `count` times, each once fprintd says
        a finger is needed (a scan is under way: a scan sent before would be dropped)."""
        for _ in range(count):
            self.guest.wait_for(FINGER_NEEDED, 60, "fprintd to wait for a finger")
            self.guest.ssh(f"printf 'SCAN {finger}' | socat -t 20 - UNIX-CONNECT:{SENSOR}", timeout=60)

    # MARK: scenarios

    def install(self):
        """1. The packages installed as a user would (apt, offline: every dependency is in the
        image), changing no PAM stack. The socket is active and the broker not running until the
        first request starts it; it leaves when idle and starts again on the next. The unit
        scores at most 2.5 in systemd-analyze security, and inside its own namespace only the
        state directory can be written (not /run, not /etc)."""
        g = self.guest
        g.copy_in(self.debs, "/root/debs")
        g.ssh("sha256sum /etc/pam.d/common-* > /root/common.sha256")
        result = g.ssh("DEBIAN_FRONTEND=noninteractive apt-get install -y "
                       + " ".join("/root/debs/" + os.path.basename(d) for d in self.debs), check=False, timeout=600)
        check(result.returncode == 0, f"apt-get install: {result.stdout[-600:]}{result.stderr[-600:]}")
        check(g.ssh("sha256sum --quiet -c /root/common.sha256", check=False).returncode == 0,
              "the installation changed /etc/pam.d/common-*")
        # Every decision of the broker in its log (the test waits on some of them).
        g.ssh("printf 'debug\\n' >> /etc/fingerseal/fingerseal.conf")
        # The test's own reader: libfprint's virtual device, for fprintd (a drop-in of the test's).
        g.ssh("mkdir -p /etc/systemd/system/fprintd.service.d && "
              "printf '[Service]\\nEnvironment=FP_VIRTUAL_DEVICE=" + SENSOR + " FP_DRIVERS_WHITELIST=virtual_device\\n"
              "RuntimeDirectory=fprint-virt\\n' > /etc/systemd/system/fprintd.service.d/virtual-reader.conf && systemctl daemon-reload")
        check(g.ssh("systemctl is-active fingerseal.socket", check=False).stdout.strip() == "active", "fingerseal.socket is not active")
        check(g.ssh("systemctl is-active fingerseal.service", check=False).stdout.strip() != "active",
              "the broker runs before anyone asked for it")
        g.ssh("fingerseal status >/dev/null 2>&1; true")
        check(g.ssh("systemctl is-active fingerseal.service", check=False).stdout.strip() == "active",
              "the first request did not start the broker")
        # A probe in the broker's own mount namespace (the broker leaves only after 60 s idle).
        pid = g.ssh("systemctl show -p MainPID --value fingerseal.service").stdout.strip()
        probes = g.ssh(f"nsenter -t {pid} -m sh -c 'for p in /run/probe-broker /etc/probe-broker "
                       f"/var/lib/fingerseal/probe-broker; do if touch $p 2>/dev/null; then echo $p=written; rm -f $p; "
                       f"else echo $p=refused; fi; done'").stdout
        check("/run/probe-broker=refused" in probes and "/etc/probe-broker=refused" in probes
              and "/var/lib/fingerseal/probe-broker=written" in probes, f"the broker's namespace: {probes.split()}")
        score = g.ssh("systemd-analyze security --no-pager fingerseal.service | tail -n 1").stdout
        match = re.search(r"exposure level for fingerseal\.service: ([0-9.]+)", score)
        check(match and float(match.group(1)) <= 2.5, f"systemd-analyze security: {score.strip()}")
        # The idle exit, with the time a drop-in of the test's shortens to 5 s.
        g.ssh("mkdir -p /etc/systemd/system/fingerseal.service.d && printf '[Service]\\nExecStart=\\n"
              "ExecStart=/usr/libexec/fingerseal/fingersealed --idle-exit 5\\n' > /etc/systemd/system/fingerseal.service.d/idle.conf "
              "&& systemctl daemon-reload && systemctl stop fingerseal.service && fingerseal status >/dev/null 2>&1; true")
        check(g.ssh("systemctl is-active fingerseal.service", check=False).stdout.strip() == "active", "the broker did not start again")
        g.wait_for("! systemctl is-active -q fingerseal.service", 40, "the broker's idle exit")
        g.ssh("fingerseal status >/dev/null 2>&1; true")
        check(g.ssh("systemctl is-active fingerseal.service", check=False).stdout.strip() == "active",
              "the next request did not start the broker again")
        return f"exposure {match.group(1)}; namespace: {' '.join(p.split('/')[-1] for p in probes.split())}"

    def console_login(self):
        """2. With the profiles on (pam-auth-update), a console login through agetty takes the
        finger alone (Ctrl-C goes to the password: login leads its session); the session is a
        logind session with a kernel audit session id; a confirmation (step-up) made there is
        unknown to a second login of the same person on another console. doctor finds nothing
        that blocks fingerprint unlock."""
        g = self.guest
        g.ssh("DEBIAN_FRONTEND=noninteractive pam-auth-update --enable fingerseal fingerseal-session")
        self.make_user("alice")
        self.set_up("alice", "alice-1")
        doctor = self.as_service("fingerseal doctor --user alice", check=False).stdout
        check("Problem:" not in doctor, f"doctor: {[l for l in doctor.splitlines() if 'Problem' in l]}")
        g.ssh("systemctl start serial-getty@ttyS1.service")
        self.session = g.console(1)
        prompt = self.login(self.session, "alice", "alice-1")
        check("Ctrl-C" in prompt, f"the console prompt: {prompt!r}")
        session = self.shell(self.session, "echo SID=$(cat /proc/self/sessionid)", "SID")
        check(session.isdigit() and session != "4294967295", f"audit session id {session}")
        kind = self.shell(self.session, "echo KIND=$(loginctl show-session $XDG_SESSION_ID -p Type -p Remote | sort | tr '\\n' ,)", "KIND")
        check(kind == "Remote=no,Type=tty,", f"logind says {kind}")
        self.session.send("fingerseal step-up vm-test; echo STEPUP=$?\n")
        self.session.expect(r"your finger", 60)
        self.scan("alice-1")
        check(self.printed(self.session, "STEPUP").group(1) == "0", "step-up with the finger")
        check(self.shell(self.session, "fingerseal step-up vm-test --check; echo HELD=$?", "HELD") == "0", "not held in its own session")
        other = g.console(0)
        self.login(other, "alice", "alice-1")
        held = self.shell(other, "fingerseal step-up vm-test --check; echo HELD=$?", "HELD")
        other.send("exit\n")
        check(held == "1", "a confirmation of one login session answered in another")
        return f"{prompt!r}; audit session {session}; the confirmation stayed in its session"

    def sudo_and_su(self):
        """3. In that session: sudo takes the finger alone, Ctrl-C goes to the password and
        counts nothing; sudo from a script takes the finger alone too, in one sentence; su
        takes the target's finger."""
        console = self.session
        console.send("sudo -k; sudo true; echo SUDO=$?\n")
        prompt = console.expect(r"[^\n]*your finger[^\n]*\n", 60).group(0).strip()
        self.scan("alice-1")
        check(self.printed(console, "SUDO").group(1) == "0", f"sudo with the finger ({prompt!r})")
        console.send("sudo -k; sudo true; echo SUDO=$?\n")
        console.expect(r"your finger[^\n]*Ctrl-C", 60)
        console.send("\x03")
        console.expect(r"password for alice: ", 60)
        self.answer_secret(console, "ttyS1", PASSWORD)
        check(self.printed(console, "SUDO").group(1) == "0", "sudo with the password after Ctrl-C")
        failures = self.guest.ssh("fingerseal status --json --user alice").stdout
        check(re.search(r'"finger_failures" : 0', failures), f"Ctrl-C was counted: {failures[-300:]}")
        console.send("sh -c 'sudo -k; sudo true; echo SCRIPT=$?'\n")
        console.expect(r"echo SCRIPT=\$\?'\r?\n", 60)
        start = console.seen
        console.expect(r"your finger", 60)
        self.scan("alice-1")
        result = self.printed(console, "SCRIPT")
        said = [line for line in re.split(r"[\r\n]+", re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", console.buffer[start:result.start()]))
                if line.strip()]
        check(len(said) == 1 and "Ctrl-C" in said[0] and "Enter" not in said[0], f"a script's sudo said {said}")
        check(result.group(1) == "0", "a script's sudo with the finger")
        console.send("su alice -c 'echo SU=$((40 + 2))'\n")
        console.expect(r"your finger", 60)
        self.scan("alice-1")
        check(self.printed(console, "SU").group(1) == "42", "su with the finger")
        return f"sudo: {prompt!r}"

    def ssh_login(self):
        """4. ssh into the guest from the host (its forwarded port), keyboard-interactive so
        the client sees every question: the finger is never offered, the password works, and
        at once (no scan waited for)."""
        g = self.guest
        g.ssh("printf 'KbdInteractiveAuthentication yes\\n' > /etc/ssh/sshd_config.d/fingerseal-test.conf && systemctl restart ssh")
        g.wait_for("true", 60, "sshd after its restart")
        prompts = os.path.join(self.work, "askpass-prompts")
        askpass = os.path.join(self.work, "askpass")
        with open(askpass, "w") as f:
            f.write(f"#!/bin/sh\nprintf '%s\\n' \"$1\" >> {prompts}\nprintf '%s\\n' '{PASSWORD}'\n")
        os.chmod(askpass, 0o755)
        env = dict(os.environ, SSH_ASKPASS=askpass, SSH_ASKPASS_REQUIRE="force", DISPLAY=":0")
        started = time.monotonic()
        result = subprocess.run(["setsid", "-w", "ssh", "-p", str(g.ssh_port), "-o", "StrictHostKeyChecking=no",
                                 "-o", "UserKnownHostsFile=/dev/null", "-o", "PreferredAuthentications=keyboard-interactive",
                                 "-o", "NumberOfPasswordPrompts=1", "alice@127.0.0.1", "echo SSH=ok"],
                                env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        seconds = time.monotonic() - started
        asked = open(prompts).read().splitlines() if os.path.exists(prompts) else []
        check("SSH=ok" in result.stdout, f"ssh as alice: {result.stdout}{result.stderr}")
        check(asked and all("finger" not in a.lower() for a in asked), f"ssh was asked {asked}")
        check(seconds < 30, f"the ssh login took {seconds:.0f} s")
        return f"asked {asked}; {seconds:.1f} s"

    def polkit(self):
        """5. pkexec in a seat0 login (tty1, typed through QMP) with polkit's text agent
        (pkttyagent; pkexec's own agent fails under polkit 122): the agent helper runs the
        polkit-1 service, which asks for the finger with a question (Ctrl-C would end pkexec);
        the finger, then Enter, authorize, and the command runs; Enter alone goes to the
        password, which authorizes too."""
        g = self.guest
        g.ssh("rm -f /tmp/pk-*")
        # gnome-shell 43 asks fprintd for a reader when a name is typed and starts
        # gdm-fingerprint only if the answer came before gdm's; a cold fprintd under TCG
        # answers later (it exits when idle), so it is started first, as on a laptop in use.
        g.ssh("systemctl start fprintd.service")
        g.type_keys("alice\n")
        self.scan("alice-1")
        g.wait_for("loginctl list-sessions --no-legend | grep -q 'alice seat0'", 60, "alice's session on seat0")
        # Without job control the agent stays in the terminal's foreground group, where it
        # reads the answers; pkexec's subject is the shell, for which the agent registered.
        g.type_keys("set +m; pkttyagent --process $$ & sleep 3; pkexec --disable-internal-agent touch /tmp/pk-finger; "
                    "echo $? > /tmp/pk-finger-status\n")
        self.wait_for_question("tty1")
        before = self.unlocks("alice")
        self.scan("alice-1")
        g.wait_for(f"test $(grep -c '\"event\":\"unlock\"' /var/lib/fingerseal/$(id -u alice)/audit.jsonl) -gt {before}", 60,
                   "the finger's match at the polkit agent")
        g.press("ret")
        g.wait_for("test -s /tmp/pk-finger-status", 60, "pkexec to end")
        finger = g.ssh("cat /tmp/pk-finger-status; test -e /tmp/pk-finger && echo made").stdout.split()
        check(finger == ["0", "made"], f"pkexec after the finger: {finger}")
        g.type_keys("pkexec --disable-internal-agent touch /tmp/pk-password; echo $? > /tmp/pk-password-status\n")
        self.wait_for_question("tty1")
        decisions = self.broker_decisions("polkit-1")
        g.press("ret")
        g.wait_for(f"test $({self.decisions_command('polkit-1')}) -gt {decisions}", 60, "the broker's answer to Enter alone")
        self.wait_for_question("tty1")
        g.type_keys(PASSWORD + "\n")
        g.wait_for("test -s /tmp/pk-password-status", 60, "pkexec to end")
        password = g.ssh("cat /tmp/pk-password-status; test -e /tmp/pk-password && echo made").stdout.split()
        check(password == ["0", "made"], f"pkexec after Enter and the password: {password}")
        g.screenshot(os.path.join(self.shots, "tty1-pkexec.png"))
        return "the finger, then Enter, authorized; Enter alone, then the password, authorized"

    def wait_for_question(self, tty):
        """A hidden question is being asked on `tty`: its host turned echo off."""
        self.guest.wait_for(f"stty -F /dev/{tty} -a | grep -qw -- -echo", 60, f"a question on {tty}")

    def decisions_command(self, service):
        """How many decisions for `service` the broker logged (`debug`, set at install)."""
        return f"journalctl -u fingerseal --no-pager -o cat | grep -c 'service={service} ' || true"

    def broker_decisions(self, service):
        return int(self.guest.ssh(self.decisions_command(service)).stdout.split()[0])

    def unlocks(self, name):
        """The unlocks `name`'s audit trail records (the broker writes each right after its result)."""
        return int(self.guest.ssh(f"grep -c '\"event\":\"unlock\"' /var/lib/fingerseal/$(id -u {name})/audit.jsonl; true").stdout.split()[0])

    def suspend_and_resume(self):
        """7. Suspend and resume (systemctl suspend, QMP system_wakeup) while sudo on a console
        waits for the finger: the scan ends with the sentence that says why, the password goes
        on, and the first scan after resume works."""
        g, console = self.guest, self.session
        console.send("sudo -k; sudo true; echo SUDO=$?\n")
        console.expect(r"your finger[^\n]*\n", 60)
        mark = len(console.buffer)
        g.ssh("systemd-run --no-block systemctl suspend")
        deadline = time.monotonic() + 120
        while g.status() != "suspended":
            check(time.monotonic() < deadline, "the guest did not suspend")
            time.sleep(0.2)
        g.qmp("system_wakeup")
        prompt = console.expect(r"password for alice: ", 120)
        said = console.buffer[mark:prompt.start()]
        check("going to sleep" in said, f"sudo said nothing of why the scan ended: {said!r}")
        self.answer_secret(console, "ttyS1", PASSWORD)
        check(self.printed(console, "SUDO").group(1) == "0", "sudo with the password after the sleep")
        console.send("sudo -k; sudo true; echo SUDO=$?\n")
        console.expect(r"your finger", 60)
        self.scan("alice-1")
        check(self.printed(console, "SUDO").group(1) == "0", "the first scan after resume")
        return next((line.strip() for line in said.splitlines() if "sleep" in line), "")

    def provisioning(self):
        """8. provision=idp through the broker's own sandboxed unit, against the local IdP on
        the host: a name the guest does not know signs in at the organisation's provider, the
        account is made with the system's tools (useradd, as a transient unit), a PIN and a
        finger are set, and from then on the finger signs that account in."""
        g = self.guest
        name = "newbie"
        subprocess.run(["curl", "-sf", "-d", f"username={name}", "-d", "groups=peer-mentors", "-d", f"email={name}@example.test",
                        f"{self.idp_origin}/test/add-user"], check=True, capture_output=True, timeout=30)
        g.ssh(f"systemd-run --unit=fingerseal-test-idp -p Type=exec socat TCP-LISTEN:{self.idp_port},bind=127.0.0.1,fork,reuseaddr "
              f"TCP:{IDP_GUEST}:{self.idp_port}")
        g.ssh("printf 'user_claim=preferred_username\\n[provision]\\nissuer=" + self.idp_issuer + "\\nclient_id=fingerseal-device\\n"
              "require=groups:peer-mentors\\ngroups=users\\n' >> /etc/fingerseal/fingerseal.conf && "
              "printf 'auth required pam_fingerseal.so provision=idp\\naccount required pam_permit.so\\n' > /etc/pam.d/fingerseal-provision")
        conversation = subprocess.Popen(g.ssh_argv() + [
            f"printf '{PIN}\\n{PIN}\\n' | systemd-run --wait --pipe --quiet stdbuf -oL pamtester -I tty=/dev/ttyS1 "
            f"fingerseal-provision {name} authenticate 2>&1"], stdout=subprocess.PIPE, text=True)
        lines = []
        try:
            code = None
            for line in conversation.stdout:
                lines.append(line.rstrip())
                found = re.search(r"enter the code (\S+?)[. ]", line)
                if found:
                    code = found.group(1)
                    subprocess.run(["curl", "-sf", "-d", f"user_code={code}", "-d", f"username={name}",
                                    f"{self.idp_origin}/test/approve-device"], check=True, capture_output=True, timeout=30)
                if "Now enroll a finger" in line:
                    self.scan(f"{name}-1", 5)
            status = conversation.wait(timeout=300)
        finally:
            if conversation.poll() is None:
                conversation.kill()
        check(code is not None, f"no code was shown: {lines[-10:]}")
        check(status == 0 and any("successfully authenticated" in l for l in lines), f"provisioning: {lines[-6:]}")
        made = g.ssh(f"getent passwd {name}; fingerseal account list").stdout
        check(f"{name}:" in made and "fingerseal provisioned" in made, f"the account: {made}")
        # No terminal here: the module asks "Swipe your finger … and press Enter" while the reader
        # waits, and the person presses Enter once the finger was taken. stdin stays open until
        # then: its end is an Enter, and sent with the scan it raced the match (CI: on to the
        # password, which this stack does not have).
        before = self.unlocks(name)
        again = subprocess.Popen(g.ssh_argv() + [f"systemd-run --wait --pipe --quiet pamtester -I tty=/dev/ttyS1 "
                                                 f"fingerseal-provision {name} authenticate"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            self.scan(f"{name}-1")
            g.wait_for(f"test $(grep -c '\"event\":\"unlock\"' /var/lib/fingerseal/$(id -u {name})/audit.jsonl) -gt {before}",
                       60, "the finger to unlock the new account")
            said = again.communicate("\n", timeout=120)[0]
        finally:
            if again.poll() is None:
                again.kill()
                again.wait()
        check(again.returncode == 0, f"the new account's finger: {said}")
        return f"{name} made by useradd in a transient unit, then signed in with the finger"

    def uid_reuse(self):
        """9. The system's own userdel and useradd, through the package's hooks: the vault goes
        with its account, and the next account given the uid finds none."""
        g = self.guest
        self.make_user("carol", "users")
        self.as_service("fingerseal pin set --user carol --pin-fd 0", stdin=PIN + "\n")
        uid = g.ssh("id -u carol").stdout.strip()
        check(g.ssh(f"test -f /var/lib/fingerseal/{uid}/vault && test -f /var/lib/fingerseal/{uid}/account", check=False).returncode == 0,
              "no vault, or no record of carol's making")
        removed = g.ssh("userdel -r carol 2>&1").stdout
        check("removed with the account" in removed, f"userdel said {removed!r}")
        check(g.ssh(f"test ! -e /var/lib/fingerseal/{uid}", check=False).returncode == 0, "the vault outlived its account")
        g.ssh(f"useradd -u {uid} -m dave")
        status = g.ssh("fingerseal status --user dave", check=False)
        check(status.returncode != 0 and "not set up" in status.stdout + status.stderr, f"dave: {status.stdout}{status.stderr}")
        return f"uid {uid}: carol's vault removed by userdel; dave has none"

    def journal(self):
        """10. The events in the journal with their MESSAGE_IDs and catalog text (journalctl -x),
        and systemd-journal-upload to a systemd-journal-remote on the host: they arrive there."""
        g = self.guest
        unlock = "204e0af593044acc81307091ed31f64f"
        explained = g.ssh(f"journalctl -x --no-pager MESSAGE_ID={unlock}").stdout
        check("░░ Subject:" in explained and "alice" in explained, f"journalctl -x: {explained[-400:]}")
        remote = os.path.join(self.work, "remote")
        os.makedirs(remote)
        listener = subprocess.Popen(["/lib/systemd/systemd-journal-remote", f"--listen-http=127.0.0.1:{self.journal_port}",
                                     "--split-mode=none", f"--output={remote}/remote.journal"],
                                    stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.work, "journal-remote.log"), "w"))
        try:
            g.ssh(f"/lib/systemd/systemd-journal-upload --system --follow=no --url=http://{JOURNAL_GUEST}:19532 --save-state=/root/upload-state",
                  timeout=180)
        finally:
            listener.terminate()
            listener.wait(timeout=30)
        arrived = subprocess.run(["journalctl", "--no-pager", f"--file={remote}/remote.journal", f"MESSAGE_ID={unlock}"],
                                 capture_output=True, text=True).stdout
        check("alice" in arrived, f"nothing arrived at journal-remote: {arrived[-300:]}")
        return f"{arrived.count(chr(10))} unlock line(s) arrived at the host's journal-remote"

    def gdm(self):
        """6. GDM on the guest's display, fprintd as the reader's owner (as GNOME laptops run):
        the login screen offers the finger for an enrolled person (gnome-shell's gdm-fingerprint
        conversation, with fingerseal's line), a scan signs in; the lock screen unlocks with a
        finger, and with the password typed beside it. A screenshot of each state goes to the
        test's output."""
        g = self.guest
        since = g.ssh("date +%s").stdout.strip()
        g.ssh("cp /usr/share/doc/fingerseal/pam/gdm-fingerprint /etc/pam.d/gdm-fingerprint && "
              "printf 'skip_services=gdm-password\\n' >> /etc/fingerseal/fingerseal.conf && "
              "loginctl terminate-user alice; systemctl start gdm3.service")
        # gnome-shell says this once the greeter is up and takes input.
        g.wait_for(f"journalctl --since @{since} --no-pager _COMM=gnome-shell | grep -q 'Registering session with GDM'", 300, "the greeter")
        # The user list, drawn: its highlighted entry alone has more bright bytes than the top bar.
        shots = [g.settled_screenshot(os.path.join(self.shots, "1-greeter.png"), bright=15000)]
        # gnome-shell 43 asks fprintd for a reader when a person is chosen and starts
        # gdm-fingerprint only if that answer came before gdm's; a cold fprintd under TCG
        # answers later (it exits when idle), so it is started first, as on a laptop in use.
        g.ssh("systemctl start fprintd.service")
        g.press("ret")  # the user list's first entry, alice
        g.wait_for("pgrep -f 'gdm-session-worker \\[pam/gdm-fingerprint\\]' >/dev/null", 120, "gdm-fingerprint's conversation")
        g.wait_for(FINGER_NEEDED, 60, "the reader armed at the login screen")
        shots.append(g.settled_screenshot(os.path.join(self.shots, "2-greeter-finger.png")))
        self.scan("alice-1")
        g.wait_for("loginctl list-sessions --no-legend | grep alice | grep -q seat0 && pgrep -u alice -x gnome-shell >/dev/null", 240,
                   "alice's GNOME session")
        session = g.ssh("loginctl list-sessions --no-legend | awk '$3 == \"alice\" && $4 == \"seat0\" {print $1}' | tail -n 1").stdout.strip()
        check(session, "no seat0 session of alice's")
        # alice's gnome-shell says this once its start-up animation is over.
        g.wait_for(f"journalctl --since @{since} --no-pager _UID=$(id -u alice) _COMM=gnome-shell | grep -q 'GNOME Shell started at'", 300,
                   "alice's desktop")
        shots.append(g.settled_screenshot(os.path.join(self.shots, "3-desktop.png")))
        for way, shot in (("finger", "4-lock-finger.png"), ("password", "5-lock-password.png")):
            g.ssh(f"loginctl lock-session {session}")
            g.wait_for(f"loginctl show-session {session} -p LockedHint --value | grep -qx yes", 60, "the lock screen")
            g.press("esc")  # raises the unlock prompt, which starts the fingerprint conversation
            g.wait_for(FINGER_NEEDED, 120, "the reader armed at the lock screen")
            shots.append(g.settled_screenshot(os.path.join(self.shots, shot)))
            if way == "finger":
                self.scan("alice-1")
            else:
                g.type_keys(PASSWORD + "\n")
            g.wait_for(f"loginctl show-session {session} -p LockedHint --value | grep -qx no", 120, f"the {way} to unlock")
        shots.append(g.settled_screenshot(os.path.join(self.shots, "6-unlocked.png")))
        g.ssh("systemctl stop gdm3.service")
        return "screenshots: " + ", ".join(os.path.basename(s) for s in shots)

    def cold_start(self):
        """make bench's system part (not a scenario: figures, no checks beyond the run's own):
        the first PAM authentication after the daemons' idle exit, from the host's start to the
        finger's prompt: pam_fingerseal (fingersealed started by its socket, fprintd by D-Bus)
        beside pam_fprintd (fprintd started by D-Bus), and pam_fingerseal with both running."""
        self.make_user("alice")
        self.set_up("alice", "alice-1")
        self.guest.copy_in([os.path.join(os.path.dirname(os.path.realpath(__file__)), "cold_start.py")], "/root")
        ran = self.as_service(f"python3 /root/cold_start.py alice {self.args.bench}")
        figures = json.loads(ran.stdout.strip().splitlines()[-1])
        said = {"fingerseal": "pam_fingerseal, broker and fprintd cold",
                "fingerseal-broker": "pam_fingerseal, broker cold, fprintd running",
                "fprintd": "pam_fprintd, fprintd cold (baseline)",
                "fingerseal-warm": "pam_fingerseal, broker and fprintd running"}
        for name, seconds in figures.items():
            ms = sorted(1000 * s for s in seconds)
            print(f"  {said[name]:<48} median {statistics.median(ms):7.1f} ms  min {ms[0]:7.1f}  max {ms[-1]:7.1f}  "
                  f"({len(ms)} runs, start to the finger's prompt)", flush=True)
        broker, fprintd, both = (statistics.median(figures[name]) * 1000 for name in ("fingerseal-broker", "fprintd", "fingerseal"))
        # The broker's own cold start against fprintd's; with both cold, fingerseal's path
        # starts fprintd too. The 150 ms target is a real machine's: TCG is many times slower.
        return (f"broker cold {broker:.0f} ms against fprintd cold {fprintd:.0f} ms (no slower: {'met' if broker <= fprintd else 'NOT met'}); "
                f"both cold {both:.0f} ms; the 150 ms target is for hardware, not judged under TCG")

    def upgrade_and_purge(self):
        """11. The packages upgraded (a newer version, made from these) while the broker and a
        session agent run; then purged: nothing of them stays, and the PAM stacks are as they
        were before the installation."""
        g = self.guest
        newer = []
        for deb in self.debs:
            unpacked = os.path.join(self.work, "repack")
            shutil.rmtree(unpacked, ignore_errors=True)
            subprocess.run(["dpkg-deb", "-R", deb, unpacked], check=True)
            control = os.path.join(unpacked, "DEBIAN", "control")
            text = open(control).read()
            text = re.sub(r"^Version: (.*)$", r"Version: \1+upgrade1", text, flags=re.M)
            text = re.sub(r"(fingerseal \(= )([^)]*)\)", r"\1\2+upgrade1)", text)
            open(control, "w").write(text)
            target = os.path.join(self.work, os.path.basename(deb).replace(".deb", "+upgrade1.deb"))
            subprocess.run(["dpkg-deb", "--root-owner-group", "-b", unpacked, target], check=True, capture_output=True)
            newer.append(target)
        g.copy_in(newer, "/root/newer")
        g.ssh("fingerseal status >/dev/null 2>&1; true")
        # An agent on a session bus of alice's, held open while the packages change.
        g.ssh("systemd-run --uid=alice --unit=fingerseal-test-session -p Type=exec dbus-run-session -- sh -c "
              "'gdbus call --session --dest org.fingerseal.Agent1 --object-path /org/fingerseal/Agent1 "
              "--method org.fingerseal.Agent1.GetCapabilities > /tmp/agent-before; sleep 600'")
        g.wait_for("test -s /tmp/agent-before", 60, "the session agent's first answer")
        upgraded = g.ssh("DEBIAN_FRONTEND=noninteractive apt-get install -y " + " ".join("/root/newer/" + os.path.basename(n) for n in newer),
                         check=False, timeout=600)
        check(upgraded.returncode == 0, f"the upgrade: {upgraded.stdout[-500:]}{upgraded.stderr[-500:]}")
        versions = g.ssh("dpkg-query -W -f '${Version} ' fingerseal fingerseal-agent").stdout
        check(versions.count("+upgrade1") == 2, f"versions after the upgrade: {versions}")
        after = g.ssh("fingerseal status --user alice", check=False).stdout
        check("Vault:" in after, f"the broker after the upgrade: {after[-300:]}")
        g.ssh("systemctl stop fingerseal-test-session.service; true")
        g.ssh("DEBIAN_FRONTEND=noninteractive apt-get purge -y fingerseal-agent fingerseal", timeout=600)
        left = g.ssh("ls -d /var/lib/fingerseal /etc/fingerseal /usr/libexec/fingerseal /etc/shadow-maint/*/fingerseal "
                     "/lib/x86_64-linux-gnu/security/pam_fingerseal.so 2>/dev/null; true").stdout.split()
        check(not left, f"left after the purge: {left}")
        check(g.ssh("sha256sum --quiet -c /root/common.sha256", check=False).returncode == 0,
              "/etc/pam.d/common-* are not as before the installation")
        return f"{versions.strip()}; purged"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--deb", help="fingerseal's .deb (fingerseal-agent's beside it); default: scripts/build-deb")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs, screenshots)")
    parser.add_argument("--attach", help="development: WORK:PORT of a guest another process booted and keeps")
    parser.add_argument("--only", action="append", help="development: run only these scenarios (after install)")
    parser.add_argument("--bench", type=int, metavar="RUNS", help="make bench: the cold start, RUNS times, instead of the scenarios")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("system-check: needs root (QEMU, the image)", file=sys.stderr)
        return 1
    for tool in ["qemu-system-x86_64", "mmdebstrap", "ssh", "scp", "ssh-keygen", "pnmtopng", "socat"]:
        if shutil.which(tool) is None:
            print(f"system-check: {tool} is missing (scripts/install-deps installs it)", file=sys.stderr)
            return 1
    # scripts/bench and CI stop the tier with SIGTERM: the guest and the IdP are stopped on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    return Tier(args).run()


if __name__ == "__main__":
    sys.exit(main())
