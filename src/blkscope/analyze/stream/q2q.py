"""The Q2Q file: each bio's Q2Q gaps, which the streaming pass measures (rust/src/pass/q2q.rs) as
the time from the previous Q of the bio's reporting group to its own Q, at the four scopes
stage_stats reports Q2Q at (process: device x op class x process, class: device x op class, op:
device x op, device). The pass meets every Q in (time, event id) order, the order the gaps are
defined in, so the previous Q of a group is one time per group: memory follows the number of
groups, not the trace.

The gaps leave the pass with each bio and are written, one row per bio, to an internal Parquet
file in the analysis's spill folder (never part of the dataset), which `_bio_stages.sql` reads
as `internal._bio_q2q`. Each row also carries what the bio's other latencies need: its
reporting group, as the strings and as one integer key (`group_key`: device, class and comm
codes), and its stage times as `bios` has them. `_bio_stages` reads this file alone (for the latencies of
the buckets holding a percentile: the pass counts every bucket itself, `internal._stage_counts`)
and joins on the integer key; reading `bios` and the gaps' file instead, each time deriving the op
class from every bio's RWBS and joining both on four strings, was ~40 % of its CPU."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import duckdb
import pyarrow as pa

from blkscope._core import ArrowBatch, ParquetTableReader, StreamPass
from blkscope.analyze.memory import SPILL_DIR
from blkscope.concepts import STAGE_TIME_COLUMNS
from blkscope.schemas import TABLES
from blkscope.schemas._declare import field, schema
from blkscope.store.core_parquet import CoreParquet
from blkscope.store.writer import close_quietly

# the scopes (_bio_stages' scope codes 1..4), in the order of the gap columns
SCOPES = tuple(StreamPass.scopes())
Q2Q_VIEW = "internal._bio_q2q"
# the bio latencies' counts per finest group and value bucket (rust/src/pass/stages.rs), which
# sql/_stage_buckets.sql sums into its levels
STAGE_COUNTS = "internal._stage_counts"

BIO_Q2Q = schema(
    "_bio_q2q",
    "Internal (analyze only): each bio's Q2Q gaps, reporting group and stage times, from the "
    "streaming pass (rust/src/pass/q2q.rs).",
    [
        field("q_eid", pa.int64(), "The bio's Q event id (bios.q_eid).", nullable=False),
        field("dev_major", pa.int32(), "Device major number.", nullable=False),
        field("dev_minor", pa.int32(), "Device minor number.", nullable=False),
        field("op_base", pa.string(), "op_class(): read, write, discard, flush or other."),
        field("op_class", pa.string(), "bio_op_class(): op class plus /sync, /meta."),
        field("process", pa.string(), "Submitting comm, '?' if unknown."),
        field(
            "group_key",
            pa.int64(),
            "(device, op_class, process) as one integer: the pass's device index << 48 | "
            "class code << 32 | comm code.",
            nullable=False,
        ),
        *[TABLES["bios"].field(name) for name in STAGE_TIME_COLUMNS],
        *[
            field(
                f"{scope}_ns",
                pa.int64(),
                f"Q minus the previous Q (time, then event id order) of the bio's {scope} "
                "group; null for the group's first Q.",
            )
            for scope in SCOPES
        ],
    ],
)
_WRITTEN = pa.schema(
    [
        f.with_type(pa.dictionary(pa.int32(), pa.string())) if f.type == pa.string() else f
        for f in BIO_Q2Q
    ],
    metadata=BIO_Q2Q.metadata,
)


def q2q_file(dataset: Path) -> Path:
    """Where the analysis of dataset keeps its Q2Q file (in its spill folder)."""
    return dataset / SPILL_DIR / "bio_q2q.parquet"


def q2q_batches(dataset: Path, columns: Iterable[str]) -> Iterator[ArrowBatch]:
    """The Q2Q file's columns, a row group at a time, read by the core (the file is its
    writer's): DuckDB took several times the CPU to hand the same columns over as Arrow."""
    reader = ParquetTableReader(
        str(q2q_file(dataset)), pa.schema([_WRITTEN.field(c) for c in columns])
    )
    for group in range(reader.row_groups):
        yield reader.read(group)


class Q2QWriter:
    """Writes each bio's gaps (the `_bio_q2q` rows the pass makes beside `bios`) into the
    spill folder."""

    def __init__(self, dataset: Path) -> None:
        # created before any DuckDB connection spills there (DuckDB removes a spill folder it
        # created itself, with what is in it, when the connection closes)
        (dataset / SPILL_DIR).mkdir(exist_ok=True)
        self.path = q2q_file(dataset)
        # a temporary file, written once and read twice: uncompressed (lz4 cost more CPU to
        # write and to read than the disk it saved), no statistics, the strings as the pass's
        # dictionaries, and every integer delta-encoded (times near their neighbours', small
        # gaps, a device that rarely changes: plain, the file was several times bigger, and
        # copying it into the page cache cost more system CPU than the encoding)
        self.writer = CoreParquet(
            self.path,
            _WRITTEN,
            delta=[f.name for f in _WRITTEN if pa.types.is_integer(f.type)],
            compress=False,
        )

    def write(self, rows: object) -> None:
        """The pass's `_bio_q2q` rows (an Arrow batch of its columns, strings as dictionaries)."""
        self.writer.write_batch(rows)

    def close(self, con: duckdb.DuckDBPyConnection) -> None:
        """Finish the file and define `internal._bio_q2q` over it on con."""
        self.writer.close()
        path = self.path.as_posix().replace("'", "''")
        con.execute(f"CREATE OR REPLACE VIEW {Q2Q_VIEW} AS SELECT * FROM read_parquet('{path}')")

    def abandon(self) -> None:
        close_quietly(self.writer)
