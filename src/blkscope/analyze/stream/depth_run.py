"""Drive the depth walk (stream/depth.py) beside the pass, and leave its sums, once the orphan
verdict is in, as the two small tables the `depth` and `depth_bins` views group
(sql/_depth_build.sql, sql/_depth_bins_build.sql)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

from blkscope.analyze.correlation import device_spans
from blkscope.analyze.stream import depth as D
from blkscope.analyze.stream import layout as L
from blkscope.analyze.stream.events import EventCoder
from blkscope.analyze.stream.pools import Pool
from blkscope.analyze.views import modules

# the tables of the analysis connection the sums are left in (this view exists only while
# `analyze` runs)
DEPTH_TIME = "internal._depth_time"
DEPTH_BIN_SUMS = "internal._depth_bin_sums"
LEVELS = ("driver", "queue")  # key = 2 * device index + level


def device_bounds(con: duckdb.DuckDBPyConnection) -> list[tuple[int, ...]]:
    """Per device of the events: (major, minor, first and last event time, time_bins' start,
    width and number of bins). time_bins reads only each device's first and last event time:
    it runs here over those two times (the connection's cached spans, which the findings read
    too) instead of scanning the events once more (0.4 CPU-s at 10x)."""
    device_spans(con)
    spans = "internal._device_spans"
    rows = con.execute(f"""
        WITH events AS (SELECT dev_major, dev_minor, t0 AS time_ns FROM {spans}
                        UNION ALL SELECT dev_major, dev_minor, t1 FROM {spans})
        SELECT s.dev_major, s.dev_minor, s.t0, s.t1, b.start_ns, b.width_ns, b.bins
        FROM {spans} s JOIN ({modules()["time_bins"].main.body}) b USING (dev_major, dev_minor)
    """).fetchall()  # fmt: skip
    return [tuple(r) for r in rows]


class DepthWalk:
    """The walk's arrays and what it hears from the pass: each batch's events (after the pass
    ran them), the rows it wrote (bio completions; requests without D and C)."""

    def __init__(self, coder: EventCoder, dv: np.ndarray, rows: list[tuple[int, ...]]) -> None:
        """dv: the pass's device facts (stream/run.py device_facts); rows: device_bounds."""
        self.coder = coder
        self.has_d = np.ascontiguousarray(dv[:, L.DV_HAS_D])
        keys = 2 * len(dv)
        kk = np.zeros((keys, D.K_FIELDS), dtype=np.int64)
        if rows:
            major = np.array([r[0] for r in rows], dtype=np.int64)
            minor = np.array([r[1] for r in rows], dtype=np.int64)
            dev = coder.devices.encode(major, minor)
            for j, r in enumerate(rows):
                for k in (2 * dev[j], 2 * dev[j] + 1):
                    kk[k, D.K_T], kk[k, D.K_T1] = r[2], r[3]
                    kk[k, D.K_START], kk[k, D.K_WIDTH], kk[k, D.K_BINS] = r[4], r[5], r[6]
        self.present = kk[:, D.K_WIDTH] > 0  # devices of the events table
        kk[~self.present, D.K_ENDED] = 1
        kk[:, D.K_WIDTH] = np.maximum(kk[:, D.K_WIDTH], 1)
        kk[:, D.K_Z] = 1  # the 0 step at the trace start
        kk[:, D.K_FIRST] = 1
        kk[:, D.K_VMIN], kk[:, D.K_VMAX] = D.BIG, -D.BIG
        nbins = max(int(kk[:, D.K_BINS].max(initial=0)), 1)
        bins = np.zeros((keys, nbins, 3), dtype=np.int64)
        bins[:, :, 0] = L.NULL
        ct = np.zeros(D.C_FIELDS, dtype=np.int64)
        ct[D.C_OFF] = 64
        self.W = D.DepthState(
            kk=kk,
            held=np.zeros((keys, 256), dtype=np.int64),
            bins=bins,
            out=np.zeros((1024 + 4 * (256 + nbins), D.O_FIELDS), dtype=np.int64),
            pend=np.zeros((1024, D.P_FIELDS), dtype=np.int64),
            ct=ct,
        )
        self.done: list[np.ndarray] = []  # (time, key) of bio completions not yet queued
        # the arrays depth_step takes when a call has none (typed like the real ones: one
        # compiled version)
        self._no_events = np.zeros((0, L.E_FIELDS), dtype=np.int64, order="F")
        self._no_done = np.zeros((0, 2), dtype=np.int64)
        self._no_bios = np.zeros((0, L.BI_FIELDS), dtype=np.int64)
        self._no_alive = np.zeros(0, dtype=np.uint8)
        self.whole = np.zeros(keys, dtype=np.int64)  # requests in flight the whole trace

    def rows(self, rq: np.ndarray, bo: np.ndarray) -> None:
        """Rows the pass wrote: bios' completions (queue -1 at c_time_ns) and requests without
        D or C counted in flight for the whole trace (_depth_build.sql)."""
        c = bo[:, L.BO_C_T]
        has_c = c != L.NULL
        if has_c.any():
            self.done.append(np.stack([c[has_c], 2 * bo[has_c, L.BO_DEV] + 1], axis=1))
        whole = (
            (rq[:, L.RQ_FIRST_D] == L.NULL)
            & (rq[:, L.RQ_C_T] == L.NULL)
            & np.isin(rq[:, L.RQ_KIND], (L.K_DATA, L.K_FLUSH))
        )
        if whole.any():
            np.add.at(self.whole, 2 * rq[whole, L.RQ_DEV], 1)

    def _completions(self) -> np.ndarray:
        if not self.done:
            return np.zeros((0, 2), dtype=np.int64)
        done = np.concatenate(self.done) if len(self.done) > 1 else self.done[0]
        self.done = []
        return np.ascontiguousarray(done[np.argsort(done[:, 0], kind="stable")])

    def batch(self, ev: np.ndarray, bios: Pool) -> None:
        """Queue the batch's steps and walk what the pass can no longer change."""
        done = self._completions()
        self._pend_room(len(ev) + len(done))
        self._step(D.DO_COLLECT | D.DO_WALK, ev, done, bios)

    def end(self) -> None:
        """The pass is over (every bio written): walk everything to each device's end."""
        done = self._completions()
        self._pend_room(len(done))
        self._step(D.DO_COLLECT, self._no_events, done)
        n = int(self.W.ct[D.C_PEND_N])
        pend = self.W.pend[:n]
        pend[:] = pend[np.argsort(pend[:, D.P_T], kind="stable")]  # a waiting bio's late C
        self._step(D.DO_WALK_ALL | D.DO_END)

    def _step(
        self,
        what: int,
        ev: np.ndarray | None = None,
        done: np.ndarray | None = None,
        bios: Pool | None = None,
    ) -> None:
        ev = self._no_events if ev is None else ev
        done = self._no_done if done is None else done
        rows, alive = (self._no_bios, self._no_alive) if bios is None else (bios.rows, bios.alive)
        while True:
            code = D.depth_step(self.W, ev, len(ev), self.has_d, done, len(done), rows, alive, what)
            if code == D.W_DONE:
                return
            if code == D.W_LATE:
                raise ValueError("depth walk: a step came before its device's moment (a bug)")
            self._grow()
            what &= ~D.DO_COLLECT  # the steps are queued

    def _pend_room(self, more: int) -> None:
        need = int(self.W.ct[D.C_PEND_N]) + more
        if len(self.W.pend) < need:
            pend = np.zeros((max(need, 2 * len(self.W.pend)), D.P_FIELDS), dtype=np.int64)
            pend[: len(self.W.pend)] = self.W.pend
            self.W = self.W._replace(pend=pend)

    def _grow(self) -> None:
        """Double `out` when a segment's rows might not fit, else widen `held` both ways."""
        W = self.W
        room = W.held.shape[1] + W.bins.shape[1] + 64
        if len(W.out) - int(W.ct[D.C_OUT_N]) < 2 * room:
            out = np.zeros((2 * len(W.out) + 2 * room, D.O_FIELDS), dtype=np.int64)
            out[: len(W.out)] = W.out
            self.W = W._replace(out=out)
            return
        width = W.held.shape[1]
        held = np.zeros((len(W.held), 2 * width), dtype=np.int64)
        held[:, width // 2 : width // 2 + width] = W.held
        W.ct[D.C_OFF] += width // 2
        self.W = W._replace(held=held)

    def tables(self, con: duckdb.DuckDBPyConnection, requests: Path) -> None:
        """Leave DEPTH_TIME and DEPTH_BIN_SUMS in con, once the requests' orphan verdict is in
        (requests: the pass's requests.parquet)."""
        orphans = np.zeros(0, dtype=np.int64)
        if self.undecided():
            path = requests.as_posix().replace("'", "''")
            orphans = np.array(
                [r[0] for r in con.execute(
                    f"SELECT c_eid FROM read_parquet('{path}') WHERE kind = 'orphan'"
                ).fetchall()],
                dtype=np.int64,
            )  # fmt: skip
        times, bins = self.settle(orphans)
        self._register(con, DEPTH_TIME, times)
        self._register(con, DEPTH_BIN_SUMS, bins)

    def _outputs(self) -> tuple[np.ndarray, np.ndarray]:
        out = self.W.out[: int(self.W.ct[D.C_OUT_N])]
        return out, out[:, D.O_KIND]

    def undecided(self) -> bool:
        """Whether the walk met a C whose request had no D (the verdict is needed)."""
        _, kind = self._outputs()
        return bool(np.any((kind == D.OK_BOUNDARY) | (kind == D.OK_NO_C)))

    def settle(self, orphans: np.ndarray) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """The walk's sums with the boundaries settled (the C's of `orphans`, event ids, are
        left out; the others' requests were in flight from the trace start): DEPTH_TIME's and
        DEPTH_BIN_SUMS' columns, with `key` (2 * device index + level) for the device."""
        out, kind = self._outputs()
        marks = out[(kind == D.OK_BOUNDARY) | (kind == D.OK_NO_C)]
        counted = ~np.isin(marks[:, D.O_B], orphans)
        whole = self.whole.copy()
        no_c = counted & (marks[:, D.O_KIND] == D.OK_NO_C)
        np.add.at(whole, marks[no_c, D.O_K], 1)
        bounds = marks[counted & (marks[:, D.O_KIND] == D.OK_BOUNDARY)]
        shift, moments = _shifts(out[kind == D.OK_MOMENT], bounds, whole)
        held = out[kind == D.OK_HELD]
        depth = held[:, D.O_A] + shift[held[:, D.O_K], held[:, D.O_SEG]]
        lo = np.full(len(shift), D.BIG, dtype=np.int64)
        hi = np.full(len(shift), -D.BIG, dtype=np.int64)
        visit = out[kind == D.OK_VISIT]
        vshift = shift[visit[:, D.O_K], visit[:, D.O_SEG]]
        np.minimum.at(lo, visit[:, D.O_K], visit[:, D.O_A] + vshift)
        np.maximum.at(hi, visit[:, D.O_K], visit[:, D.O_B] + vshift)
        for k, (mlo, mhi) in moments.items():
            lo[k], hi[k] = min(lo[k], mlo), max(hi[k], mhi)
        # every depth between the lowest and the highest visited is visited (steps are +-1)
        present = np.flatnonzero(self.present)
        span = [np.arange(lo[k], hi[k] + 1) for k in present]
        keys = np.concatenate(
            [held[:, D.O_K]] + [np.full(len(s), k) for k, s in zip(present, span, strict=True)]
        )
        times = {
            "key": keys,
            "depth": np.concatenate([depth, *span]),
            "held_ns": np.concatenate([held[:, D.O_B], np.zeros(sum(map(len, span)), np.int64)]),
        }
        b = out[kind == D.OK_BIN]
        bshift = shift[b[:, D.O_K], b[:, D.O_SEG]]
        bins = {
            "key": b[:, D.O_K],
            "bin": b[:, D.O_A],
            "max_depth": b[:, D.O_B] + bshift,
            "depth_ns": b[:, D.O_C] + bshift * b[:, D.O_D],
            "traced_ns": b[:, D.O_D],
        }
        return times, bins

    def _register(
        self, con: duckdb.DuckDBPyConnection, name: str, cols: dict[str, np.ndarray]
    ) -> None:
        keys = np.asarray(cols["key"], dtype=np.int64)
        major, minor = self.coder.devices.columns(keys // 2)
        level = np.array(LEVELS, dtype=object)[keys % 2]
        table = pa.table({
            "dev_major": major, "dev_minor": minor,
            "level": pa.array(level, type=pa.string()),
            **{n: pa.array(np.asarray(v, dtype=np.int64)) for n, v in cols.items() if n != "key"},
        })  # fmt: skip
        con.register("_depth_arrow", table)
        con.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM _depth_arrow")
        con.unregister("_depth_arrow")


def _shifts(
    moments: np.ndarray, bounds: np.ndarray, whole: np.ndarray
) -> tuple[np.ndarray, dict[int, tuple[int, int]]]:
    """Per (key, segment): how much the walk's depths rise once the counted boundaries' requests
    are in flight from the trace start; per key, the depths its special moments visit (the
    trace start, where those requests' +1s come; each boundary moment, where their -1s do)."""
    keys = len(whole)
    segments = int(moments[:, D.O_SEG].max(initial=0)) + 1
    at: dict[tuple[int, int], int] = {}
    for k, t in zip(bounds[:, D.O_K], bounds[:, D.O_A], strict=True):
        at[int(k), int(t)] = at.get((int(k), int(t)), 0) + 1
    # p per segment start: counted boundaries of the moment that began it
    starts = np.zeros((keys, segments + 1), dtype=np.int64)
    first = moments[moments[:, D.O_F] == 1]
    later = moments[moments[:, D.O_F] == 0]
    for r in later:
        starts[r[D.O_K], r[D.O_SEG]] = at.get((int(r[D.O_K]), int(r[D.O_A])), 0)
    # shift(seg) = whole + the counted boundaries of every later segment start
    after = np.cumsum(starts[:, ::-1], axis=1)[:, ::-1]  # after[k, s] = sum of starts[k, s:]
    shift = whole[:, None] + after[:, 1:]
    visited: dict[int, tuple[int, int]] = {}

    def see(k: int, lo: int, hi: int) -> None:
        old = visited.get(k, (D.BIG, -D.BIG))
        visited[k] = (min(old[0], lo), max(old[1], hi))

    total = whole + np.bincount(bounds[:, D.O_K], minlength=keys).astype(np.int64)
    for r in first:
        k = int(r[D.O_K])
        p0 = at.get((k, int(r[D.O_A])), 0)
        see(k, *D.visit_range(0, int(r[D.O_C]) + p0, int(r[D.O_D]), int(r[D.O_E]) + int(total[k])))
    for r in later:
        k, s = int(r[D.O_K]), int(r[D.O_SEG])
        p = int(starts[k, s])
        d0 = int(r[D.O_B]) + int(shift[k, s]) + p
        see(k, *D.visit_range(d0, int(r[D.O_C]) + p, int(r[D.O_D]), int(r[D.O_E])))
    return shift, visited
