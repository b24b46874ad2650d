"""`blkscope ingest CAPTURE_DIR`: every file recognised or skipped with a reason, one dataset."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from blkscope.analyze.findings import knobs_from_manifest
from blkscope.cli import app
from blkscope.ingest.blkparse.text_stream import BlkparseTextParser, parse_source
from blkscope.ingest.sources import open_source
from tests.clock_truth import capture
from tests.golden import golden_json, golden_text

runner = CliRunner()
GOLDEN = Path(__file__).parents[1] / "golden" / "clock"
SIDE_TABLES = ["writeback", "iostat_log", "iostat_cpu", "meminfo", "vmstat", "biosnoop", "series"]


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The whole shared 30 s capture folder through the CLI."""
    folder = capture("mq-writeback-30s")
    out = tmp_path_factory.mktemp("whole") / "ds"
    result = runner.invoke(app, ["ingest", str(folder), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out, result.output


def _listing(manifest: dict) -> dict:
    return {
        "inputs": [
            {k: d[k] for k in ("name", "format", "description", "role") if k in d}
            | {"tables": d.get("tables")}
            for d in manifest["inputs"]
        ],
        "skipped": manifest["skipped"],
    }


def test_recognised_and_skipped_files_match_golden(whole: tuple[Path, str]) -> None:
    out, _ = whole
    listing = _listing(json.loads((out / "manifest.json").read_text()))
    assert listing == golden_json(GOLDEN / "mq30_folder_listing.json", listing)


def test_printed_report_matches_golden(whole: tuple[Path, str]) -> None:
    out, output = whole
    text = output.replace(str(out), "DATASET")
    assert text == golden_text(GOLDEN / "mq30_folder_report.txt", text)


def test_listing_is_printed(whole: tuple[Path, str]) -> None:
    _, output = whole
    assert "  btt/btt.avg: btt output, not an input\n" in output
    assert "  trace.blktrace.0.zst: a blktrace per-CPU binary file, block events\n" in output
    assert (
        "  iostat.txt: iostat -x output, side log -> iostat_log (70 rows), iostat_cpu (35 rows)\n"
        in output
    )
    assert "trace zero: 2026-11-21T23:37:49.326334032Z by blktrace binary" in output
    assert "wrote " in output and "75,532 events" in output


def test_every_side_table_is_on_the_timeline(whole: tuple[Path, str]) -> None:
    out, _ = whole
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["tables"]) >= {"events", "trace_clock", *SIDE_TABLES}
    span = manifest["events"]["last_time_ns"]
    for name in SIDE_TABLES:
        t_ns = pq.read_table(out / f"{name}.parquet", columns=["t_ns"])["t_ns"]
        assert t_ns.null_count == 0, name
        # every sampler ran around the trace: its rows sit within a few seconds of it
        assert -5e9 < pc.min(t_ns).as_py() < 5e9, name
        assert span - 5e9 < pc.max(t_ns).as_py() < span + 10e9, name
    kinds = {(s["source"], s["table"]): s["kind"] for s in manifest["clock"]["sources"]}
    assert kinds == {
        ("events", "events"): "relative",
        ("biosnoop.txt.zst", "biosnoop"): "since_start",
        ("iostat.txt", "iostat_log"): "epoch",
        ("iostat.txt", "iostat_cpu"): "epoch",
        ("meminfo.txt", "meminfo"): "epoch",
        ("prober.csv", "series"): "monotonic",
        ("vmstat.txt", "vmstat"): "sample_index",
        ("writeback.txt", "writeback"): "wall_time_of_day",
        ("writeback_ns.txt", "writeback"): "monotonic",
    }


def test_biosnoop_meets_the_trace_completions(whole: tuple[Path, str]) -> None:
    out, _ = whole
    manifest = json.loads((out / "manifest.json").read_text())
    bio = next(s for s in manifest["clock"]["sources"] if s["table"] == "biosnoop")
    assert bio["alignment"]["matched_rows"] > 2000
    assert bio["alignment"]["runner_up_matched_rows"] < 100
    # a logged completion's t_ns falls on a trace completion of the same sector, to the us
    first = pq.read_table(out / "biosnoop.parquet").slice(100, 1).to_pylist()[0]
    events = pq.read_table(out / "events.parquet", columns=["action", "sector", "time_ns"])
    same = events.filter(
        pc.and_(pc.equal(events["action"], "C"), pc.equal(events["sector"], first["sector"]))
    )
    gap = min(abs(t - first["t_ns"]) for t in same["time_ns"].to_pylist())
    assert gap < 1_000_000


def test_analyze_works_on_a_folder_dataset(whole: tuple[Path, str]) -> None:
    out, _ = whole
    result = runner.invoke(app, ["analyze", str(out), "--json"])
    assert result.exit_code == 0, result.output
    devices = json.loads(result.output)["devices"]
    assert [d["dev"] for d in devices] == ["254,0"]
    # writeback.txt and writeback_ns.txt log the same 79 work items: counted once, exactly
    windows = runner.invoke(
        app,
        [
            "sql",
            str(out),
            "SELECT count(*) n, min(start_ns) s FROM internal._writeback_windows",
            "--csv",
        ],
    )
    assert windows.output == "n,s\n79,3581223684\n"


def test_empty_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = runner.invoke(app, ["ingest", str(tmp_path / "empty"), "-o", str(tmp_path / "ds")])
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {tmp_path / 'empty'}: the folder holds no files\nhint: point at a capture folder\n"
    )
    assert not (tmp_path / "ds").exists()


def test_folder_without_block_events_is_refused(tmp_path: Path) -> None:
    folder = capture("mq-writeback-30s")
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("iostat.txt", "writeback.txt", "clock.txt"):
        shutil.copy(folder / name, logs / name)
    result = runner.invoke(app, ["ingest", str(logs), "-o", str(tmp_path / "ds")])
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {logs}: no block events: neither blktrace per-CPU files nor blkparse text\n"
        "hint: add trace.blktrace.N files or blkparse.txt (blkparse -i trace -o blkparse.txt)\n"
    )


def test_broken_side_log_is_skipped_with_its_error(tmp_path: Path) -> None:
    folder = capture("mq-writeback-30s")
    src = tmp_path / "cap"
    src.mkdir()
    shutil.copy(folder / "blkparse.txt.zst", src / "blkparse.txt.zst")
    (src / "wb.txt").write_text("TIME      DEVICE   PAGES    REASON           ms\n25:99:00 x\n")
    result = runner.invoke(app, ["ingest", str(src), "-o", str(tmp_path / "ds")])
    assert result.exit_code == 0, result.output
    skipped = json.loads((tmp_path / "ds" / "manifest.json").read_text())["skipped"]
    assert skipped == [
        {
            "name": "wb.txt",
            "reason": "a writeback.bt log that does not parse: "
            f"{src / 'wb.txt'}:2: expected 5 fields (TIME DEVICE PAGES REASON DURATION), got 2",
        }
    ]
    strict = runner.invoke(app, ["ingest", str(src), "-o", str(tmp_path / "ds2"), "--strict"])
    assert strict.exit_code == 2
    assert "wb.txt:2: expected 5 fields" in strict.stderr


def test_clock_flags_need_a_folder(tmp_path: Path) -> None:
    folder = capture("mq-writeback-30s")
    result = runner.invoke(
        app,
        [
            "ingest",
            str(folder / "blkparse.txt.zst"),
            "-o",
            str(tmp_path / "ds"),
            "--trace-start",
            "2026-11-21T23:37:49Z",
        ],
    )
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {folder / 'blkparse.txt.zst'}: --trace-start and --offset need a capture "
        "folder as the input\n"
    )


def test_only_one_per_cpu_set_is_read(tmp_path: Path) -> None:
    fixture = Path(__file__).parents[2] / "fixtures" / "loop-split-merge-tail"
    src = tmp_path / "cap"
    src.mkdir()
    for name in ("trace.blktrace.0.zst", "trace.blktrace.1.zst", "blkparse.txt.zst"):
        shutil.copy(fixture / name, src / name)
    shutil.copy(fixture / "trace.blktrace.0.zst", src / "dump.bin.zst")  # a merged-dump lookalike
    result = runner.invoke(app, ["ingest", str(src), "-o", str(tmp_path / "ds"), "--json"])
    assert result.exit_code == 0, result.output
    manifest = json.loads(result.output)
    assert [(d["name"], d["role"]) for d in manifest["inputs"]] == [
        ("trace.blktrace.0.zst", "block events"),
        ("trace.blktrace.1.zst", "block events"),
    ]
    assert manifest["skipped"] == [
        {
            "name": "blkparse.txt.zst",
            "reason": "blkparse text of the blktrace binaries, which carry the absolute clock "
            "(its first 100 events are the same)",
        },
        {
            "name": "dump.bin.zst",
            "reason": "blktrace stream outside the per-CPU set trace.blktrace.N (a merged dump "
            "or another trace): its events would be counted twice",
        },
    ]
    text = ingest_blkparse_count(fixture / "blkparse.txt.zst")
    assert manifest["events"]["count"] == text


def ingest_blkparse_count(path: Path) -> int:
    """Events blkparse printed: what the binaries must give, not twice as many."""
    source = open_source(str(path))
    try:
        return sum(
            c.events.num_rows
            for c in parse_source(BlkparseTextParser(str(path), 0, False), source, None)
        )
    finally:
        source.close()


def test_a_blkscope_capture_folder(tmp_path: Path) -> None:
    data, golden = (
        Path(__file__).parents[1] / "data" / "capture",
        Path(__file__).parents[1] / "golden",
    )
    src = tmp_path / "cap"
    src.mkdir()
    shutil.copy(golden / "capture" / "dd20_blkparse.txt", src / "blkparse.txt")
    shutil.copy(data / "dd20_clock.txt", src / "clock.txt")
    shutil.copy(data / "dd20_raw.bin", src / "raw.bin")
    shutil.copy(data / "writeback_trace.txt", src / "writeback_trace.txt")
    (src / "proc_vmstat.txt").write_text("1795306524.01 nr_dirty=12 nr_writeback=0\n")
    capture_json = {
        "format": "blkscope-capture",
        "vm_sysctls": {"vm.dirty_writeback_centisecs": "250", "vm.dirty_expire_centisecs": "1000"},
    }
    (src / "capture.json").write_text(json.dumps(capture_json))
    result = runner.invoke(app, ["ingest", str(src), "-o", str(tmp_path / "ds"), "--json"])
    assert result.exit_code == 0, result.output
    manifest = json.loads(result.output)
    assert [(d["name"], d["format"], d["role"]) for d in manifest["inputs"]] == [
        ("blkparse.txt", "blkparse-text", "block events"),
        ("capture.json", "capture_json", "capture manifest"),
        ("clock.txt", "clock_pair", "clock hint"),
        ("writeback_trace.txt", "writeback_trace", "side log"),
    ]
    assert manifest["skipped"] == [
        {
            "name": "proc_vmstat.txt",
            "reason": "/proc/vmstat counter samples: blkscope has no parser for them yet",
        },
        {"name": "raw.bin", "reason": "binary, not a format blkscope reads"},
    ]
    assert manifest["capture"] == {**capture_json, "sysctl": capture_json["vm_sysctls"]}
    assert knobs_from_manifest(manifest) == {
        "vm.dirty_writeback_centisecs": 2.5,
        "vm.dirty_expire_centisecs": 10.0,
        "jbd2 commit interval": 5.0,
    }
    # blkparse text and a clock pair but no log to align: the trace zero stays unknown
    zero = manifest["clock"]["trace_zero"]
    assert (zero["monotonic_ns"], zero["wall_ns"]) == (None, None)
    assert zero["wall_minus_monotonic_ns"] == 1795306524010577487 - 1092087462553


def test_clock_flags_on_the_command_line(tmp_path: Path) -> None:
    folder = capture("mq-writeback-30s")
    src = tmp_path / "cap"
    src.mkdir()
    for name in ("blkparse.txt.zst", "iostat.txt"):
        shutil.copy(folder / name, src / name)
    args = ["ingest", str(src), "-o", str(tmp_path / "ds"), "--json"]
    flags = ["--trace-start", "2026-11-21T23:37:49.326334032Z", "--offset", "iostat.txt=-1.5"]
    result = runner.invoke(app, args + flags)
    assert result.exit_code == 0, result.output
    manifest = json.loads(result.output)
    assert manifest["clock"]["trace_zero"]["wall_ns"] == 1795304269326334032
    assert manifest["clock"]["trace_zero"]["alignments"] == {}
    shifts = {s["table"]: s.get("shift_ns") for s in manifest["clock"]["sources"]}
    assert shifts == {"events": None, "iostat_log": -1_500_000_000, "iostat_cpu": -1_500_000_000}
    first = pq.read_table(tmp_path / "ds" / "iostat_log.parquet")["t_ns"][0].as_py()
    assert first == 1795304269_500_000_000 - 1795304269326334032 - 1_500_000_000
    bad = runner.invoke(app, [*args, "--offset", "iostat"])
    assert bad.exit_code == 2
    assert bad.stderr == (
        "error: option --offset: expected SOURCE=+-SECONDS, got 'iostat'\nhint: e.g. writeback=-0.25\n"
    )


def test_two_blkparse_texts_are_two_timelines(tmp_path: Path) -> None:
    folder = capture("mq-writeback-30s")
    src = tmp_path / "cap"
    (src / "b").mkdir(parents=True)
    shutil.copy(folder / "blkparse.txt.zst", src / "blkparse.txt.zst")
    shutil.copy(folder / "blkparse.txt.zst", src / "b" / "again.zst")
    result = runner.invoke(app, ["ingest", str(src), "-o", str(tmp_path / "ds")])
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {src}: several block event texts (b/again.zst, blkparse.txt.zst): a capture folder "
        "holds one trace\nhint: ingest them as files instead: blkscope ingest FILE... -o DATASET\n"
    )


def test_writeback_of_untraced_devices_is_not_aligned(tmp_path: Path) -> None:
    folder = capture("mq-writeback-30s")
    src = tmp_path / "cap"
    src.mkdir()
    shutil.copy(folder / "blkparse.txt.zst", src / "blkparse.txt.zst")
    lines = (folder / "writeback.txt").read_text().splitlines(keepends=True)
    (src / "writeback.txt").write_text("".join(x for x in lines if "254:0" not in x))
    result = runner.invoke(app, ["ingest", str(src), "-o", str(tmp_path / "ds"), "--json"])
    assert result.exit_code == 0, result.output
    manifest = json.loads(result.output)
    assert manifest["clock"]["trace_zero"]["wall_ns"] is None
    writeback = next(s for s in manifest["clock"]["sources"] if s["table"] == "writeback")
    assert writeback["offset_ns"] is None
    assert writeback["method"] == "no clock evidence: t_ns left null (use --trace-start/--offset)"
    assert pq.read_table(tmp_path / "ds" / "writeback.parquet")["t_ns"].null_count == 7


def test_vmstat_without_timestamps_is_aligned_by_its_bo_column(whole: tuple[Path, str]) -> None:
    out, _ = whole
    manifest = json.loads((out / "manifest.json").read_text())
    vmstat = next(s for s in manifest["clock"]["sources"] if s["table"] == "vmstat")
    evidence = vmstat["alignment"]
    assert evidence["rows_used"] == 34  # every sample but the since-boot one
    assert evidence["mismatch"] < 0.05 < 0.2 < evidence["runner_up_mismatch"]
    # vmstat was started with iostat, whose first report is stamped 23:37:49: within a second
    iostat = next(s for s in manifest["clock"]["sources"] if s["table"] == "iostat_log")
    first_report = 1795304269 * 1_000_000_000 + iostat["offset_ns"]  # t_ns of 23:37:49.5
    assert abs(vmstat["offset_ns"] - first_report) < 500_000_000
    t_ns = pq.read_table(out / "vmstat.parquet", columns=["t_ns"])["t_ns"].to_pylist()
    assert t_ns[:3] == [vmstat["offset_ns"] + k * 1_000_000_000 for k in range(3)]


def test_a_dataset_inside_the_capture_folder_is_skipped(tmp_path: Path) -> None:
    folder = capture("mq-writeback-30s")
    src = tmp_path / "cap"
    src.mkdir()
    shutil.copy(folder / "blkparse.txt.zst", src / "blkparse.txt.zst")
    first = runner.invoke(app, ["ingest", str(src), "-o", str(src / "ds"), "-q"])
    assert first.exit_code == 0, first.output
    again = runner.invoke(app, ["ingest", str(src), "-o", str(src / "ds"), "--json"])
    assert again.exit_code == 0, again.output
    manifest = json.loads(again.output)
    assert manifest["skipped"] == [{"name": "ds/", "reason": "a blkscope dataset"}]
    assert [d["name"] for d in manifest["inputs"]] == ["blkparse.txt.zst"]
