"""Root causes the fuzz campaign found, each with an input that caused it and the exact message."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import zstandard

from blkscope.errors import BlkscopeError, InputFormatError, ParseError
from blkscope.ingest.block_events import ingest_blkparse, ingest_events
from blkscope.ingest.capture_doc import read_capture_json
from blkscope.ingest.logs.histogram import parse_histogram
from blkscope.ingest.logs.iostat_log import parse_iostat
from blkscope.ingest.logs.series_csv import parse_series
from tests.conftest import ROOT

LINE = b"254,0    1    19168     0.000000000 11562  Q  WS 320898552 + 8 [python3]\n"
FORMATS = ROOT / "tests" / "data" / "formats"


def _error(exc: type[BlkscopeError], fn: object, *args: object) -> str:
    with pytest.raises(exc) as err:
        fn(*args)  # type: ignore[operator]
    return str(err.value)


def test_a_sector_past_int64_is_an_error_not_a_wrapped_number(tmp_path: Path) -> None:
    trace = tmp_path / "t.txt"
    trace.write_bytes(LINE + LINE.replace(b"320898552", b"99999999999999999999"))
    ingest_blkparse([str(trace)], tmp_path / "ds")
    events = pq.read_table(tmp_path / "ds" / "events.parquet")
    assert events["sector"].to_pylist() == [320898552]  # never 7766279631452241919
    (error,) = pq.read_table(tmp_path / "ds" / "ingest_errors.parquet").to_pylist()
    assert (error["line_no"], error["reason"]) == (
        2,
        "sector 99999999999999999999 does not fit a 64-bit integer",
    )


def test_a_zstd_bomb_stops_at_the_budget(tmp_path: Path) -> None:
    bomb = tmp_path / "zeros.zst"
    bomb.write_bytes(zstandard.ZstdCompressor().compress(LINE + b"\n" * (80 << 20)))
    message = _error(InputFormatError, ingest_blkparse, [str(bomb)], tmp_path / "ds")
    assert message.startswith(f"{bomb}: expands more than 100-fold (64 MiB from ")
    assert message.endswith("a trace compresses 4-11 fold, this looks like a decompression bomb")


def test_a_line_past_one_mib_is_refused_with_its_number(tmp_path: Path) -> None:
    trace = tmp_path / "t.txt"
    trace.write_bytes(LINE + b"A" * (2 << 20) + b"\n" + LINE)
    assert _error(ParseError, ingest_blkparse, [str(trace)], tmp_path / "ds") == (
        f"{trace}:2: line longer than 1 MiB: the file is damaged or not text"
    )


def test_blank_lines_past_the_cap_are_counted_not_stored(tmp_path: Path) -> None:
    trace = tmp_path / "t.txt"
    trace.write_bytes(LINE + b"\n" * 10_050 + LINE)
    manifest = ingest_blkparse([str(trace)], tmp_path / "ds")
    assert manifest["ingest"]["error_lines"] == 10_050
    assert manifest["ingest"]["error_lines_not_stored"] == 50
    assert pq.read_metadata(tmp_path / "ds" / "ingest_errors.parquet").num_rows == 10_000


def test_a_blktrace_cpu_past_int32_names_the_record(tmp_path: Path) -> None:
    data = bytearray((FORMATS / "syn.blktrace.0").read_bytes())
    o = 0
    while o + 48 <= len(data):  # every record's cpu
        struct.pack_into("<I", data, o + 40, 0x80000000)
        o += 48 + struct.unpack_from("<H", data, o + 46)[0]
    path = tmp_path / "t.blktrace.0"
    path.write_bytes(bytes(data))
    message = _error(InputFormatError, ingest_events, [str(path)], tmp_path / "ds")
    assert message.startswith(f"{path}: record ")
    assert message.endswith(": cpu 2147483648 is out of range (largest 2,147,483,647)")


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"host": "x"}, "host is a string, expected an object (capture.json)"),
        ([1, 2], "the top level is list, expected an object"),
        ({"vm_sysctls": {"vm.dirty_writeback_centisecs": [500]}},
         "vm_sysctls.vm.dirty_writeback_centisecs is a list, expected a string or an integer "
         "or a number or a boolean or null (capture.json)"),
    ],
)  # fmt: skip
def test_capture_json_of_the_wrong_shape(tmp_path: Path, doc: object, message: str) -> None:
    path = tmp_path / "capture.json"
    path.write_text(json.dumps(doc))
    assert _error(InputFormatError, read_capture_json, str(path)) == f"{path}: {message}"


def test_capture_json_nested_too_deep_or_compressed(tmp_path: Path) -> None:
    path = tmp_path / "capture.json"
    path.write_text("[" * 100_000)
    assert _error(InputFormatError, read_capture_json, str(path)).startswith(
        f"{path}: not valid JSON (maximum recursion depth exceeded"
    )
    path.write_bytes(zstandard.ZstdCompressor().compress(b'{"host": {}}'))
    assert _error(InputFormatError, read_capture_json, str(path)) == (
        f"{path}: not UTF-8 text: not a capture.json"
    )


def test_json_histogram_fields_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_text('{"type": "hist", "data": {"@usecs": [{"min": 0, "max": 1}]}}\n')
    assert _error(ParseError, parse_histogram, str(path)) == (
        f"{path}:1: JSON histogram: count is missing, expected an integer"
    )


def test_impossible_iostat_date(tmp_path: Path) -> None:
    text = (FORMATS / "iostat_new_mt.txt").read_text()
    first = next(line for line in text.splitlines() if line[:2].isdigit())
    path = tmp_path / "iostat.txt"
    path.write_text(text.replace(first, "13/45/2026 10:00:00 AM", 1))
    line = text.splitlines().index(first) + 1
    assert _error(ParseError, parse_iostat, str(path)) == (
        f"{path}:{line}: impossible date or time '13/45/2026 10:00:00 AM'"
    )


def test_csv_with_a_bare_cr(tmp_path: Path) -> None:
    path = tmp_path / "prober.csv"
    path.write_bytes(b"mono_ns,latency_us\n1000,5\n2000\r,6\n")
    assert _error(ParseError, parse_series, str(path)) == (
        f"{path}:3: not CSV: new-line character seen in unquoted field - "
        "do you need to open the file in universal-newline mode?"
    )
