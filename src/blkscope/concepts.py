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


def _starts_with_any(column: str, prefixes: tuple[str, ...]) -> str:
    return "(" + " OR ".join(f"starts_with({column}, '{p}')" for p in prefixes) + ")"


# The stored stage times (`bios` columns) a bio's stage latencies come from: bio_stage_ns's
# parameters, and what the streaming pass's per-bio file repeats for it (stream/q2q.py)
STAGE_TIME_COLUMNS = (
    "g_time_ns", "i_time_ns", "d_time_ns", "m_time_ns", "merged", "q_time_ns", "d2c_ns", "q2c_ns",
)  # fmt: skip
_STAGE_TIMES = ", ".join(STAGE_TIME_COLUMNS)

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
    "is_observer": (
        "comm",
        "coalesce(comm IN (" + ", ".join(f"'{c}'" for c in OBSERVER_COMMS) + "), false)",
        "issued by the capture's own tools (blkscope, blktrace, bpftrace, iostat, vmstat, "
        "capture.sh...): the observer's IO, not the workload's",
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
    "bio_stage_ns": (
        _STAGE_TIMES,
        # the i-th latency is stage code i (bio_stage_codes): 1 Q2G 2 G2I 3 I2D 4 Q2M 5 M2D
        # 6 D2C 7 Q2C (8 Q2Q is a gap between bios). A plain list, unnested beside the codes: a
        # list of {stage, ns} structs took 1.5x the CPU to unnest (10x fio bios: 0.9 -> 0.6 s)
        "[g_time_ns - q_time_ns, i_time_ns - g_time_ns, "
        # I2D and M2D only when the D comes after the I (M): a split bio whose pieces took
        # different paths (most dispatched at once, one inserted into the scheduler later) has
        # its earliest D before its earliest I, an interval no piece spent (loop-split-merge:
        # -443 us); btt times I2D per piece
        "CASE WHEN NOT merged AND d_time_ns >= i_time_ns THEN d_time_ns - i_time_ns END, "
        "m_time_ns - q_time_ns, "
        "CASE WHEN merged AND d_time_ns >= m_time_ns THEN d_time_ns - m_time_ns END, "
        "d2c_ns, q2c_ns]",
        "a bio's stage latencies in ns, in the order of bio_stage_codes(): Q2G, G2I, I2D (unmerged "
        "bios whose D follows their I), Q2M, M2D (merged bios whose D follows their M), D2C, "
        "Q2C; null where the bio has no such stage",
    ),
    "bio_stage_codes": (
        "",
        "[1, 2, 3, 4, 5, 6, 7]",
        "the stage codes of bio_stage_ns()'s latencies, in its order (stage_name names them): "
        "unnest both side by side",
    ),
    "bio_stage_list": (
        _STAGE_TIMES,
        f"list_transform(bio_stage_codes(), lambda c: {{'stage': c, 'ns': bio_stage_ns({_STAGE_TIMES})[c]}})",
        "bio_stage_ns() as [{stage code, ns}] (for queries; the tables unnest the plain lists)",
    ),
}
# The class bio latencies are reported under (stage_stats, latency_hist): the op class plus
# /sync for a synchronous bio (S right after its op letters in the RWBS: WS, FWS, WFS, WFAS,
# RS) and /meta for metadata (RWBS ending in M: WSM, RM). The streaming pass asks DuckDB for it
# once per RWBS string it meets (stream/q2q.py): nothing else spells the suffixes out.
MACROS["bio_op_class"] = (
    "op_base, flags",
    "op_base "
    "|| CASE WHEN regexp_matches(flags, '^F?[RWDN]F?A?S') THEN '/sync' ELSE '' END "
    "|| CASE WHEN flags LIKE '%M' THEN '/meta' ELSE '' END",
    "the class a bio's latencies are reported under: its op_class() op_base plus /sync and "
    "/meta from its RWBS flags",
)
STAGE_NAMES = ("Q2G", "G2I", "I2D", "Q2M", "M2D", "D2C", "Q2C", "Q2Q")  # codes 1..8
MACROS["stage_name"] = (
    "code",
    "[" + ", ".join(f"'{s}'" for s in STAGE_NAMES) + "][code]",
    "the name of a stage code of bio_stage_codes (8 is Q2Q, the gap between Qs)",
)
# Log2 buckets (latency_hist, io_dist): bucket b holds [2^b, 2^(b+1)), -1 holds v <= 0. The
# bit width is counted with integer operations only: every bit below the highest set one is set
# (six shifts), then the bits are counted. Exact for every BIGINT, and half the CPU time of the
# double log2 with its correction near powers of two from 2^49 on (value_bucket, which
# _bio_stages computes for every latency it reads).
MACROS["or_shifted"] = ("x, k", "x | (x >> k)", "x with its bits shifted right by k or-ed in")
MACROS["bit_width"] = (
    "x",
    "bit_count(or_shifted(or_shifted(or_shifted(or_shifted(or_shifted(or_shifted("
    "x, 1), 2), 4), 8), 16), 32))::INTEGER",
    "the number of bits of a BIGINT x >= 0: floor(log2(x)) + 1, 0 for 0",
)
MACROS["log2_floor"] = ("x", "bit_width(x) - 1", "the exact floor(log2(x)) of a BIGINT x >= 1")
MACROS["log2_bucket"] = (
    "v",
    "CASE WHEN v <= 0 THEN -1 ELSE log2_floor(v) END",
    "the log2 bucket of v: b with 2^b <= v < 2^(b+1), -1 for v <= 0",
)
# The value buckets of exact percentiles (sql/macros/exact_quantiles.sql, _stage_buckets): each
# bucket is one range of values, the value itself below 256, then its top 8 bits with the shift
# that keeps them (buckets 1/128 to 1/256 of the value wide); negative values are mirrored below
# 0 (-(v + 1): the most negative BIGINT has no opposite).
MACROS["magnitude_bucket"] = (
    "x",
    # the shift keeping the top 8 bits: bit_width(x) - 8, 0 below 256
    "bit_width(x >> 8)::BIGINT * 512 + (x >> bit_width(x >> 8))",
    "the value bucket of a value x >= 0: x below 256, else shift * 512 + its top 8 bits",
)
# Negative values mirrored without a CASE: v >> 63 is -1 for them (0 otherwise), and xor with
# -1 is ~x = -(x + 1). The CASE, with magnitude_bucket written out in both branches, took three
# times as long. The pass computes the same in Rust (rust/src/pass/stages.rs), held against this
# macro by tests/analyze/test_stage_counts.py.
MACROS["value_bucket"] = (
    "v",
    "xor(magnitude_bucket(xor(v, v >> 63)), v >> 63)",
    "the value bucket of any BIGINT v (ordered as the values are; negative ones below 0)",
)
MACROS["value_bucket_log2"] = (
    "b",
    "CASE WHEN b <= 0 THEN -1 WHEN b < 512 THEN log2_floor(b) ELSE (b // 512 + 7)::INTEGER END",
    "the log2 bucket (log2_bucket) of the values in value bucket b",
)


def macro_statements() -> list[str]:
    """CREATE MACRO statements for every shared definition, in dependency order."""
    return [
        f"CREATE OR REPLACE MACRO {name}({params}) AS {expr}"
        for name, (params, expr, _) in MACROS.items()
    ]


def is_observer(comm: str | None) -> bool:
    """The is_observer macro for one process name, in Python."""
    return comm in OBSERVER_COMMS


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
