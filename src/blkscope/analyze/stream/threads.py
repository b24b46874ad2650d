"""The pass's two helper threads, so that on two cores the compiled pass (which releases the
GIL) never waits for Arrow: one reads and encodes the next batch of events while the pass works
on this one, one turns finished rows into Parquet. Each hands over through a short queue (memory
stays a few batches), and an error in a thread is raised again in the caller's thread."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")
_DONE = object()
_POLL = 0.1  # seconds between looks at the stop flag while a queue is full or empty


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


class Prefetch(Generic[T]):
    """Iterate `make(item)` for each item of `source`, computed one step ahead in a thread."""

    def __init__(self, source: Iterable[Any], make: Callable[[Any], T], depth: int = 2) -> None:
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(source, make), name="blkscope-read", daemon=True
        )
        self._thread.start()

    def _put(self, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=_POLL)
                return True
            except queue.Full:
                continue
        return False

    def _run(self, source: Iterable[Any], make: Callable[[Any], T]) -> None:
        try:
            for item in source:
                if not self._put(make(item)):
                    return
            self._put(_DONE)
        except BaseException as error:  # handed to the consumer, raised there
            self._put(_Failed(error))

    def __iter__(self) -> Iterator[T]:
        while True:
            item = self._queue.get()
            if item is _DONE:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item

    def close(self) -> None:
        """Stop the thread (the consumer is done or gave up) and wait for it."""
        self._stop.set()
        self._thread.join()


class Background:
    """Run `work(item)` in a thread for each item `submit`ted, in order."""

    def __init__(self, work: Callable[[Any], None], depth: int = 2) -> None:
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(work,), name="blkscope-write", daemon=True
        )
        self._thread.start()

    def _run(self, work: Callable[[Any], None]) -> None:
        while True:
            item = self._queue.get()
            if item is _DONE:
                return
            if self._error is None:
                try:
                    work(item)
                except BaseException as error:  # raised in the submitter
                    self._error = error

    def _check(self) -> None:
        if self._error is not None:
            raise self._error

    def submit(self, item: Any) -> None:
        self._check()
        self._queue.put(item)

    def close(self) -> None:
        """Wait until every submitted item is done; raise what failed."""
        self._queue.put(_DONE)
        self._thread.join()
        self._check()

    def abandon(self) -> None:
        """Wait for the thread to end, ignoring what failed (the caller is failing already)."""
        self._queue.put(_DONE)
        self._thread.join()
