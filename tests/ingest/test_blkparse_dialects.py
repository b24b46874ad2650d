"""blkparse text in every dialect users bring, each line written here from blkparse's source.

blkparse_fmt.c process_default() prints "%3d,%-3d %2d %8d %5d.%09lu %5u %2s %3s " then the
tail; blkparse.c handle_notify() prints a cgroup-tagged message as
"%3d,%-3d %2d %8s %5d.%09lu %5u %s%2s %3s %s" with the cgroup as "%x,%x "; fill_rwbs() of
blkparse <= 1.0 and kernels <= 2.6.36 print W/R/N then A, B (barrier), S, M; newer kernels'
blk_fill_rwbs() add DE, F (flush op), WZ, Z?, E and U. dump_io_stats() prints each summary row
as two `Label: value` pairs split by a tab; blkparse -s first prints one block per process
(`comm (pid)`, its counts, then Allocation/Dispatch/Completion wait) and a blank line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blkscope.ingest.blkparse.event_line import ACTION_CODE, parse_event_line, render_event
from blkscope.ingest.block_events import ingest_blkparse
from tests.ingest.blkparse_lines import render_table
from tests.ingest.test_properties import _comparable, event_rows

DIALECT_LINES: dict[str, dict[str, Any]] = {
    # barrier flag B (kernels before 2.6.37)
    "  8,0    1        5     0.000102310  4162  Q WBS 1024 + 8 [kjournald]": {
        "rwbs": "WBS", "op": "W", "sync": True, "flush": False, "sector": 1024,
    },
    "  8,0    0        9     0.000200000  4162  D  RB 2048 + 8 [cat]": {"rwbs": "RB", "op": "R"},
    "  8,0    0       10     0.000300000  4162  D RAB 4096 + 8 [cat]": {"readahead": True},
    # newer kernels' letters
    "259,0    3       17     0.001000000   812  Q  WZ 4096 + 2048 [mkfs.xfs]": {"op": "W"},
    "259,0    3       18     0.001100000   812  Q  DE 8192 + 2048 [blkdiscard]": {"op": "D"},
    "259,0    3       19     0.001200000   812  D  FF [kworker/3:1H]": {
        "op": "N", "flush": True, "sector": None,
    },
    "259,0    3       20     0.001300000   812  Q WSU 512 + 16 [xfs_io]": {"op": "W", "sync": True},
    "259,0    3       21     0.001400000   812  D  ZA 1048576 + 8 [zonefs]": {"op": "W"},
    # the cgroup column of a cgroup-tagged message
    "  8,0    2        0     0.000012707 39952 1,0  m   N bfq39952SA / alloced": {
        "cgroup": "1,0", "message": "bfq39952SA / alloced", "pid": 39952, "action": "m",
    },
    "  8,0    2        0     0.000013000     0 1a2f,3  m   N bfq0A charge": {"cgroup": "1a2f,3"},
}  # fmt: skip


@pytest.mark.parametrize("line", sorted(DIALECT_LINES))
def test_dialect_lines_parse_and_render_back(line: str) -> None:
    row = parse_event_line(line)
    assert {k: row[k] for k in DIALECT_LINES[line]} == DIALECT_LINES[line]
    assert render_event(row) == line


COPIED = {
    # a leading space lost
    " 8,0    1        5     0.000102310  4162  Q  WS 1024 + 8 [dd]": (8, "Q", 1024, "dd"),
    # no leading spaces at all, single spaces (copied from a web page)
    "8,0 1 5 0.000102310 4162 Q WS 1024 + 8 [dd]": (8, "Q", 1024, "dd"),
    # tabs between the columns
    "8,0\t1\t5\t0.000102310\t4162\tC\tWS\t1024 + 8 [0]": (8, "C", 1024, None),
    # the ^C that stopped blktrace, glued to the next line
    "^C  8,0    1        5     0.000102310  4162  D  WS 1024 + 8 [dd]": (8, "D", 1024, "dd"),
    # mail's CRLF
    "  8,0    1        5     0.000102310  4162  U   N [dd] 3\r": (8, "U", None, "dd"),
    # wide columns pushed right by one more space than blkparse prints
    "  8,0    1        5     0.000102310  4162   G  WS 1024 + 8 [dd]": (8, "G", 1024, "dd"),
}


def test_copied_lines_parse_and_keep_their_bytes(tmp_path: Path) -> None:
    src = tmp_path / "copied.txt"
    lines = sorted(COPIED)
    src.write_bytes(b"".join(line.encode() + b"\n" for line in lines))
    ingest_blkparse([str(src)], tmp_path / "ds")
    events = pq.read_table(tmp_path / "ds" / "events.parquet")
    rows = events.to_pylist()
    assert [(r["dev_major"], r["action"], r["sector"], r["comm"]) for r in rows] == [
        COPIED[line] for line in lines
    ]
    assert all(r["raw_line"] is not None for r in rows)
    assert list(render_table(events)) == lines


def _summary_block(label: str, tab: str = "\t", lead: str = " ") -> list[str]:
    """One dump_io_stats() block, as blkparse prints it (no depth rows: a process's)."""

    def row(a: str, x: str, b: str, y: str) -> str:
        return f"{lead}{a}{x}{tab} {b}{y}"

    return [
        label,
        row("Reads Queued:    ", "       1,        4KiB", "Writes Queued:    ", "       6,    47104KiB"),
        row("Read Dispatches: ", "       0,        0KiB", "Write Dispatches: ", "     176,    11264KiB"),
        row("Reads Requeued:  ", "       0" + tab, "Writes Requeued:  ", "       0"),
        row("Reads Completed: ", "       0,        0KiB", "Writes Completed: ", "       0,        0KiB"),
        row("Read Merges:     ", "       0,        0KiB", "Write Merges:     ", "       0,        0KiB"),
        row("IO unplugs:      ", "       6        ", "Timer unplugs:    ", "      34"),
        row("Allocation wait: ", "       0        ", "Allocation wait:  ", "       2"),
        row("Dispatch wait:   ", "       5        ", "Dispatch wait:    ", "       7"),
        row("Completion wait: ", "      11        ", "Completion wait:  ", "      13"),
    ]  # fmt: skip


EVENT = "  7,0    1        5     0.000102310 11236  Q  WS 1024 + 8 [dd]"


def _per_process_capture(tab: str = "\t", lead: str = " ") -> str:
    lines = [EVENT, *_summary_block("dd (11236)", tab, lead)]
    lines += [*_summary_block("kworker/u8:1 (32, ...)", tab, lead), ""]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("tab", "lead"), [("\t", " "), ("        ", " "), ("\t", ""), ("  ", "")],
    ids=["blkparse", "tabs-to-spaces", "lost-leading-space", "both"],
)  # fmt: skip
def test_per_process_blocks_in_any_spacing(tab: str, lead: str, tmp_path: Path) -> None:
    src = tmp_path / "s.txt"
    src.write_text(_per_process_capture(tab, lead))
    manifest = ingest_blkparse([str(src)], tmp_path / "ds")
    assert manifest["inputs"][0]["error_lines"] == 0
    assert manifest["inputs"][0]["summary_lines"] == 21
    summary = pq.read_table(tmp_path / "ds" / "blkparse_summary.parquet").to_pylist()
    dd = {r["metric"]: r["value"] for r in summary if r["block"] == "process dd (11236)"}
    assert dd["writes_queued_kib"] == 47104
    assert (dd["allocation_wait_read"], dd["allocation_wait_write"]) == (0, 2)
    assert (dd["completion_wait_read"], dd["completion_wait_write"]) == (11, 13)
    assert len(dd) == 26
    assert {r["block"] for r in summary} == {"process dd (11236)", "process kworker/u8:1 (32, ...)"}
    assert {(r["device"], r["dev_major"]) for r in summary} == {("", None)}


def test_ctrl_c_before_a_summary_header(tmp_path: Path) -> None:
    src = tmp_path / "c.txt"
    block = _summary_block("^CCPU1 (7,0):")
    src.write_text("\n".join([EVENT, *block]) + "\n")
    manifest = ingest_blkparse([str(src)], tmp_path / "ds")
    assert (manifest["inputs"][0]["summary_lines"], manifest["ingest"]["error_lines"]) == (10, 0)
    summary = pq.read_table(tmp_path / "ds" / "blkparse_summary.parquet").to_pylist()
    assert {(r["block"], r["cpu"], r["dev_major"]) for r in summary} == {("CPU1", 1, 7)}


def test_a_process_header_with_nothing_after_it_is_an_error(tmp_path: Path) -> None:
    src = tmp_path / "p.txt"
    src.write_text(f"{EVENT}\nfoo (12)\n{EVENT}\n")
    manifest = ingest_blkparse([str(src)], tmp_path / "ds")
    errors = pq.read_table(tmp_path / "ds" / "ingest_errors.parquet").to_pylist()
    assert [(e["line_no"], e["reason"]) for e in errors] == [
        (2, "not an event, and no blkparse -s statistics follow it")
    ]
    assert manifest["inputs"][0]["summary_lines"] == 0


_SEPARATORS = st.sampled_from([" ", "  ", "\t", " \t", "   "])


@st.composite
def copied_lines(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    """A row blkparse could print, and its line as a terminal, web page or mail mangles it."""
    row = draw(event_rows())
    line = render_event(row)
    t = row["time_ns"]
    head = "%3d,%-3d %2d %8d %5d.%09d %5d %2s %3s " % (  # noqa: UP031 - blkparse's printf
        row["dev_major"], row["dev_minor"], row["cpu"], row["seq"], t // 10**9, t % 10**9,
        row["pid"], row["action"], row["rwbs"],
    )  # fmt: skip
    tail, fields = line[len(head) :], head.split()
    lead = draw(st.sampled_from(["", " ", "  ", "^C", "^C  "]))
    mangled = lead + "".join(t + draw(_SEPARATORS) for t in fields[:-1]) + fields[-1] + " " + tail
    if row["action"] != "m" and draw(st.booleans()):
        mangled += "\r"
    return row, mangled


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(copied_lines(), min_size=1, max_size=20))
def test_any_spacing_is_read_and_given_back_byte_for_byte(
    tmp_path: Path, cases: list[tuple[dict[str, Any], str]]
) -> None:
    src = tmp_path / "odd.txt"
    src.write_bytes(b"".join(line.encode("utf-8") + b"\n" for _, line in cases))
    ingest_blkparse([str(src)], tmp_path / "ds")
    events = pq.read_table(tmp_path / "ds" / "events.parquet")
    assert [_comparable(r) for r in events.to_pylist()] == [_comparable(r) for r, _ in cases]
    assert list(render_table(events)) == [line for _, line in cases]
    assert set(ACTION_CODE) >= {r["action"] for r, _ in cases}


def test_a_process_name_that_is_not_utf8_is_replaced(tmp_path: Path) -> None:
    src = tmp_path / "s.txt"
    text = _per_process_capture().replace("dd (11236)", "d\udcffd (11236)")
    src.write_bytes(text.encode("utf-8", "surrogateescape"))
    ingest_blkparse([str(src)], tmp_path / "ds")
    summary = pq.read_table(tmp_path / "ds" / "blkparse_summary.parquet").to_pylist()
    assert "process d\ufffdd (11236)" in {r["block"] for r in summary}
