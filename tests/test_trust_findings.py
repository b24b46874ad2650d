"""Issue 33's audit findings, one test each: the input that caused it and the exact message or
result now (the finding's number in the issue is in each test's name)."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from blkscope.cli import app
from blkscope.ingest.block_events import ingest_blkparse
from tests.conftest import MQ30, ROOT

FORMATS = ROOT / "tests" / "data" / "formats"
JBD2 = ROOT / "tests" / "data" / "issue5" / "jbd2-commit"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _event(seq: int, t_us: int, action: str, sector: int, comm: str = "dd") -> str:
    """One blkparse line of device 8,0 on CPU 0 (a C names its error, not its process)."""
    tail = "[0]" if action == "C" else f"[{comm}]"
    pid = 0 if action == "C" else 100
    return (
        f"  8,0    0 {seq:>8} {t_us // 1_000_000:>5}.{t_us % 1_000_000:06d}000 {pid:>5}  "
        f"{action}   W {sector} + 8 {tail}\n"
    )


def _io(seq: int, t_us: int, sector: int, spread: bool = True) -> str:
    """Q, G, I, D and C of one 4 KiB write, 1 us apart, completing 100 us after its Q (all at
    t_us when not spread)."""
    steps = [("Q", 0), ("G", 1), ("I", 2), ("D", 3), ("C", 100)]
    return "".join(
        _event(seq + k, t_us + dt * spread, a, sector) for k, (a, dt) in enumerate(steps)
    )


# 4: a corrupt iostat.txt made the report's cross-check table a traceback


def test_4_report_on_an_iostat_log_that_printed_zero_rates(tmp_path: Path) -> None:
    capture = tmp_path / "capture"
    capture.mkdir()
    shutil.copy(MQ30 / "blkparse.txt.zst", capture)
    lines = []
    for line in (MQ30 / "iostat.txt").read_text().splitlines(keepends=True):
        if line.startswith("vda "):  # r/s and w/s printed as 0 in every report
            cols = line.split()
            cols[1] = cols[7] = "0.00"
            line = " ".join(cols) + "\n"
        lines.append(line)
    (capture / "iostat.txt").write_text("".join(lines))
    code, _, err = _run("report", str(capture), "-o", str(tmp_path / "r.html"), "-q")
    assert (code, err) == (0, "")
    page = (tmp_path / "r.html").read_text()
    for kind in ("w", "r"):
        assert (
            f'<td class="text">{kind}/s</td><td class="text">not comparable (iostat printed 0)'
            "</td>" in page
        )
    code, out, _ = _run("crosscheck", str(tmp_path / "r.dataset"))
    assert code == 0
    writes = next(line for line in out.splitlines() if line.startswith("    writes:"))
    assert writes.startswith("    writes: 15 intervals, w/s median error - (iostat printed 0), ")


# 5: a sector near 2^63 was ingested, then overflowed sector + nsectors in the report


def test_5_a_sector_past_any_device_is_a_malformed_line(tmp_path: Path) -> None:
    trace = tmp_path / "t.txt"
    trace.write_text(_io(1, 0, 9223372036854775800) + _io(6, 200, 1000))
    manifest = ingest_blkparse([str(trace)], tmp_path / "ds")
    assert manifest["events"]["by_action"] == {"C": 1, "D": 1, "G": 1, "I": 1, "Q": 1}
    errors = pq.read_table(tmp_path / "ds" / "ingest_errors.parquet").to_pylist()
    assert [e["line_no"] for e in errors] == [1, 2, 3, 4, 5]
    assert errors[0]["reason"] == (
        "sector 9,223,372,036,854,775,800 + 8 ends past sector 2^54, the end of the largest "
        "block device Linux can address (2^63 bytes)"
    )
    assert errors[0]["raw"] == _event(1, 0, "Q", 9223372036854775800).rstrip("\n")
    code, _, err = _run("ingest", "--strict", str(trace), "-o", str(tmp_path / "s"))
    assert (code, err.splitlines()[0]) == (
        2,
        f"error: {trace}:1: sector 9,223,372,036,854,775,800 + 8 ends past sector 2^54, the "
        "end of the largest block device Linux can address (2^63 bytes)",
    )
    code, out, err = _run("check", str(trace), "--max", "d2c.p99=5ms")
    assert (code, err, out.splitlines()[-1]) == (0, "", "PASS: all 1 checks passed")


def test_5_a_blktrace_record_past_any_device_is_refused(tmp_path: Path) -> None:
    data = bytearray((FORMATS / "syn.blktrace.0").read_bytes())
    o = 0
    for _ in range(3):  # the 4th record: the remap A, sequence 4
        o += 48 + struct.unpack_from("<H", data, o + 46)[0]
    struct.pack_into("<Q", data, o + 16, 1 << 62)
    path = tmp_path / "t.blktrace.0"
    path.write_bytes(bytes(data))
    code, _, err = _run("ingest", str(path), "-o", str(tmp_path / "ds"))
    assert (code, err.splitlines()[0]) == (
        2,
        f"error: {path}: the record of CPU 0, sequence 4 (A at 10 ns): sector "
        "4,611,686,018,427,387,904 + 8 ends past sector 2^54, the end of the largest block "
        "device Linux can address (2^63 bytes)",
    )


# 6: tables.X.rows of the wrong type (or negative) in manifest.json


@pytest.mark.parametrize(
    ("rows", "said"),
    [
        ("{}", "is an object, expected an integer"),
        ("[]", "is a list, expected an integer"),
        ("null", "is null, expected an integer"),
        ('"12"', "is a string, expected an integer"),
        ("1e400", "is a float, expected an integer"),
        ("true", "is a boolean, expected an integer"),
        ("-5", "is -5, expected at least 0"),
    ],
)
def test_6_a_manifest_whose_row_count_is_not_a_count(tmp_path: Path, rows: str, said: str) -> None:
    ds = tmp_path / "ds"
    ingest_blkparse([str(FORMATS / "syn.blkparse.txt")], ds)
    doc = json.loads((ds / "manifest.json").read_text())
    doc["tables"]["events"]["rows"] = "ROWS"
    (ds / "manifest.json").write_text(json.dumps(doc).replace('"ROWS"', rows))
    for command in (["sql", str(ds), "select 1"], ["analyze", str(ds)], ["report", str(ds)]):
        code, _, err = _run(
            *command, *(["-o", str(tmp_path / "r.html")] * (command[0] == "report"))
        )
        assert (code, err) == (
            2,
            f"error: {ds}/manifest.json: damaged manifest: tables.events.rows {said}\n"
            "hint: the dataset is damaged or was not written by blkscope; ingest the capture "
            "again\n",
        )


# 7: `fleet sql` on an empty query, a lone `;` or bytes that are not UTF-8


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from blkscope.fleet.add import add_captures

    out = tmp_path_factory.mktemp("fleet") / "fleet"
    (result,) = add_captures(out, [str(JBD2)], host="h1", workers=1)
    assert result["ok"], result
    return out


@pytest.mark.parametrize("query", ["", ";", "  ; ;\n"])
def test_7_fleet_sql_with_nothing_to_run_prints_nothing(fleet: Path, query: str) -> None:
    assert _run("fleet", "sql", str(fleet), query) == (0, "", "")
    assert _run("fleet", "sql", str(fleet), query, "--json") == (0, "", "")


def test_7_fleet_sql_refuses_a_query_that_is_not_utf8(fleet: Path) -> None:
    assert _run("fleet", "sql", str(fleet), "select '\udcff'") == (
        2,
        "",
        "error: the query is not valid UTF-8 (at character 9)\n"
        "hint: the shell passed bytes that are not UTF-8: use a UTF-8 locale (LANG=C.UTF-8)\n",
    )
    code, out, _ = _run("fleet", "sql", str(fleet), "select count(*) AS n from events", "--csv")
    assert (code, out) == (0, "n\n656\n")


# 14: `analyze --json` printed NaN (invalid JSON) when every event has the same time


def _strict_json(text: str) -> object:
    def refuse(constant: str) -> object:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_14_a_trace_of_zero_span_gives_valid_json_and_no_warning(tmp_path: Path) -> None:
    trace = tmp_path / "t.txt"
    trace.write_text("".join(_io(1 + 5 * i, 0, 1000 + 8 * i, spread=False) for i in range(5)))
    assert {line.split()[3] for line in trace.read_text().splitlines()} == {"0.000000000"}
    ds = tmp_path / "ds"
    ingest_blkparse([str(trace)], ds)
    code, out, err = _run("analyze", str(ds), "--json")
    assert (code, err) == (0, "")
    (device,) = _strict_json(out)["devices"]  # type: ignore[index]
    assert device["depth"] == {
        "driver": {"max": None, "mean": None},
        "queue": {"max": None, "mean": None},
    }
    # 17: the report drew its latency panels on a log axis, and matplotlib warned on stderr
    code, out, err = _run("report", str(ds), "-o", str(tmp_path / "r.html"), "--json")
    assert (code, err) == (0, "")
    assert _strict_json(out)["devices"][0]["d2c"]["max_ns"] == 0  # type: ignore[index]


# 15: a missing path was "not a blkscope dataset (no manifest.json)", and sql and spikes on a
# missing nested path created its parent folders first


@pytest.mark.parametrize("command", ["sql", "spikes", "analyze", "periods", "crosscheck"])
def test_15_a_missing_dataset_is_named_as_missing_and_nothing_is_made(
    tmp_path: Path, command: str
) -> None:
    missing = tmp_path / "no" / "such" / "ds"
    args = [command, str(missing), *(["select 1"] if command == "sql" else [])]
    assert _run(*args) == (
        2,
        "",
        f"error: {missing}: no such file or folder\n"
        "hint: give a dataset folder: 'blkscope ingest INPUT -o DATASET' writes one\n",
    )
    assert list(tmp_path.iterdir()) == []


# 17: `sql DS "-- x"` was parsed as an option; a table linked out of the dataset exited 1


def test_17_a_query_starting_with_a_dash_is_the_query(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    ingest_blkparse([str(FORMATS / "syn.blkparse.txt")], ds)
    assert _run("sql", str(ds), "-- nothing to run") == (0, "", "")
    assert _run("sql", str(ds), "-- why\nSELECT 42 AS n", "--csv") == (0, "n\n42\n", "")


def test_17_a_table_linked_out_of_the_dataset_is_bad_input(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    ingest_blkparse([str(FORMATS / "syn.blkparse.txt")], ds)
    outside = tmp_path / "events.parquet"
    (ds / "events.parquet").rename(outside)
    (ds / "events.parquet").symlink_to(outside)
    assert _run("sql", str(ds), "select 1") == (
        2,
        "",
        f"error: {ds}/events.parquet: is a link to {outside}, outside the dataset\n"
        "hint: a dataset's tables must be files inside its folder\n",
    )


# 13: `sql` had no limit on time or memory: range(1e10), events x events, repeat('x', 2e9)
# ran until killed


@pytest.fixture(scope="module")
def syn_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("syn") / "ds"
    ingest_blkparse([str(FORMATS / "syn.blkparse.txt")], out)
    return out


SLOW = "SELECT count(*) FROM range(1000000) a, range(1000000) b WHERE a.range * b.range = 7"
TIME_LIMIT = (
    "error: the query ran past its time limit (0.5 s)\n"
    "hint: narrow it (WHERE, LIMIT, a join condition) or raise --timeout\n"
)


def test_13_sql_stops_at_its_time_limit(syn_dataset: Path, fleet: Path) -> None:
    assert _run("sql", str(syn_dataset), SLOW, "--timeout", "500ms") == (1, "", TIME_LIMIT)
    assert _run("fleet", "sql", str(fleet), SLOW, "--timeout", "0.5") == (1, "", TIME_LIMIT)


def test_13_sql_stops_at_its_memory_limit(syn_dataset: Path, fleet: Path) -> None:
    many = "SELECT range, range::VARCHAR AS text FROM range(100000000)"
    for command in (["sql", str(syn_dataset)], ["fleet", "sql", str(fleet)]):
        code, out, err = _run(*command, many, "--memory-limit", "200MB", "--csv")
        assert (code, out) == (1, "")
        assert err.startswith("error: the query took more than its memory limit (191 MiB; ")
        assert err.endswith(
            " when stopped)\nhint: aggregate or LIMIT what it returns, or raise --memory-limit\n"
        )


def test_13_sql_limits_are_options_with_defaults(syn_dataset: Path) -> None:
    from blkscope.analyze.query import QueryLimits

    assert QueryLimits() == QueryLimits(seconds=300.0, memory_bytes=2 << 30)
    ok = _run(
        "sql",
        str(syn_dataset),
        "SELECT 1 AS one",
        "--csv",
        "--timeout",
        "1",
        "--memory-limit",
        "1GiB",
    )
    assert ok == (0, "one\n1\n", "")
    assert _run("sql", str(syn_dataset), "SELECT 1", "--memory-limit", "5") == (
        2,
        "",
        "error: option --memory-limit: not a size: '5'\nhint: e.g. --memory-limit 2GB, 512MiB\n",
    )
