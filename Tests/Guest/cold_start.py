"""Run inside the guest, as root, outside any login session (a transient unit): the time from a
PAM host's start to its finger prompt, with the daemons stopped first (a cold start, as after
their idle exit), for pam_fingerseal (fingersealed started by its socket, fprintd as the
reader's owner; then the broker alone cold, then neither) beside pam_fprintd (fprintd started
by D-Bus activation). Prints one JSON line.

    cold_start.py USER RUNS
"""

import json
import os
import select
import signal
import subprocess
import sys
import time

STACKS = {
    "fingerseal": ("fingerseal-bench", "auth required pam_fingerseal.so\n", ["fingerseal.service", "fprintd.service"]),
    "fingerseal-broker": ("fingerseal-bench", None, ["fingerseal.service"]),
    "fingerseal-warm": ("fingerseal-bench", None, []),
    "fprintd": ("fprintd-bench", "auth required pam_fprintd.so\n", ["fprintd.service"]),
}


def to_prompt(service, user, stopped):
    """Seconds from pamtester's start to the first output naming the finger."""
    if stopped:
        subprocess.run(["systemctl", "stop"] + stopped, check=True)
        # Each run starts them again at once: systemd's start limit (5 in 10 s) is for a unit
        # that keeps failing, not for a bench (once hit, the socket refused the next request).
        subprocess.run(["systemctl", "reset-failed"] + stopped, capture_output=True)  # "not loaded" once stopped: nothing to forget
    started = time.monotonic()
    # Unbuffered: misc_conv prints an info message (pam_fprintd's prompt) with stdio.
    host = subprocess.Popen(["stdbuf", "-o0", "pamtester", "-I", "tty=/dev/ttyS1", service, user, "authenticate"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    seen, deadline = b"", started + 60
    try:
        while b"finger" not in seen:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([host.stdout], [], [], left)[0]:
                raise SystemExit(f"cold_start: no prompt from {service} in 60 s: {seen!r}")
            chunk = os.read(host.stdout.fileno(), 4096)
            if not chunk:
                raise SystemExit(f"cold_start: {service} ended before its prompt: {seen!r}")
            seen += chunk
        return time.monotonic() - started
    finally:
        os.killpg(host.pid, signal.SIGKILL)
        host.wait()


def main():
    user, runs = sys.argv[1], int(sys.argv[2])
    for service, line, _ in STACKS.values():
        if line:
            with open(f"/etc/pam.d/{service}", "w") as stack:
                stack.write(line + "account required pam_permit.so\n")
    figures = {name: [] for name in STACKS}
    for _ in range(runs):
        for name, (service, _, stopped) in STACKS.items():
            figures[name].append(to_prompt(service, user, stopped))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
