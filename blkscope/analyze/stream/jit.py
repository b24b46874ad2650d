"""How every function of the streaming pass is compiled: cached on disk, and without numba's
reference-counting runtime (NRT).

The pass hands one State (a tuple of ~40 arrays) from function to function. With NRT, each call
increments and decrements the reference count of every array in it, with atomic instructions:
profiled on the 4.4 M-event fio capture, NRT_incref/NRT_decref took 40 % of the pass (with the
typed dicts gone). Without NRT nothing is counted; the price is that compiled code can allocate
nothing (no arrays, lists or dicts): Python owns and grows every table between calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numba

F = TypeVar("F", bound=Callable[..., Any])
# nogil: the pass runs while the helper threads (threads.py) read and write Parquet
_OPTIONS: dict[str, Any] = {"cache": True, "_nrt": False, "nogil": True}


def kernel(fn: F) -> F:
    """A compiled function of the pass."""
    compiled: F = numba.njit(**_OPTIONS)(fn)
    return compiled


def inline_kernel(fn: F) -> F:
    """A small compiled function inlined into its callers."""
    compiled: F = numba.njit(inline="always", **_OPTIONS)(fn)
    return compiled
