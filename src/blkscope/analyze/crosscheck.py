"""Hold the reconstruction against the capture's own biosnoop and iostat logs."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from statistics import median
from typing import Any

import duckdb
import numpy as np

from blkscope.units import ns_to_ms, ns_to_s

D2C_TOLERANCE_NS = 50_000  # biosnoop.bt prints LAT in 10 us steps
MIN_IOS = 100  # seconds with fewer IOs are too noisy to compare an average latency
PHASES_NS = np.arange(-600_000_000, 600_000_001, 5_000_000)


@dataclass
class DiskAgreement:
    """How the sized rows biosnoop printed for one disk match the rebuilt requests."""

    disk: str
    dev: str | None  # the traced device (major,minor) its rows matched, None if none did
    rows: int
    found: int  # a data request with the same sector and length completed within 1 ms
    agree: int  # of those, D2C within D2C_TOLERANCE_NS of biosnoop's LAT
    median_c_gap_ns: int | None  # request C minus biosnoop's completion time


def biosnoop_agreement(con: duckdb.DuckDBPyConnection) -> list[DiskAgreement]:
    """Per biosnoop disk, how many sized rows found their request and agree on D2C."""
    rows = con.execute(f"""
        SELECT disk, mode(dev_major || ',' || dev_minor), count(*), count(c_time_ns),
               count(*) FILTER (abs(d2c_diff_ns) <= {D2C_TOLERANCE_NS}),
               median(c_gap_ns)::BIGINT
        FROM biosnoop_check GROUP BY disk ORDER BY disk""").fetchall()
    return [DiskAgreement(*row) for row in rows]


@dataclass
class IostatAgreement:
    """Per-interval iostat -x columns recomputed from the trace against the captured iostat."""

    dev: str  # traced device, major,minor
    iostat_device: str  # the iostat device whose completions fit it best
    phase_ns: int  # shift of iostat's sample times that fits best (they print whole seconds)
    intervals: int  # intervals compared
    w_seconds: int  # intervals with >= MIN_IOS writes
    w_s_error: float | None  # median relative error of w/s over those
    w_await_error: float | None  # ... of w_await
    w_await_low_share: float | None  # share of them where blkscope's w_await is the lower
    w_await_gap_ns: int | None  # median of iostat's w_await minus blkscope's, per IO
    r_seconds: int
    r_s_error: float | None
    r_await_error: float | None
    r_await_low_share: float | None
    r_await_gap_ns: int | None


def _window_sums(times: np.ndarray, values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> Any:
    """Count and sum of values whose time lies in each (lo, hi]; times sorted ascending."""
    cum = np.concatenate(([0], np.cumsum(values)))
    a, b = np.searchsorted(times, lo, "right"), np.searchsorted(times, hi, "right")
    return b - a, cum[b] - cum[a]


def _errors(ours: np.ndarray, theirs: np.ndarray) -> tuple[float | None, float | None]:
    """Median relative error and share of ours below theirs, where theirs is not zero."""
    keep = theirs > 0
    if not keep.any():
        return None, None
    rel = (ours[keep] - theirs[keep]) / theirs[keep]
    return float(median(np.abs(rel))), float(np.mean(rel < 0))


def _compare(
    dev: str, name: str, phase: int, req: dict[str, np.ndarray], log: dict[str, np.ndarray]
) -> IostatAgreement:
    lo, hi = log["lo"] + phase, log["hi"] + phase
    seconds = ns_to_s(hi - lo)
    result: dict[str, Any] = {}
    for kind in ("w", "r"):
        mine = req["op"] == kind.upper()
        n, waits = _window_sums(req["c"][mine], req["wait"][mine], lo, hi)
        busy = n >= MIN_IOS
        rate_err, _ = _errors(n[busy] / seconds[busy], log[f"{kind}_s"][busy])
        await_ours = ns_to_ms(waits[busy] / np.maximum(n[busy], 1))
        await_err, low = _errors(await_ours, log[f"{kind}_await"][busy])
        gap = log[f"{kind}_await"][busy] - await_ours
        result |= {
            f"{kind}_seconds": int(busy.sum()),
            f"{kind}_s_error": rate_err,
            f"{kind}_await_error": await_err,
            f"{kind}_await_low_share": low,
            f"{kind}_await_gap_ns": round(float(median(gap)) * 1e6) if gap.size else None,
        }
    return IostatAgreement(dev, name, phase, len(lo), **result)


def iostat_agreement(con: duckdb.DuckDBPyConnection) -> list[IostatAgreement]:
    """Per traced device, the iostat device and sub-second phase that fit its completions best,
    and how the per-interval rates and awaits then agree."""
    req = con.execute("""
        SELECT dev_major || ',' || dev_minor AS dev, op, c_time_ns AS c,
               c_time_ns - start_ns AS wait
        FROM internal._iostat_requests ORDER BY c_time_ns""").fetchnumpy()
    # each report covers the time since the one before; the first counts since boot
    log = con.execute("""
        SELECT * FROM (
            SELECT device, lag(t_ns) OVER (PARTITION BY device ORDER BY sample) AS lo,
                   t_ns AS hi, coalesce(r_s, 0) AS r_s, coalesce(w_s, 0) AS w_s,
                   coalesce(r_await_ms, 0) AS r_await, coalesce(w_await_ms, 0) AS w_await,
                   coalesce(since_boot, FALSE) AS since_boot
            FROM iostat_log WHERE t_ns IS NOT NULL)
        WHERE lo IS NOT NULL AND NOT since_boot ORDER BY device, lo""").fetchnumpy()
    logs = {
        name: {key: values[log["device"] == name] for key, values in log.items()}
        for name in sorted(set(log["device"]))
    }
    found = []
    for dev in sorted(set(req["dev"])):
        mine = {key: values[req["dev"] == dev] for key, values in req.items()}
        fits = [(_fit(mine["c"], one), name) for name, one in logs.items()]
        if fits:
            (_, phase), name = min(fits)
            found.append(_compare(dev, name, phase, mine, logs[name]))
    return found


def _fit(completions: np.ndarray, log: dict[str, np.ndarray]) -> tuple[float, int]:
    """(mismatch, phase): the shift of the log's intervals under which the completions counted
    in each match its r/s + w/s best, the middle one when several fit equally well."""
    expected = ns_to_s((log["r_s"] + log["w_s"]) * (log["hi"] - log["lo"]))
    lo, hi = log["lo"][None, :] + PHASES_NS[:, None], log["hi"][None, :] + PHASES_NS[:, None]
    counts = np.searchsorted(completions, hi, "right") - np.searchsorted(completions, lo, "right")
    scores = np.abs(counts - expected).sum(axis=1)
    best = np.flatnonzero(scores == scores.min())
    return float(scores.min()), int(PHASES_NS[best[len(best) // 2]])


def crosscheck(con: duckdb.DuckDBPyConnection, tables: set[str]) -> dict[str, Any]:
    """Both agreements as plain data, each null when the dataset lacks its log."""
    return {
        "biosnoop": [asdict(d) for d in biosnoop_agreement(con)] if "biosnoop" in tables else None,
        "iostat": [asdict(d) for d in iostat_agreement(con)] if "iostat_log" in tables else None,
    }
