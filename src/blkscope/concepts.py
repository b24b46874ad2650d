"""The definitions every stage shares, on the Python side: who the flusher and the journal
are, the op classes, and the stage times of a bio.

Ingest filters Arrow batches with the comm prefixes. The analysis, the findings and the report
use the same rules as the DuckDB macros of analyze/sql/macros (op_class.sql, stages.sql), which
every connection defines (so `blkscope sql` can call them too); tests/analyze/test_sql_modules.py
holds the two sides together.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

# Kernel writeback runs in the flusher threads: kworker/u<pool>:<n> since Linux 3.10, flush-<dev>
# before. Their writes are writeback; their discards and cache flushes are not.
FLUSHER_COMM_PREFIXES = ("kworker/u", "flush-")
# ext4's journal commits from jbd2/<dev>-<n>.
JOURNAL_COMM_PREFIXES = ("jbd2/",)
# Linux sizes a block device in bytes as a signed 64-bit number (loff_t), so every sector of
# every device ends before 2^63 / 512 = 2^54: a sector past it is a damaged line or record, and
# keeping it would overflow every sum of sectors and every byte offset after ingest.
MAX_SECTOR = 1 << 54
# The observer: processes of the capture itself (blkscope capture and its samplers, the shared
# capture.sh and the bpftrace probes beside the trace). Their IO is real but not the workload's,
# so the report flags it and never lets it set a chart's scale. Exact names, not prefixes: a
# user's own `iostat-exporter` is not ours.
OBSERVER_COMMS = ("blkscope", "blktrace", "blkparse", "btrace", "bpftrace", "biosnoop",
                  "iostat", "vmstat", "capture.sh")  # fmt: skip
# Op classes in the order tables and charts list them.
OP_CLASSES = ("read", "write", "discard", "flush", "other")


# The stored stage times (`bios` columns) a bio's stage latencies come from: bio_stage_ns's
# parameters (analyze/sql/macros/stages.sql), and what the streaming pass's per-bio file
# repeats for it (stream/q2q.py)
STAGE_TIME_COLUMNS = (
    "g_time_ns", "i_time_ns", "d_time_ns", "m_time_ns", "merged", "q_time_ns", "d2c_ns", "q2c_ns",
)  # fmt: skip


def is_observer(comm: str | None) -> bool:
    """The is_observer macro for one process name, in Python."""
    return comm in OBSERVER_COMMS


def _has_prefix(comm: pa.ChunkedArray | pa.Array, prefixes: tuple[str, ...]) -> pa.Array:
    import pyarrow.compute as pc

    hit = pc.starts_with(comm, prefixes[0])
    for p in prefixes[1:]:
        hit = pc.or_(hit, pc.starts_with(comm, p))
    return pc.fill_null(hit, False)


def arrow_writeback_queue(events: pa.Table) -> pa.Array:
    """Mask of the Q events of writeback writes (is_writeback_write, on an events batch)."""
    # Here, not at the top: the analysis imports this module and never filters a batch.
    import pyarrow.compute as pc

    data_write = pc.and_(
        pc.equal(events["op"], "W"),
        pc.invert(pc.and_(pc.starts_with(events["rwbs"], "F"), pc.is_null(events["sector"]))),
    )
    queued = pc.and_(pc.equal(events["action"], "Q"), data_write)
    return pc.fill_null(pc.and_(queued, _has_prefix(events["comm"], FLUSHER_COMM_PREFIXES)), False)


# The closed set of causes an episode is attributed to (episodes.cause: one of these, or several
# joined by '+', strongest first). Everything that names or explains a cause reads it here.
CAUSES: dict[str, str] = {
    "writeback": "the kernel's flusher threads writing dirty pages back carried the IO in "
    "flight (or wrote pages while the application waited above the block layer)",
    "journal": "the filesystem journal (jbd2) committing carried the IO in flight, or the "
    "application waited on its commit",
    "competing_io": "other processes' IO dominated what was in flight, far above their normal",
    "throttling": "the latency was above the block layer, where blk-throttle or iocost held "
    "the IO back (their messages are in the trace)",
    "scheduler": "the IO waited inside the block layer's IO scheduler while the device was idle",
    "device": "the device itself was slow: completion times rose while the queue held little "
    "but the victim's own IO",
    "unexplained": "no signal in the trace explains it",
}
