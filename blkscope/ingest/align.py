"""Last-resort clock alignment: find where a writeback log sits on the trace timeline."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SECOND = 1_000_000_000
# bpftrace formats time() in user space when it reads the event, a little after the kernel
# saw it: a stamp may be late by this much.
PRINT_LAG_NS = 50_000_000
# A work item that ran shorter than this wrote nothing (an empty periodic wakeup).
MIN_WORK_NS = 100_000


@dataclass
class Alignment:
    """An offset found by alignment: source time - offset_ns = trace time, with its evidence."""

    offset_ns: int
    low_ns: int
    high_ns: int
    matched: int
    candidates: int
    runner_up: int
    method: str

    def as_doc(self) -> dict[str, object]:
        """The manifest form of this alignment."""
        return {
            "method": self.method,
            "interval_ns": [self.low_ns, self.high_ns],
            "matched_rows": self.matched,
            "rows_used": self.candidates,
            "runner_up_matched_rows": self.runner_up,
            "score_margin": self.matched - self.runner_up,
        }


def _row_intervals(stamp: int, duration: int, resolution: int, bursts: np.ndarray) -> np.ndarray:
    # The work item ended at e, with its IO queued in [e - duration, e]: so e lies in
    # [burst start, burst end + duration] for one burst; the stamp says
    # stamp - lag <= e + offset < stamp + resolution.
    lows = stamp - PRINT_LAG_NS - bursts[:, 1] - duration
    highs = stamp + max(resolution, 1) - bursts[:, 0]
    order = np.argsort(lows)
    lows, highs = lows[order], highs[order]
    merged: list[tuple[int, int]] = []
    for lo, hi in zip(lows.tolist(), highs.tolist(), strict=True):
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return np.array(merged, np.int64)


def _coverage(intervals: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    # Sweep: +1 at each interval's start, -1 at its end; coverage between breakpoints.
    allv = np.concatenate(intervals)
    points = np.concatenate((allv[:, 0], allv[:, 1]))
    steps = np.concatenate((np.ones(len(allv), np.int64), -np.ones(len(allv), np.int64)))
    order = np.lexsort((steps, points))  # ends (-1) before starts at the same point
    return points[order], np.cumsum(steps[order])


def align_writeback(
    stamps_ns: np.ndarray,
    durations_ns: np.ndarray,
    resolution_ns: int,
    bursts: np.ndarray,
    method: str,
) -> Alignment | None:
    """Offset (stamp - trace time) that puts the most work items on a flusher burst."""
    keep = durations_ns >= MIN_WORK_NS
    stamps, durations = stamps_ns[keep], durations_ns[keep]
    if stamps.size == 0 or bursts.size == 0:
        return None
    intervals = [
        _row_intervals(int(s), int(d), resolution_ns, bursts)
        for s, d in zip(stamps.tolist(), durations.tolist(), strict=True)
    ]
    points, cover = _coverage(intervals)
    best = int(cover.max())
    # The best region: the widest run of breakpoints where coverage is maximal.
    regions = [
        (int(points[i]), int(points[i + 1]))
        for i in np.flatnonzero(cover == best)
        if i + 1 < len(points)
    ]
    low, high = max(regions, key=lambda r: r[1] - r[0])
    centre = (low + high) // 2
    far = (points < low - SECOND) | (points > high + SECOND)
    runner_up = int(cover[far].max()) if far.any() else 0
    return Alignment(centre, low, high, best, int(stamps.size), runner_up, method)


# Pairs are only looked for among this many log rows: enough to outvote chance coincidences.
MATCH_ROWS = 5000
MATCH_PER_SECTOR = 16
MODE_BIN_NS = 1_000_000


def align_by_sector(
    log_sectors: np.ndarray,
    log_times: np.ndarray,
    trace_sectors: np.ndarray,
    trace_times: np.ndarray,
) -> Alignment | None:
    """Offset (log time - trace time) on which most logged completions meet a trace completion.

    trace_sectors must be sorted. Every pair sharing a sector votes for its time difference;
    the most voted 1 ms bin wins and its median is the offset.
    """
    keep = log_sectors >= 0
    log_sectors, log_times = log_sectors[keep][:MATCH_ROWS], log_times[keep][:MATCH_ROWS]
    if log_sectors.size == 0 or trace_sectors.size == 0:
        return None
    lo = np.searchsorted(trace_sectors, log_sectors, side="left")
    hi = np.minimum(
        np.searchsorted(trace_sectors, log_sectors, side="right"), lo + MATCH_PER_SECTOR
    )
    diffs = [log_times[i] - trace_times[lo[i] : hi[i]] for i in range(len(lo)) if hi[i] > lo[i]]
    if not diffs:
        return None
    votes = np.concatenate(diffs)
    bins = np.floor_divide(votes, MODE_BIN_NS)
    values, counts = np.unique(bins, return_counts=True)
    order = np.argsort(counts)[::-1]
    best = values[order[0]]
    near = votes[np.abs(bins - best) <= 1]
    runner_up = 0
    for j in order[1:]:
        if abs(values[j] - best) > 1:
            runner_up = int(counts[j])
            break
    offset = int(np.median(near))
    return Alignment(
        offset,
        int(near.min()),
        int(near.max()),
        int(near.size),
        int(log_sectors.size),
        runner_up,
        "completions matched by sector",
    )
