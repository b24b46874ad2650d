"""The recorded command (`capture -- CMD`) never outlives capture, even a SIGKILLed one.

The command runs in its own process group, which capture stops itself on every exit it lives
through. For the one it cannot (SIGKILL, the OOM killer) a small watchdog process holds the read
end of a pipe whose write end only capture has: when capture dies the pipe reads EOF, and the
watchdog sends the group SIGTERM, then SIGKILL after a grace period. A capture that stopped the
command itself writes "done" first, and the watchdog leaves. (PR_SET_PDEATHSIG would reach only
the command's first process, not what it started.)
"""

from __future__ import annotations

import subprocess
import sys
from contextlib import suppress

GRACE_S = 10.0

# Run with `python -S -c`: the standard library only, nothing of blkscope to import.
_WATCHDOG = f"""
import os, signal, sys, time
group = int(sys.argv[1])
if sys.stdin.buffer.read() == b"done":
    sys.exit(0)
def alive():
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True
if alive():
    os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + {GRACE_S}
    while alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive():
        os.killpg(group, signal.SIGKILL)
"""


class CommandGuard:
    """Watch over the process group `group` until `release`."""

    def __init__(self, group: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-S", "-c", _WATCHDOG, str(group)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # neither Ctrl-C at the terminal nor a kill of our group
            close_fds=True,
        )

    def release(self) -> None:
        """Capture has stopped and reaped the command: the watchdog leaves without a signal
        (the group's id may belong to someone else by now)."""
        assert self.proc.stdin is not None
        with suppress(BrokenPipeError):
            self.proc.stdin.write(b"done")
            self.proc.stdin.close()
        self.proc.wait()
