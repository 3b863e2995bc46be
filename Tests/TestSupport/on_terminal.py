"""Runs a command with a pseudo-terminal as its controlling terminal, placed as a PAM host
can be: the command's standard input, output and error stay as they were given (the test's
pipes); only the kernel's view changes (/proc/PID/stat: its process group, tty_nr, tpgid).

usage: on_terminal.py PLACEMENT -- COMMAND...
  leader      the command leads the terminal's foreground process group (sudo, su or login
              started at a terminal), in this very process: its pid is the one the test
              started, so the test can signal it
  follower    in the foreground group, which its parent leads (a script's sudo, pkexec's
              agent helper)
  background  in a process group of its own, not the foreground one (a shell's `&` job)
Exits with the command's status. The terminal's master side stays open in the command (and
for `follower` and `background` in the waiting parent too), so the terminal lives exactly
as long as they do; nothing is ever written to it.
"""
import fcntl, os, sys, termios

placement = sys.argv[1]
command = sys.argv[sys.argv.index("--") + 1:]
if placement not in ("leader", "follower", "background"):
    print(f"on_terminal.py: unknown placement {placement}", file=sys.stderr)
    sys.exit(2)

# A session of our own, whose controlling terminal the pty becomes: its foreground group is
# then ours, led by this process.
# (Started as a session leader already, with no terminal, it takes the pty all the same.)
if os.getsid(0) != os.getpid():
    os.setsid()
master, slave = os.openpty()
fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
os.close(slave)
os.set_inheritable(master, True)

if placement == "leader":
    os.execvp(command[0], command)

child = os.fork()
if child == 0:
    if placement == "background":
        os.setpgid(0, 0)
    os.execvp(command[0], command)
_, status = os.waitpid(child, 0)
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
