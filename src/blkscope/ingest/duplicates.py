"""Inputs that hold the same events, found by their content (never by their names), so that no
event is counted twice: a per-CPU blktrace file given twice (`trace.blktrace.0` beside the
`trace.blktrace.0.zst` that `zstd -d` left), a blkparse text given plain and compressed, the
blkparse text of the blktrace binaries beside them."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from blkscope.ingest.blkparse.event_line import LineError, parse_event_line
from blkscope.ingest.blktrace.records import RecordFile

# The events compared: the first numbered ones (blkparse prints the same events in the same
# order from the same trace, so two different traces differ within a few).
FINGERPRINT_EVENTS = 100
# Lines of a text read for them at most (a text that starts with garbage is no duplicate).
FINGERPRINT_LINES = 2000
_KEY = ("dev_major", "dev_minor", "cpu", "seq", "time_ns", "action", "sector", "nsectors")

Fingerprint = tuple[tuple[Any, ...], ...]


def same_events(path: str, other: str, how: str = "") -> dict[str, str]:
    """The skipped entry (path, name, reason) and warning for an input read once because
    `other` holds its events."""
    name = Path(path).name
    reason = f"the same events as {Path(other).name}{how}: read once"
    return {"path": path, "name": name, "reason": reason, "warning": f"{name} holds {reason}"}


def first_events_how(fingerprint: Fingerprint) -> str:
    """How two texts were found to hold the same events, for the sentence that says so."""
    return f" (its first {len(fingerprint)} events are the same)"


def first_events(text: bytes) -> Fingerprint:
    """The first numbered events of blkparse text (empty when none is found early on)."""
    found = []
    for raw in text.split(b"\n", FINGERPRINT_LINES)[:FINGERPRINT_LINES]:
        try:
            row = parse_event_line(raw.decode("utf-8", "surrogateescape"))
        except LineError:
            continue
        if row["seq"] is not None and row["action"] != "m":
            found.append(tuple(row.get(k) for k in _KEY))
            if len(found) == FINGERPRINT_EVENTS:
                break
    return tuple(found)


def events_fingerprint(events: pa.Table) -> Fingerprint:
    """The same fingerprint of decoded events (the first batch of a blktrace decode)."""
    rows = events.select(list(_KEY)).slice(0, 4 * FINGERPRINT_EVENTS).to_pylist()
    numbered = [r for r in rows if r["seq"] is not None and r["action"] != "m"]
    return tuple(tuple(r[k] for k in _KEY) for r in numbered[:FINGERPRINT_EVENTS])


def _digest(f: RecordFile) -> str:
    return hashlib.sha256(f.data.data).hexdigest()


def _keys(f: RecordFile) -> np.ndarray:
    """Each record as (device, cpu, sequence, time), one row per record."""
    r = f.records
    columns = ("device", "cpu", "sequence", "time")
    return np.stack([r[c].astype(np.uint64) for c in columns], axis=1)


def _streams(keys: np.ndarray) -> set[tuple[int, int]]:
    """The (device, cpu) streams a file's records belong to."""
    return {(int(d), int(c)) for d, c in np.unique(keys[:, :2], axis=0).tolist()}


def _within(small: np.ndarray, big: np.ndarray) -> bool:
    """Whether every row of small is also a row of big (exact: both sorted together)."""
    rows = np.concatenate([big, small])
    mine = np.concatenate([np.zeros(len(big), bool), np.ones(len(small), bool)])
    order = np.lexsort(rows.T[::-1])
    rows, mine = rows[order], mine[order]
    run = np.cumsum(np.concatenate(([True], (rows[1:] != rows[:-1]).any(axis=1)))) - 1
    run_has_big = np.bincount(run, weights=~mine) > 0
    return bool(run_has_big[run[mine]].all())


def distinct_streams(
    files: Sequence[RecordFile],
) -> tuple[list[RecordFile], list[dict[str, str]]]:
    """The files to decode, none holding only what an earlier kept one holds, and one skipped
    entry (name, reason, warning) per file left out: its bytes are a kept file's (decompressed),
    or every one of its records is one of a kept file of the same CPU's (a copy cut short)."""
    kept: list[tuple[RecordFile, np.ndarray, set[tuple[int, int]]]] = []
    digests: dict[str, str] = {}
    dropped = []
    for f in files:
        digest = _digest(f)
        if digest in digests:
            dropped.append(same_events(f.path, digests[digest], " (byte for byte)"))
            continue
        keys = _keys(f)
        streams = _streams(keys)
        cover = next(
            (
                other
                for other, other_keys, other_streams in kept
                if streams <= other_streams and _within(keys, other_keys)
            ),
            None,
        )
        if cover is not None:
            dropped.append(same_events(f.path, cover.path, " (every record of it)"))
            continue
        kept.append((f, keys, streams))
        digests[digest] = f.path
    return [f for f, _, _ in kept], dropped
