"""Find tracefs; change its settings only through a journal that can put each one back."""

from __future__ import annotations

import json
import os
import re
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


# Every tracefs file capture may change (relative to the tracefs root), with the form of the
# values a kernel shows there: capture-restore writes nothing else. buffer_size_kb reads
# "7 (expanded: 1408)" on a tracer that was never used.
_BIT = re.compile(r"[01]")
_WORD = re.compile(r"[a-z0-9_-]{1,32}")
_NUMBER = re.compile(r"[1-9][0-9]{0,11}")
SETTINGS: dict[str, re.Pattern[str]] = {
    "tracing_on": _BIT,
    "options/bin": _BIT,
    "options/context-info": _BIT,
    "trace_clock": _WORD,
    "current_tracer": _WORD,
    "buffer_size_kb": re.compile(r"[1-9][0-9]{0,11}( \(expanded: [1-9][0-9]{0,11}\))?"),
    "saved_cmdlines_size": _NUMBER,
}
# The kernel takes saved_cmdlines_size up to PID_MAX_DEFAULT.
MAX_SAVED_CMDLINES = 32768
# The per-device switch of the blk tracer, and the tracefs instances capture makes (writeback,
# block tracepoints).
_DEVICE_SWITCH = re.compile(r"/sys/block/(?!\.\.?/)[A-Za-z0-9._:+-]{1,64}/trace/enable")
_INSTANCE = re.compile(r"blkscope-(?:wb|tp)-[0-9]{1,10}")


def restorable(value: str) -> str:
    """The value to write back for one a setting showed before capture changed it.

    On a tracer never used since boot buffer_size_kb reads "7 (expanded: 1408)": the ring
    buffer holds a page per CPU until a first use grows it to 1408 KiB. The kernel refuses that
    string, and no write returns a buffer to the unexpanded state, so the size it would grow to
    is what goes back: writing nothing would leave capture's own size (64 MiB per CPU).
    """
    expanded = re.fullmatch(r"[0-9]+ \(expanded: ([0-9]+)\)", value)
    return expanded[1] if expanded else value


def device_enable_path(dev: str) -> Path:
    """The sysfs switch that attaches the blk tracer to one device."""
    return Path("/sys/block") / dev / "trace" / "enable"


def _refuse(record: Path, what: str) -> CaptureError:
    return CaptureError(
        str(record),
        f"refusing to restore: {what}",
        "this file was not written by blkscope capture on this machine; check it by hand",
    )


def _entries(record: Path, doc: object) -> list[tuple[str, str]]:
    """The journal's saved [path, value] pairs, or a refusal when the shape is wrong."""
    saved = doc.get("saved") if isinstance(doc, dict) else None
    if not isinstance(saved, list) or not all(
        isinstance(e, list) and len(e) == 2 and all(isinstance(x, str) for x in e) for e in saved
    ):
        raise _refuse(record, "'saved' is not a list of [path, value] pairs")
    return [(p, v) for p, v in saved]


def _strings(record: Path, doc: dict[str, object], key: str) -> list[str]:
    items = doc.get(key, [])
    if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
        raise _refuse(record, f"{key!r} is not a list of paths")
    return items


def _tracefs_here(record: Path) -> Path:
    root = find_tracefs()
    if root is None:
        raise CaptureError(
            str(record), "tracefs is not mounted here", "mount it, then run capture-restore again"
        )
    return root


def _trusted_setting(record: Path, path: str, value: str) -> Path:
    """path as a Path when it is a setting capture changes and value a value it can hold on
    this machine (a tracer and a clock it offers, a buffer its memory can hold)."""
    if _DEVICE_SWITCH.fullmatch(path):
        pattern, name = _BIT, None
    else:
        root = _tracefs_here(record)
        name = path[len(str(root)) + 1 :] if path.startswith(f"{root}/") else None
        if name not in SETTINGS:
            raise _refuse(record, f"{path!r} is not a tracefs setting blkscope capture changes")
        pattern = SETTINGS[name]
    if not pattern.fullmatch(value):
        raise _refuse(record, f"{value!r} is not a value {path} can hold")
    if name is not None:
        problem = _value_problem(_tracefs_here(record), name, restorable(value))
        if problem:
            raise _refuse(record, f"{value!r} is not a value {path} can hold here: {problem}")
    return Path(path)


def _choices(path: Path) -> list[str]:
    """The words a tracefs choice file offers (available_tracers, trace_clock's list)."""
    try:
        return path.read_text().replace("[", " ").replace("]", " ").split()
    except OSError:
        return []


def _memory_kb() -> int:
    """The machine's memory (MemTotal), KiB."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1])
    raise CaptureError("/proc/meminfo", "no MemTotal line")


def _value_problem(root: Path, name: str, value: str) -> str | None:
    """Why this machine's tracefs could never have shown value for the setting name, or None."""
    if name == "current_tracer" and value not in _choices(root / "available_tracers"):
        return f"available_tracers offers {' '.join(_choices(root / 'available_tracers'))}"
    if name == "trace_clock" and value not in _choices(root / "trace_clock"):
        return f"trace_clock offers {' '.join(_choices(root / 'trace_clock'))}"
    if name == "buffer_size_kb":
        # per CPU: a size the machine's memory could hold on every CPU at once
        cpus = os.cpu_count() or 1
        limit = _memory_kb() // cpus
        if int(value) > limit:
            return f"more than its memory holds ({limit:,} KiB per CPU on {cpus} CPUs)"
    if name == "saved_cmdlines_size" and int(value) > MAX_SAVED_CMDLINES:
        return f"the kernel takes at most {MAX_SAVED_CMDLINES}"
    return None


def _trusted_instance(record: Path, path: str) -> Path:
    root = _tracefs_here(record)
    inst = Path(path)
    if inst.parent != root / "instances" or not _INSTANCE.fullmatch(inst.name):
        raise _refuse(record, f"{path!r} is not a tracefs instance blkscope capture makes")
    return inst


def tracefs_mount_id(path: Path) -> int | None:
    """The id (/proc/self/mountinfo's first field) of the tracefs mounted on top at path."""
    found = None
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        fstype = line.split(" - ", 1)[1].split()[:1]
        if fields[4] == str(path) and fstype == ["tracefs"]:
            found = int(fields[0])  # the last one listed is the one on top
    return found


def boot_id() -> str:
    """This boot's id: a mount id means something only within the boot that gave it."""
    return Path("/proc/sys/kernel/random/boot_id").read_text().strip()


def _trusted_mount(record: Path, mounted: object) -> Path:
    """The tracefs mount the journal says capture made: only one capture itself mounted (the
    id and boot it recorded are the mount's), never a system's own tracefs."""
    if not isinstance(mounted, dict) or set(mounted) != {"path", "mount_id", "boot_id"}:
        raise _refuse(
            record,
            f"'mounted' is {mounted!r}, not the mount id and boot id blkscope capture records",
        )
    path = mounted["path"]
    if not isinstance(path, str) or Path(path) not in TRACEFS_CANDIDATES:
        raise _refuse(record, f"{path!r} is not where blkscope capture mounts tracefs")
    now = tracefs_mount_id(Path(path))
    if now is None:
        raise _refuse(record, f"{path} is not a tracefs mount")
    if mounted["boot_id"] != boot_id() or mounted["mount_id"] != now:
        raise _refuse(
            record,
            f"the tracefs mount at {path} (id {now}) is not the one blkscope capture made "
            f"(id {mounted['mount_id']!r} in boot {mounted['boot_id']!r})",
        )
    return Path(path)


class TracefsJournal:
    """Remembers the value each setting had before we first changed it, and restores in reverse."""

    def __init__(self, record: Path | None = None) -> None:
        self._saved: list[tuple[Path, str]] = []
        self._seen: set[Path] = set()
        self._made_dirs: list[Path] = []
        self._mounted: Path | None = None
        self._mount_id: int | None = None
        # Kept on disk before each change: SIGKILL cannot be caught, `capture-restore` reads it.
        self.record = record

    @classmethod
    def load(cls, record: Path) -> TracefsJournal:
        """Rebuild the journal a killed capture left in its folder.

        The folder may have been copied from elsewhere or tampered with, and restoring runs as
        root: every entry must be a setting capture itself changes, under the tracefs mount
        found here, holding a value such a setting can hold. Anything else is refused before
        anything is written.
        """
        try:
            doc = json.loads(record.read_bytes())
        except (OSError, ValueError, RecursionError) as exc:
            raise CaptureError(str(record), f"cannot read the journal: {exc}") from None
        journal = cls(record)
        journal._saved = [
            (_trusted_setting(record, p, v), restorable(v)) for p, v in _entries(record, doc)
        ]
        journal._seen = {p for p, _ in journal._saved}
        journal._made_dirs = [
            _trusted_instance(record, p) for p in _strings(record, doc, "made_dirs")
        ]
        mounted = doc.get("mounted")
        if mounted is not None:
            journal._mounted = _trusted_mount(record, mounted)
            journal._mount_id = mounted["mount_id"]
        return journal

    def _persist(self) -> None:
        if self.record is None:
            return
        doc = {
            "saved": [[str(p), v] for p, v in self._saved],
            "made_dirs": [str(p) for p in self._made_dirs],
            "mounted": None
            if self._mounted is None
            else {"path": str(self._mounted), "mount_id": self._mount_id, "boot_id": boot_id()},
        }
        tmp = self.record.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=1))
        tmp.replace(self.record)

    def set(self, path: Path, value: str) -> None:
        """Change a setting, remembering its original value the first time."""
        if path not in self._seen:
            self._saved.append((path, restorable(read_setting(path))))
            self._seen.add(path)
            self._persist()
        if read_setting(path) != value:
            write_setting(path, value)

    def made_dir(self, path: Path) -> None:
        """Remember a tracefs instance folder we created, so restore removes it."""
        self._made_dirs.append(path)
        self._persist()

    def mounted(self, path: Path) -> None:
        """Remember that we mounted tracefs ourselves (which mount, in which boot), so restore
        unmounts it and no other."""
        self._mounted = path
        self._mount_id = tracefs_mount_id(path)
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
            self._mounted = self._mount_id = None
        if not problems and self.record is not None:
            self.record.unlink(missing_ok=True)
        return problems


def make_instance(
    journal: TracefsJournal, inst: Path, options: dict[str, str], buffer_kb: int
) -> None:
    """Create a private tracefs instance (removed at restore), stopped, on the mono clock.

    A new instance copies the global trace options, which the blk tracer may have set (bin):
    each option it reads by is set explicitly.
    """
    inst.mkdir()
    journal.made_dir(inst)
    (inst / "tracing_on").write_text("0\n")
    for option, value in options.items():
        (inst / "options" / option).write_text(value + "\n")
    (inst / "trace_clock").write_text("mono\n")
    (inst / "buffer_size_kb").write_text(f"{buffer_kb}\n")


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
        state[f"{dev}/trace/enable"] = read_setting(device_enable_path(dev))
    state["instances"] = " ".join(sorted(p.name for p in (root / "instances").iterdir()))
    return state
