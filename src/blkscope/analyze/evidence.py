"""The evidence an episode's cause is judged on: whose IO was slow (the victim) and where its
time went, stage by stage against its normal level, and what else was in flight meanwhile.

The victim's slow items are the samples (of an application's latency log) or the bios (of a
block-level spike) that crossed the spike threshold inside the episode. Each is an interval of
time. Everything else is measured over those intervals, not over the whole episode window: what
was in flight while the victim waited is the direct evidence, and a 1 s window dilutes a
200 ms burst five times.
"""

from __future__ import annotations

import collections
import functools
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from blkscope.analyze.correlation import device_spans
from blkscope.analyze.episode_context import EpisodeContext
from blkscope.analyze.victims import SAMPLE_NS, SeriesProcess
from blkscope.analyze.views import query_table
from blkscope.concepts import is_observer
from blkscope.units import format_bytes

# The slowest items an episode is judged on (a spike of a busy device has thousands).
MAX_ITEMS = 64
# Slow items closer than this are one stall (a slow write and the flush queued right after it).
STALL_GAP_NS = 5_000_000
# Where a victim's latency can go: before its IO reached the block layer (throttling, page
# cache, CPU), queued in the block layer before dispatch (plugging, the IO scheduler), at the
# device (dispatch to completion), and after its own IO completed (waiting on someone else's,
# e.g. a journal commit). Block-level items have only the middle two.
STAGES = ("above", "queued", "device", "after")
STAGE_WORDS = {
    "above": "before its IO reached the block layer",
    "queued": "queued in the block layer before dispatch",
    "device": "at the device (dispatch to completion)",
    "after": "after its own IO completed",
}


@dataclass
class Load:
    """One source of IO on the device while the victim waited: the writeback, the journal, or
    one process. Bytes and IOs count what Evidence.load_basis says (time averages in flight over
    the victim's slow items, or queued in the episode's window); `normal_*` are the same over
    the whole trace (in flight) or its normal rate over as long (queued)."""

    kind: str  # 'writeback', 'journal' or 'process'
    label: str  # what the page calls it, e.g. "fio pid 812"
    pid: int | None
    bytes: float
    ios: float
    normal_bytes: float
    normal_ios: float
    ops: str = ""  # e.g. "read 2,310 bios of 4 KiB"
    # for the writeback and the journal, whose IO the victim may wait on from above the block
    # layer: how long their bios queued, and what a first-come-first-served queue would take
    queued_ns: float = 0.0
    fair_wait_ns: float | None = None
    # and how long they took at the device, how big they were, and how many IOs were at the
    # device with each of them (its own other bios and the victim's included)
    device_ns: float = 0.0
    bio_bytes: float = 0.0
    at_device: float | None = None


@dataclass
class Evidence:
    """Everything the cause of one episode is decided from."""

    victim: str  # e.g. "user:prober (python3 pid 12476)" or "q2c of 12 bios"
    victim_pid: int | None
    items: int  # slow items judged
    worst_ns: int
    stalls: int = 0  # separate stretches of time the slow items cover (overlapping ones are one)
    # per stage: summed time over the slow items, and the normal time of one item
    stage_ns: dict[str, int] = field(default_factory=dict)
    normal_ns: dict[str, int] = field(default_factory=dict)
    decomposed: bool = True  # False when the victim's own IO could not be found
    loads: list[Load] = field(default_factory=list)
    load_basis: str = "in flight"  # what Load.bytes/ios count: 'in flight' or 'queued'
    victim_bytes: float = 0.0  # the victim's own IO in flight (time average)
    victim_ios: float = 0.0
    # the device while the victim waited: share of its queued time some IO was at the device,
    # and how many other IOs were at the device with its own, on average
    busy_while_queued: float | None = None
    others_at_device: float | None = None
    # the device's median D2C over the trace: what "slow at the device" is measured against
    normal_d2c_ns: float = 0.0
    # what a first-come-first-served queue would have made the victim's bios wait, from the IO
    # ahead of them and the device's pace meanwhile (Little's law: W = L / throughput); null
    # when the victim's own bios are unknown
    fair_wait_ns: float | None = None
    throttle_messages: int = 0
    throttle_sample: str = ""
    pages_written: int | None = None  # by writeback work items during the episode
    writeback_items: int = 0
    writeback_reasons: str = ""
    journal_forced_by: str = ""

    def excess(self) -> dict[str, float]:
        """Per stage, the time the slow items spent there beyond the normal, in ns."""
        n = self.items
        return {s: max(0.0, self.stage_ns.get(s, 0) - n * self.normal_ns.get(s, 0)) for s in STAGES}


def _intervals_of_samples(con: duckdb.DuckDBPyConnection, series: str, stamp: str | None) -> str:
    a = "t_ns" if stamp != "end" else f"t_ns - ({SAMPLE_NS})::BIGINT"
    e = f"t_ns + ({SAMPLE_NS})::BIGINT" if stamp != "end" else "t_ns"
    return f"""
        SELECT t_ns, ({SAMPLE_NS})::BIGINT AS lat, {a} AS a, {e} AS e
        FROM series WHERE series = {_quote(series)} AND t_ns IS NOT NULL AND value >= 0
          AND unit IN ('ns', 'us', 'ms', 's')"""


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


_SAMPLE_STAGES = """
WITH s AS ({samples}), v AS (
    SELECT q_time_ns AS q, coalesce(d_time_ns, q_time_ns) AS d, c_time_ns AS c
    FROM bios WHERE pid = {pid} AND c_time_ns IS NOT NULL
), j AS (
    SELECT s.a, s.e, s.lat, s.t_ns, v.q, v.d, v.c
    FROM v ASOF JOIN s ON v.q >= s.a WHERE v.q <= s.e
), per AS (
    SELECT a, any_value(e) AS e, any_value(lat) AS lat, any_value(t_ns) AS t_ns,
           min(q) - a AS above, sum(d - q) AS queued, sum(c - d) AS device,
           greatest(any_value(e) - max(c), 0) AS after
    FROM j GROUP BY a
)
SELECT s.t_ns, s.lat, s.a, s.e, per.above, per.queued, per.device, per.after
FROM s LEFT JOIN per USING (a)
"""


def sample_stages(
    con: duckdb.DuckDBPyConnection, series: str, process: SeriesProcess | None
) -> dict[str, np.ndarray]:
    """Every sample of a user series as an interval [a, e] with its latency split into STAGES
    from its process's bios inside it (null stages when none is inside, or no process)."""
    samples = _intervals_of_samples(con, series, process.stamp if process else None)
    if process is None:
        t = query_table(con, samples)
        cols = {n: t[n].to_numpy(zero_copy_only=False) for n in t.column_names}
        for s in STAGES:
            cols[s] = np.full(t.num_rows, np.nan)
        return cols
    t = query_table(con, _SAMPLE_STAGES.format(samples=samples, pid=process.pid))
    out = {}
    for n in t.column_names:
        col = t[n]
        out[n] = (
            col.to_numpy(zero_copy_only=False).astype(np.float64)
            if n in STAGES
            else (col.to_numpy(zero_copy_only=False))
        )
    return out


def _median(values: np.ndarray) -> int:
    v = values[~np.isnan(values)] if values.dtype.kind == "f" else values
    return int(np.median(v)) if len(v) else 0


def series_evidence(
    episode: dict[str, Any],
    series: str,
    threshold_ns: int,
    process: SeriesProcess | None,
    stages: dict[str, np.ndarray],
) -> Victim:
    """The victim of an episode whose victim is a user series' process."""
    t, lat = stages["t_ns"], stages["lat"]
    inside = (t >= episode["start_ns"]) & (t < episode["end_ns"]) & (lat > threshold_ns)
    order = np.flatnonzero(inside)
    order = order[np.argsort(-lat[order], kind="stable")][:MAX_ITEMS]
    victim = f"user:{series}" + (f" ({process.label})" if process else "")
    ev = Evidence(
        victim, process.pid if process else None, len(order), int(lat[order].max(initial=0))
    )
    decomposed = bool(process) and not np.isnan(stages["queued"][order]).any()
    ev.decomposed = decomposed
    for s in STAGES:
        vals = stages[s]
        ev.stage_ns[s] = int(np.nansum(vals[order])) if decomposed else 0
        ev.normal_ns[s] = _median(vals) if decomposed else 0
    if not decomposed:  # the whole latency, unsplit, counts as above the block layer
        ev.stage_ns["above"] = int(lat[order].sum())
        ev.normal_ns["above"] = _median(lat)
    return Victim(ev, stages["a"][order], stages["e"][order], block_level=False)


class SlowBios:
    """The slowest bios (MAX_ITEMS) of the block-level episodes, read for many episodes in one
    query (SLOW_BIOS_PER_QUERY): each query reads the bios' footer and row groups again."""

    def __init__(self, con: duckdb.DuckDBPyConnection, wanted: list[SlowBiosKey]) -> None:
        self._found: dict[SlowBiosKey, dict[str, np.ndarray]] = {}
        wanted = list(dict.fromkeys(wanted))
        for first in range(0, len(wanted), SLOW_BIOS_PER_QUERY):
            self._read(con, wanted[first : first + SLOW_BIOS_PER_QUERY])

    def _read(self, con: duckdb.DuckDBPyConnection, keys: list[SlowBiosKey]) -> None:
        # an episode's bios: completed in its [start, end) on its device, slower than its
        # threshold (a device's episodes never share a time, so a bio is one episode's)
        conditions = [
            f"(dev_major = {int(major)} AND dev_minor = {int(minor)} AND c_time_ns >= {int(start)}"
            f" AND c_time_ns < {int(end)} AND {_LATENCY[metric]} > {int(threshold)})"
            for major, minor, start, end, metric, threshold in keys
        ]
        which = " ".join(f"WHEN {c} THEN {k}" for k, c in enumerate(conditions))
        t = query_table(con, _SLOW_BIOS.format(which=which, any=" OR ".join(conditions)))
        cols = {n: t[n].to_numpy(zero_copy_only=False) for n in t.column_names}
        for k, key in enumerate(keys):
            rows = np.flatnonzero(cols["i"] == k)
            lat = cols[_LATENCY[key[4]]]
            # the slowest first, then the earliest queued (ORDER BY lat DESC, q)
            rows = rows[np.lexsort((cols["a"][rows], -lat[rows]))][:MAX_ITEMS]
            self._found[key] = {
                "a": cols["a"][rows],
                "e": cols["e"][rows],
                "lat": lat[rows],
                "queued": cols["queued"][rows],
                "device": cols["device"][rows],
            }

    def of(self, key: SlowBiosKey) -> dict[str, np.ndarray]:
        """The episode's slow bios, slowest first: a, e (queued, completed), lat, queued
        (Q to D) and device (D to C)."""
        return self._found[key]


# An episode's slow bios: (dev_major, dev_minor, start_ns, end_ns, metric, threshold_ns).
SlowBiosKey = tuple[int, int, int, int, str, int]
SLOW_BIOS_PER_QUERY = 32
_LATENCY = {"q2c": "q2c_ns", "d2c": "d2c_ns"}
_SLOW_BIOS = """
SELECT CASE {which} END AS i, q_time_ns AS a, c_time_ns AS e,
       -- never null for the episode that selects the row (only for another's metric)
       coalesce(q2c_ns, -1) AS q2c_ns, coalesce(d2c_ns, -1) AS d2c_ns,
       coalesce(d_time_ns, q_time_ns) - q_time_ns AS queued,
       c_time_ns - coalesce(d_time_ns, q_time_ns) AS device
FROM bios
WHERE {any}
"""


def slow_bios_key(episode: dict[str, Any], metric: str, threshold_ns: int) -> SlowBiosKey:
    """The key of an episode's slow bios for a q2c or d2c spike (any other metric is q2c's)."""
    return (
        int(episode["dev_major"]),
        int(episode["dev_minor"]),
        int(episode["start_ns"]),
        int(episode["end_ns"]),
        "d2c" if metric == "d2c" else "q2c",
        int(threshold_ns),
    )


def bio_evidence(
    episode: dict[str, Any],
    metric: str,
    threshold_ns: int,
    normals: NormalLoads,
    slow: SlowBios,
) -> Victim:
    """The victim of an episode whose victim is the device's slow bios (a q2c or d2c spike)."""
    cols = slow.of(slow_bios_key(episode, metric, threshold_ns))
    n = len(cols["a"])
    ev = Evidence(f"{metric} of {n} bio{'s' * (n != 1)}", None, n, int(cols["lat"].max(initial=0)))
    device = (episode["dev_major"], episode["dev_minor"])
    normal = {stage: normals.median_ns(device, stage) for stage in ("Q2C", "D2C")}
    ev.stage_ns = {
        "above": 0,
        "queued": int(cols["queued"].sum()),
        "device": int(cols["device"].sum()),
        "after": 0,
    }
    d2c = int(normal.get("D2C") or 0)
    ev.normal_ns = {
        "above": 0,
        "queued": max(0, int(normal.get("Q2C") or 0) - d2c),
        "device": d2c,
        "after": 0,
    }
    return Victim(ev, cols["a"], cols["e"], block_level=True)


@dataclass
class Victim:
    """An episode's victim before what was in flight meanwhile is measured (measure_in_flight):
    its evidence so far and its slow items, as intervals [a, e]. A block-level victim is the
    device's IO as a whole (a q2c or d2c spike), else an application's (a user series)."""

    ev: Evidence
    a: np.ndarray
    e: np.ndarray
    block_level: bool

    def window(self, episode: dict[str, Any]) -> BiosWindow | None:
        """Where the bios _in_flight weighs are: in flight on the episode's device during a
        slow item or the episode's window (None: no slow item, nothing to weigh)."""
        if not len(self.a):
            return None
        lo = min(int(self.a.min()), episode["start_ns"] - episode["window_ns"])
        hi = max(int(self.e.max()), episode["end_ns"])
        return int(episode["dev_major"]), int(episode["dev_minor"]), lo, hi


# Bios in flight on a device at some time in [lo, hi]: (dev_major, dev_minor, lo, hi).
BiosWindow = tuple[int, int, int, int]
# What the findings weigh of each bio in flight; one that never completed is in flight until
# $end, the trace's end.
_BIO_LOAD_COLUMNS = """
q_eid, pid, coalesce(comm, '?') AS comm, op, q_time_ns AS q,
coalesce(d_time_ns, q_time_ns) AS d,
coalesce(c_time_ns, $end) AS c, c_time_ns IS NULL AS open,
coalesce(nsectors, 0)::BIGINT * 512 AS bytes,
is_writeback_write(comm, op, flags, sector) AS writeback,
is_journal(comm) AS journal
"""
# The completed bios in flight: queued before hi and completed after lo, two conjunctions that
# the row groups' statistics (min and max times) prune to the groups holding the window.
_WINDOW_BIOS = f"""
SELECT {_BIO_LOAD_COLUMNS} FROM bios
WHERE dev_major = $major AND dev_minor = $minor AND q_time_ns < $hi AND c_time_ns > $lo
"""
# The bios that never completed, of every device: read once for all the windows. A query per
# window read every row group holding one of them (a few per trace, spread over its groups).
_OPEN_BIOS = f"""
SELECT dev_major, dev_minor, {_BIO_LOAD_COLUMNS} FROM bios WHERE c_time_ns IS NULL
"""


# At most this many windows share one read: the rows of a read are held while its windows
# are weighed, so a chain of touching windows must not grow into the whole trace.
WINDOWS_PER_READ = 4


def _reads(windows: list[BiosWindow | None]) -> list[int | None]:
    """Per window, the index of the read it shares (None: no window): windows of one device
    that overlap or touch, in time order, up to WINDOWS_PER_READ of them."""
    order = sorted((w, k) for k, w in enumerate(windows) if w is not None)
    read_of: list[int | None] = [None] * len(windows)
    read, size, last = -1, 0, None
    for (major, minor, lo, hi), k in order:
        joins = last is not None and last[:2] == (major, minor) and lo <= last[2]
        if not joins or size == WINDOWS_PER_READ:
            read, size, last = read + 1, 0, (major, minor, hi)
        assert last is not None
        last = (major, minor, max(last[2], hi))
        read_of[k], size = read, size + 1
    return read_of


class WindowBios:
    """The bios of every episode's window (Victim.window), read as the episodes ask for them:
    windows that overlap or touch share one query (_reads), which reads only the row groups
    holding their time, and the bios that never completed are read once."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        trace_end: int | None,
        windows: list[BiosWindow | None],
    ) -> None:
        self.con, self.trace_end = con, trace_end
        self.windows = windows
        self.read_of = _reads(windows)
        # each read's columns (None: read per window), kept until its last window is weighed
        self._held: dict[int, dict[str, np.ndarray] | None] = {}
        self._left = collections.Counter(r for r in self.read_of if r is not None)

    @functools.cached_property
    def _open(self) -> dict[str, np.ndarray]:
        return _columns(query_table(self.con, _OPEN_BIOS, {"end": self.trace_end}))

    def _query(self, window: BiosWindow) -> pa.Table:
        major, minor, lo, hi = window
        params: dict[str, object] = {
            "major": major, "minor": minor, "lo": lo, "hi": hi, "end": self.trace_end
        }  # fmt: skip
        return query_table(self.con, _WINDOW_BIOS, params)

    def _shared(self, read: int) -> dict[str, np.ndarray] | None:
        """The completed bios of every window of the read, or None when a column has a null:
        numpy would then give the column another dtype than a window without one has."""
        if read not in self._held:
            members = [w for w, r in zip(self.windows, self.read_of, strict=True) if r == read]
            major, minor = members[0][:2] if members[0] is not None else (0, 0)
            lo = min(w[2] for w in members if w is not None)
            hi = max(w[3] for w in members if w is not None)
            t = self._query((major, minor, lo, hi))
            nulls = any(t[n].null_count for n in t.column_names)
            self._held[read] = None if nulls else _columns(t)
        return self._held[read]

    def _done(self, k: int, window: BiosWindow) -> dict[str, np.ndarray]:
        """The completed bios in flight in window k: its rows of the read it shares."""
        read = self.read_of[k]
        assert read is not None
        if read not in self._held and self._left[read] <= 1:  # no other window left to share it
            self._left[read] = 0
            return _columns(self._query(window))
        shared = self._shared(read)
        self._left[read] -= 1
        if not self._left[read]:
            del self._held[read]
        if shared is None:
            return _columns(self._query(window))
        _, _, lo, hi = window
        rows = np.flatnonzero((shared["q"] < hi) & (shared["c"] > lo))
        return {n: v[rows] for n, v in shared.items()}

    def of(self, k: int) -> dict[str, np.ndarray]:
        """The bios in flight in window k (which must not be None), as _columns has them: a
        bio that never completed is in flight until the trace's end."""
        window = self.windows[k]
        assert window is not None, "a window without slow items has no bios to weigh"
        major, minor, _, hi = window
        done = self._done(k, window)
        opened = self._open
        rows = np.flatnonzero(
            (opened["dev_major"] == major) & (opened["dev_minor"] == minor) & (opened["q"] < hi)
        )
        cols = {n: np.concatenate((v, opened[n][rows])) for n, v in done.items()}
        # in queue order (their Q's event id): the same rows in the same order whatever the
        # scan's threads did, so that the sums over them are the same too (sorted here: a
        # stable argsort costs a third of DuckDB's ORDER BY)
        order = np.argsort(cols.pop("q_eid"), kind="stable")
        return {n: v[order] for n, v in cols.items()}


# Each load's IO per second of the trace (bins of NORMAL_BIN_NS by queue time): bytes and IOs
# queued, and their size x time in flight. A bio counts whole in the bin it was queued in.
NORMAL_BIN_NS = 1_000_000_000
# Where the analysis kept each issuer's sums per bin (stream/run.py, from the bios as the pass
# wrote them): a row per issuer and second, as _ISSUER_BINS groups them.
ISSUER_LOAD_BINS = "internal._issuer_load_bins"
_ISSUER_BINS = f"""
    -- summed per issuer and kind of IO first: the rules below then run once per group, not
    -- once per bio (the sector matters to them only by being null)
    SELECT comm, op, flags, CASE WHEN sector IS NOT NULL THEN 0 END AS sector, pid,
           q_time_ns // {NORMAL_BIN_NS} AS bin,
           -- HUGEINT: a time decades off times a big bio passes int64; the sums are exact
           sum((c_time_ns - q_time_ns)::HUGEINT * coalesce(nsectors, 0) * 512) AS byte_ns,
           sum((c_time_ns - q_time_ns)::HUGEINT) AS io_ns,
           sum(coalesce(nsectors, 0)::BIGINT * 512) AS bytes,
           count(*) AS ios
    FROM bios
    WHERE dev_major = ? AND dev_minor = ? AND c_time_ns IS NOT NULL AND pid IS NOT NULL
    GROUP BY ALL
"""
_KEPT_ISSUER_BINS = f"""
    SELECT comm, op, flags, sector, pid, bin,
           byte_ns_hi::HUGEINT * 4294967296 + byte_ns_lo AS byte_ns,
           io_ns_hi::HUGEINT * 4294967296 + io_ns_lo AS io_ns,
           bytes_hi::HUGEINT * 4294967296 + bytes_lo AS bytes,
           ios
    FROM {ISSUER_LOAD_BINS} WHERE dev_major = ? AND dev_minor = ?
"""
_LOAD_BINS = """
WITH per_issuer AS ({issuers})
SELECT CASE WHEN is_writeback_write(comm, op, flags, sector) THEN 'writeback'
            WHEN is_journal(comm) THEN 'journal' ELSE 'process' END AS kind,
       CASE WHEN is_writeback_write(comm, op, flags, sector) OR is_journal(comm) THEN -1
            ELSE pid END AS pid,
       bin,
       sum(byte_ns)::DOUBLE AS byte_ns,
       sum(io_ns)::DOUBLE AS io_ns,
       sum(bytes)::DOUBLE AS bytes,
       sum(ios)::DOUBLE AS ios
FROM per_issuer
GROUP BY ALL
"""


@dataclass(frozen=True)
class Normal:
    """A load's normal level: the median over the trace's seconds (empty ones too) of its bytes
    and IOs in flight (Little's law: size x time in flight over the second) and queued per ns.
    A median, not a mean: a burst, injected or not, must not raise its own normal."""

    bytes_in_flight: float = 0.0
    ios_in_flight: float = 0.0
    bytes_per_ns: float = 0.0
    ios_per_ns: float = 0.0


def _columns(t: pa.Table) -> dict[str, np.ndarray]:
    """A table's columns as numpy (strings as Python objects, one per row: one window's rows
    are converted at a time, and pyarrow.compute's dictionary encoding costs its import)."""
    return {n: t[n].to_numpy(zero_copy_only=False) for n in t.column_names}


def _mean_overlap(q: np.ndarray, c: np.ndarray, a: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Per bio, the mean over the items of the share of each item's interval it was in flight
    (_overlap's columns averaged), computed only for the bios that reach an item: 0 for the
    others."""
    near = np.flatnonzero((q < e.max()) & (c > a.min()))
    if len(near) == len(q):
        return _overlap(q, c, a, e).mean(axis=0)
    weight = np.zeros(len(q))
    # and one empty interval beside them: a mean down a one-column matrix adds in another
    # order (pairwise) than down many columns, as it did over the whole window
    qs, cs = np.append(q[near], 0), np.append(c[near], 0)
    weight[near] = _overlap(qs, cs, a, e).mean(axis=0)[:-1]
    return weight


def _overlap(qs: np.ndarray, cs: np.ndarray, a: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Matrix [item, bio] of the share of each item's interval each bio was in flight."""
    lo = np.maximum(qs[None, :], a[:, None])
    hi = np.minimum(cs[None, :], e[:, None])
    span = np.maximum(e - a, 1)[:, None]
    return np.clip(hi - lo, 0, None) / span


def measure_in_flight(
    windows: WindowBios, k: int, episode: dict[str, Any], victim: Victim, normals: NormalLoads
) -> Evidence:
    """The victim's evidence with what was in flight while its slow items waited (the bios of
    window k, its Victim.window)."""
    if victim.window(episode) is not None:
        _in_flight(
            windows.of(k), episode, victim.ev, victim.a, victim.e, normals, victim.block_level
        )
    return victim.ev


def _in_flight(
    cols: dict[str, np.ndarray],
    episode: dict[str, Any],
    ev: Evidence,
    a: np.ndarray,
    e: np.ndarray,
    normals: NormalLoads,
    block_level: bool,
) -> None:
    """Fill in the loads on the device while the victim's slow items [a, e] waited; cols: the
    bios of the episode's window.

    An application's IO (a user series) is measured against what was in flight during its
    slow samples, its own process's IO apart. A block-level spike's victim is the device's IO
    as a whole: its loads are what was queued in the episode's window against each one's
    normal rate (time in flight would count the slow IO's own stuck time as load)."""
    device = (episode["dev_major"], episode["dev_minor"])
    a, e = a.astype(np.int64), e.astype(np.int64)
    ev.stalls = len(_union(a, e + STALL_GAP_NS))
    q, d, c, size = (cols[k].astype(np.int64) for k in ("q", "d", "c", "bytes"))
    normal = normals.of(device)
    window = episode["end_ns"] - (episode["start_ns"] - episode["window_ns"])
    queued = (q >= episode["start_ns"] - episode["window_ns"]) & (q < episode["end_ns"])
    per_window = {
        k: Normal(v.bytes_per_ns * window, v.ios_per_ns * window) for k, v in normal.items()
    }
    if block_level:
        weight = queued.astype(np.float64)
        victim = np.isin(q, a)
        scale = per_window
        ev.load_basis = "queued"
        mine = victim
        loaded = np.ones(len(q), bool)  # every IO of the device, the slow ones too
    else:
        weight = _mean_overlap(q, c, a, e)  # time-average over the items in flight
        victim = (
            cols["pid"] == ev.victim_pid if ev.victim_pid is not None else np.zeros(len(q), bool)
        )
        scale = {k: Normal(v.bytes_in_flight, v.ios_in_flight) for k, v in normal.items()}
        ev.load_basis = "in flight"
        mine = victim & (q >= a.min()) & (q <= e.max())
        loaded = ~victim
        ev.victim_bytes = float((weight * size)[victim].sum())
        ev.victim_ios = float(weight[victim].sum())
    ev.loads = _loads(cols, weight, size, loaded, scale)
    for load in ev.loads:
        if load.kind in ("writeback", "journal"):
            theirs = cols[load.kind].astype(bool) & (weight > 0) & ~victim
            load.queued_ns = float(np.mean(d[theirs] - q[theirs])) if theirs.any() else 0.0
            load.fair_wait_ns = _fair_wait(q, d, c, theirs, theirs)
            load.device_ns = float(np.mean(c[theirs] - d[theirs])) if theirs.any() else 0.0
            load.bio_bytes = float(np.mean(size[theirs])) if theirs.any() else 0.0
            # every IO at the device beside each of theirs, itself included (so 1 when alone)
            load.at_device = _device_busy(q, d, c, np.zeros(len(q), bool), theirs)[1]
    if not block_level:  # the victim's bios inside its slow samples, not all it ever issued
        inside = np.zeros(len(q), bool)
        for lo_, hi_ in zip(a, e, strict=True):
            inside |= (q >= lo_) & (q <= hi_)
        mine &= inside
    ev.busy_while_queued, ev.others_at_device = _device_busy(q, d, c, victim, mine)
    ev.normal_d2c_ns = normals.d2c_ns(device)
    ev.fair_wait_ns = _fair_wait(q, d, c, victim, mine)
    _episode_context(normals.context, episode, ev)


def _loads(
    cols: dict[str, np.ndarray],
    weight: np.ndarray,
    size: np.ndarray,
    loaded: np.ndarray,
    normal: dict[tuple[str, int], Normal],
) -> list[Load]:
    """The writeback, the journal and each other process among the `loaded` bios, weighted,
    strongest first."""
    wb = cols["writeback"].astype(bool) & loaded
    jn = cols["journal"].astype(bool) & loaded & ~wb
    other = np.flatnonzero(loaded & ~wb & ~jn)
    groups: list[tuple[str, str, int | None, np.ndarray]] = [
        ("writeback", "writeback", None, np.flatnonzero(wb)),
        ("journal", "journal", None, np.flatnonzero(jn)),
    ]
    # each process's rows, in their order (a stable sort): not a mask over every row per pid
    by_pid = other[np.argsort(cols["pid"][other], kind="stable")]
    pids, starts = np.unique(cols["pid"][by_pid], return_index=True)
    groups_of_pid = np.split(by_pid, starts[1:]) if len(pids) else []
    for p, rows in zip(pids.tolist(), groups_of_pid, strict=True):
        comm = str(cols["comm"][rows[0]])
        label = f"{comm} pid {int(p)}" + (" (the capture's own tool)" if is_observer(comm) else "")
        groups.append(("process", label, int(p), rows))
    weighted = weight * size
    loads = []
    for kind, label, p, rows in groups:
        ios = float(weight[rows].sum())
        if ios <= 0:
            continue
        n = normal.get((kind, -1 if p is None else p), Normal())
        loads.append(
            Load(
                kind,
                label,
                p,
                float(weighted[rows].sum()),
                ios,
                n.bytes_in_flight,
                n.ios_in_flight,
                _ops(cols, rows[weight[rows] > 0]),
            )
        )
    return sorted(loads, key=lambda x: (-x.bytes, -x.ios, x.label))


class NormalLoads:
    """Each device's loads' Normal levels, computed once per device for all its episodes
    (writeback and the journal under pid -1)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, spans: list[tuple[int, int]]) -> None:
        self.con = con
        self.spans = spans  # every [lo, hi) an episode's context is asked for
        self._by_device: dict[tuple[int, int], dict[tuple[str, int], Normal]] = {}

    @functools.cached_property
    def context(self) -> EpisodeContext:
        """The trace's throttling messages and writeback work, read once for every episode."""
        return EpisodeContext(self.con, self.spans)

    @functools.cached_property
    def trace_end(self) -> int | None:
        """The last event's time (where a bio that never completed is still in flight): the
        latest of the devices' last events, which the connection keeps (every event has a
        device and a time), not a scan of every event."""
        return max((t1 for _, t1 in device_spans(self.con).values()), default=None)

    @functools.cached_property
    def _medians(self) -> dict[tuple[int, int, str], int | None]:
        rows = self.con.execute(
            "SELECT dev_major, dev_minor, stage, p50_ns FROM stage_stats "
            "WHERE level = 'device' AND stage IN ('Q2C', 'D2C')"
        ).fetchall()
        return {(int(a), int(b), str(stage)): p50 for a, b, stage, p50 in rows}

    def median_ns(self, device: tuple[int, int], stage: str) -> int | None:
        """The device's median latency of a stage ('Q2C' or 'D2C', stage_stats); None when
        unknown."""
        return self._medians.get((*device, stage))

    def d2c_ns(self, device: tuple[int, int]) -> float:
        """The device's median D2C (stage_stats), 0 when unknown."""
        return float(self.median_ns(device, "D2C") or 0)

    def of(self, device: tuple[int, int]) -> dict[tuple[str, int], Normal]:
        if device not in self._by_device:
            self._by_device[device] = self._compute(device)
        return self._by_device[device]

    def _compute(self, device: tuple[int, int]) -> dict[tuple[str, int], Normal]:
        # the device's first and last event, as the connection keeps them for every device:
        # each query of its own scanned every event again
        t0, t1 = device_spans(self.con).get(device, (None, None))
        bins = max(1, ((t1 or 0) - (t0 or 0)) // NORMAL_BIN_NS + 1)
        t = self._load_bins(device)
        cols = {n: t[n].to_numpy(zero_copy_only=False) for n in t.column_names}
        out = {}
        keys = list(zip(cols["kind"].tolist(), cols["pid"].tolist(), strict=True))
        rows: dict[tuple[str, int], list[int]] = {}
        for i, key in enumerate(keys):
            rows.setdefault((str(key[0]), int(key[1])), []).append(i)
        for key, idx in rows.items():
            per_s = [
                _median_with_empty(cols[n][idx], bins) for n in ("byte_ns", "io_ns", "bytes", "ios")
            ]
            out[key] = Normal(
                per_s[0] / NORMAL_BIN_NS,
                per_s[1] / NORMAL_BIN_NS,
                per_s[2] / NORMAL_BIN_NS,
                per_s[3] / NORMAL_BIN_NS,
            )
        return out

    def _load_bins(self, device: tuple[int, int]) -> pa.Table:
        """Each load's sums per bin on the device: from the issuers' bins the analysis kept,
        else (a dataset opened after its analysis) from its bios."""
        try:
            return query_table(self.con, _LOAD_BINS.format(issuers=_KEPT_ISSUER_BINS), list(device))
        except duckdb.CatalogException:
            return query_table(self.con, _LOAD_BINS.format(issuers=_ISSUER_BINS), list(device))


def _median_with_empty(values: np.ndarray, bins: int) -> float:
    """The median of `values` padded with zeros up to `bins` values (the empty seconds)."""
    if bins - len(values) > len(values):
        # the empty seconds are most of them, so the median is one: never an array as long as
        # the trace's range, which a time decades off makes billions of seconds
        return 0.0
    padded = np.zeros(max(bins, len(values)))
    padded[: len(values)] = values
    return float(np.median(padded))


def _ops(cols: dict[str, np.ndarray], mask: np.ndarray) -> str:
    """'write 30 bios of 8 MiB, read 2 bios of 4 KiB': the load's bios by op, with their size
    (or their total and range when sizes differ: a median would hide one big bio)."""
    parts = []
    ops, size = cols["op"][mask], cols["bytes"][mask]
    for op in dict.fromkeys(ops.tolist()):
        sel = size[ops == op]
        word = {"R": "read", "W": "write", "D": "discard", "N": "flush"}.get(op, str(op))
        n = f"{word} {len(sel):,} bio{'s' * (len(sel) != 1)}"
        lo, hi = int(sel.min()), int(sel.max())
        if hi == 0:
            parts.append(n)
        elif lo == hi:
            parts.append(f"{n} of {format_bytes(hi)}")
        else:
            parts.append(
                f"{n}, {format_bytes(int(sel.sum()))} ({format_bytes(lo)} to {format_bytes(hi)})"
            )
    return ", ".join(parts)


def _device_busy(
    q: np.ndarray,
    d: np.ndarray,
    c: np.ndarray,
    victim: np.ndarray,
    mine: np.ndarray,
) -> tuple[float | None, float | None]:
    """(share of the time the victim's bios `mine` were queued during which some IO was at the
    device, how many other IOs were at the device with them on average while they were there)."""
    if not mine.any():
        return None, None
    busy = _coverage(_union(d, c), q[mine], d[mine])
    lo, hi = d[mine], c[mine]
    length = float(np.clip(hi - lo, 0, None).sum())
    if length <= 0:
        return busy, None
    return busy, _overlap_total(d[~victim], c[~victim], lo, hi) / length


def _fair_wait(
    q: np.ndarray,
    d: np.ndarray,
    c: np.ndarray,
    victim: np.ndarray,
    mine: np.ndarray,
) -> float | None:
    """The wait a first-come-first-served queue would have given the victim's bios `mine`:
    the others' IO in flight during their queued time (L, a time average) over the device's
    completions per ns meanwhile (Little's law). A scheduler that makes the victim wait many
    times this is holding it back, whatever else is in flight."""
    if not mine.any():
        return None
    lo, hi = q[mine], d[mine]
    length = float(np.clip(hi - lo, 0, None).sum())
    if length <= 0:
        return 0.0
    ahead = _overlap_total(q[~victim], c[~victim], lo, hi)
    done = _completions_within(c, lo, hi)
    in_flight = ahead / length
    if done == 0:
        return 0.0 if in_flight == 0 else float("inf")
    return in_flight / (done / length)


def _overlap_total(lo: np.ndarray, hi: np.ndarray, a: np.ndarray, e: np.ndarray) -> float:
    """The summed length of the intersections of every interval [lo, hi] with every [a, e],
    exact. Each [a, e] is met by F(e) - F(a), F(x) the time the [lo, hi] intervals cover up to
    x (from their sorted starts and ends and prefix sums), in int64 when no sum can pass it;
    else by _overlap_sweep. (An [intervals x intervals] matrix of overlaps, for a writeback load
    of thousands of bios in a busy window, took gigabytes.)"""
    first, second = hi > lo, e > a  # an empty interval overlaps nothing
    lo, hi = lo[first].astype(np.int64), hi[first].astype(np.int64)
    a, e = a[second].astype(np.int64), e[second].astype(np.int64)
    if not len(lo) or not len(a):
        return 0.0
    reach = max(int(np.abs(x).max()) for x in (lo, hi, a, e))
    # F(x) <= 2 n |x| each, and the total <= n * the summed lengths of the [a, e]
    if 4 * (len(lo) + len(a)) * reach >= 1 << 62 or len(lo) * int(np.sum(e - a)) >= 1 << 62:
        return _overlap_sweep(lo, hi, a, e)
    # a stable sort (timsort) is the same sort, and fast on bios near queue order already
    starts, ends = np.sort(lo, kind="stable"), np.sort(hi, kind="stable")
    before_start = np.concatenate(([0], np.cumsum(starts)))
    before_end = np.concatenate(([0], np.cumsum(ends)))

    def covered(x: np.ndarray) -> np.ndarray:  # F: summed length of [lo, hi] before each x
        opened = np.searchsorted(starts, x, side="left")
        closed = np.searchsorted(ends, x, side="left")
        return (opened * x - before_start[opened]) - (closed * x - before_end[closed])

    return float(int(np.sum(covered(e) - covered(a))))


def _overlap_sweep(lo: np.ndarray, hi: np.ndarray, a: np.ndarray, e: np.ndarray) -> float:
    """_overlap_total of non-empty intervals, for times too far apart for int64 sums: the
    integral over time of how many of each set cover it, multiplied, by one sweep over the
    sorted ends, summed as Python integers."""
    k, m = len(lo), len(a)
    ends = np.concatenate((lo, hi, a, e))
    opens = np.repeat(np.array([1, -1, 0, 0], np.int64), [k, k, m, m])
    opens_second = np.repeat(np.array([0, 0, 1, -1], np.int64), [k, k, m, m])
    order = np.argsort(ends, kind="stable")
    both = (np.cumsum(opens[order]) * np.cumsum(opens_second[order]))[:-1]
    gaps = np.diff(ends[order])
    live = np.flatnonzero(both)
    # pairs times a span decades long pass int64
    return float(sum(map(int.__mul__, both[live].tolist(), gaps[live].tolist())))


def _completions_within(c: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    """How many completions c fall in (lo, hi], summed over the intervals (a completion in
    several counts in each)."""
    done = np.sort(c, kind="stable")  # near time order already: see _overlap_total
    counts = np.searchsorted(done, hi, side="right") - np.searchsorted(done, lo, side="right")
    return float(np.clip(counts, 0, None).sum())


def _union(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Sorted disjoint [lo, hi] rows covering the given intervals."""
    keep = hi > lo
    lo, hi = lo[keep], hi[keep]
    if not len(lo):
        return np.empty((0, 2), np.int64)
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], hi[order]
    reach = np.maximum.accumulate(hi)
    opens = np.concatenate(([True], lo[1:] > reach[:-1]))
    starts = lo[opens]
    ends = np.maximum.reduceat(hi, np.flatnonzero(opens))
    return np.stack([starts, ends], axis=1)


def _coverage(union: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float | None:
    """Share of the total length of [lo, hi] intervals that the disjoint union covers."""
    total = float(np.clip(hi - lo, 0, None).sum())
    if total <= 0:
        return None
    if not len(union):
        return 0.0
    # covered length of [x, y]: the union's cumulative length up to y minus up to x
    starts, ends = union[:, 0], union[:, 1]
    cum = np.concatenate(([0], np.cumsum(ends - starts)))

    def upto(x: np.ndarray) -> np.ndarray:
        k = np.searchsorted(starts, x, side="right")  # intervals starting at or before x
        inside = np.clip(x - starts[np.maximum(k - 1, 0)], 0, None)
        part = np.minimum(inside, (ends - starts)[np.maximum(k - 1, 0)])
        return np.where(k > 0, cum[np.maximum(k - 1, 0)] + part, 0)

    covered = float(np.clip(upto(hi) - upto(lo), 0, None).sum())
    return covered / total


def _episode_context(context: EpisodeContext, episode: dict[str, Any], ev: Evidence) -> None:
    """Throttling messages and writeback work around the episode."""
    device = (episode["dev_major"], episode["dev_minor"])
    lo, hi = episode["start_ns"] - episode["window_ns"], episode["end_ns"]
    ev.throttle_messages, ev.throttle_sample = context.throttle_messages(device, lo, hi)
    work = context.writeback_work(device, lo, hi)
    if work is not None:
        ev.writeback_items, ev.writeback_reasons = work.items, work.reasons
        ev.pages_written = work.pages
