"""Progress bars on a terminal, nothing otherwise. rich (slow to import) is imported only
when a bar is drawn: `-q` and piped runs never need it (progress_columns.py)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from blkscope.safe_text import printable

# callback(key, done, total=None, unit="bytes", label=None): one bar per key, counting bytes
# read or steps taken; label (default: key) is what the bar says it is doing.
ProgressCallback = Callable[..., None]


@contextmanager
def progress_bar(enabled: bool = True) -> Iterator[ProgressCallback | None]:
    """Yield a ProgressCallback drawing bars on stderr when it is a tty, else None."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

    from blkscope.progress_columns import AmountColumn

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
