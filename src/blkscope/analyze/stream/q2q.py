"""Q2Q gaps, kept by the streaming pass: the time from the previous Q of a bio's reporting group
to its own Q, at the four scopes stage_stats reports Q2Q at (process: device x op class x
process, class: device x op class, op: device x op, device).

The pass meets every Q in (time, event id) order, the order the gaps are defined in, so the
previous Q of a group is one time per group (a keyed table, `d_q2q`): memory follows the number
of groups, not the trace. These were four window sorts over every bio in `_bio_stages.sql`
(half of its CPU on the 10x fio capture, each window partition on one thread).

A bio's op class is not spelled out here: the `op_class` and `bio_op_class` macros
(blkscope/concepts.py) stay its one definition. DuckDB evaluates them once per RWBS string the
event coder hands out (x op letter x whether the Q has a sector) into `OpClasses.lookup`, which
grows with the coder's dictionary; the pass reads a Q's class there.

The gaps leave the pass with each bio and are written, one row per bio, to an internal Parquet
file in the analysis's spill folder (never part of the dataset), which `_bio_stages.sql` reads
as `internal._bio_q2q`. Each row also carries what the bio's other latencies need: its
reporting group, as the strings and as one integer key (`group_key`: device, class and comm
codes), and its stage times as `bios` has them. `_bio_stages` reads this file alone, twice, and
joins on the integer key; reading `bios` and the gaps' file instead, each time deriving the op
class from every bio's RWBS and joining both on four strings, was ~40 % of its CPU."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from blkscope.analyze.memory import SPILL_DIR
from blkscope.analyze.stream import layout as L
from blkscope.analyze.stream.events import EventCoder
from blkscope.analyze.stream.jit import inline_kernel
from blkscope.analyze.stream.keyed import tab_find, tab_slot
from blkscope.analyze.stream.layout import BI_Q2Q, BO_Q2Q, E_COMM, E_OP, E_RWBS, E_SEC, E_T, NULL
from blkscope.analyze.stream.state import State
from blkscope.concepts import STAGE_TIME_COLUMNS
from blkscope.schemas import TABLES
from blkscope.schemas._declare import field, schema
from blkscope.store.writer import close_quietly

# scope codes of _bio_stages (1..4), in the order of the gap columns (BI_Q2Q + code - 1)
SCOPES = ("process", "class", "op", "device")
N_SCOPES = len(SCOPES)
# coalesce(comm, '?') (_bio_class.sql): the coder's first comm code, so that a Q without a comm
# and one whose comm is '?' share a process group
UNKNOWN_COMM = "?"
UNKNOWN_COMM_CODE = 0
_BASE_BITS = 4  # a lookup entry: class code << 4 | op_class code (5 of them)
_COLUMNS = 8  # lookup columns: op code (R W D N) * 2 + (1 if the Q has no sector)
Q2Q_VIEW = "internal._bio_q2q"

_KEY_CLASS_SHIFT, _KEY_DEV_SHIFT = 32, 48  # group_key: dev << 48 | class << 32 | comm code

BIO_Q2Q = schema(
    "_bio_q2q",
    "Internal (analyze only): each bio's Q2Q gaps, reporting group and stage times, from the "
    "streaming pass (stream/q2q.py).",
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


class OpClasses:
    """Op class codes for the pass: `lookup[rwbs code + 1, op code * 2 + no sector]` is
    class code << 4 | op_class code (row 0: a Q without RWBS); `names[class code]` the class."""

    def __init__(self, coder: EventCoder) -> None:
        self.coder = coder
        coder.comm.encode(pa.array([UNKNOWN_COMM], type=pa.string()))
        if coder.comm.values[UNKNOWN_COMM_CODE] != UNKNOWN_COMM:
            raise AssertionError("the comm dictionary must start with '?'")
        self.names: list[str] = []
        self.base_names: list[str] = []
        self._codes: dict[str, int] = {}
        self._bases: dict[str, int] = {}
        self.lookup = np.zeros((0, _COLUMNS), dtype=np.int64)

    def cover(self, con: duckdb.DuckDBPyConnection) -> np.ndarray:
        """The lookup, grown to every RWBS code the coder has handed out so far."""
        values = list(self.coder.rwbs.values)
        have, want = len(self.lookup), len(values) + 1
        if have >= want:
            return self.lookup
        rows = np.arange(have, want)
        flags = [None if r == 0 else values[r - 1] for r in rows]
        combos = pa.table({
            "i": np.arange(len(rows) * _COLUMNS),
            "op": [L.OPS[c // 2] for _ in rows for c in range(_COLUMNS)],
            "flags": pa.array([f for f in flags for _ in range(_COLUMNS)], type=pa.string()),
            "sector": pa.array(
                [None if c % 2 else 0 for _ in rows for c in range(_COLUMNS)], type=pa.int64()
            ),
        })  # fmt: skip
        con.register("_q2q_rwbs", combos)
        try:
            found = con.execute(
                "SELECT b, bio_op_class(b, flags) FROM (SELECT i, flags, "
                "op_class(op, flags, sector) AS b FROM _q2q_rwbs) ORDER BY i"
            ).fetchall()
        finally:
            con.unregister("_q2q_rwbs")
        codes = [
            self._code(self._codes, name, self.names) << _BASE_BITS
            | self._code(self._bases, base, self.base_names)
            for base, name in found
        ]
        grown = np.zeros((want, _COLUMNS), dtype=np.int64)
        grown[:have] = self.lookup
        grown[have:] = np.array(codes, dtype=np.int64).reshape(len(rows), _COLUMNS)
        self.lookup = grown
        return grown

    @staticmethod
    def _code(codes: dict[str, int], name: str, names: list[str] | None) -> int:
        if name not in codes:
            codes[name] = len(codes)
            if names is not None:
                names.append(name)
        return codes[name]

    def classes(self, bo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The class and op_base codes of each bio row (its Q's RWBS, op and sector)."""
        rwbs = bo[:, L.BO_RWBS]
        row = np.where(rwbs == L.NULL, 0, rwbs + 1)
        col = bo[:, L.BO_OP] * 2 + (bo[:, L.BO_SEC] < 0)
        v = self.lookup[row, col]
        return v >> _BASE_BITS, v & ((1 << _BASE_BITS) - 1)


@inline_kernel
def _gap(S: State, b: int, k: int, ka: int, kb: int, t: int) -> None:
    s = tab_find(S.d_q2q, ka, kb)
    if s < 0:
        S.bi[b, BI_Q2Q + k] = NULL
        s = tab_slot(S.d_q2q, ka, kb)
    else:
        S.bi[b, BI_Q2Q + k] = t - S.d_q2q[s, 2]
    S.d_q2q[s, 2] = t


@inline_kernel  # one call more per Q, with State's ~45 arrays as arguments, cost ~1 CPU-s at 10x
def q2q_at_q(S: State, b: int, ev: np.ndarray, i: int, dev: int) -> None:
    """Bio b was just queued by event i: its gaps to the previous Q of each of its groups."""
    rwbs = ev[i, E_RWBS]
    v = S.qclass[0 if rwbs == NULL else rwbs + 1, ev[i, E_OP] * 2 + (ev[i, E_SEC] < 0)]
    cls, base = v >> _BASE_BITS, v & ((1 << _BASE_BITS) - 1)
    comm = ev[i, E_COMM]
    top = dev << 48
    t = ev[i, E_T]
    # keys: device in the top 16 bits, then the scope code, then the class or op_class code
    _gap(S, b, 0, top | (1 << 44) | cls, UNKNOWN_COMM_CODE if comm == NULL else comm, t)
    _gap(S, b, 1, top | (2 << 44) | cls, -1, t)
    _gap(S, b, 2, top | (3 << 44) | base, -1, t)
    _gap(S, b, 3, top | (4 << 44), -1, t)


@inline_kernel
def emit_q2q(S: State, b: int, n: int) -> None:
    """Bio b is output row n: its gaps go with it."""
    for k in range(N_SCOPES):
        S.bo[n, BO_Q2Q + k] = S.bi[b, BI_Q2Q + k]


class Q2QWriter:
    """Writes each bio's gaps (the `_bio_q2q` rows the pass makes beside `bios`) into the
    spill folder."""

    def __init__(self, dataset: Path) -> None:
        # created before any DuckDB connection spills there (DuckDB removes a spill folder it
        # created itself, with what is in it, when the connection closes)
        (dataset / SPILL_DIR).mkdir(exist_ok=True)
        self.path = dataset / SPILL_DIR / "bio_q2q.parquet"
        # a temporary file: lz4, no statistics, and dictionaries only for the strings (Parquet
        # tries one on every column by default, and gives it up on times and ids: 3x the CPU)
        self.writer = pq.ParquetWriter(
            self.path,
            _WRITTEN,
            compression="lz4",
            use_dictionary=["op_base", "op_class", "process"],
            write_statistics=False,
        )

    def write(self, rows: object) -> None:
        """The pass's `_bio_q2q` rows (an Arrow batch)."""
        batch = pa.record_batch(rows)
        if batch.num_rows:
            self.writer.write_batch(pa.RecordBatch.from_arrays(batch.columns, schema=_WRITTEN))

    def close(self, con: duckdb.DuckDBPyConnection) -> None:
        """Finish the file and define `internal._bio_q2q` over it on con."""
        self.writer.close()
        path = self.path.as_posix().replace("'", "''")
        con.execute(f"CREATE OR REPLACE VIEW {Q2Q_VIEW} AS SELECT * FROM read_parquet('{path}')")

    def abandon(self) -> None:
        close_quietly(self.writer)


def _strings(codes: np.ndarray, values: list[str]) -> pa.DictionaryArray:
    dictionary = pa.array(list(values) or [""], type=pa.string())
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), dictionary)
