"""Find tracefs; change its settings only through a journal that can put each one back."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from blkscope.errors import CaptureError

TRACEFS_CANDIDATES = (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing"))


def find_tracefs() -> Path | None:
    """Return the mounted tracefs folder, or None."""
    for root in TRACEFS_CANDIDATES:
        if (root / "trace").exists() and (root / "current_tracer").exists():
            return root
    return None


def read_setting(path: Path) -> str:
    """Read a tracefs file; for choice files like trace_clock return the [selected] word."""
    text = path.read_text().strip()
    if "[" in text and "]" in text:
        return text[text.index("[") + 1 : text.index("]")]
    return text


def write_setting(path: Path, value: str) -> None:
    """Write one value to a tracefs (or sysfs) file, turning OSError into a CaptureError."""
    try:
        # tracefs wants the whole value in one write(); Path.write_text may split nothing but
        # raises plain OSError, which we translate so no traceback reaches the user.
        with open(path, "w") as fh:
            fh.write(value + "\n")
    except OSError as exc:
        raise CaptureError(
            str(path),
            f"cannot write {value!r}: {exc.strerror}",
            "is another tracer or blktrace using it?",
        ) from None


class TracefsJournal:
    """Remembers the value each setting had before we first changed it, and restores in reverse."""

    def __init__(self, record: Path | None = None) -> None:
        self._saved: list[tuple[Path, str]] = []
        self._seen: set[Path] = set()
        self._made_dirs: list[Path] = []
        self._mounted: Path | None = None
        # Kept on disk before each change: SIGKILL cannot be caught, `capture-restore` reads it.
        self.record = record

    @classmethod
    def load(cls, record: Path) -> TracefsJournal:
        """Rebuild the journal a killed capture left in its folder."""
        doc = json.loads(record.read_text())
        journal = cls(record)
        journal._saved = [(Path(p), v) for p, v in doc["saved"]]
        journal._seen = {p for p, _ in journal._saved}
        journal._made_dirs = [Path(p) for p in doc["made_dirs"]]
        journal._mounted = Path(doc["mounted"]) if doc["mounted"] else None
        return journal

    def _persist(self) -> None:
        if self.record is None:
            return
        doc = {
            "saved": [[str(p), v] for p, v in self._saved],
            "made_dirs": [str(p) for p in self._made_dirs],
            "mounted": str(self._mounted) if self._mounted else None,
        }
        tmp = self.record.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=1))
        tmp.replace(self.record)

    def set(self, path: Path, value: str) -> None:
        """Change a setting, remembering its original value the first time."""
        if path not in self._seen:
            self._saved.append((path, read_setting(path)))
            self._seen.add(path)
            self._persist()
        if read_setting(path) != value:
            write_setting(path, value)

    def made_dir(self, path: Path) -> None:
        """Remember a tracefs instance folder we created, so restore removes it."""
        self._made_dirs.append(path)
        self._persist()

    def mounted(self, path: Path) -> None:
        """Remember that we mounted tracefs ourselves, so restore unmounts it."""
        self._mounted = path
        self._persist()

    def restore(self) -> list[str]:
        """Put every setting back (newest change first); return the problems, never raise."""
        problems: list[str] = []
        for path in reversed(self._made_dirs):
            try:
                path.rmdir()
            except OSError as exc:
                problems.append(f"{path}: rmdir failed: {exc.strerror}")
        self._made_dirs.clear()
        for path, value in reversed(self._saved):
            try:
                if read_setting(path) != value:
                    write_setting(path, value)
            except (OSError, CaptureError) as exc:
                problems.append(f"{path}: could not restore {value!r}: {exc}")
        self._saved.clear()
        self._seen.clear()
        if self._mounted is not None:
            done = subprocess.run(
                ["umount", str(self._mounted)], capture_output=True, text=True, check=False
            )
            if done.returncode != 0:
                problems.append(f"{self._mounted}: umount failed: {done.stderr.strip()}")
            self._mounted = None
        if not problems and self.record is not None:
            self.record.unlink(missing_ok=True)
        return problems


def ensure_tracefs(journal: TracefsJournal) -> Path:
    """Return tracefs, mounting it when absent; raise a CaptureError with the fix otherwise."""
    found = find_tracefs()
    if found is not None:
        return found
    target = TRACEFS_CANDIDATES[0]
    if target.is_dir():
        done = subprocess.run(
            ["mount", "-t", "tracefs", "nodev", str(target)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode == 0 and (target / "trace").exists():
            journal.mounted(target)
            return target
    raise CaptureError(
        str(target),
        "tracefs is not mounted and could not be mounted",
        "the kernel needs CONFIG_FTRACE and CONFIG_BLK_DEV_IO_TRACE; try "
        "`mount -t tracefs nodev /sys/kernel/tracing`",
    )


def require_root() -> None:
    """Raise a CaptureError explaining the fix when not running as root."""
    if os.geteuid() != 0:
        raise CaptureError(
            "blkscope capture",
            "must run as root (it changes tracefs settings)",
            "run it with sudo, e.g. `sudo blkscope capture --device sda ...`",
        )


def snapshot(root: Path, devices: list[str]) -> dict[str, str]:
    """Read every setting capture may touch; tests compare snapshots taken before and after."""
    names = [
        "current_tracer",
        "options/bin",
        "options/context-info",
        "trace_clock",
        "buffer_size_kb",
        "tracing_on",
        "saved_cmdlines_size",
    ]
    state = {name: read_setting(root / name) for name in names}
    for dev in devices:
        state[f"{dev}/trace/enable"] = read_setting(Path("/sys/block") / dev / "trace" / "enable")
    state["instances"] = " ".join(sorted(p.name for p in (root / "instances").iterdir()))
    return state
