"""Ctrl-C for work that does not look at Python's signals in time: running DuckDB queries.

DuckDB checks for a pending SIGINT only between tasks, and not at all in some of them: a long
join ran on for minutes after Ctrl-C. The command line therefore also hears SIGINT through a
wakeup pipe on a thread of its own (`watch`), which stops every open connection with DuckDB's
thread-safe `interrupt()`, and remembers that the signal came: whatever exception that stop
raises in the command is then reported as the interrupt.
"""

from __future__ import annotations

import os
import signal
import threading
import weakref
from contextlib import suppress
from types import FrameType
from typing import TypeVar

T = TypeVar("T")

_connections: weakref.WeakSet[object] = weakref.WeakSet()
_came = threading.Event()


def track(con: T) -> T:
    """Register a DuckDB connection to be interrupted on Ctrl-C; returns it."""
    _connections.add(con)
    return con


def came() -> bool:
    """Whether SIGINT arrived since `watch` was called."""
    return _came.is_set()


def _interrupt_all() -> None:
    _came.set()
    for con in list(_connections):
        with suppress(Exception):  # a connection already closed
            con.interrupt()  # type: ignore[attr-defined]


def _raise_keyboard_interrupt(signum: int, frame: FrameType | None) -> None:
    _came.set()
    raise KeyboardInterrupt


def watch() -> None:
    """From the main thread: on SIGINT, raise KeyboardInterrupt there as Python does, and at
    once interrupt every tracked DuckDB connection from a watcher thread."""
    _came.clear()
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    signal.signal(signal.SIGINT, _raise_keyboard_interrupt)

    def listen() -> None:
        while True:
            got = os.read(read_end, 64)
            if not got:
                return
            if signal.SIGINT in got:
                _interrupt_all()

    threading.Thread(target=listen, name="blkscope-sigint", daemon=True).start()
