"""Progress of long steps on stderr: bars on a terminal; elsewhere (a log, CI, a notebook) one
line every few seconds, so a run that takes minutes never looks hung. rich (slow to import) is
imported only when a bar is drawn: `-q` and piped runs never need it (progress_columns.py)."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from blkscope.safe_text import printable

# callback(key, done, total=None, unit="bytes", label=None): one bar per key, counting bytes
# read or steps taken; label (default: key) is what the bar says it is doing.
ProgressCallback = Callable[..., None]

# A label longer than this squeezes an 80-column bar down to nothing ('0…').
LABEL_WIDTH = 40
# Seconds between two progress lines when stderr is not a terminal.
LINE_EVERY_S = 5.0


def short_label(text: str) -> str:
    """What a bar says it is doing, in at most LABEL_WIDTH characters: a path as its file
    name; in a longer 'what: step' the step kept whole when it fits (the 'what', a dataset's
    name, cut in its middle), else the end cut off."""
    if "/" in text and " " not in text:  # an input path, as ingest names its steps
        text = os.path.basename(text.rstrip("/")) or text
    said = printable(text)
    if len(said) <= LABEL_WIDTH:
        return said
    what, sep, step = said.partition(": ")
    room = LABEL_WIDTH - len(sep) - len(step)
    if sep and room >= 10:
        return _cut_middle(what, room) + sep + step
    return said[: LABEL_WIDTH - 1] + "…"


def _cut_middle(text: str, width: int) -> str:
    keep = width - 1
    return text[: keep - keep // 2] + "…" + text[len(text) - keep // 2 :]


@contextmanager
def progress_bar(enabled: bool = True) -> Iterator[ProgressCallback | None]:
    """Yield a ProgressCallback drawing on stderr (bars on a terminal, else lines), or None
    when not enabled."""
    if not enabled:
        yield None
    elif sys.stderr.isatty():
        with _bars() as update:
            yield update
    else:
        with _lines(LINE_EVERY_S) as update:
            yield update


@contextmanager
def _bars() -> Iterator[ProgressCallback]:
    from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeRemainingColumn
    from rich.table import Column

    from blkscope.progress_columns import AmountColumn

    bar = Progress(
        # file names come from traced machines: no rich markup, no control characters
        TextColumn("{task.description}", markup=False, table_column=Column(no_wrap=True)),
        BarColumn(),
        AmountColumn(),
        TimeRemainingColumn(),
        transient=True,
    )
    tasks: dict[str, TaskID] = {}

    def update(
        key: str, done: int, total: int | None = None, unit: str = "bytes", label: str | None = None
    ) -> None:
        said = short_label(str(label or key))
        if key not in tasks:
            tasks[key] = bar.add_task(said, total=total, unit=unit)
        bar.update(tasks[key], completed=done, description=said)

    with bar:
        yield update


@dataclass
class _Step:
    label: str
    done: int
    total: int | None
    unit: str


@contextmanager
def _lines(every_s: float) -> Iterator[ProgressCallback]:
    """Progress as a line on stderr every every_s seconds (the step updated last, how far it
    is and how long the command has run), from a thread: a step that reports nothing for a
    while (a compile) still shows that the command is alive."""
    started = time.monotonic()
    latest: list[_Step] = []
    lock = threading.Lock()
    stop = threading.Event()

    def update(
        key: str, done: int, total: int | None = None, unit: str = "bytes", label: str | None = None
    ) -> None:
        with lock:
            latest[:] = [_Step(short_label(str(label or key)), done, total, unit)]

    def tick() -> None:
        while not stop.wait(every_s):
            with lock:
                step = latest[0] if latest else None
            if step is not None:
                elapsed = time.monotonic() - started
                print(f"{step.label}: {_amount(step)} ({elapsed:.0f} s)", file=sys.stderr)

    ticker = threading.Thread(target=tick, name="blkscope-progress", daemon=True)
    ticker.start()
    try:
        yield update
    finally:
        stop.set()
        ticker.join()


def _amount(step: _Step) -> str:
    """How far a step is: '12.5 of 40.0 MiB (31%)', '3/12 steps', '1.2/7.5 M events'."""
    if step.unit == "steps":
        return f"{step.done}/{step.total or 0} steps"
    if step.unit == "events":
        return f"{step.done / 1e6:.1f}/{(step.total or 0) / 1e6:.1f} M events"
    mib = f"{step.done / 2**20:.1f}"
    if not step.total:
        return f"{mib} MiB"
    return f"{mib} of {step.total / 2**20:.1f} MiB ({step.done / step.total:.0%})"
