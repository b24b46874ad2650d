"""Tracepoint text gives the same requests as the blk tracer on one real capture.

tests/data/tracepoints (see its README) is a 0.93 s cut of one workload recorded at once
through the ftrace blk tracer and the block tracepoints: the blk tracer's ring buffer read as
binary records (trace.blktrace.N), as text (blk-text: ftrace's context, microseconds) and as
classic text (blk-classic: nanoseconds), and the tracepoints through a tracefs instance
(ftrace), perf script --ns and trace-cmd report -t (all real tools on this kernel, 6.18).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from blkscope.cli import app
from blkscope.ingest.block_events import ingest_events
from blkscope.ingest.tracepoints.tracepoint_line import LineError, parse_context
from blkscope.pipeline import analyze
from blkscope.reports.page import source_limits_html

DATA = Path(__file__).parents[1] / "data" / "tracepoints"
TEXTS = ["blk-classic", "blk-text", "ftrace", "perf", "trace-cmd"]
LOOP0 = "dev_major = 7 AND dev_minor = 0"
EVENTS_ON_LOOP0 = {
    "C": 2006, "D": 2008, "G": 2004, "I": 2004, "M": 17, "P": 1992, "Q": 2007, "U": 1992, "X": 14,
}  # fmt: skip


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each input ingested and analysed once: 'blk' is the binary records, the rest texts."""
    root = tmp_path_factory.mktemp("tp")
    inputs = {"blk": [str(DATA / f"trace.blktrace.{i}.zst") for i in (0, 1)]}
    inputs |= {name: [str(DATA / f"{name}.txt.zst")] for name in TEXTS}
    out = {}
    for name, paths in inputs.items():
        ingest_events(paths, root / name)
        analyze(root / name).close()
        out[name] = root / name
    return out


def _manifest(ds: Path) -> dict[str, Any]:
    return json.loads((ds / "manifest.json").read_text())


def _requests(ds: Path) -> list[tuple[Any, ...]]:
    """(op, sector, nsectors, absolute D time, D2C) of loop0's requests."""
    doc = _manifest(ds)
    base = doc["inputs"][0].get("clock_base_ns") or doc["trace_clock"]["base_time_ns"]
    with duckdb.connect() as con:
        return con.execute(
            f"SELECT op, sector, nsectors, d_time_ns + {base}, d2c_ns FROM "
            f"read_parquet('{ds}/requests.parquet') WHERE {LOOP0} AND d_time_ns IS NOT NULL "
            "ORDER BY d_time_ns"
        ).fetchall()


def _d2c_differences(base: list[tuple], other: list[tuple]) -> list[int]:
    """D2C(other) - D2C(base) per request, paired by op, sector, length and nearest issue."""
    pending: dict[tuple, list[tuple]] = defaultdict(list)
    for r in base:
        pending[r[:3]].append(r)
    out = []
    for r in other:
        cands = pending[r[:3]]
        best = min(cands, key=lambda c: abs(c[3] - r[3]))  # raises when unmatched
        assert abs(best[3] - r[3]) < 100_000
        cands.remove(best)
        if r[4] is None or best[4] is None:  # a request whose completion fell out of the cut
            assert r[4] is best[4] is None
            continue
        out.append(r[4] - best[4])
    assert not any(pending.values())
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", ["blk", *TEXTS])
def test_every_source_sees_the_same_events(name: str, datasets: dict[str, Path]) -> None:
    devices = {d["dev"]: d["by_action"] for d in _manifest(datasets[name])["devices"]}
    assert devices["7,0"] == EVENTS_ON_LOOP0


def test_blk_tracer_text_gives_the_binary_requests_to_the_nanosecond(
    datasets: dict[str, Path],
) -> None:
    blk = _requests(datasets["blk"])
    assert len(blk) == 2008  # 4 of them partial (no C in the cut): 2004 D2C to compare
    # blk_classic prints the ring buffer's nanoseconds: every D2C is the binary's exactly
    assert _d2c_differences(blk, _requests(datasets["blk-classic"])) == [0] * 2004
    # ftrace's context prints microseconds of the same times: within the truncation
    text = _d2c_differences(blk, _requests(datasets["blk-text"]))
    assert len(text) == 2004 and max(abs(d) for d in text) < 1000


@pytest.mark.parametrize(
    ("name", "p50_us", "max_us"), [("perf", 1, 23), ("ftrace", 7, 41), ("trace-cmd", 7, 41)]
)
def test_tracepoint_texts_rebuild_the_same_requests(
    name: str, p50_us: int, max_us: int, datasets: dict[str, Path]
) -> None:
    # Each tracer timestamps a hook in its own probe, one after the other: perf's runs just
    # before the blk tracer's; the tracefs instance's was registered first, and bpftrace's
    # biosnoop probe (a printf) ran between it and the others on block_rq_complete, so its
    # completions come ~7 us earlier. Same requests, D2C apart by the probes' order only.
    diffs = sorted(
        abs(d) for d in _d2c_differences(_requests(datasets["blk"]), _requests(datasets[name]))
    )
    assert len(diffs) == 2004
    assert diffs[len(diffs) // 2] < p50_us * 1000 and diffs[-1] < max_us * 1000


@pytest.mark.parametrize("name", TEXTS)
def test_bios_agree(name: str, datasets: dict[str, Path]) -> None:
    query = f"SELECT count(*), count(q2c_ns), count(d2c_ns), sum(nsectors) FROM bios WHERE {LOOP0}"
    counts = []
    for ds in (datasets["blk"], datasets[name]):
        with duckdb.connect() as con:
            counts.append(
                con.execute(query.replace("bios", f"read_parquet('{ds}/bios.parquet')")).fetchall()
            )
    assert counts[0] == counts[1] == [(2007, 2003, 2003, 64940)]


def test_manifest_says_what_the_tracepoints_lack(datasets: dict[str, Path]) -> None:
    doc = _manifest(datasets["ftrace"])["inputs"][0]
    assert doc["format"] == "ftrace-text"
    assert doc["time_resolution_ns"] == 1000
    assert doc["lacks"] == [
        "seq: the tracepoints carry no per-CPU sequence number (events.seq is 0)",
        "time: printed with 6 decimals, so every time and latency is a multiple of 1000 ns",
        "P/U device: block_plug and block_unplug name no device; each took the device of its "
        "task's nearest G/I/D within 1 ms (4454 placed, 0 with no such request left out)",
        "UT: block_unplug does not tell timer unplugs from explicit ones: all are U",
    ]
    assert doc["other_events"] == {"block_io_done": 2499, "block_io_start": 2376}
    perf = _manifest(datasets["perf"])["inputs"][0]
    assert (perf["format"], perf["time_resolution_ns"]) == ("perf-script", 1)


@pytest.mark.parametrize(
    ("name", "source"),
    [
        ("blk", "blktrace"),
        ("blk-text", "ftrace-blk"),
        ("blk-classic", "ftrace-blk"),
        ("ftrace", "ftrace"),
        ("perf", "perf"),
        ("trace-cmd", "trace-cmd"),
    ],
)
def test_source_column(name: str, source: str, datasets: dict[str, Path]) -> None:
    with duckdb.connect() as con:
        got = con.execute(
            f"SELECT DISTINCT source FROM read_parquet('{datasets[name]}/events.parquet')"
        ).fetchall()
    assert got == [(source,)]


GOOD = "              dd-7       [000] .....    10.000001: block_rq_issue: 8,0 WS 4096 () 12 + 8 be,0,4 [dd]"
BAD_LINES = {
    "              dd-7       [000] .....    10.000002: block_rq_issue: 8,0 WS 4096 12 + 8 [dd]": "block_rq_issue expects 'MAJ,MIN RWBS BYTES (CMD) SECTOR + N [IOPRIO] [COMM]', got '8,0 WS 4096 12 + 8 [dd]'",
    "              dd-7       [000] .....    10.000003: block_bio_queue: 8,0 WQ 12 + 8 [dd]": "block_bio_queue: invalid RWBS 'WQ'",
    "              dd-7       [000] .....   123456789: block_rq_issue: 8,0 WS 4096 () 12 + 8 [dd]": "timestamp 123456789 is not seconds.fraction: a counter trace clock (counter, x86-tsc) cannot be put on a time line",
    "              dd-7       [000] .....    10.000004: block_bio_queue: 8,0 WS 99999999999999999999 + 8 [dd]": "sector 99999999999999999999 does not fit a 64-bit integer",
    "              dd-99999999999999999999 [000] .....    10.000005: block_plug: [dd]": "pid 99999999999999999999 does not fit a 64-bit integer",
    "garbage": "not an ftrace line (TASK-PID [CPU] FLAGS SECONDS: EVENT: BODY)",
    "  8,0    1  10.000005000    7  Z  WS 12 + 8 [dd]": "unknown action 'Z' (expected one of Q G I D C M F P U UT X A R S T B m)",
}  # fmt: skip


def test_bad_tracepoint_lines_are_counted_with_their_reason(tmp_path: Path) -> None:
    src = tmp_path / "trace.txt"
    lines = [GOOD, *BAD_LINES]
    src.write_text("\n".join(lines) + "\n")
    manifest = ingest_events([str(src)], tmp_path / "ds")
    assert (manifest["events"]["count"], manifest["ingest"]["error_lines"]) == (1, len(BAD_LINES))
    errors = pq.read_table(tmp_path / "ds" / "ingest_errors.parquet").to_pylist()
    assert [(e["line_no"], e["raw"], e["reason"]) for e in errors] == [
        (k + 2, line, reason) for k, (line, reason) in enumerate(BAD_LINES.items())
    ]


def test_strict_stops_at_the_first_bad_tracepoint_line(tmp_path: Path) -> None:
    src = tmp_path / "perf.txt"
    src.write_text(
        "     dd     7 [000]    10.000001000:  block:block_bio_queue: 8,0 WS 12 + 8 [dd]\n"
        "     dd     7 [000]    10.000002000:  block:block_bio_queue: 8,0 WS 12 + [dd]\n"
    )
    result = CliRunner().invoke(app, ["ingest", "--strict", str(src), "-o", str(tmp_path / "ds")])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: {src}:2: block_bio_queue expects 'MAJ,MIN RWBS SECTOR + N [COMM]', got "
        "'8,0 WS 12 + [dd]'",
        "hint: drop --strict to record bad lines in ingest_errors and go on",
    ]


def test_ftrace_text_without_block_events_is_named(tmp_path: Path) -> None:
    src = tmp_path / "sched.txt"
    src.write_text(
        "# tracer: nop\n"
        "          <idle>-0       [001] d..2.   100.000001: sched_switch: prev_comm=swapper\n"
        "              dd-7       [000] .....   100.000002: block_plug: [dd]\n"
    )
    result = CliRunner().invoke(app, ["ingest", str(src), "-o", str(tmp_path / "ds")])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        f"error: {src}: ftrace text without block events (only 1 sched_switch)"
    )


def test_the_page_says_what_the_source_lacks(datasets: dict[str, Path]) -> None:
    (html,) = source_limits_html(_manifest(datasets["ftrace"]))
    assert (
        "<li>seq: the tracepoints carry no per-CPU sequence number (events.seq is 0)</li>" in html
    )
    assert "nothing is made up" in html
    assert source_limits_html(_manifest(datasets["blk"])) == []


def test_a_number_of_thousands_of_digits_is_a_counted_line_error(tmp_path: Path) -> None:
    """Found by the fuzz campaign (seed 5): int() refuses over 4,300 digits with a ValueError."""
    lines = (DATA / "fuzz-seeds" / "perf.txt").read_text().splitlines()[:3]
    (tmp_path / "in.txt").write_text(
        "\n".join([lines[0].replace("321182800", "9" * 4301), *lines[1:]]) + "\n"
    )
    ingest_events([str(tmp_path / "in.txt")], tmp_path / "ds")
    errors = pq.read_table(tmp_path / "ds" / "ingest_errors.parquet").to_pylist()
    assert [(e["line_no"], e["reason"]) for e in errors] == [
        (1, "number 99999999999999999999... (4301 digits) is too long for any column")
    ]


PERF_LINE = (
    "        kthreadd  3815 [000]  2182.696452229:                    "
    "block:block_bio_queue: 7,0 WSM 229382 + 2 [jbd2/loop0-8]"
)
FTRACE_LINE = "    jbd2/loop0-8-3815    [000] .....  2182.696452: block_bio_queue: 7,0 WSM 229382 + 2 [jbd2/loop0-8]"  # fmt: skip


def test_a_megabyte_blank_run_inside_the_context_is_refused_at_once() -> None:
    """The fuzz campaign's tracepoint hang (seed 12, tracepoint text input 2358): a perf line
    whose task name was cut by 1 MiB of blanks ran for hours in a pattern that could split the
    blank run many ways. The context is now looked for in a line's first 512 characters."""
    perf = parse_context(PERF_LINE, perf=True)
    assert perf is not None
    assert (perf.pid, perf.cpu, perf.time_ns, perf.event) == (
        3815,
        0,
        2182696452229,
        "block_bio_queue",
    )
    assert perf.body == "7,0 WSM 229382 + 2 [jbd2/loop0-8]"
    ftrace = parse_context(FTRACE_LINE, perf=False)
    assert ftrace is not None
    assert (ftrace.pid, ftrace.time_ns, ftrace.event) == (3815, 2182696452000, "block_bio_queue")
    blanks = " " * (1 << 20)
    with pytest.raises(LineError, match="not a perf script line"):
        parse_context(PERF_LINE[:11] + blanks + PERF_LINE[11:], perf=True)
    assert parse_context(FTRACE_LINE[:8] + blanks + FTRACE_LINE[8:], perf=False) is None
