"""A period for a series too short for a periodogram: its bursts coincide with periodic events.

Three flusher bursts cannot reach significance on their own (Rayleigh needs more), but when
every burst overlaps a writeback event from the writeback log, and those events have a
significant period, the bursts are that writeback and share its rhythm. The p-value is the
chance of that many overlaps for bursts of the same lengths placed at random in the span.
"""

from __future__ import annotations

import numpy as np

from blkscope.analyze.periodicity import Period, burst_spans
from blkscope.units import NS_PER_S

SLACK_NS = 50_000_000  # two logs on one clock still differ by a few ms


def coincident_period(
    times_ns: np.ndarray,
    windows: tuple[np.ndarray, np.ndarray],
    reference: Period,
    span_ns: tuple[int, int],
    *,
    burst_gap_s: float = 0.5,
    alpha: float = 0.01,
    min_share: float = 0.8,
) -> Period | None:
    """The reference period when most bursts of times_ns overlap its events beyond chance."""
    starts, ends = burst_spans(times_ns, burst_gap_s)
    lo = np.asarray(windows[0], dtype=np.int64) - SLACK_NS
    hi = np.asarray(windows[1], dtype=np.int64) + SLACK_NS
    if starts.size < 3 or lo.size == 0:
        return None
    order = np.argsort(lo)
    lo, hi = lo[order], hi[order]
    reach = np.maximum.accumulate(hi)
    # a burst overlaps a window when some window opens before the burst ends and closes after
    # the burst starts: the furthest-reaching window opened before the end decides
    last = np.searchsorted(lo, ends, side="right") - 1
    hits = (last >= 0) & (reach[np.maximum(last, 0)] >= starts)
    chance = np.array(
        [overlap_chance(lo, hi, e - s, span_ns) for s, e in zip(starts, ends, strict=True)]
    )
    p_value = at_least(int(hits.sum()), chance)
    if p_value > alpha or hits.mean() < min_share:
        return None
    return Period(
        period_s=reference.period_s,
        strength=float(hits.mean()),
        p_value=p_value,
        phase_s=reference.phase_s,
        cycles=(span_ns[1] - span_ns[0]) / NS_PER_S / reference.period_s,
        bursts=int(starts.size),
    )


def overlap_chance(lo: np.ndarray, hi: np.ndarray, length: int, span_ns: tuple[int, int]) -> float:
    """Share of start positions in the span at which a burst of this length hits a window."""
    t0, t1 = span_ns[0], max(span_ns[0] + 1, span_ns[1] - length)
    a = np.clip(lo - length, t0, t1)
    b = np.clip(hi, t0, t1)
    covered, reach = 0, t0
    for x, y in zip(a.tolist(), b.tolist(), strict=True):  # lo is sorted, so a is too
        x = max(x, reach)
        if y > x:
            covered += y - x
            reach = y
    return covered / (t1 - t0)


def at_least(k: int, chance: np.ndarray) -> float:
    """P(at least k of the bursts hit) when burst i hits with probability chance[i]."""
    dist = np.zeros(chance.size + 1)
    dist[0] = 1.0
    for p in chance:
        dist[1:] = dist[1:] * (1 - p) + dist[:-1] * p
        dist[0] *= 1 - p
    return float(min(1.0, dist[k:].sum()))
