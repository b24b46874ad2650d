"""What happened around an episode besides its IO: the blk-throttle and iocost messages the trace
holds, and the writeback work items the writeback log recorded. Each is read from the dataset
once and looked up per episode: a query per episode scanned every event again."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import duckdb
import numpy as np

from blkscope.analyze.views import query_table

# The trace's messages that say the block layer held IO back above the device.
_THROTTLE_MESSAGES = """
SELECT dev_major, dev_minor, time_ns, message FROM events
WHERE message IS NOT NULL AND dev_major IS NOT NULL AND dev_minor IS NOT NULL
  AND ({spans})
  AND (starts_with(message, 'throtl') OR message LIKE '%iocost%' OR starts_with(message, 'iocg'))
ORDER BY dev_major, dev_minor, time_ns, message
"""
# Up to this many spans are read as they are (the events' row groups outside them are
# skipped); more are read as the one span from the first to the last: each span is one more
# test of every event read, and past a few they cost more than the row groups they skip.
MAX_SPANS = 8
_MIN, _MAX = -(1 << 63), (1 << 63) - 1
# a null never matches, as in SQL: a device of -1, a start after and an end before all (filled
# here: pyarrow's fill_null would cost analyze the import of pyarrow.compute)
_WRITEBACK_WORK = f"""
SELECT coalesce(dev_major, -1) AS dev_major, coalesce(dev_minor, -1) AS dev_minor,
       coalesce(start_ns, CAST('{_MAX}' AS BIGINT)) AS start_ns,
       coalesce(end_ns, CAST('{_MIN}' AS BIGINT)) AS end_ns,
       pages_written IS NOT NULL AS pages_known, coalesce(pages_written, 0) AS pages_written,
       reason
FROM writeback_events
"""


@dataclass(frozen=True)
class Messages:
    """One device's throttling messages, by time."""

    times: np.ndarray
    texts: list[str]


@dataclass(frozen=True)
class WritebackWork:
    """What the writeback log says of a span of a device: how many work items ran in it, the
    pages they wrote (None when the log does not tell) and their reasons, sorted, joined."""

    items: int
    pages: int | None
    reasons: str


class EpisodeContext:
    """The dataset's throttling messages in the given spans [lo, hi) of time, and its
    writeback work items, read once."""

    def __init__(self, con: duckdb.DuckDBPyConnection, spans: list[tuple[int, int]]) -> None:
        self.con = con
        self.spans = _merged_spans(spans)

    @functools.cached_property
    def _messages(self) -> dict[tuple[int, int], Messages]:
        spans = _within_spans("time_ns", self.spans)
        t = query_table(self.con, _THROTTLE_MESSAGES.format(spans=spans))
        major, minor = t["dev_major"].to_numpy(), t["dev_minor"].to_numpy()
        times, texts = t["time_ns"].to_numpy(), t["message"].to_pylist()
        out = {}
        for key in map(tuple, np.unique(np.stack([major, minor], axis=1), axis=0).tolist()):
            idx = np.flatnonzero((major == key[0]) & (minor == key[1]))
            out[key] = Messages(times[idx], [texts[i] for i in idx.tolist()])
        return out

    def throttle_messages(self, device: tuple[int, int], lo: int, hi: int) -> tuple[int, str]:
        """(how many throttling messages of the device fall in [lo, hi), the first of them);
        [lo, hi) lies within the spans."""
        found = self._messages.get(device)
        if found is None:
            return 0, ""
        first, last = np.searchsorted(found.times, [lo, hi], side="left").tolist()
        return last - first, found.texts[first] if last > first else ""

    @functools.cached_property
    def _work(self) -> dict[str, np.ndarray] | None:
        try:
            t = query_table(self.con, _WRITEBACK_WORK)
        except duckdb.CatalogException:  # no writeback log
            return None
        names = ("dev_major", "dev_minor", "start_ns", "end_ns", "pages_known", "pages_written")
        cols = {n: t[n].to_numpy(zero_copy_only=False) for n in names}
        cols["reason"] = np.array(t["reason"].to_pylist(), dtype=object)
        return cols

    def writeback_work(self, device: tuple[int, int], lo: int, hi: int) -> WritebackWork | None:
        """The device's work items that overlap [lo, hi); None without a writeback log."""
        w = self._work
        if w is None:
            return None
        hit = (
            (w["dev_major"] == device[0])
            & (w["dev_minor"] == device[1])
            & (w["start_ns"] < hi)
            & (w["end_ns"] > lo)
        )
        known = hit & w["pages_known"]
        # Python integers: pages left at LONG_MAX (no limit) make sums past int64
        pages = sum(w["pages_written"][known].tolist()) if known.any() else None
        reasons = sorted({r for r in w["reason"][hit].tolist() if r is not None})
        return WritebackWork(int(hit.sum()), pages, ", ".join(reasons))


def _merged_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted disjoint spans covering the given ones; the one span from the first to the last
    when there are more than MAX_SPANS."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(spans):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out if len(out) <= MAX_SPANS else [(out[0][0], out[-1][1])]


def _within_spans(column: str, spans: list[tuple[int, int]]) -> str:
    """A SQL condition: `column` in one of the sorted disjoint spans [lo, hi). DuckDB skips the
    row groups whose times fall outside all of them."""
    terms = [f"({column} >= {int(lo)} AND {column} < {int(hi)})" for lo, hi in spans]
    return " OR ".join(terms) or "false"
