"""Replace a folder by a new version in one step, one writer at a time, surviving kill -9.

A new version is built in a hidden sibling `.NAME.tmp-PID-RAND` and swapped in with one
`renameat2(RENAME_EXCHANGE)`: at every instant NAME is either the old complete folder or the new
one. Where the file system cannot exchange, NAME is first renamed to `.NAME.old-RAND` and the new
version renamed in; a kill between the two renames leaves only the `.old-` copy, which the next
writer (or reader through `recover`) renames back. Writers hold an exclusive lock on the sibling
file `.NAME.lock` for the whole build, so the leftovers a writer finds are from dead processes.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import shutil
import uuid
from pathlib import Path

from blkscope.errors import DatasetError

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _renameat2() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.renameat2
    except (OSError, AttributeError):
        return None


_RENAMEAT2 = _renameat2()


def exchange(a: Path, b: Path) -> bool:
    """Atomically swap two existing paths; False when this system or file system cannot."""
    if _RENAMEAT2 is None:
        return False
    done = _RENAMEAT2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if done == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def temp_sibling(path: Path) -> Path:
    """A fresh hidden name beside path for building its next version."""
    return path.parent / f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _leftovers(path: Path, kind: str) -> list[Path]:
    return sorted(path.parent.glob(f".{path.name}.{kind}-*"))


def has_old_version(path: Path) -> bool:
    """Whether a killed writer left a previous version of path as `.NAME.old-*`."""
    return bool(_leftovers(path, "old"))


def recover(path: Path) -> None:
    """Put back a previous version that a kill between two renames left as `.NAME.old-*`."""
    if path.exists():
        return
    for old in reversed(_leftovers(path, "old")):  # the newest first
        try:
            os.rename(old, path)
            return
        except OSError:
            continue


def clean_leftovers(path: Path) -> None:
    """Remove temp and old versions of path left by killed writers (call with the lock held)."""
    recover(path)
    for stale in _leftovers(path, "tmp") + _leftovers(path, "old"):
        shutil.rmtree(stale, ignore_errors=True)


def swap_in(new: Path, path: Path) -> None:
    """Make the folder `new` appear at `path`, replacing what was there; `new` is gone after."""
    if not path.exists():
        os.rename(new, path)
        return
    if exchange(new, path):
        shutil.rmtree(new, ignore_errors=True)  # `new` now holds the previous version
        return
    old = path.parent / f".{path.name}.old-{uuid.uuid4().hex[:8]}"
    os.rename(path, old)
    os.rename(new, path)
    shutil.rmtree(old, ignore_errors=True)


class WriteLock:
    """An exclusive lock on `.NAME.lock` beside a folder; a second writer is refused at once.

    The lock file exists only while held: the holder removes it before letting go, and a taker
    checks that the file it locked is still the one at that name (else it locked a removed one).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock_file = path.parent / f".{path.name}.lock"
        self.fd: int | None = None

    def __enter__(self) -> WriteLock:
        while self.fd is None:
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise DatasetError(
                    str(self.path),
                    "another blkscope process is writing this dataset",
                    hint="wait for it to finish, or write to another folder",
                ) from None
            try:
                same = os.stat(self.lock_file).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self.fd = fd
            else:
                os.close(fd)
        return self

    def _open(self) -> int:
        make_parent_folders(self.path)
        try:
            return os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise DatasetError(
                str(self.path), f"cannot write here: {exc.strerror}", hint=WRITE_HINT
            ) from None

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            self.lock_file.unlink(missing_ok=True)
            os.close(self.fd)
            self.fd = None


WRITE_HINT = "check the folder exists, is writable and has free space"


def make_parent_folders(path: Path) -> None:
    """Create the folders an output path needs; a file in the way, or any other reason it
    cannot be done, is one DatasetError naming it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        in_the_way = next((p for p in path.parents if p.exists()), None)
        if in_the_way is not None and not in_the_way.is_dir():
            raise DatasetError(
                str(path),
                f"cannot write here: {in_the_way} is a file, not a folder",
                hint="choose an -o whose parent folders are folders",
            ) from None
        raise DatasetError(
            str(path), f"cannot write here: {exc.strerror}", hint=WRITE_HINT
        ) from None
