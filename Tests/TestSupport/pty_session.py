"""Runs a command on a pseudo-terminal and plays a script against it.

usage: pty_session.py STEPS_JSON -- COMMAND...
STEPS_JSON is a list of [expect, send]: wait (bounded) until `expect` appears in the output,
then type `send`. A `send` of "@noecho TEXT" types TEXT once the terminal no longer echoes (a
secret prompt is really reading). A `send` of "@sensor COMMAND" goes to the virtual_device socket named in
PTY_SENSOR (the broker's reader, whose socket the command itself never needs to know; for
older callers, FP_VIRTUAL_DEVICE) instead of the terminal (a finger on the reader while a
prompt waits). A `send` of "@interrupt NAME" types the terminal's interrupt character (Ctrl-C,
which the kernel turns into SIGINT for every process of the terminal's foreground group) once
a process named NAME in that group has SIGINT blocked (a PAM module waiting for its broker
watches Ctrl-C exactly then). PTY_SENSOR is not passed on to the command. Prints a JSON object: the whole
transcript, the exit status, and whether the terminal still echoes afterwards (it must: a
cancelled prompt restores the terminal).
"""
import json, os, pty, select, signal, socket, sys, termios, time

steps = json.loads(sys.argv[1])
command = sys.argv[sys.argv.index("--") + 1:]
sensor_path = os.environ.get("PTY_SENSOR") or os.environ.get("FP_VIRTUAL_DEVICE")
child_environment = {k: v for k, v in os.environ.items() if k != "PTY_SENSOR"}
pid, fd = pty.fork()
if pid == 0:
    os.execvpe(command[0], command, child_environment)

transcript = b""
def read_until(needle, deadline):
    global transcript
    while needle.encode() not in transcript:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        ready, _, _ = select.select([fd], [], [], remaining)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                return False
            if not chunk:
                return False
            transcript += chunk
    return True

def blocks_interrupt(name, group):
    """A process named `name` in process group `group` has SIGINT blocked."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
            with open(f"/proc/{entry}/status") as f:
                status = f.read()
        except OSError:
            continue
        comm = stat[stat.index(b"(") + 1:stat.rindex(b")")].decode(errors="replace")
        pgrp = int(stat[stat.rindex(b")") + 2:].split()[2])
        blocked = next((int(line.split()[1], 16) for line in status.splitlines() if line.startswith("SigBlk:")), 0)
        if comm == name and pgrp == group and blocked & (1 << (signal.SIGINT - 1)):
            return True
    return False

ok = True
for expect, send in steps:
    # Generous: a host under a loaded machine (polkitd, pam_unix's delay) may be slow to ask.
    if not read_until(expect, time.monotonic() + 30):
        ok = False
        break
    if send.startswith("@noecho "):
        # A secret prompt: type only once the program has turned echo off. A program that
        # turns it off with TCSAFLUSH (pkexec's agent) discards what was typed before.
        send = send[len("@noecho "):]
        deadline = time.monotonic() + 30
        while termios.tcgetattr(fd)[3] & termios.ECHO and time.monotonic() < deadline:
            time.sleep(0.01)
    if send.startswith("@interrupt "):
        name = send[len("@interrupt "):]
        deadline = time.monotonic() + 30
        while not blocks_interrupt(name, os.tcgetpgrp(fd)):
            if time.monotonic() > deadline:
                ok = False
                break
            time.sleep(0.01)
        if not ok:
            break
        os.write(fd, termios.tcgetattr(fd)[6][termios.VINTR])
    elif send.startswith("@sensor "):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sensor:
            sensor.settimeout(10)
            sensor.connect(sensor_path)
            sensor.sendall(send[len("@sensor "):].encode())
            sensor.recv(4096)  # the driver closes the connection once it took the command
    else:
        os.write(fd, send.encode())
# Drain to EOF (bounded), then reap.
deadline = time.monotonic() + 10
while time.monotonic() < deadline:
    ready, _, _ = select.select([fd], [], [], 0.2)
    if not ready:
        # No output for a moment: stop draining once the child has exited.
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            break
        continue
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    transcript += chunk
echo_on = bool(termios.tcgetattr(fd)[3] & termios.ECHO)
# Bounded: a child still running now is stuck; kill it so the test fails instead of hanging.
status = 0
for _ in range(50):
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    time.sleep(0.1)
else:
    os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
    ok = False
print(json.dumps({"ok": ok, "transcript": transcript.decode(errors="replace"),
                  "status": os.waitstatus_to_exitcode(status), "echo": echo_on}))
