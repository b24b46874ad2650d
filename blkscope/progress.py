"""Progress bars on a terminal, nothing otherwise."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from blkscope.safe_text import printable

# callback(key, done, total=None, unit="bytes", label=None): one bar per key, counting bytes
# read or steps taken; label (default: key) is what the bar says it is doing.
ProgressCallback = Callable[..., None]


class AmountColumn(ProgressColumn):
    """Bytes done of a reading bar, 'n/m steps' of a step bar, 'n/m M events' of a counting one."""

    def __init__(self) -> None:
        super().__init__()
        self.bytes = DownloadColumn()

    def render(self, task: Task) -> Text:
        if task.fields.get("unit") == "steps":
            return Text(
                f"{int(task.completed)}/{int(task.total or 0)} steps", style="progress.download"
            )
        if task.fields.get("unit") == "events":
            done, total = task.completed / 1e6, (task.total or 0) / 1e6
            return Text(f"{done:.1f}/{total:.1f} M events", style="progress.download")
        return self.bytes.render(task)


@contextmanager
def progress_bar(enabled: bool = True) -> Iterator[ProgressCallback | None]:
    """Yield a ProgressCallback drawing bars on stderr when it is a tty, else None."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    bar = Progress(
        # file names come from traced machines: no rich markup, no control characters
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        AmountColumn(),
        TimeRemainingColumn(),
        transient=True,
    )
    tasks: dict[str, TaskID] = {}

    def update(
        key: str, done: int, total: int | None = None, unit: str = "bytes", label: str | None = None
    ) -> None:
        said = printable(str(label or key))
        if key not in tasks:
            tasks[key] = bar.add_task(said, total=total, unit=unit)
        bar.update(tasks[key], completed=done, description=said)

    with bar:
        yield update
