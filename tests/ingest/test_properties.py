"""Property tests: any row blkparse could print survives render -> parse -> Parquet -> render."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blkscope.ingest.blkparse.event_line import (
    ACTIONS,
    empty_row,
    parse_event_line,
    render_event,
    render_rwbs,
)
from blkscope.ingest.block_events import ingest_blkparse

u32 = st.integers(0, 2**32 - 1)
comms = st.text(
    st.characters(blacklist_characters="\n\r\x00", blacklist_categories=["Cs"]), max_size=16
)
rwbs = st.builds(
    render_rwbs,
    st.sampled_from("RWDN"),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)


@st.composite
def event_rows(draw: st.DrawFn) -> dict[str, Any]:
    action = draw(st.sampled_from(ACTIONS))
    row = {
        **empty_row(),  # every optional column empty, as the parser starts a row
        "dev_major": draw(st.integers(0, 4095)),
        "dev_minor": draw(st.integers(0, 2**20 - 1)),
        "cpu": draw(st.integers(0, 511)),
        "seq": draw(st.integers(0, 2**31 - 1)),
        "time_ns": draw(st.integers(0, 10**14)),
        "pid": draw(u32),
        "action": action,
        "rwbs": draw(rwbs),
    }
    sector = draw(st.integers(0, 2**40))
    if action in "QGIDBMFS" and draw(st.booleans()):
        row["sector"], row["nsectors"] = sector, draw(st.integers(1, 2**16))
    if action in ("C", "R"):
        row["sector"], row["nsectors"] = sector, draw(st.integers(0, 2**16))
        row["error"] = draw(st.integers(-133, 0))
    elif action == "X":
        row["sector"], row["split_sector"] = sector, draw(st.integers(0, 2**40))
    elif action == "A":
        row.update(
            sector=sector,
            nsectors=draw(st.integers(1, 2**16)),
            remap_dev_major=draw(st.integers(0, 4095)),
            remap_dev_minor=draw(st.integers(0, 255)),
            remap_sector=draw(st.integers(0, 2**40)),
        )
    elif action == "m":
        row["message"] = draw(
            st.text(st.characters(whitelist_categories=("L", "N", "Zs")), max_size=40)
        )
    if action not in ("C", "R", "A", "m"):
        row["comm"] = draw(comms)
    if action in ("U", "UT", "T"):
        row["depth"] = draw(st.integers(0, 2**31 - 1))
    if action in ("D", "C") and row["sector"] is not None and draw(st.booleans()):
        row["elapsed"] = draw(st.integers(0, 10**12))
    return row


def _comparable(row: dict[str, Any]) -> dict[str, Any]:
    keys = (
        "dev_major",
        "dev_minor",
        "cpu",
        "seq",
        "time_ns",
        "pid",
        "action",
        "rwbs",
        "sector",
        "nsectors",
        "split_sector",
        "remap_dev_major",
        "remap_dev_minor",
        "remap_sector",
        "error",
        "comm",
        "depth",
        "message",
        "pc_bytes",
        "pdu",
        "elapsed",
    )
    return {k: row[k] for k in keys}


@given(event_rows())
def test_render_then_parse_gives_the_row_back(row: dict[str, Any]) -> None:
    line = render_event(row)
    assert _comparable(parse_event_line(line)) == _comparable(row)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(event_rows(), min_size=1, max_size=40))
def test_lines_survive_ingest_to_parquet_and_back(
    tmp_path: Path, rows: list[dict[str, Any]]
) -> None:
    lines = [render_event(r) for r in rows]
    src = tmp_path / "in.txt"
    src.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    out = tmp_path / "ds"
    ingest_blkparse([str(src)], out)
    table = pq.read_table(out / "events.parquet")
    back = table.to_pylist()
    assert [r["line_no"] for r in back] == list(range(1, len(rows) + 1))
    assert [_comparable(r) for r in back] == [_comparable(r) for r in rows]
    assert [render_event(r) for r in back] == lines
