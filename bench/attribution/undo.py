"""Every change the attribution rig makes to the machine, journaled on disk before it is made.

Each step is undone in reverse order on every exit path (normal end, error, Ctrl-C); a run
killed with SIGKILL leaves the journal behind and `run.py --restore` replays it. Steps are
plain data (a kind and its arguments) so the journal can be replayed by a later process.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path

from where import CAPTURES

JOURNAL = CAPTURES / ".rig_undo.json"


class Undo:
    """A stack of undo steps, saved to `journal` after every push and pop."""

    def __init__(self, journal: Path = JOURNAL) -> None:
        self.journal = journal
        self.steps: list[list[str]] = []
        if journal.exists():
            raise SystemExit(
                f"{journal} exists: a previous run did not clean up; "
                "run `python bench/attribution/run.py --restore` first"
            )

    def push(self, *step: str) -> None:
        self.steps.append(list(step))
        self._save()

    def _save(self) -> None:
        self.journal.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.journal.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.steps, indent=1))
        os.replace(tmp, self.journal)

    def unwind(self) -> list[str]:
        """Undo every step, newest first; the problems met (a step that failed is skipped)."""
        problems = []
        while self.steps:
            step = self.steps[-1]
            try:
                apply_step(step)
            except (OSError, subprocess.CalledProcessError) as exc:
                problems.append(f"{' '.join(step)}: {exc}")
            self.steps.pop()
            self._save()
        self.journal.unlink(missing_ok=True)
        return problems


def apply_step(step: list[str]) -> None:
    """Undo one step: write a saved value back, unmount, detach, remove."""
    kind, *args = step
    if kind == "write":  # path, value
        Path(args[0]).write_text(args[1])
    elif kind == "umount":
        subprocess.run(["umount", args[0]], check=True, capture_output=True)
    elif kind == "detach":
        subprocess.run(["losetup", "-d", args[0]], check=True, capture_output=True)
    elif kind == "rmdir":  # a cgroup (its tasks moved out first) or an empty folder
        _empty_cgroup(Path(args[0]))
        Path(args[0]).rmdir()
    elif kind == "rm":
        Path(args[0]).unlink(missing_ok=True)
    else:
        raise OSError(f"unknown undo step {kind}")


def _empty_cgroup(path: Path) -> None:
    """Move any task left in a v1 cgroup back to its hierarchy's root, so it can be removed."""
    tasks = path / "tasks"
    if not tasks.exists():
        return
    root = path.parent / "tasks"
    for pid in tasks.read_text().split():
        with contextlib.suppress(OSError):  # the task exited meanwhile
            root.write_text(pid)


def replay(journal: Path = JOURNAL) -> list[str]:
    """Undo what a killed run left in its journal."""
    if not journal.exists():
        return []
    undo = Undo.__new__(Undo)
    undo.journal = journal
    undo.steps = json.loads(journal.read_text())
    return undo.unwind()
