"""The ordinary `blktrace` tool, tried first; it fails fast where lockdown blocks relay files."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import TextIO

STARTUP_GRACE_S = 1.0
STOP_TIMEOUT_S = 15.0


class BlktraceProcess:
    """Runs blktrace writing NAME.blktrace.CPU into the capture folder."""

    def __init__(self, devices: list[str], out_dir: Path, name: str, buffer_kb: int) -> None:
        self.devices = devices
        self.out_dir = out_dir
        self.name = name
        # blktrace's per-CPU relay buffers: -b KiB each, -n of them; keep within buffer_kb.
        self.sub_kb = max(64, min(1024, buffer_kb // 4))
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: TextIO | None = None

    @staticmethod
    def available() -> bool:
        """True when the blktrace binary is installed."""
        return shutil.which("blktrace") is not None

    def start(self) -> str | None:
        """Start blktrace; return None when it runs, or its error text when it exits at once."""
        exe = shutil.which("blktrace")
        if exe is None:
            return "blktrace is not installed"
        args = [exe, "-o", self.name, "-D", str(self.out_dir), "-b", str(self.sub_kb), "-n", "4"]
        for dev in self.devices:
            args += ["-d", f"/dev/{dev}"]
        log_path = self.out_dir / "blktrace.log"
        self._log = open(log_path, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            args,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + STARTUP_GRACE_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._log.close()
                self._log = None
                text = log_path.read_text(errors="replace").strip()
                log_path.unlink()
                for stray in self.out_dir.glob(f"{self.name}.blktrace.*"):
                    stray.unlink()
                return text or f"blktrace exited with {self.proc.returncode}"
            time.sleep(0.05)
        return None

    @property
    def bytes(self) -> int:
        """Bytes written so far into the per-CPU files."""
        return sum(p.stat().st_size for p in self.out_dir.glob(f"{self.name}.blktrace.*"))

    @staticmethod
    def dropped_in(out_dir: Path) -> int | None:
        """Events blktrace says it dropped (its `Total: ... (dropped N)` line), if it said."""
        log = out_dir / "blktrace.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        found = re.findall(r"\(dropped (\d+)\)", text)  # one Total line per device
        return sum(int(n) for n in found) if found else None

    def stop(self) -> None:
        """SIGINT makes blktrace flush, tear down the kernel side and exit; kill if it hangs."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None
