"""Runs Orca (Debian's /usr/bin/orca) and prints, line by line as it happens, what Orca sends
to speech: its debug record's "SPEECH OUTPUT: '…'" lines, as `speech TEXT`.

usage: orca_record.py DEBUG_LOG

Orca writes its debug record (--debug-file) through Python's buffered file I/O, line by line
only when the file is a terminal: the record goes to a pseudo-terminal, is read here as it is
written, and is copied whole to DEBUG_LOG for a person to read. `ready` is printed once Orca
has registered its event listeners and runs its main loop; the process ends when Orca ends
(SIGTERM here ends Orca first).
"""
import os, pty, re, select, signal, subprocess, sys, termios, tty

log_path = sys.argv[1]
master, slave = pty.openpty()
tty.setraw(slave)  # no echo, no CR added to each line
orca = subprocess.Popen(["/usr/bin/orca", "--debug-file", os.ttyname(slave)],
                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(log_path + ".stderr", "wb"),
                        start_new_session=True)
# The terminal stays open here too until Orca ends: Orca opens it by name only once it started.


def stop(*_):
    """SIGTERM, then SIGKILL after 5 s: Orca refuses to start while another Orca of the same
    user runs anywhere on the machine, so none may outlive its test."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(orca.pid, sig)
        except ProcessLookupError:
            return
        try:
            orca.wait(timeout=5)
            return
        except subprocess.TimeoutExpired:
            pass


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
stamp = re.compile(r"^\d\d:\d\d:\d\d\.\d+ - ")
pending = b""
said = None  # a SPEECH OUTPUT record being read (it may span lines)


def said_ends():
    global said
    if said is not None:
        # Orca appends the voice after the quoted text ("…'{'established': False}"): cut it.
        text = re.sub(r"'\s*(voice=\w+)?\s*(\{.*\})?\s*$", "", said[said.index("'") + 1:]) if "'" in said else said
        print("speech " + text.replace("\n", " / "), flush=True)
    said = None


with open(log_path, "wb") as log:
    while True:
        try:
            readable, _, _ = select.select([master], [], [], 0.2)
            chunk = os.read(master, 65536) if readable else b""
        except InterruptedError:
            continue
        if not chunk:
            if orca.poll() is not None:
                break
            continue
        log.write(chunk)
        log.flush()
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            line = raw.decode("utf-8", "replace")
            if "ORCA: Starting registry" in line:
                print("ready", flush=True)
            if stamp.match(line):
                said_ends()
                if "SPEECH OUTPUT: '" in line:
                    said = line[line.index("SPEECH OUTPUT: ") + len("SPEECH OUTPUT: "):]
            elif said is not None:
                # Orca indents a record's further lines: the words only.
                said += "\n" + line.strip()
said_ends()
status = orca.wait()
print("exit %d" % status, flush=True)
