"""Issue 33's audit findings, one test each: the input that caused it and the exact message or
result now (the finding's number in the issue is in each test's name)."""

from __future__ import annotations

import json
import re
import shutil
import struct
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from blkscope.cli import app
from blkscope.ingest.block_events import ingest_blkparse
from blkscope.ingest.folder import ingest_folder
from tests.conftest import MQ30, ROOT, read_zst
from tests.fuzz import mutate as M

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
    assert (code, err, out.splitlines()[-1]) == (0, "", "PASS: 1 check passed")


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
    # main's one output path: --json is a document even with nothing to run
    assert _run("fleet", "sql", str(fleet), query, "--json") == (0, "[]\n", "")


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
        f"error: {missing}: does not exist\n"
        "hint: create one with 'blkscope ingest INPUT -o DATASET'\n",
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
def syn_dataset(ingested: dict[Path, Path]) -> Path:
    return ingested[FORMATS / "syn.blkparse.txt"]


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
        assert err.startswith("error: the query took more than its memory limit (190.7 MiB; ")
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


# 1: a folder with trace.blktrace.N beside trace.blktrace.N.zst ingested every event twice

LOOP = ROOT / "fixtures" / "loop-split-merge-tail"
LOOP_EVENTS = 3625  # blkparse's own count (its summary: Events (trace): 3625 entries)


def test_1_a_per_cpu_file_beside_its_zst_is_read_once(tmp_path: Path) -> None:
    capture = tmp_path / "capture"
    capture.mkdir()
    for n in (0, 1):
        shutil.copy(LOOP / f"trace.blktrace.{n}.zst", capture)
    (capture / "trace.blktrace.1").write_bytes(read_zst(LOOP / "trace.blktrace.1.zst"))  # zstd -d
    code, out, err = _run("ingest", str(capture), "-o", str(tmp_path / "ds"), "--json")
    assert (code, err) == (0, "")
    manifest = json.loads(out)
    assert manifest["events"]["count"] == LOOP_EVENTS  # was 7,250
    assert [i["name"] for i in manifest["inputs"]] == ["trace.blktrace.0.zst", "trace.blktrace.1"]
    reason = "the same events as trace.blktrace.1 (byte for byte): read once"
    assert manifest["skipped"] == [{"name": "trace.blktrace.1.zst", "reason": reason}]
    assert manifest["completeness"]["warnings"] == [f"trace.blktrace.1.zst holds {reason}"]
    # the same files given one by one: read once too, and said on stderr
    files = [
        str(capture / n)
        for n in ("trace.blktrace.0.zst", "trace.blktrace.1", "trace.blktrace.1.zst")
    ]
    code, _, err = _run("ingest", *files, "-o", str(tmp_path / "ds2"), "-q")
    assert (code, err) == (0, f"warning: trace.blktrace.1.zst holds {reason}\n")


def test_1_a_per_cpu_copy_cut_short_is_read_once(tmp_path: Path) -> None:
    capture = tmp_path / "capture"
    capture.mkdir()
    for n in (0, 1):
        shutil.copy(LOOP / f"trace.blktrace.{n}.zst", capture)
    whole = read_zst(LOOP / "trace.blktrace.1.zst")
    (capture / "copy.blktrace.1").write_bytes(whole[: M.record_offsets(whole)[100]])
    manifest = json.loads(_run("ingest", str(capture), "-o", str(tmp_path / "ds"), "--json")[1])
    assert manifest["events"]["count"] == LOOP_EVENTS
    assert {"name": "copy.blktrace.1", "reason": "blktrace stream outside the per-CPU set "
            "trace.blktrace.N (a merged dump or another trace): its events would be counted "
            "twice"} in manifest["skipped"]  # fmt: skip
    files = [str(capture / "trace.blktrace.0.zst"), str(capture / "trace.blktrace.1.zst"),
             str(capture / "copy.blktrace.1")]  # fmt: skip
    code, _, err = _run("ingest", *files, "-o", str(tmp_path / "ds2"), "-q")
    assert (code, err) == (
        0,
        "warning: copy.blktrace.1 holds the same events as trace.blktrace.1.zst (every record of "
        "it): read once\n",
    )


def test_1_a_text_of_other_events_beside_the_binaries_is_named(tmp_path: Path) -> None:
    capture = tmp_path / "capture"
    capture.mkdir()
    for n in (0, 1):
        shutil.copy(LOOP / f"trace.blktrace.{n}.zst", capture)
    shutil.copy(JBD2 / "blkparse.txt.zst", capture)  # another trace's text
    code, _, err = _run("ingest", str(capture), "-o", str(tmp_path / "ds"), "-q")
    assert (code, err) == (
        0,
        "warning: blkparse.txt.zst: blkparse text whose events are not the blktrace binaries' "
        "(its first events differ): not read, as a capture folder holds one trace; ingest it on "
        "its own\n",
    )
    shutil.copy(LOOP / "blkparse.txt.zst", capture)  # its own text: the same events
    manifest = json.loads(_run("ingest", str(capture), "-o", str(tmp_path / "ds"), "--json")[1])
    assert manifest["skipped"][0] == {
        "name": "blkparse.txt.zst",
        "reason": "blkparse text of the blktrace binaries, which carry the absolute clock (its "
        "first 100 events are the same)",
    }
    assert manifest["completeness"]["warnings"] == []


# 2: damaged traces gave confident numbers with no warning, though blkparse's own summary and
# the sequence numbers disagreed


def _split(text: str) -> tuple[list[str], list[str]]:
    """(event lines, the summary after them)."""
    lines = text.splitlines(keepends=True)
    last = max(i for i, line in enumerate(lines) if line[:8].strip().replace(",", "").isdigit())
    return lines[: last + 1], lines[last + 1 :]


def _shifted(line: str, ns: int) -> str:
    stamp = line.split()[3]
    sec, frac = stamp.split(".")
    t = int(sec) * 10**9 + int(frac) + ns
    return line.replace(stamp, f"{t // 10**9}.{t % 10**9:09d}", 1)


LOOP_TEXT = read_zst(LOOP / "blkparse.txt.zst").decode()
EVENTS, SUMMARY = _split(LOOP_TEXT)
DAMAGED = {
    "every line twice": "".join(line + line for line in LOOP_TEXT.splitlines(keepends=True)),
    "a block pasted in": "".join(EVENTS[:1100] + EVENTS[1000:] + SUMMARY),
    "events moved back": "".join(
        [
            *EVENTS[:2000],
            *(_shifted(e, -50_000_000) for e in EVENTS[2000:2200]),
            *EVENTS[2200:],
            *SUMMARY,
        ]
    ),
    "completions deleted": "".join(
        [e for e in EVENTS if not (e.split()[5] == "C" and int(e.split()[2]) % 3 == 0)] + SUMMARY
    ),
}
SAID = {
    "every line twice": [
        "device 7,0: 3,625 events whose sequence number was already seen: counted twice (CPU 1)",
        "device 7,0: the blkparse summary of t.txt counts 19 Q, 741 D, 742 C; the events "
        "ingested hold 38 Q, 1,482 D, 1,484 C",
    ],
    "a block pasted in": [
        "device 7,0: 100 events whose sequence number was already seen: counted twice (CPU 1)",
        "device 7,0: events out of place: sequence numbers or times go backwards 1 time on CPU 1 "
        "(time by up to 0.001184 s)",
        "device 7,0: the blkparse summary of t.txt counts 19 Q, 741 D, 742 C; the events "
        "ingested hold 19 Q, 757 D, 758 C",
    ],
    "events moved back": [
        "device 7,0: events out of place: sequence numbers or times go backwards 1 time on CPU 1 "
        "(time by up to 0.049999 s)",
    ],
    "completions deleted": [
        "device 7,0: the blkparse summary of t.txt counts 19 Q, 741 D, 742 C; the events "
        "ingested hold 19 Q, 741 D, 493 C",
    ],
}


@pytest.mark.parametrize("damage", sorted(DAMAGED))
def test_2_a_damaged_trace_is_said_to_disagree_with_itself(tmp_path: Path, damage: str) -> None:
    trace = tmp_path / "t.txt"
    trace.write_text(DAMAGED[damage])
    code, _, err = _run("ingest", str(trace), "-o", str(tmp_path / "ds"), "-q")
    assert (code, err) == (0, "".join(f"warning: {w}\n" for w in SAID[damage]))
    code, _, err = _run("ingest", "--strict", str(trace), "-o", str(tmp_path / "strict"))
    assert (code, err) == (
        2,
        f"error: {trace}: the trace disagrees with itself: {SAID[damage][0]}\n"
        "hint: drop --strict to ingest it anyway (the warning stays on every output)\n",
    )
    assert not (tmp_path / "strict").exists()


@pytest.mark.slow
def test_2_every_output_says_so_and_the_page_counts_lost_events(tmp_path: Path) -> None:
    trace = tmp_path / "t.txt"
    trace.write_text(DAMAGED["completions deleted"])
    ds = tmp_path / "ds"
    ingest_blkparse([str(trace)], ds)
    said = SAID["completions deleted"]
    code, out, _ = _run("analyze", str(ds), "--json")
    assert (code, json.loads(out)["warnings"]) == (0, said)
    code, out, _ = _run("report", str(ds), "-o", str(tmp_path / "r.html"), "--json")
    summary = json.loads(out)
    assert (code, summary["warnings"]) == (0, said)
    # 249 completions deleted: 248 are gaps, the trace's very last event leaves none
    assert summary["devices"][0]["lost_events"] == {"missing": 248, "orphan_completions": 0}
    page = (tmp_path / "r.html").read_text()
    assert f'<p class="warning">Warning: {said[0]}</p>' in page
    assert (
        "<li>Lost events: 248 missing from the trace (gaps in its sequence numbers); 0 "
        "completions with no issue (C without D).</li>" in page
    )


# 3: side logs linked into the capture folder were skipped, said only in manifest.json


def test_3_a_side_log_linked_from_outside_is_named_on_every_output(tmp_path: Path) -> None:
    capture, elsewhere = tmp_path / "capture", tmp_path / "logs"
    capture.mkdir()
    elsewhere.mkdir()
    shutil.copy(MQ30 / "blkparse.txt.zst", capture)
    for name in ("writeback.txt", "clock.txt"):
        shutil.copy(MQ30 / name, elsewhere / name)
        (capture / name).symlink_to(elsewhere / name)
    (capture / "gone.txt").symlink_to("nowhere.txt")  # inside the folder, to nothing
    said = [
        "clock.txt: a symbolic link out of the capture folder: not read",
        "gone.txt: a symbolic link to nothing: not read",
        "writeback.txt: a symbolic link out of the capture folder: not read",
    ]
    code, _, err = _run("ingest", str(capture), "-o", str(tmp_path / "ds"), "-q")
    assert (code, err) == (0, "".join(f"warning: {w}\n" for w in said))
    code, out, _ = _run("report", str(tmp_path / "ds"), "-o", str(tmp_path / "r.html"))
    assert code == 0
    assert out.splitlines()[1:4] == [f"  warning: {w}" for w in said]
    page = (tmp_path / "r.html").read_text()
    assert (
        '<div class="missing" id="skipped"><p>Not read from the capture folder:</p><ul>'
        + "".join(f"<li>{w}</li>" for w in said)
        + "</ul></div>"
    ) in page
    summary = json.loads((tmp_path / "r.summary.json").read_text())
    assert [f"{s['name']}: {s['reason']}" for s in summary["skipped"]] == said


# 9: a vmstat.txt longer than the trace was quadratic in its rows (10,000: 191 s); the time is
# measured in bench/bombs.py (vmstat-20000), here the answer


def test_9_a_long_vmstat_finds_the_offset_the_short_one_does(tmp_path: Path) -> None:
    capture = tmp_path / "capture"
    capture.mkdir()
    shutil.copy(MQ30 / "blkparse.txt.zst", capture)
    lines = (MQ30 / "vmstat.txt").read_text().splitlines()
    lines += [lines[-1]] * (5_000 + 2 - len(lines))  # vmstat left running, idle
    (capture / "vmstat.txt").write_text("\n".join(lines) + "\n")
    manifest = ingest_folder(capture, tmp_path / "ds")
    (vmstat,) = [s for s in manifest["clock"]["sources"] if s["table"] == "vmstat"]
    assert vmstat["offset_ns"] == 123_078_443  # as with the capture's own 35 rows
    assert vmstat["alignment"] == {
        "method": "vmstat bo vs write completion KiB",
        "interval_ns": [-133_078_443, -113_078_443],
        "rows_used": 4_997,
        "mismatch": 0.0272,
        "runner_up_mismatch": 0.4004,
    }


# 10: one event at 4294967296.000000000 s: analyze ran 233 s, then DuckDB ran out of memory in
# iostat (the time is measured in bench/bombs.py, time-2^32.txt)


def test_10_a_time_decades_off_costs_its_events_not_its_range(tmp_path: Path) -> None:
    lines = read_zst(JBD2 / "blkparse.txt.zst").decode().splitlines(keepends=True)
    at = next(i for i in range(len(lines) // 2, len(lines)) if lines[i].split()[5:6] == ["C"])
    lines[at] = lines[at].replace(lines[at].split()[3], "4294967296.000000000", 1)
    trace = tmp_path / "t.txt"
    trace.write_text("".join(lines))
    code, _, err = _run("ingest", str(trace), "-o", str(tmp_path / "ds"), "-q")
    assert (code, err) == (
        0,
        "warning: device 7,0: events out of place: sequence numbers or times go backwards 1 time "
        "on CPU 0 (time by up to 4294967280.919898 s)\n",
    )
    code, _, err = _run("report", str(tmp_path / "ds"), "-o", str(tmp_path / "r.html"), "-q")
    assert (code, err) == (0, "")
    con = duckdb.connect()
    iostat = con.execute(f"SELECT count(*) FROM '{tmp_path}/ds/iostat.parquet'").fetchone()
    completions = con.execute(
        f"SELECT count(DISTINCT c_time_ns // 1000000000) FROM '{tmp_path}/ds/requests.parquet' "
        "WHERE c_time_ns IS NOT NULL"
    ).fetchone()
    assert iostat == completions  # the intervals with a completion, not 4.3e9 of them
    grams = con.execute(
        f"SELECT max(n) FROM (SELECT count(*) AS n FROM '{tmp_path}/ds/periodogram.parquet' "
        "GROUP BY ALL)"
    ).fetchone()
    assert grams is not None and (grams[0] or 0) <= 100_000


# 11: the report cost ~0.7 s per device, even with one IO each (200 devices: 143 s)


@pytest.mark.slow
def test_11_devices_past_the_busiest_16_are_one_table(tmp_path: Path) -> None:
    trace = tmp_path / "t.txt"
    lines = []
    for d in range(20):  # device 8,d with d + 1 writes
        for k in range(d + 1):
            lines += [
                line.replace("  8,0 ", f"  8,{d:<2}", 1)
                for line in _io(1 + 5 * k, 1000 * d + 200 * k, 1000 + 8 * k).splitlines(True)
            ]
    trace.write_text("".join(lines))
    code, _, err = _run("report", str(trace), "-o", str(tmp_path / "r.html"), "-q")
    assert (code, err) == (0, "")
    page = (tmp_path / "r.html").read_text()
    drawn = re.findall(r'<section class="device" id="dev\d+"><h2>Device (8,\d+)</h2>', page)
    assert drawn == [f"8,{d}" for d in range(4, 20)]  # the 16 busiest, in major,minor order
    other = page[page.index('<section class="device" id="other-devices">') :]
    assert "<h2>4 more devices</h2>" in other
    rows = re.findall(r'<tr><td class="text">(8,\d)</td><td>(\d+)</td>', other)
    assert rows == [("8,0", "1"), ("8,1", "2"), ("8,2", "3"), ("8,3", "4")]
    summary = json.loads((tmp_path / "r.summary.json").read_text())
    assert [(d["dev"], d["ios"]) for d in summary["devices"]] == [
        (f"8,{d}", d + 1) for d in range(20)
    ]


# 12: 1 M IOs on one sector made analyze's memory grow with the IOs seen (`python
# bench/bombs.py --only hot-sector.txt`; the figures are in CHANGELOG.md): dd, never quiet for
# 5 ms, had one plug session open for the whole trace, and the pass kept every request of it
# waiting for a P that could move its clock, which dd never issues. The pass now knows each
# task's last P (rust/src/pass/plug.rs `session_plugged`); it counts what it held at once, the
# bench the RSS.


def test_12_a_hot_sector_keeps_only_what_is_in_flight(tmp_path: Path) -> None:
    from blkscope.analyze.stream.events import batches
    from blkscope.analyze.stream.run import OpClassNames, _as_the_pass_reads, new_stream
    from blkscope.analyze.views import connect
    from blkscope.store.manifest import read_manifest

    trace = tmp_path / "t.txt"
    trace.write_text("".join(_io(1 + 5 * k, 200 * k, 1000) for k in range(20_000)))
    code, _, err = _run("ingest", str(trace), "-o", str(tmp_path / "ds"), "-q")
    assert (code, err) == (0, "")
    con = connect(tmp_path / "ds", read_manifest(tmp_path / "ds"))
    stream = new_stream(con, plug_clock=True)
    classes = OpClassNames(con, stream)
    for batch in batches(tmp_path / "ds" / "events.parquet", True):
        batch = _as_the_pass_reads(batch)
        classes.cover(batch)
        assert stream.feed(batch)
    stream.finish()
    assert dict(stream.most_in_flight()) == {"requests": 1, "bios": 1, "pieces": 1, "sessions": 1}
    code, _, err = _run("analyze", str(tmp_path / "ds"), "-q")
    assert (code, err) == (0, "")
    requests = pq.read_table(tmp_path / "ds" / "requests.parquet")
    assert requests.num_rows == 20_000
    # no P from dd: each request's clock starts at its own Q
    assert requests.column("acct_start_ns") == requests.column("q_time_ns")


# The seed-34 campaign (issue 33's harness after the merge of main): a writeback log's PAGES
# or a writeback tracepoint's nr_pages of 5,000 digits was int()'s ValueError (over 4,300
# digits), from ingest of the log alone or of a capture folder holding it
# (`python -m tests.fuzz.campaign --seed 34 --no-exhaustive --replay writeback:153`).
_PAGES = "9" * 5000


@pytest.mark.parametrize(
    ("fmt", "sample", "old", "message"),
    [
        ("writeback", "writeback.txt", " 36629 ", "PAGES: 999999999999999999999999... (5,000 characters) is out of range"),
        ("writeback_ns", "writeback_ns.txt", " 36629 ", "PAGES: 999999999999999999999999... (5,000 characters) is out of range"),
    ],
)  # fmt: skip
def test_a_5000_digit_page_count_in_a_writeback_log_is_a_parse_error(
    tmp_path: Path, fmt: str, sample: str, old: str, message: str
) -> None:
    from blkscope.errors import ParseError
    from blkscope.ingest.logs.registry import PARSERS

    lines = (FORMATS / sample).read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if old in line)
    lines[at] = lines[at].replace(old, f" {_PAGES} ", 1)
    (tmp_path / "log.txt").write_text("".join(lines))
    with pytest.raises(ParseError) as err:
        PARSERS[fmt](str(tmp_path / "log.txt"))
    assert str(err.value) == f"{tmp_path / 'log.txt'}:{at + 1}: {message}"


def test_a_5000_digit_nr_pages_in_a_writeback_trace_is_a_parse_error(tmp_path: Path) -> None:
    from blkscope.errors import ParseError
    from blkscope.ingest.logs.registry import PARSERS

    trace = ROOT / "tests" / "data" / "attribution" / "journal" / "capture" / "writeback_trace.txt"
    lines = trace.read_text().splitlines(keepends=True)[:4]
    lines[1] = lines[1].replace("nr_pages=255085", f"nr_pages={_PAGES}")
    (tmp_path / "trace.txt").write_text("".join(lines))
    with pytest.raises(ParseError) as err:
        PARSERS["writeback_trace"](str(tmp_path / "trace.txt"))
    assert str(err.value) == (
        f"{tmp_path / 'trace.txt'}:2: nr_pages: 5,000 digits, out of range for a long"
    )


# The seed-35 campaign (after the merge of the compiled core): a per-CPU blktrace file whose
# timestamp note has CPU 2^31 (a damaged field) reached the int32 column of trace_clock as
# ArrowInvalid (`--replay "duplicated streams:1184"`); the decoder range-checks event records,
# not notes.


def test_a_timestamp_note_of_cpu_2_31_refuses_the_trace(tmp_path: Path) -> None:
    from blkscope.blk_io_trace import MAGIC, RECORD_STRUCT, TN_TIMESTAMP, VERSION, note_action
    from blkscope.errors import InputFormatError
    from blkscope.ingest.block_events import ingest_blktrace

    wall = struct.pack("<II", 1_700_000_000, 7)
    note = RECORD_STRUCT.pack(MAGIC | VERSION, 0, 5, 0, 0, note_action(TN_TIMESTAMP), 0,
                              7 << 20, 2**31, 0, len(wall)) + wall  # fmt: skip
    trace = tmp_path / "t.blktrace.0"
    trace.write_bytes((FORMATS / "syn.blktrace.0").read_bytes() + note)
    with pytest.raises(InputFormatError) as err:
        ingest_blktrace([str(trace)], tmp_path / "ds")
    assert str(err.value) == (
        f"{trace}: a timestamp note (wall clock 1700000000000000007 ns): cpu 2,147,483,648 is "
        "out of range (largest 2,147,483,647)"
    )
    assert err.value.hint == "the file is damaged there; blkparse would print a wrong number"
    assert not (tmp_path / "ds").exists()
