"""Once-a-second context beside the trace: iostat, /proc/meminfo dirty pages, /proc/vmstat."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import TextIO

MEMINFO_KEYS = ("Dirty", "Writeback")


def meminfo_line(text: str, epoch: float) -> str:
    """Format `epoch Dirty: N kB Writeback: N kB` (the shared captures' meminfo.txt)."""
    values = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in MEMINFO_KEYS:
            values[key] = rest.split()[0]
    parts = " ".join(f"{k}: {values.get(k, '?')} kB" for k in MEMINFO_KEYS)
    return f"{epoch:.9f} {parts}\n"


def vmstat_line(text: str, epoch: float) -> str:
    """Format all /proc/vmstat counters on one line: `epoch name=value ...`."""
    pairs = (line.split() for line in text.splitlines())
    return f"{epoch:.9f} " + " ".join(f"{p[0]}={p[1]}" for p in pairs if len(p) == 2) + "\n"


class ProcSampler:
    """A thread writing meminfo.txt and proc_vmstat.txt every second until stopped."""

    def __init__(self, out_dir: Path, interval_s: float = 1.0) -> None:
        self.interval_s = interval_s
        self.samples = 0
        self._meminfo: TextIO = open(out_dir / "meminfo.txt", "w")  # noqa: SIM115
        self._vmstat: TextIO = open(out_dir / "proc_vmstat.txt", "w")  # noqa: SIM115
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="proc-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            now = time.time()
            self._meminfo.write(meminfo_line(Path("/proc/meminfo").read_text(), now))
            self._vmstat.write(vmstat_line(Path("/proc/vmstat").read_text(), now))
            self.samples += 1
            if self._stop.wait(self.interval_s):
                return

    def stop(self) -> int:
        """Stop sampling, close the files, return the number of samples taken."""
        self._stop.set()
        self._thread.join()
        self._meminfo.close()
        self._vmstat.close()
        return self.samples


class ToolProcess:
    """A once-a-second tool (`iostat -xmt 1`, `vmstat 1`) writing into the capture, if installed."""

    def __init__(self, out_file: Path, argv: list[str]) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        exe = shutil.which(argv[0])
        if exe is None:
            return
        # setpriv --pdeathsig: the tool dies with us even if we are SIGKILLed.
        guard = shutil.which("setpriv")
        prefix = [guard, "--pdeathsig", "TERM"] if guard else []
        with open(out_file, "wb") as out:
            # LC_ALL=C and TZ=UTC: same timestamp shape as the shared captures on any host.
            self.proc = subprocess.Popen(
                [*prefix, exe, *argv[1:]],
                stdout=out,
                stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
                env={"LC_ALL": "C", "TZ": "UTC", "PATH": "/usr/bin:/bin"},
                start_new_session=True,
            )

    def stop(self) -> None:
        """Terminate the tool and reap it."""
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
