"""How every function of the streaming pass is compiled: cached on disk, without numba's
reference-counting runtime (NRT), and without Python wrappers where only compiled code calls.

The pass hands one State (a tuple of ~40 arrays) from function to function. With NRT, each call
increments and decrements the reference count of every array in it, with atomic instructions:
profiled on the 4.4 M-event fio capture, NRT_incref/NRT_decref took 40 % of the pass (with the
typed dicts gone). Without NRT nothing is counted; the price is that compiled code can allocate
nothing (no arrays, lists or dicts): Python owns and grows every table between calls.

A first run compiles the whole pass (the cache is empty after an install). Most of that is
numba's lowering, and most of it, for a function that takes the State, was its Python wrapper
(unboxing ~40 arrays: ~2/3 of a small function's lowering). Only `step` is called from Python
with the State: every other function taking it is compiled without the wrappers.

A call with a constant (`close_idle_sessions(S, now, False)`) still gets a version compiled for
that constant (numba's literal types; 10 functions are compiled twice): typed with plain types
instead (plain_calls in blkscope/numba_kernels.py, as the ingest kernels are), the pass took
~10 % more CPU on the 4.4 M-event fio capture, the constants no longer folded in the callees.

A call that is not inlined passes the State flattened: each of its ~45 arrays as ~7 scalars,
~300 arguments, ~90 ns a call (measured with a 45-array tuple: 127 ns a call against 34 ns for
the same body inlined). So the functions `process` calls for each event (chain_node, new_bio,
new_piece, gid_event, land, pair_event, cov_dispatch, fifo_g/d, plug_event, flush_end,
bio_done, _lost) are inline_kernels: `step` took 15.7 -> 9.2 CPU-s on the 10x fio capture, for
~3 CPU-s more compiling on a first run. Inlining everything did not finish compiling in 10
minutes. Since stop 13 ten of their callees that most bios and requests reach are inline too:
link, cov_found and cov_register (a piece joins its request), group_done, try_emit_group, _group
and _drop_key (a request ends), bio_finish, emit_bio and _biowait_unlink (a bio ends). Measured
in one process on the 5.08 M-event fio capture, 4 alternations: `step` 1.59 -> 1.19 s (the
pass's critical path), for ~45 CPU-s more compiling on a first run (a fixture's first analysis
took 61 s, 56 CPU-s, and now 113 s, 101 CPU-s). Fewer pay less: `link` alone compiled 6 s
longer for no gain, the eight without `link` and `emit_bio` gave ~12 % for 18 s. The rest stay
kernels: called more rarely, or from many places (each inlined copy is compiled again).

A cached function of the pass loads without numba's compiler (numba_kernels.loads_only), and
without NRT's set-up either: it has no use for NRT."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

import numba

# numba_kernels also installs its cache locators: a stamp over every source
from blkscope.numba_kernels import loads_only

F = TypeVar("F", bound=Callable[..., Any])
# nogil: the pass runs while the helper threads (threads.py) read and write Parquet
_OPTIONS: dict[str, Any] = {"cache": True, "_nrt": False, "nogil": True}


def kernel(fn: F) -> F:
    """A compiled function of the pass."""
    compiled: F = numba.njit(**_OPTIONS, **_wrappers(fn))(fn)
    return loads_only(compiled, nrt=False)


def inline_kernel(fn: F) -> F:
    """A small compiled function inlined into its callers."""
    compiled: F = numba.njit(inline="always", **_OPTIONS, **_wrappers(fn))(fn)
    return compiled


def entry_kernel(fn: F) -> F:
    """A compiled function of the pass that Python calls with the State (`step`)."""
    compiled: F = numba.njit(**_OPTIONS)(fn)
    return loads_only(compiled, nrt=False)


def _wrappers(fn: Callable[..., Any]) -> dict[str, Any]:
    """No Python (or C) wrapper for a function taking the State: only compiled code calls it
    (Python calls `step`, an entry_kernel). The others (a keyed table's, say) are small to
    wrap, and the tests call them from Python."""
    first = next(iter(inspect.signature(fn).parameters.values()), None)
    takes_state = first is not None and first.annotation == "State"
    return {"no_cpython_wrapper": True, "no_cfunc_wrapper": True} if takes_state else {}
