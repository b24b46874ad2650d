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
import time
import weakref
from contextlib import suppress
from types import FrameType
from typing import TypeVar

T = TypeVar("T")

_connections: weakref.WeakSet[object] = weakref.WeakSet()
_came = threading.Event()
# When Python ran the handler last (monotonic s): the watcher forwards a signal the main thread
# has not seen this long after it came, and the handler does not raise twice for one Ctrl-C.
HANDLER_WAIT_S = 0.5
_raised_at = [float("-inf")]


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
    now = time.monotonic()
    if now - _raised_at[0] < 2 * HANDLER_WAIT_S:
        return  # the watcher's copy of a Ctrl-C already raised: not again inside the clean-up
    _raised_at[0] = now
    raise KeyboardInterrupt


def watch() -> None:
    """From the main thread: on SIGINT, raise KeyboardInterrupt there as Python does, and at
    once interrupt every tracked DuckDB connection from a watcher thread."""
    _came.clear()
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    signal.signal(signal.SIGINT, _raise_keyboard_interrupt)

    main = threading.main_thread().ident
    echoes = 0

    def listen() -> None:
        nonlocal echoes
        while True:
            got = os.read(read_end, 64)
            if not got:
                return
            for _ in range(got.count(signal.SIGINT)):
                if echoes:  # the signal this thread sent itself
                    echoes -= 1
                    continue
                came_at = time.monotonic()
                _interrupt_all()
                time.sleep(HANDLER_WAIT_S)
                if _raised_at[0] < came_at and main is not None:
                    # The kernel gave the signal to another thread (Arrow's, DuckDB's) while
                    # the main one sat in a read that only EINTR ends: send it there.
                    echoes += 1
                    signal.pthread_kill(main, signal.SIGINT)

    threading.Thread(target=listen, name="blkscope-sigint", daemon=True).start()
