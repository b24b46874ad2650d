"""The definitions every stage shares, written once: who the flusher and the journal are, a
bio's op class, and the stage latencies of a bio.

Ingest filters Arrow batches with the comm prefixes; the analysis, the findings and the report
use the DuckDB macros below, which `blkscope.analyze.views.connect` defines on every connection
(so `blkscope sql` can call them too). Nothing else spells these rules out.
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


def _starts_with_any(column: str, prefixes: tuple[str, ...]) -> str:
    return "(" + " OR ".join(f"starts_with({column}, '{p}')" for p in prefixes) + ")"


# name -> (parameters, SQL expression, what it means). The expressions only use their parameters.
MACROS: dict[str, tuple[str, str, str]] = {
    "op_class": (
        "op, flags, sector",
        # A data-less preflush (Q FWS, no sector) and a bare flush (D FN, op N/F) are flushes;
        # a write carrying a preflush and FUA (Q FWFSM, with a sector) is a write.
        "CASE WHEN op IN ('N', 'F') OR (starts_with(flags, 'F') AND sector IS NULL) THEN 'flush' "
        "WHEN op = 'R' THEN 'read' WHEN op = 'W' THEN 'write' WHEN op = 'D' THEN 'discard' "
        "ELSE 'other' END",
        "read, write, discard, flush or other, from a bio's or request's op letter, RWBS and "
        "sector",
    ),
    "is_flusher": (
        "comm",
        f"coalesce({_starts_with_any('comm', FLUSHER_COMM_PREFIXES)}, false)",
        "issued by a kernel flusher thread (kworker/u*, flush-*)",
    ),
    "is_journal": (
        "comm",
        f"coalesce({_starts_with_any('comm', JOURNAL_COMM_PREFIXES)}, false)",
        "issued by the ext4 journal thread (jbd2/*)",
    ),
    "is_writeback_write": (
        "comm, op, flags, sector",
        "is_flusher(comm) AND op_class(op, flags, sector) = 'write'",
        "a write issued by a flusher thread: what writeback means in every table and chart",
    ),
    "bio_stage_list": (
        "g_time_ns, i_time_ns, d_time_ns, m_time_ns, merged, q_time_ns, d2c_ns, q2c_ns",
        # stage codes: 1 Q2G 2 G2I 3 I2D 4 Q2M 5 M2D 6 D2C 7 Q2C (8 Q2Q is a gap between bios)
        "[{'stage': 1, 'ns': g_time_ns - q_time_ns}, {'stage': 2, 'ns': i_time_ns - g_time_ns}, "
        "{'stage': 3, 'ns': CASE WHEN NOT merged THEN d_time_ns - i_time_ns END}, "
        "{'stage': 4, 'ns': m_time_ns - q_time_ns}, "
        "{'stage': 5, 'ns': CASE WHEN merged THEN d_time_ns - m_time_ns END}, "
        "{'stage': 6, 'ns': d2c_ns}, {'stage': 7, 'ns': q2c_ns}]",
        "a bio's stage latencies as [{stage code, ns}]: Q2G, G2I, I2D (unmerged bios), Q2M, "
        "M2D (merged bios), D2C, Q2C",
    ),
}
STAGE_NAMES = ("Q2G", "G2I", "I2D", "Q2M", "M2D", "D2C", "Q2C", "Q2Q")  # codes 1..8
MACROS["stage_name"] = (
    "code",
    "[" + ", ".join(f"'{s}'" for s in STAGE_NAMES) + "][code]",
    "the name of a stage code of bio_stage_list (8 is Q2Q, the gap between Qs)",
)


def macro_statements() -> list[str]:
    """CREATE MACRO statements for every shared definition, in dependency order."""
    return [
        f"CREATE OR REPLACE MACRO {name}({params}) AS {expr}"
        for name, (params, expr, _) in MACROS.items()
    ]


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
