"""How blkscope compiles its numba kernels (the streaming pass; ingest's moved to the compiled
core, blkscope._core): cached on disk, without the GIL, and once per argument types.

A first run after an install compiles every kernel it calls (the cache is empty). numba types
a call from compiled code with a constant argument (`_pad(nd, 3)`) by that constant's literal
type and compiles a version for each constant beside the int64 one: the blkparse scanner's 14
functions were compiled 26 times. `plain_calls` types such a call with plain types first, so
one compiled version serves every caller (LLVM still folds the constant where it inlines the
small scanner functions: ingest's CPU on the 4.4 M-line fio text is unchanged). The streaming
pass keeps numba's literal versions (analyze/stream/jit.py says why).

Every later run loads the kernels from the cache, and numba first installs its compiler's typing
and lowering registries (importing ~40 of its modules), ~0.3 s of each `ingest` or `analyze`
(`step`'s first call took 0.51 s on a 3.6 k-event fixture in cProfile, 0.42 of it there). Machine
code needs none of that: it calls itself, numba's C helpers (registered when numba starts) and,
when it allocates, NRT's (set up here on the first load). So a blkscope kernel loads without it
(`loads_only`); a kernel missing from the cache compiles as always, and numba's compiler
installs the registries first. Measured alternately 5 times on a 3.6 k-event fixture: `ingest`
1.09 -> 0.78 s, `analyze`'s pass 0.58 -> 0.22 s in process."""

from __future__ import annotations

import functools
import hashlib
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numba
from numba.core import caching, errors, types
from numba.core.runtime import rtsys

F = TypeVar("F", bound=Callable[..., Any])


def compiled(fn: F) -> F:
    """A numba kernel: cached, nogil, one version per argument types."""
    return loads_only(plain_calls(numba.njit(cache=True, nogil=True)(fn)))


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


# numba keys a cached function by its own source file alone (path, mtime, size): a function
# that inlines or calls code from another file keeps running the old machine code when only
# that other file changes (a checkout that changed stream/requests.py but not stream/core.py
# ran a stale `step`, and the depth tables came out silently wrong). The locators below stamp
# every cached blkscope function with all of the package's sources instead: any change to any
# of them recompiles. Stat-ing ~300 files once per process costs about a millisecond.
PACKAGE = Path(__file__).resolve().parent


@functools.cache
def package_stamp(root: Path = PACKAGE) -> str:
    """A digest of every Python source under root: each file's path, mtime and size."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        st = path.stat()
        digest.update(f"{path.relative_to(root)}\0{st.st_mtime_ns}\0{st.st_size}\n".encode())
    return digest.hexdigest()


def _package_locator(base: type) -> type:
    class PackageLocator(base):
        """numba's own locator for blkscope's files, with the whole package as the stamp."""

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Any:
            if not Path(py_file).resolve().is_relative_to(PACKAGE):
                return None
            return super().from_function(py_func, py_file)

        def get_source_stamp(self) -> Any:
            return (super().get_source_stamp(), package_stamp())

    PackageLocator.__name__ = PackageLocator.__qualname__ = f"Package{base.__name__}"
    return PackageLocator


# numba's file-backed locators, in its order (NUMBA_CACHE_DIR first, then beside the source)
_WRAPPED = ("UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator")


def _install_locators() -> bool:
    """Put the package locators first in numba's list (once); False when this numba has no
    such list (then a changed callee needs its caller's file touched, or the cache cleared)."""
    impl = getattr(caching, "CacheImpl", None)
    bases: list[Any] = [getattr(caching, n, None) for n in _WRAPPED]
    classes = getattr(impl, "_locator_classes", None)
    if impl is None or classes is None or None in bases:
        return False
    if not any(c.__name__.startswith("Package") for c in classes):
        impl._locator_classes = [_package_locator(b) for b in bases] + list(classes)
    return True


PACKAGE_LOCATORS = _install_locators()


class _LoadOnly(caching.FunctionCache):
    """numba's cache of a function's compiled versions, loading one without numba's typing and
    lowering registries (see the module doc)."""

    nrt = True  # whether the machine code may call NRT (numba's allocator)

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        if self.nrt:
            rtsys.initialize(target_context)  # once per process: ~65 ms
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)


class _LoadOnlyWithoutNRT(_LoadOnly):
    nrt = False


# Another numba may load otherwise: its own way then stands.
_CAN_LOAD_ONLY = all(
    hasattr(caching.Cache, name)
    for name in ("load_overload", "_load_overload", "_guard_against_spurious_io_errors")
) and hasattr(rtsys, "initialize")


def loads_only(dispatcher: F, nrt: bool = True) -> F:
    """The dispatcher, loading its cached versions without numba's compiler set-up (nrt=False:
    nor NRT's, for a function compiled without it)."""
    cache = getattr(dispatcher, "_cache", None)
    if _CAN_LOAD_ONLY and type(cache) is caching.FunctionCache:
        cache.__class__ = _LoadOnly if nrt else _LoadOnlyWithoutNRT
    return dispatcher


def is_cached(dispatcher: Any) -> bool:
    """Whether numba's cache holds a compiled version of the dispatcher's function for the
    current sources (False: its first call compiles; True when this numba cannot say)."""
    try:
        return bool(dispatcher._cache._cache_file._load_index())
    except (AttributeError, OSError, EOFError, ValueError, pickle.UnpicklingError):
        return True  # another numba, or an unreadable index: no message rather than a wrong one
