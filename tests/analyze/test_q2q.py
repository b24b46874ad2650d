"""Q2Q gaps from the streaming pass (rust/src/pass/q2q.rs) against their definition: the gap to
the previous Q of the bio's group, in (q_time_ns, q_eid) order, per process, class, op and
device, which `_bio_stages.sql` computed with four windows over every bio until the pass took
it over."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from blkscope.analyze.build import caches_plug_time
from blkscope.analyze.memory import bound_memory
from blkscope.analyze.stream.q2q import Q2Q_VIEW, SCOPES
from blkscope.analyze.stream.run import OpClassNames, stream_tables
from blkscope.analyze.views import connect, register, register_table
from blkscope.concepts import STAGE_TIME_COLUMNS
from blkscope.ingest.block_events import ingest_blkparse
from blkscope.store.manifest import read_manifest
from tests.analyze.conftest import DATA
from tests.conftest import capture_folder

# the windows _bio_stages.sql had (main 8ed1fdc), over _bio_class
WINDOWS = """
SELECT q_eid, dev_major, dev_minor, op_class, process,
    q_time_ns - lag(q_time_ns) OVER (PARTITION BY dev_major, dev_minor, op_class, process
                                     ORDER BY q_time_ns, q_eid) AS process_ns,
    q_time_ns - lag(q_time_ns) OVER (PARTITION BY dev_major, dev_minor, op_class
                                     ORDER BY q_time_ns, q_eid) AS class_ns,
    q_time_ns - lag(q_time_ns) OVER (PARTITION BY dev_major, dev_minor, op_base
                                     ORDER BY q_time_ns, q_eid) AS op_ns,
    q_time_ns - lag(q_time_ns) OVER (PARTITION BY dev_major, dev_minor
                                     ORDER BY q_time_ns, q_eid) AS device_ns
FROM internal._bio_class
"""
PASS = f"SELECT q_eid, dev_major, dev_minor, op_class, process, {', '.join(f'{s}_ns' for s in SCOPES)} FROM {Q2Q_VIEW}"
# what else the pass's file repeats for _bio_stages: the bio's group and stage times
BIO = f"q_eid, dev_major, dev_minor, op_base, op_class, process, {', '.join(STAGE_TIME_COLUMNS)}"


def _stream(
    inputs: list[str], ds: Path, modules: tuple[str, ...] = ("_bio_class",)
) -> duckdb.DuckDBPyConnection:
    """Ingest inputs into ds and run the streaming pass on it the way analyze does; the
    connection sees bios, _bio_class and the pass's internal._bio_q2q."""
    ingest_blkparse(inputs, ds)
    return _stream_dataset(ds, modules)


def _stream_dataset(
    ds: Path, modules: tuple[str, ...] = ("_bio_class",)
) -> duckdb.DuckDBPyConnection:
    manifest = read_manifest(ds)
    done: set[str] = set()
    con = connect(ds, manifest, done=done)
    bound_memory(con, ds)
    stream_tables(
        con,
        ds,
        caches_plug_time(manifest.editable()),
        int(manifest.editable().get("events", {}).get("count", 0)),
    )
    register_table(con, "bios", ds / "bios.parquet")
    register(con, done, modules)
    return con


def _sample_inputs() -> list[tuple[str, list[str]]]:
    samples = [(p.name.split(".")[0], [str(p)]) for p in sorted(DATA.glob("*.blkparse.txt"))]
    return samples + [
        (name, [str(capture_folder(name) / "blkparse.txt.zst")])
        for name in ("loop-split-merge-tail", "mq-writeback-30s")
    ]


@pytest.mark.parametrize(("name", "inputs"), _sample_inputs(), ids=lambda v: str(v)[:40])
def test_the_pass_gives_the_gaps_of_the_four_windows(
    tmp_path: Path, name: str, inputs: list[str]
) -> None:
    """Every sample and both fixtures: one row per bio, and the same gaps (EXCEPT ALL both
    ways), including Qs at the same nanosecond (q_eid breaks the tie), split and remapped bios
    and Qs without a comm."""
    con = _stream(inputs, tmp_path / "ds")
    bios = con.sql("SELECT count(*) FROM bios").fetchall()[0][0]
    assert con.sql(f"SELECT count(*), count(DISTINCT q_eid) FROM {Q2Q_VIEW}").fetchall() == [
        (bios, bios)
    ]
    for a, b in ((PASS, WINDOWS), (WINDOWS, PASS)):
        assert con.sql(f"({a}) EXCEPT ALL ({b})").fetchall() == [], name
    # each bio's group and stage times as _bio_class has them, and one group key per group
    ours, theirs = f"SELECT {BIO} FROM {Q2Q_VIEW}", f"SELECT {BIO} FROM internal._bio_class"
    for a, b in ((ours, theirs), (theirs, ours)):
        assert con.sql(f"({a}) EXCEPT ALL ({b})").fetchall() == [], name
    keys = con.sql(
        f"SELECT count(DISTINCT group_key), count(DISTINCT (dev_major, dev_minor, op_class, "
        f"process)), count(DISTINCT (group_key, dev_major, dev_minor, op_class, process)) "
        f"FROM {Q2Q_VIEW}"
    ).fetchall()[0]
    assert keys[0] == keys[1] == keys[2], name
    # every group's first Q has no gap; every other Q has one
    groups = con.sql(
        "SELECT count(DISTINCT (dev_major, dev_minor, op_class, process)), "
        "count(DISTINCT (dev_major, dev_minor)) FROM internal._bio_class"
    ).fetchall()[0]
    nulls = con.sql(
        f"SELECT count(*) FILTER (process_ns IS NULL), count(*) FILTER (device_ns IS NULL) "
        f"FROM {Q2Q_VIEW}"
    ).fetchall()[0]
    assert nulls == groups
    con.close()


def test_ties_and_qs_without_a_comm(tmp_path: Path) -> None:
    """Qs at the same nanosecond are ordered by event id (a gap of 0 to the earlier line), and
    a Q without a comm (none of blkparse's Q lines lacks one; other inputs may) is process '?'
    together with a Q whose comm is '?'. mq30-request-merge with three of kworker/u8:4's events
    moved or renamed: Q 320878464 (line 11), its G and Q 320878480 at one nanosecond; the Q of
    320878480 without a comm, the Q of 320878472 (line 15) with comm '?'."""
    ds = tmp_path / "ds"
    ingest_blkparse([str(DATA / "mq30-request-merge.blkparse.txt")], ds)
    events = pq.read_table(ds / "events.parquet")
    line = events["line_no"].to_numpy()
    time = events["time_ns"].to_numpy().copy()
    time[(line == 12) | (line == 13)] = time[line == 11][0]
    comm = events["comm"].to_pylist()
    for n, value in ((13, None), (15, "?")):
        comm[int(np.flatnonzero(line == n)[0])] = value
    events = events.set_column(events.schema.get_field_index("time_ns"), "time_ns", pa.array(time))
    events = events.set_column(
        events.schema.get_field_index("comm"), "comm", pa.array(comm, type=pa.string())
    )
    pq.write_table(events, ds / "events.parquet")
    con = _stream_dataset(ds)
    for a, b in ((PASS, WINDOWS), (WINDOWS, PASS)):
        assert con.sql(f"({a}) EXCEPT ALL ({b})").fetchall() == []
    gaps = con.sql(
        f"SELECT b.sector, q.process, q.process_ns, q.class_ns, q.device_ns FROM {Q2Q_VIEW} q "
        "JOIN bios b USING (q_eid) WHERE b.sector IN (320878464, 320878480, 320878472) "
        "ORDER BY b.q_eid"
    ).fetchall()
    t11, t15 = int(time[line == 11][0]), int(time[line == 15][0])
    assert gaps == [
        (320878464, "kworker/u8:4", t11 - int(time[line == 8][0]), t11 - int(time[line == 8][0]),
         t11 - int(time[line == 8][0])),
        (320878480, "?", None, 0, 0),  # the first '?' Q; its class's previous Q: line 11
        (320878472, "?", t15 - t11, t15 - t11, t15 - t11),
    ]  # fmt: skip
    con.close()


class _Classes:
    """What OpClassNames hands the pass: (op_class, bio_op_class) names per RWBS."""

    def __init__(self) -> None:
        self.names: dict[str | None, list[tuple[str, str]]] = {}

    def add_op_classes(self, rwbs: str | None, names: list[tuple[str, str]]) -> None:
        assert rwbs not in self.names, "each RWBS once"
        self.names[rwbs] = names


def test_op_classes_come_from_the_sql_macros_once_per_rwbs() -> None:
    """The pass hears each RWBS's classes once, before its first batch, with the classes the
    SQL macros give (the suffixes are defined only there), for each op letter with and without
    a sector; a Q without RWBS is classified first."""
    con = duckdb.connect()
    register(con, set(), ["op_class"])
    seen = _Classes()
    names = OpClassNames(con, cast(Any, seen))
    names.cover(pa.record_batch({"rwbs": pa.array(["WS", "R", "WS"]).dictionary_encode()}))
    assert list(seen.names) == [None, "WS", "R"]
    names.cover(
        pa.record_batch({"rwbs": pa.array(["FWFSM", "R", "RM", "WFS"]).dictionary_encode()})
    )
    assert list(seen.names) == [None, "WS", "R", "FWFSM", "RM", "WFS"]

    def name(flags: str | None, op: str, sector: bool) -> str:
        return seen.names[flags]["RWDN".index(op) * 2 + (0 if sector else 1)][1]

    assert name("WS", "W", True) == "write/sync"
    assert name("R", "R", True) == "read"
    assert name("FWFSM", "W", True) == "write/sync/meta"
    assert name("FWFSM", "W", False) == "flush/sync/meta"  # a preflush without data
    assert name("WFS", "W", True) == "write/sync"
    assert name("RM", "R", True) == "read/meta"
    assert name(None, "N", False) == "flush"
    assert seen.names["WS"][2] == ("write", "write/sync")  # op_class, bio_op_class
    assert SCOPES == ("process", "class", "op", "device")
