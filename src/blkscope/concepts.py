"""The definitions every stage shares, on the Python side: who the flusher and the journal
are, the op classes, and the stage times of a bio.

Ingest filters Arrow batches with the comm prefixes. The analysis, the findings and the report
use the same rules as the DuckDB macros of analyze/sql/macros (op_class.sql, stages.sql), which
every connection defines (so `blkscope sql` can call them too); tests/analyze/test_sql_modules.py
holds the two sides together.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

# Kernel writeback runs in the flusher threads: kworker/u<pool>:<n> since Linux 3.10, flush-<dev>
# before. Their writes are writeback; their discards and cache flushes are not.
FLUSHER_COMM_PREFIXES = ("kworker/u", "flush-")
# ext4's journal commits from jbd2/<dev>-<n>.
JOURNAL_COMM_PREFIXES = ("jbd2/",)
# Op classes in the order tables and charts list them.
OP_CLASSES = ("read", "write", "discard", "flush", "other")


# The stored stage times (`bios` columns) a bio's stage latencies come from: bio_stage_ns's
# parameters (analyze/sql/macros/stages.sql), and what the streaming pass's per-bio file
# repeats for it (stream/q2q.py)
STAGE_TIME_COLUMNS = (
    "g_time_ns", "i_time_ns", "d_time_ns", "m_time_ns", "merged", "q_time_ns", "d2c_ns", "q2c_ns",
)  # fmt: skip


def _has_prefix(comm: pa.ChunkedArray | pa.Array, prefixes: tuple[str, ...]) -> pa.Array:
    hit = pc.starts_with(comm, prefixes[0])
    for p in prefixes[1:]:
        hit = pc.or_(hit, pc.starts_with(comm, p))
    return pc.fill_null(hit, False)


def arrow_writeback_queue(events: pa.Table) -> pa.Array:
    """Mask of the Q events of writeback writes (is_writeback_write, on an events batch)."""
    data_write = pc.and_(
        pc.equal(events["op"], "W"),
        pc.invert(pc.and_(pc.starts_with(events["rwbs"], "F"), pc.is_null(events["sector"]))),
    )
    queued = pc.and_(pc.equal(events["action"], "Q"), data_write)
    return pc.fill_null(pc.and_(queued, _has_prefix(events["comm"], FLUSHER_COMM_PREFIXES)), False)
