"""capture.json (written by `blkscope capture`, or by hand): read it and check its shape.

The analysis and the report read a few of its keys (the kernel release, the vm.dirty_*
sysctls, each device's scheduler and queue settings). A capture folder may come from anywhere,
so those keys are checked once, here and again when a dataset's manifest is read, and every
later reader can trust them.
"""

from __future__ import annotations

import json
from typing import Any

from blkscope.errors import InputFormatError
from blkscope.ingest.sources import Input, Source, read_block
from blkscope.store.jsonshape import mismatch
from blkscope.store.manifest import CAPTURE_SHAPE

# Far above any real one (~5 KB): the whole file is read into memory.
MAX_BYTES = 16 << 20
HINT = "blkscope capture writes it; fix or remove the file to ingest the rest of the folder"


def read_capture_json(given: Input) -> dict[str, Any]:
    """The capture manifest at a path (or in an opened source), with the shape the analysis
    reads; else an error."""
    if isinstance(given, Source):
        path = given.path
        try:
            data = read_block(given, MAX_BYTES + 1)
        finally:
            given.close()
    else:
        path = given
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_BYTES + 1)
        except OSError as exc:
            raise InputFormatError(path, f"cannot read: {exc.strerror}") from None
    if len(data) > MAX_BYTES:
        raise InputFormatError(path, f"more than {MAX_BYTES >> 20} MiB: not a capture.json")
    try:
        doc = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputFormatError(path, "not UTF-8 text: not a capture.json", hint=HINT) from None
    except (ValueError, RecursionError) as exc:
        raise InputFormatError(path, f"not valid JSON ({_first_line(exc)})", hint=HINT) from None
    problem = capture_problem(doc)
    if problem:
        raise InputFormatError(path, problem, hint=HINT)
    return doc


def capture_problem(doc: Any) -> str | None:
    """What is wrong with a capture manifest's shape, or None."""
    if not isinstance(doc, dict):
        return f"the top level is {type(doc).__name__}, expected an object"
    found = mismatch(doc, CAPTURE_SHAPE)
    return f"{found} (capture.json)" if found else None


def capture_section(given: Input) -> dict[str, Any]:
    """The manifest's `capture` section from a capture.json: the document as read, with the
    writeback knobs also under `sysctl` (where the findings read them)."""
    capture = read_capture_json(given)
    capture.setdefault("sysctl", capture.get("vm_sysctls") or {})
    return capture


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
