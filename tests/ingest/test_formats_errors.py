"""Garbage in, exact message out: every text-log parser on wrong, cut and foreign inputs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from blkscope.errors import BlkscopeError, InputFormatError, ParseError
from blkscope.ingest.logs.biosnoop import parse_biosnoop
from blkscope.ingest.logs.histogram import parse_histogram
from blkscope.ingest.logs.iostat_log import parse_iostat
from blkscope.ingest.logs.series_csv import parse_series
from blkscope.ingest.logs.vmstat_meminfo import parse_meminfo, parse_vmstat
from blkscope.ingest.logs.writeback_log import parse_writeback
from tests.ingest.formats_golden import DATA


def _error(parse: Callable[[str], Any], path: Path) -> BlkscopeError:
    with pytest.raises(BlkscopeError) as err:
        parse(str(path))
    return err.value


def _edited(tmp_path: Path, sample: str, edit: Callable[[list[str]], list[str]]) -> Path:
    lines = (DATA / sample).read_text().splitlines()
    out = tmp_path / sample
    out.write_text("\n".join(edit(lines)) + "\n")
    return out


def test_iostat_row_with_missing_columns(tmp_path: Path) -> None:
    path = _edited(
        tmp_path, "iostat_old.txt", lambda ls: [*ls[:5], " ".join(ls[5].split()[:4]), *ls[6:]]
    )
    err = _error(parse_iostat, path)
    assert isinstance(err, ParseError)
    assert str(err) == f"{path}:6: device row has 4 fields but the Device header has 14"


def test_iostat_without_x_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "iostat_d.txt"
    path.write_text(
        "Device             tps    kB_read/s    kB_wrtn/s    kB_read    kB_wrtn\n"
        "vda              27.33       612.29     10149.56   12345678   98765432\n"
    )
    err = _error(parse_iostat, path)
    assert str(err) == (
        f"{path}:1: Device header without iostat -x columns (got tps kB_read/s kB_wrtn/s ...)"
    )
    assert err.hint == "run iostat with -x for extended statistics"


def test_iostat_given_other_tools_logs() -> None:
    err = _error(parse_iostat, DATA / "vmstat_t.txt")
    assert isinstance(err, InputFormatError)
    assert str(err) == (
        f"{DATA / 'vmstat_t.txt'}: this looks like vmstat output, not iostat -x output"
    )
    err = _error(parse_iostat, DATA / "writeback.txt")
    assert str(err) == (
        f"{DATA / 'writeback.txt'}: this looks like a writeback.bt log, not iostat -x output"
    )


def test_iostat_bad_number(tmp_path: Path) -> None:
    path = _edited(
        tmp_path, "iostat_new_mt.txt", lambda ls: [line.replace("178.46", "17x.46") for line in ls]
    )
    assert str(_error(parse_iostat, path)) == f"{path}:9: r/s: expected a number, got '17x.46'"


def test_vmstat_wrong_columns(tmp_path: Path) -> None:
    path = _edited(tmp_path, "vmstat_capture.txt", lambda ls: [*ls[:3], ls[3] + " 7", *ls[4:]])
    assert str(_error(parse_vmstat, path)) == (
        f"{path}:4: expected 17 fields as in the header, got 18"
    )
    path = _edited(
        tmp_path, "vmstat_a.txt", lambda ls: [ls[0], ls[1].replace("inact", "lazy"), *ls[2:]]
    )
    assert str(_error(parse_vmstat, path)) == f"{path}:2: unknown vmstat column(s) lazy"


def test_vmstat_given_iostat() -> None:
    err = _error(parse_vmstat, DATA / "iostat_old.txt")
    assert str(err) == (
        f"{DATA / 'iostat_old.txt'}: this looks like iostat -x output, not vmstat output"
    )


def test_meminfo_garbage_line(tmp_path: Path) -> None:
    path = _edited(tmp_path, "meminfo_snapshots.txt", lambda ls: [*ls[:5], "Dirty 12 kB", *ls[5:]])
    err = _error(parse_meminfo, path)
    assert str(err) == f"{path}:6: expected 'Key: N kB', got 'Dirty 12 kB'"
    path = _edited(tmp_path, "meminfo_capture.txt", lambda ls: [*ls[:2], ls[2] + " Dirty", *ls[3:]])
    err = _error(parse_meminfo, path)
    assert str(err) == (
        f"{path}:3: expected 'Key: N kB' pairs after the epoch, got "
        "'Dirty: 1428080 kB Writeback: 0 kB  Dirty'"
    )


def test_writeback_wrong_columns_and_rows(tmp_path: Path) -> None:
    path = _edited(tmp_path, "writeback.txt", lambda ls: [*ls[:2], "TIME DEVICE PAGES ms", *ls[3:]])
    err = _error(parse_writeback, path)
    assert str(err) == f"{path}:3: unexpected columns 'TIME DEVICE PAGES ms'"
    path = _edited(tmp_path, "writeback.txt", lambda ls: [*ls[:4], "23:37:35  7:0  17155", *ls[5:]])
    err = _error(parse_writeback, path)
    assert str(err) == (f"{path}:5: expected 5 fields (TIME DEVICE PAGES REASON DURATION), got 3")
    path = _edited(
        tmp_path, "writeback.txt", lambda ls: [*ls[:4], ls[4].replace("23:37:35", "23:37"), *ls[5:]]
    )
    assert str(_error(parse_writeback, path)) == f"{path}:5: TIME: expected HH:MM:SS, got '23:37'"


def test_writeback_given_biosnoop() -> None:
    err = _error(parse_writeback, DATA / "biosnoop_capture.txt")
    assert str(err) == (
        f"{DATA / 'biosnoop_capture.txt'}: this looks like a bcc/libbpf-tools "
        "biosnoop log, not a writeback.bt log"
    )


def test_biosnoop_errors(tmp_path: Path) -> None:
    path = _edited(tmp_path, "biosnoop_capture.txt", lambda ls: [*ls[:5], "0.19 vda RA", *ls[6:]])
    assert str(_error(parse_biosnoop, path)) == (
        f"{path}:6: expected 8 fields (TIME(s) COMM PID DISK T SECTOR BYTES LAT(ms)), got 3"
    )
    path = _edited(
        tmp_path,
        "biosnoop_capture.txt",
        lambda ls: [ls[0], ls[1].replace("SECTOR", "FLAGS SECTOR"), *ls[2:]],
    )
    assert str(_error(parse_biosnoop, path)) == (
        f"{path}:2: unexpected biosnoop columns 'TIME(s) COMM PID DISK T FLAGS SECTOR BYTES "
        "LAT(ms)' (unknown: FLAGS)"
    )
    err = _error(parse_biosnoop, DATA / "writeback_ns.txt")
    assert str(err) == (
        f"{DATA / 'writeback_ns.txt'}: this looks like a monotonic writeback "
        "log (MONO_NS DEVICE PAGES REASON us), not a bcc/libbpf-tools biosnoop log"
    )


def test_biosnoop_empty_comm_is_empty_string(tmp_path: Path) -> None:
    path = _edited(
        tmp_path,
        "biosnoop_capture.txt",
        lambda ls: [*ls[:2], ls[2].replace("date          ", "              ")],
    )
    rows = parse_biosnoop(str(path)).to_pylist()
    assert (rows[0]["comm"], rows[0]["pid"], rows[0]["sector"]) == ("", 11505, 157038320)


def test_truncated_histograms(tmp_path: Path) -> None:
    # A row lost in the middle of a histogram breaks the bucket chain.
    path = _edited(
        tmp_path, "bt_hist.txt", lambda ls: [line for line in ls if not line.startswith("[32, 64)")]
    )
    assert str(_error(parse_histogram, path)) == (
        f"{path}:43: bucket '[64, 128)            449' does not follow '[16, 32)            "
        "6832': rows are missing (truncated or edited histogram)"
    )
    # The file cut in the middle of a row.
    path = _edited(tmp_path, "bt_hist.txt", lambda ls: [*ls[:41], ls[41][:12]])
    assert str(_error(parse_histogram, path)) == (
        f"{path}:42: truncated or malformed histogram row '[16, 32)'"
    )
    path = _edited(tmp_path, "bcc_biolatency_DT.txt", lambda ls: [*ls[:10], ls[10][:30]])
    assert str(_error(parse_histogram, path)) == (
        f"{path}:11: truncated or malformed histogram row '16 -> 31         : 104'"
    )
    path = _edited(tmp_path, "bt_hist.json", lambda ls: [*ls[:-1], ls[-1][:80]])
    err = _error(parse_histogram, path)
    assert str(err).startswith(f"{path}:6: not a complete JSON object (JSONDecodeError): ")


def test_histogram_given_other_logs() -> None:
    err = _error(parse_histogram, DATA / "biosnoop_bt.txt")
    assert str(err) == (
        f"{DATA / 'biosnoop_bt.txt'}: this looks like a bpftrace biosnoop.bt "
        "log, not a bpftrace histogram"
    )
    err = _error(parse_histogram, DATA / "prober.csv")
    assert str(err) == (
        f"{DATA / 'prober.csv'}: this looks like a time series CSV "
        "(time,value), not a bpftrace histogram"
    )


def test_series_errors(tmp_path: Path) -> None:
    path = _edited(tmp_path, "prober.csv", lambda ls: [*ls[:3], "562557308627", *ls[4:]])
    assert str(_error(parse_series, path)) == (
        f"{path}:4: expected 2 columns (mono_ns,latency_us), got 1"
    )
    path = _edited(tmp_path, "prober.csv", lambda ls: [*ls[:3], "562557308627,fast", *ls[4:]])
    assert str(_error(parse_series, path)) == (
        f"{path}:4: latency_us: expected a number, got 'fast'"
    )
    err = _error(parse_series, DATA / "iostat_dxk.txt")
    assert str(err) == (
        f"{DATA / 'iostat_dxk.txt'}: this looks like iostat -x output, not a "
        "time series CSV (time,value)"
    )


def test_empty_and_binary_inputs(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert str(_error(parse_writeback, empty)) == (
        f"{empty}: empty input: expected a writeback.bt log"
    )
    assert str(_error(parse_iostat, DATA / "mq30.blktrace.0")) == (
        f"{DATA / 'mq30.blktrace.0'}: binary data, expected a text log"
    )
