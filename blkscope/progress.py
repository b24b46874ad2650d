"""Progress bars on a terminal, nothing otherwise."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)

ByteProgress = Callable[..., None]


@contextmanager
def byte_progress(enabled: bool = True) -> Iterator[ByteProgress | None]:
    """Yield a callback(path, bytes_done, bytes_total) drawing a bar on stderr when it is a tty."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        transient=True,
    )
    tasks: dict[str, TaskID] = {}

    def update(path: str, done: int, total: int | None = None) -> None:
        if path not in tasks:
            tasks[path] = bar.add_task(path, total=total)
        bar.update(tasks[path], completed=done)

    with bar:
        yield update
