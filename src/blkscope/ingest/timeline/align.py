"""Last-resort clock alignment: find where a writeback log sits on the trace timeline."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from blkscope.units import NS_PER_S

SECOND = NS_PER_S
# bpftrace formats time() in user space when it reads the event, a little after the kernel
# saw it: a stamp may be late by this much.
PRINT_LAG_NS = 50_000_000
# A work item that ran shorter than this wrote nothing (an empty periodic wakeup).
MIN_WORK_NS = 100_000
# Work items the search looks at: each costs one interval per flusher burst, so the memory grows
# with items x bursts, and all the items of a big log do not fit. 5,000, as for sector matches
# (MATCH_ROWS), is half an hour of the bundled capture's writeback; a longer log is sampled
# evenly (rows_used in the manifest says how many were used).
WORK_ROWS = 5000


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
    mismatch: float | None = None
    runner_up_mismatch: float | None = None

    def as_doc(self) -> dict[str, object]:
        """The manifest form of this alignment."""
        if self.mismatch is not None:
            return {
                "method": self.method,
                "interval_ns": [self.low_ns, self.high_ns],
                "rows_used": self.candidates,
                "mismatch": round(self.mismatch, 4),
                "runner_up_mismatch": round(self.runner_up_mismatch or 0.0, 4),
            }
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
    lag = PRINT_LAG_NS if resolution > 1 else 0  # exact stamps are taken in the kernel
    lows = stamp - lag - bursts[:, 1] - duration
    highs = stamp + max(resolution, 1) - bursts[:, 0]
    order = np.argsort(lows)
    lows, highs = lows[order], highs[order]
    # Merge overlapping intervals so that a row counts once wherever it fits.
    reach = np.maximum.accumulate(highs)
    starts = np.concatenate(([0], np.flatnonzero(lows[1:] > reach[:-1]) + 1))
    return np.stack([lows[starts], np.maximum.reduceat(highs, starts)], axis=1)


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
    within: tuple[int, int] | None = None,
) -> Alignment | None:
    """Offset (stamp - trace time) that puts the most work items on a flusher burst.

    `within` restricts the answer to offsets another source allows (the flusher's 5 s period
    makes a 5 s shift the usual runner-up).
    """
    keep = durations_ns >= MIN_WORK_NS
    stamps, durations = stamps_ns[keep], durations_ns[keep]
    if stamps.size > WORK_ROWS:
        sample = np.linspace(0, stamps.size - 1, WORK_ROWS).round().astype(np.int64)
        stamps, durations = stamps[sample], durations[sample]
    if stamps.size == 0 or bursts.size == 0:
        return None
    intervals = [
        _row_intervals(int(s), int(d), resolution_ns, bursts)
        for s, d in zip(stamps.tolist(), durations.tolist(), strict=True)
    ]
    points, cover = _coverage(intervals)
    lows, highs = points[:-1], points[1:]
    cover = cover[:-1]
    allowed = highs > lows
    if within is not None:
        lows, highs = np.maximum(lows, within[0]), np.minimum(highs, within[1])
        allowed &= highs > lows
    if not (allowed & (cover > 0)).any():
        return None
    best = int(cover[allowed].max())
    # The best region: the widest stretch where coverage is maximal.
    pick = np.flatnonzero(allowed & (cover == best))
    i = int(pick[np.argmax(highs[pick] - lows[pick])])
    low, high = int(lows[i]), int(highs[i])
    far = (points[:-1] < low - SECOND) | (points[:-1] > high + SECOND)
    runner_up = int(cover[far].max()) if far.any() else 0
    return Alignment((low + high) // 2, low, high, best, int(stamps.size), runner_up, method)


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


GRID_NS = 10_000_000
MIN_REPORTS = 5
# (shift, stamp) pairs scored at once: bounds the matrices whatever the stamps' spacing.
CELLS = 1 << 20


def _candidate_shifts(stamps_ns: np.ndarray, span: int, need: int) -> np.ndarray:
    """The coarse grid of shifts at which at least `need` stamps fall on the trace.

    A stamp s lands on the trace for shifts in [s - span, s - 1 s]; only where `need` of those
    intervals overlap can a shift score. Gridding [min stamp - span, max stamp] instead grew
    with the stamps' spread: one corrupt stamp years off asked for more memory than any machine
    has. Here the grid covers at most len(stamps) * (span + 2 s) / need: about twice the trace's span when
    the stamps are a trace's seconds, whatever a corrupt stamp says.
    """
    lows = stamps_ns.astype(np.int64) - span - SECOND
    highs = stamps_ns.astype(np.int64) + SECOND
    points, cover = _coverage([np.stack([lows, highs], axis=1)])
    regions = [
        (int(points[i]), int(points[i + 1]))
        for i in np.flatnonzero(cover[:-1] >= need)
        if points[i + 1] > points[i]
    ]
    # The points of the old whole-range grid (from min stamp - span - 1 s, every 100 ms) that
    # fall in the regions: on sound stamps the same shifts, so the same answer.
    step, origin = 10 * GRID_NS, int(lows.min())
    ks = [np.arange(-(-(lo - origin) // step), (hi - origin) // step + 1) for lo, hi in regions]
    return np.unique(np.concatenate(ks or [np.empty(0, np.int64)])).astype(np.int64) * step + origin


def align_rates(
    stamps_ns: np.ndarray,
    rates: np.ndarray,
    completion_times: np.ndarray,
    method: str,
    weights: np.ndarray | None = None,
    truncated: bool = True,
) -> Alignment | None:
    """Offset (stamp - trace time) that best fits per-second rates to the trace's completions.

    Each stamp ends a 1 s interval whose rate should equal the trace's completions in it (their
    `weights`, e.g. KiB, when given). A stamp truncated to the second fixes the interval only
    within that second, so the offset is known to +-0.5 s; its low/high say so.
    """
    order = np.argsort(completion_times)
    times = completion_times[order]
    if times.size == 0 or stamps_ns.size < MIN_REPORTS:
        return None
    mass = np.ones(len(times)) if weights is None else weights[order].astype(np.float64)
    cumulative = np.concatenate(([0.0], np.cumsum(mass)))
    span = int(times[-1])
    need = max(MIN_REPORTS, min(len(stamps_ns), span // SECOND) // 2)
    coarse = _candidate_shifts(stamps_ns, span, need)
    if coarse.size == 0:
        return None
    by_time = np.argsort(stamps_ns, kind="stable")
    stamps, values = stamps_ns[by_time].astype(np.int64), rates[by_time]

    def score(shifts: np.ndarray) -> np.ndarray:
        # Under a shift, only the stamps whose interval lands on the trace count: those in
        # [shift + 1 s, shift + span], a run of the sorted stamps. Scoring every stamp under
        # every shift cost len(stamps) * 10 shifts per s of stamps: quadratic in a log longer
        # than the trace (vmstat left running).
        first = np.searchsorted(stamps, shifts + SECOND, "left")
        end = np.searchsorted(stamps, shifts + span, "right")
        widths = (end - first).tolist()
        out = np.full(len(shifts), np.inf)
        j0 = 0
        while j0 < len(shifts):
            # as many shifts as fit CELLS (at least one), padded to their widest run
            j1, width = j0 + 1, widths[j0]
            while j1 < len(shifts) and (j1 + 1 - j0) * max(width, widths[j1]) <= CELLS:
                width = max(width, widths[j1])
                j1 += 1
            part = shifts[j0:j1]
            index = first[j0:j1, None] + np.arange(width)[None, :]
            inside = index < end[j0:j1, None]
            index = np.minimum(index, len(stamps) - 1)
            hi = stamps[index] - part[:, None]
            counts = cumulative[np.searchsorted(times, hi)]
            counts -= cumulative[np.searchsorted(times, hi - SECOND)]
            rate = values[index]
            n = inside.sum(axis=1)
            err = (np.abs(counts - rate) * inside).sum(axis=1)
            total = ((counts + rate) * inside).sum(axis=1)
            ok = (n >= need) & (total > 0)
            out[j0:j1] = np.where(ok, err / np.maximum(total, 1), np.inf)
            j0 = j1
        return out

    coarse_scores = score(coarse)
    if not np.isfinite(coarse_scores).any():
        return None
    centre = int(coarse[np.argmin(coarse_scores)])
    fine = np.arange(centre - 10 * GRID_NS, centre + 10 * GRID_NS + 1, GRID_NS, dtype=np.int64)
    fine_scores = score(fine)
    shift = int(fine[np.argmin(fine_scores)])
    far = np.abs(coarse - shift) > SECOND
    runner = float(coarse_scores[far].min()) if far.any() else float("inf")
    best = float(fine_scores.min())
    if not truncated:
        return Alignment(
            shift, shift - GRID_NS, shift + GRID_NS, 0, len(stamps_ns), 0, method, best, runner
        )
    # The interval may have ended anywhere in the stamped second: centre the offset in it.
    return Alignment(
        shift + SECOND // 2, shift, shift + SECOND, 0, len(stamps_ns), 0, method, best, runner
    )
