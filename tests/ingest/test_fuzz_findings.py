"""What the seed-7 fuzz campaign found after the issue 14/19 merges, each root cause with the
input that caused it (`python -m tests.fuzz.campaign --seed 7 --no-exhaustive --replay
FORMAT:K` rebuilds the whole input) and the exact message."""

from __future__ import annotations

import warnings
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from blkscope.errors import ParseError
from blkscope.ingest.blkparse.event_line import parse_event_line, render_event
from blkscope.ingest.block_events import ingest_events
from blkscope.ingest.logs.histogram import parse_histogram
from blkscope.ingest.logs.registry import PARSERS
from blkscope.ingest.tracepoints.tracepoint_text import trace_text_kind
from tests.conftest import ROOT

SEEDS = ROOT / "tests" / "data" / "tracepoints" / "fuzz-seeds"
LONG = "9" * 5000
TOO_LONG = "number 99999999999999999999... (5000 digits) is too long for any column"


def _errors(folder: Path) -> list[tuple[int, str]]:
    rows = pq.read_table(folder / "ingest_errors.parquet").to_pylist()
    return [(e["line_no"], e["reason"]) for e in rows]


@pytest.mark.parametrize(
    ("seed", "line_no", "old", "new"),
    [
        # input 89: the classic line's major number (event_line.header_row's int())
        ("blk-classic.txt", 5, "  7,0    1  2182.693604756", f"  {LONG},0    1  2182.693604756"),
        # input 629: a Q's sector in the blk tracer's text (parse_tail's _int)
        ("blk-text.txt", 3, "Q  WS 32770 + 4096", f"Q  WS {LONG} + 4096"),
        # input 1080: an unplug's depth (parse_tail's int())
        ("blk-text.txt", 8, "U   N [fio] 1", f"U   N [fio] {LONG}"),
    ],
)
def test_a_5000_digit_number_in_blk_tracer_text_is_a_counted_line_error(
    tmp_path: Path, seed: str, line_no: int, old: str, new: str
) -> None:
    """Was a ValueError from int() (over 4,300 digits): one bounded `number()` reads them all."""
    lines = (SEEDS / seed).read_text().splitlines()[:20]
    assert old in lines[line_no - 1]
    lines[line_no - 1] = lines[line_no - 1].replace(old, new)
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n")
    ingest_events([str(tmp_path / "in.txt")], tmp_path / "ds")
    assert _errors(tmp_path / "ds") == [(line_no, TOO_LONG)]
    with pytest.raises(ParseError) as err:
        ingest_events([str(tmp_path / "in.txt")], tmp_path / "strict", strict=True)
    assert str(err.value) == f"{tmp_path / 'in.txt'}:{line_no}: {TOO_LONG}"


def test_a_5000_digit_number_in_blkparse_text_is_a_counted_line_error(tmp_path: Path) -> None:
    line = "  8,0    0        3     0.000001500  1000  Q  WS 4096 + 8 [dd]"
    (tmp_path / "in.txt").write_text(line + "\n" + line.replace("4096", LONG) + "\n")
    ingest_events([str(tmp_path / "in.txt")], tmp_path / "ds")
    cut = " (a line of 5,058 characters: the first 4,096 kept)"
    assert _errors(tmp_path / "ds") == [(2, TOO_LONG + cut)]


# blkparse inputs 437 and 979: a count of 2^31 (and 2^32) on a line the JIT-compiled scanner before
# the Rust one took
# whole; its int32 column then refused it with ArrowInvalid "Integer value 2147483648 not in
# range". The scanner leaves such lines to the reference parser, which names the field.
INPUT_437 = "254,0    0    35342     0.021242172 11563  G  RS 36814688 + 2147483648 [python3]"
INPUT_979 = "  8,0    0        3     0.000001500  1000  Q  WS 4096 + 4294967296 [dd]"


@pytest.mark.parametrize(("line", "count"), [(INPUT_437, 2147483648), (INPUT_979, 4294967296)])
def test_a_count_past_int32_is_a_line_error_not_an_arrow_error(
    tmp_path: Path, line: str, count: int
) -> None:
    good = "254,0    1    19168     0.000000000 11562  Q  WS 320898552 + 8 [python3]"
    (tmp_path / "in.txt").write_text(f"{good}\n{line}\n{good}\n")
    ingest_events([str(tmp_path / "in.txt")], tmp_path / "ds")
    assert _errors(tmp_path / "ds") == [(2, f"nsectors {count} does not fit a 32-bit integer")]
    events = pq.read_table(tmp_path / "ds" / "events.parquet")
    assert events["line_no"].to_pylist() == [1, 3]
    # One below the limit still takes the fast path and keeps its value.
    ok = line.replace(str(count), "2147483647")
    (tmp_path / "ok.txt").write_text(f"{good}\n{ok}\n")
    ingest_events([str(tmp_path / "ok.txt")], tmp_path / "ok")
    events = pq.read_table(tmp_path / "ok" / "events.parquet")
    assert events["nsectors"].to_pylist() == [8, 2147483647]


# blkparse input 837: the pdu bytes of a pass-through request, not UTF-8 (an encoded
# surrogate), reached Arrow as a lone surrogate: UnicodeEncodeError "surrogates not allowed".
INPUT_837 = (
    b"  8,16   0       25     0.000000200   100  I   W 512 (0a 0b 0c\xed\xa0\x80 0d 0e 0f) [myproc]"
)


def test_a_pdu_that_is_not_utf8_is_stored_with_replacements_and_its_bytes_kept(
    tmp_path: Path,
) -> None:
    (tmp_path / "in.txt").write_bytes(INPUT_837 + b"\n")
    ingest_events([str(tmp_path / "in.txt")], tmp_path / "ds")
    (row,) = pq.read_table(tmp_path / "ds" / "events.parquet").to_pylist()
    assert row["pdu"] == "0a 0b 0c\ufffd\ufffd\ufffd 0d 0e 0f"
    assert row["pc_bytes"] == 512
    assert row["raw_line"] == INPUT_837  # lossless: the line's own bytes
    parsed = parse_event_line(INPUT_837.decode("utf-8", "surrogateescape"))
    assert render_event(parsed) != INPUT_837.decode("utf-8", "surrogateescape")


def test_thousands_of_blank_lines_do_not_make_format_detection_quadratic() -> None:
    """blkparse input 1510 (70 KB: events, then 19,999 lines of one space) stalled
    trace_text_kind: its patterns ran with re.M over the whole head, and a leading \\s* crossed
    every newline after each line start. Now it reads one line at a time. The time is for the
    bench, not asserted; the answers are."""
    head = "254,0    0    35413     0.030709803 10681  I  WS 38952960 + 8192 [ \n" + " \n" * 19999
    assert trace_text_kind(head[:65536]) is None
    ftrace = (SEEDS / "ftrace.txt").read_text()
    assert trace_text_kind(" \n" * 19999 + ftrace) == "ftrace"
    assert trace_text_kind((SEEDS / "perf.txt").read_text()) == "perf"
    assert trace_text_kind((SEEDS / "trace-cmd.txt").read_text()) == "trace-cmd"


def test_a_damaged_bcc_json_line_warns_nothing_on_stderr(tmp_path: Path) -> None:
    """1M campaign, seed 1 (hist_json): literal_eval of a damaged biolatency -j line printed
    "<unknown>:1: SyntaxWarning: invalid decimal literal" on stderr besides the ParseError."""
    lines = (ROOT / "tests" / "data" / "formats" / "bcc_biolatency_j.txt").read_text().splitlines()
    (tmp_path / "h.txt").write_text("\n".join([lines[0].replace("'ts': ", "'ts': 1a", 1)]) + "\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ParseError) as err:
            parse_histogram(str(tmp_path / "h.txt"))
    assert caught == []
    assert str(err.value) == (
        f"{tmp_path / 'h.txt'}:1: not a complete JSON object (SyntaxError): "
        "\"{'ts': 1a'2026-11-22 00:24:00', 'val_type': 'usecs', 'data':\""
    )


def test_a_run_of_blank_lines_in_a_side_log_is_read_as_one(tmp_path: Path) -> None:
    """1M campaign, seed 1, vmstat 11980 and meminfo 8434: a 2 KB .zst of 64 MiB of newlines
    ran past the campaign's time limit, one Python step per blank line. The lines after a run
    keep their numbers."""
    rows = (ROOT / "tests" / "data" / "formats" / "vmstat_capture.txt").read_text().splitlines()
    (tmp_path / "v.txt").write_text("\n".join([*rows[:3], *[""] * 1_000_000, rows[3]]) + "\n")
    table = PARSERS["vmstat"](str(tmp_path / "v.txt"))["vmstat"]
    assert table["line_no"].to_pylist() == [3, 1_000_004]
    assert table["free"].to_pylist() == [19279484, 19279484]
    csv = "mono_ns,latency_us\n562513615569,3155\n" + " \r\n" * 100_000 + "562536844495,x\n"
    (tmp_path / "s.csv").write_text(csv)
    with pytest.raises(ParseError) as err:
        PARSERS["series_csv"](str(tmp_path / "s.csv"))
    assert str(err.value).startswith(f"{tmp_path / 's.csv'}:100003: ")


def test_a_long_word_in_a_meminfo_sample_is_refused_at_once(tmp_path: Path) -> None:
    """1M campaign, seed 1, meminfo 10745: 200 KB of 'A' after a sample's pairs ran for
    minutes (finditer of `key: value` tried every start in the word)."""
    rows = (ROOT / "tests" / "data" / "formats" / "meminfo_capture.txt").read_text().splitlines()
    rows[2] = rows[2].replace("Writeback: 0 kB", "Writeback: 0 " + "A" * 204_800)
    (tmp_path / "m.txt").write_text("\n".join(rows) + "\n")
    with pytest.raises(ParseError) as err:
        PARSERS["meminfo"](str(tmp_path / "m.txt"))
    assert str(err.value) == (
        f"{tmp_path / 'm.txt'}:3: a field of 204,800 characters ('AAAAAAAAAAAAAAAAAAAA'...): "
        "no meminfo key or value is that long"
    )


def test_biolatency_j_reads_as_json_when_it_can_and_means_the_same(tmp_path: Path) -> None:
    """Seed 1's slowest hist_json inputs (e.g. 14321: 1,799 biolatency -j lines, 1.6 MB) were
    linear but spent most of their time in literal_eval's compile; without a double quote a
    line is read as JSON. The same rows either way: every line of the real log once with a
    double quote (which keeps it on literal_eval) gives the same table but for that label."""
    real = ROOT / "tests" / "data" / "formats" / "bcc_biolatency_j.txt"
    quoted = tmp_path / "quoted.txt"
    quoted.write_text(real.read_text().replace("'usecs'", '"us\'ecs"'))
    fast, slow = parse_histogram(str(real)).to_pylist(), parse_histogram(str(quoted)).to_pylist()
    assert len(fast) == len(slow) > 0
    assert {r["name"] for r in slow} == {"us'ecs"}
    assert [{**r, "name": "usecs"} for r in slow] == fast
