"""Drain a tracefs trace_pipe into a file from a thread, without ever blocking the stop path."""

from __future__ import annotations

import errno
import os
import select
import threading
from collections.abc import Callable
from pathlib import Path

READ_SIZE = 1 << 20
POLL_MS = 200


class PipeReader:
    """Copies a trace_pipe to a sink until stopped; stop() drains what the kernel still holds."""

    def __init__(self, pipe: Path, sink: Callable[[bytes], object]) -> None:
        # O_NONBLOCK: after tracing_on=0 an empty trace_pipe must return EAGAIN, not block forever.
        self.fd = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
        self.sink = sink
        self.bytes = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"pipe:{pipe}", daemon=True)
        self._thread.start()

    def _read_available(self) -> bool:
        """Read until the pipe is empty; return True if anything was read."""
        got = False
        while True:
            try:
                data = os.read(self.fd, READ_SIZE)
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.EINTR):
                    return got
                raise
            if not data:
                return got
            got = True
            self.bytes += len(data)
            self.sink(data)

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        try:
            while not self._stop.is_set():
                poller.poll(POLL_MS)
                self._read_available()
        except BaseException as exc:  # handed to stop(), which re-raises in the main thread
            self.error = exc

    def stop(self) -> None:
        """Stop the thread, read what is left (the caller has turned tracing off), close."""
        self._stop.set()
        self._thread.join()
        try:
            if self.error is None:
                self._read_available()
        finally:
            os.close(self.fd)
        if self.error is not None:
            raise self.error
