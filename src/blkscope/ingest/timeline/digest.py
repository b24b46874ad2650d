"""What the clock model needs from the block events, gathered while they stream past."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blkscope.concepts import arrow_writeback_queue
from blkscope.ingest.codes import with_strings
from blkscope.units import NS_PER_S

SECOND = NS_PER_S
# Queue events closer than this belong to one flusher burst.
BURST_GAP_NS = 1_000_000


class TraceDigest:
    """Flusher writes and completions of the trace, small enough to keep in memory."""

    def __init__(self) -> None:
        self._flusher: list[pa.Table] = []
        self._completions: list[pa.Table] = []

    def add(self, events: pa.Table) -> None:
        """Keep the writeback writes' queue events and every completion of a chunk."""
        events = with_strings(events)  # (chunks coded alike or not are joined later)
        cols = ["time_ns", "dev_major", "dev_minor", "sector"]
        self._flusher.append(events.filter(arrow_writeback_queue(events)).select(cols))
        done = pc.equal(events["action"], "C")
        self._completions.append(
            events.filter(pc.fill_null(done, False)).select([*cols, "op", "nsectors"])
        )

    def flusher_bursts(self, devices: set[tuple[int, int]] | None = None) -> np.ndarray:
        """(start, end) ns of flusher write bursts on `devices` (all when None), by time gap."""
        if not self._flusher:
            return np.empty((0, 2), np.int64)
        table = pa.concat_tables(self._flusher)
        times = table["time_ns"].to_numpy(zero_copy_only=False).astype(np.int64)
        if devices:
            major = table["dev_major"].to_numpy(zero_copy_only=False)
            minor = table["dev_minor"].to_numpy(zero_copy_only=False)
            keep = np.zeros(len(times), bool)
            for ma, mi in devices:
                keep |= (major == ma) & (minor == mi)
            times = times[keep]
        times = np.sort(times)
        if times.size == 0:
            return np.empty((0, 2), np.int64)
        breaks = np.flatnonzero(np.diff(times) > BURST_GAP_NS)
        starts = np.concatenate(([times[0]], times[breaks + 1]))
        ends = np.concatenate((times[breaks], [times[-1]]))
        return np.stack([starts, ends], axis=1)

    def completions(self) -> tuple[np.ndarray, np.ndarray]:
        """(sector, time_ns) of every completion, sorted by sector then time."""
        if not self._completions:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        table = pa.concat_tables(self._completions)
        sector = pc.fill_null(table["sector"], -1).to_numpy(zero_copy_only=False).astype(np.int64)
        times = table["time_ns"].to_numpy(zero_copy_only=False).astype(np.int64)
        order = np.lexsort((times, sector))
        return sector[order], times[order]

    def write_completions(self, device: tuple[int, int]) -> np.ndarray:
        """Sorted times of the write completions on one device."""
        if not self._completions:
            return np.empty(0, np.int64)
        table = pa.concat_tables(self._completions)
        mask = pc.and_(
            pc.equal(table["op"], "W"),
            pc.and_(
                pc.equal(table["dev_major"], device[0]), pc.equal(table["dev_minor"], device[1])
            ),
        )
        times = table.filter(pc.fill_null(mask, False))["time_ns"]
        return np.sort(times.to_numpy(zero_copy_only=False).astype(np.int64))

    def write_kib(self) -> tuple[np.ndarray, np.ndarray]:
        """(time_ns, KiB) of every write completion, all devices."""
        if not self._completions:
            return np.empty(0, np.int64), np.empty(0, np.float64)
        table = pa.concat_tables(self._completions)
        table = table.filter(pc.fill_null(pc.equal(table["op"], "W"), False))
        times = table["time_ns"].to_numpy(zero_copy_only=False).astype(np.int64)
        sectors = pc.fill_null(table["nsectors"], 0).to_numpy(zero_copy_only=False)
        return times, sectors.astype(np.float64) / 2

    def devices(self) -> set[tuple[int, int]]:
        """Devices the trace has completions or flusher writes on."""
        seen: set[tuple[int, int]] = set()
        for table in self._flusher + self._completions:
            if table.num_rows:
                pairs = (
                    table.select(["dev_major", "dev_minor"])
                    .group_by(["dev_major", "dev_minor"])
                    .aggregate([])
                )
                seen.update(
                    zip(pairs["dev_major"].to_pylist(), pairs["dev_minor"].to_pylist(), strict=True)
                )
        return seen
