"""How blkscope compiles its numba kernels (the ingest scanners, the blktrace decoders, the
capture indexer): cached on disk, without the GIL, and once per argument types.

A first run after an install compiles every kernel it calls (the cache is empty). numba types
a call from compiled code with a constant argument (`_pad(nd, 3)`) by that constant's literal
type and compiles a version for each constant beside the int64 one: the blkparse scanner's 14
functions were compiled 26 times. `plain_calls` types such a call with plain types first, so
one compiled version serves every caller (LLVM still folds the constant where it inlines the
small scanner functions: ingest's CPU on the 4.4 M-line fio text is unchanged). The streaming
pass keeps numba's literal versions (analyze/stream/jit.py says why)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numba
from numba.core import errors, types

F = TypeVar("F", bound=Callable[..., Any])


def compiled(fn: F) -> F:
    """A numba kernel: cached, nogil, one version per argument types."""
    return plain_calls(numba.njit(cache=True, nogil=True)(fn))


def plain_calls(dispatcher: Any) -> Any:
    """The dispatcher, typing a call from compiled code with its arguments' plain types
    (int64 for a literal 0). A function that needs a literal (to index a heterogeneous tuple,
    say) still gets one: it is typed as given when the plain types do not type."""
    typed_as_given = dispatcher.get_call_template

    def get_call_template(args: tuple[Any, ...], kws: dict[str, Any]) -> Any:
        plain = tuple(types.unliteral(a) for a in args)
        if plain == tuple(args) and not kws:
            return typed_as_given(args, kws)
        try:
            return typed_as_given(plain, {k: types.unliteral(v) for k, v in kws.items()})
        except errors.TypingError:
            return typed_as_given(args, kws)

    dispatcher.get_call_template = get_call_template
    return dispatcher
