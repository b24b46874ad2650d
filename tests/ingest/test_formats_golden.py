"""Every text-log parser on real samples: golden rows, plus spot values checked by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from blkscope.ingest.logs.biosnoop import parse_biosnoop
from blkscope.ingest.logs.histogram import parse_histogram
from blkscope.ingest.logs.iostat_log import parse_iostat
from blkscope.ingest.logs.series_csv import parse_series
from blkscope.ingest.logs.vmstat_meminfo import parse_meminfo, parse_vmstat
from blkscope.ingest.logs.writeback_log import parse_writeback
from tests.ingest.formats_golden import CAPTURES, DATA, assert_golden


@pytest.mark.parametrize("sample", ["iostat_new_mt", "iostat_old", "iostat_x_no_t", "iostat_dxk"])
def test_iostat_golden(sample: str) -> None:
    tables = parse_iostat(str(DATA / f"{sample}.txt"))
    assert_golden(sample, tables["iostat_log"])
    assert_golden(f"{sample}_cpu", tables["iostat_cpu"])


def test_iostat_old_and_new_columns_land_in_the_same_place() -> None:
    old = parse_iostat(str(DATA / "iostat_old.txt"))["iostat_log"].to_pylist()
    # "sda 0.00 4618.00 0.00 1105.00 0.00 32.16 59.61 6.78 4.70 0.00 4.70 0.03 39.30"
    row = old[1]
    assert (row["time_text"], row["device"], row["w_s"], row["wrqm_s"]) == (
        "05/31/2020 02:22:55 AM",
        "sda",
        1105.0,
        4618.0,
    )
    assert row["wkib_s"] == pytest.approx(32.16 * 1024)
    assert row["areq_kib"] == pytest.approx(59.61 / 2)
    assert (row["aqu_sz"], row["await_ms"], row["svctm_ms"], row["util_pct"]) == (
        6.78,
        4.7,
        0.03,
        39.3,
    )
    assert row["time_ns"] == 1590891775 * 10**9
    new = parse_iostat(str(DATA / "iostat_new_mt.txt"))["iostat_log"].to_pylist()
    vda = next(r for r in new if r["device"] == "vda" and r["sample"] == 1)
    # "vda 127.00 5.39 0.00 0.00 0.58 43.43 2.00 0.01 ... aqu-sz 0.07 %util 0.80"
    assert (vda["r_s"], vda["r_await_ms"], vda["rareq_kib"], vda["aqu_sz"], vda["util_pct"]) == (
        127.0,
        0.58,
        43.43,
        0.07,
        0.8,
    )
    assert vda["rkib_s"] == pytest.approx(5.39 * 1024)
    assert vda["await_ms"] is None and vda["svctm_ms"] is None
    assert [r["since_boot"] for r in new] == [True, True, False, False]


@pytest.mark.parametrize("sample", ["vmstat_capture", "vmstat_t", "vmstat_a"])
def test_vmstat_golden(sample: str) -> None:
    assert_golden(sample, parse_vmstat(str(DATA / f"{sample}.txt")))


def test_vmstat_timestamp_column() -> None:
    rows = parse_vmstat(str(DATA / "vmstat_t.txt")).to_pylist()
    # "... 2026-11-22 00:23:10" under a "UTC" header
    assert [r["time_ns"] for r in rows] == [
        1795306990 * 10**9,
        1795306991 * 10**9,
        1795306992 * 10**9,
    ]


@pytest.mark.parametrize("sample", ["meminfo_capture", "meminfo_snapshots"])
def test_meminfo_golden(sample: str) -> None:
    assert_golden(sample, parse_meminfo(str(DATA / f"{sample}.txt")))


def test_meminfo_epoch_lines_are_exact() -> None:
    rows = parse_meminfo(str(DATA / "meminfo_capture.txt")).to_pylist()
    # "1795304269.413664905 Dirty: 1427920 kB Writeback: 0 kB"
    assert rows[:2] == [
        {
            "sample": 0,
            "time_ns": 1795304269413664905,
            "t_ns": None,
            "key": "Dirty",
            "value": 1427920,
            "unit": "kB",
            "line_no": 1,
        },
        {
            "sample": 0,
            "time_ns": 1795304269413664905,
            "t_ns": None,
            "key": "Writeback",
            "value": 0,
            "unit": "kB",
            "line_no": 1,
        },
    ]


@pytest.mark.parametrize("sample", ["writeback", "writeback_ns"])
def test_writeback_golden(sample: str) -> None:
    assert_golden(sample, parse_writeback(str(DATA / f"{sample}.txt")))


def test_writeback_both_clocks_see_the_same_work() -> None:
    wall = parse_writeback(str(DATA / "writeback.txt")).to_pylist()
    mono = parse_writeback(str(DATA / "writeback_ns.txt")).to_pylist()
    assert [(r["device"], r["pages_left"], r["reason"]) for r in wall] == [
        (r["device"], r["pages_left"], r["reason"]) for r in mono
    ]
    # "23:37:37  7:0  49885  free_more_memory 540.819"
    big = wall[3]
    assert (big["time_ns"], big["dev_major"], big["duration_ns"]) == (
        (23 * 3600 + 37 * 60 + 37) * 10**9,
        7,
        540_819_000,
    )


@pytest.mark.parametrize(
    "sample", ["biosnoop_capture", "biosnoop_que", "biosnoop_bt", "biosnoop_lost"]
)
def test_biosnoop_golden(sample: str) -> None:
    assert_golden(sample, parse_biosnoop(str(DATA / f"{sample}.txt")))


def test_biosnoop_comm_with_spaces_from_both_ends() -> None:
    que = parse_biosnoop(str(DATA / "biosnoop_que.txt")).to_pylist()
    # "0.009203    my writer 2    4458    vda       WS 320415000  65536         0.01       0.17"
    assert que[0] == {
        "clock": "since_start",
        "time_ns": 9_203_000,
        "t_ns": None,
        "comm": "my writer 2",
        "pid": 4458,
        "disk": "vda",
        "rwbs": "WS",
        "op": "W",
        "sector": 320415000,
        "bytes": 65536,
        "queue_ns": 10_000,
        "latency_ns": 170_000,
        "line_no": 3,
    }
    bt = parse_biosnoop(str(DATA / "biosnoop_bt.txt")).to_pylist()
    mine = [r for r in bt if r["comm"] == "my writer 2"]
    assert len(mine) == 3 and {r["pid"] for r in mine} == {4263}
    lost = parse_biosnoop(str(DATA / "biosnoop_lost.txt"))
    assert lost.num_rows == 10 and lost.schema.metadata[b"lost_events"] == b"2"


@pytest.mark.parametrize(
    "sample",
    [
        "bt_hist.txt",
        "bt_hist_interval.txt",
        "bt_hist.json",
        "bcc_biolatency_DT.txt",
        "bcc_biolatency_j.txt",
    ],
)
def test_histogram_golden(sample: str) -> None:
    assert_golden(sample.replace(".", "_"), parse_histogram(str(DATA / sample)))


def test_histogram_layouts_agree_on_the_same_counts() -> None:
    bt = parse_histogram(str(DATA / "bt_hist_interval.txt"))
    bcc = parse_histogram(str(DATA / "bcc_biolatency_DT.txt"))
    js = parse_histogram(str(DATA / "bcc_biolatency_j.txt"))

    def totals(t: object) -> list[tuple[int, int]]:
        rows = t.group_by(["snapshot"]).aggregate([("count", "sum")]).to_pylist()  # type: ignore[attr-defined]
        return sorted((r["snapshot"], r["count_sum"]) for r in rows)

    assert totals(bt) == totals(bcc) == totals(js) == [(0, 16143), (1, 8155), (2, 5)]
    # bpftrace "[1K, 2K)  7" is bcc "1024 -> 2047 : 7": both become [1024, 2048).
    assert {
        (r["low"], r["high"], r["count"])
        for r in bt.to_pylist()
        if r["snapshot"] == 0 and r["low"] == 1024
    } == {(1024, 2048, 7)}
    assert {
        (r["low"], r["high"], r["count"])
        for r in bcc.to_pylist()
        if r["snapshot"] == 0 and r["low"] == 1024
    } == {(1024, 2048, 7)}
    assert {r["key"] for r in bcc.to_pylist()} == {"vda", "loop0"}
    assert {r["time_text"] for r in bt.to_pylist()} == {"00:24:00", "00:24:01", "00:24:02"}


def test_lhist_overflow_and_json_buckets() -> None:
    rows = parse_histogram(str(DATA / "bt_hist.txt")).to_pylist()
    over = [r for r in rows if r["name"] == "@lat_lin" and r["high"] is None]
    assert [(r["low"], r["count"]) for r in over] == [(400, 26)]
    js = parse_histogram(str(DATA / "bt_hist.json")).to_pylist()
    usecs = [r for r in js if r["name"] == "@usecs"]
    # {"min": 16, "max": 31, "count": 16916}: max is inclusive
    assert (usecs[0]["low"], usecs[0]["high"], usecs[0]["count"]) == (16, 32, 16916)


def test_series_golden() -> None:
    assert_golden("prober", parse_series(str(DATA / "prober.csv")))


@pytest.mark.slow
@pytest.mark.slow
@pytest.mark.skipif(not CAPTURES.exists(), reason="shared captures not present")
@pytest.mark.parametrize(
    ("capture", "counts"),
    [
        ("mq-writeback-30s", (70, 35, 35, 68, 79, 10857, 1444)),
        ("mq-writeback-60s", (130, 65, 65, 128, 29, 32154, 2921)),
        ("loop-split-merge", (26, 13, 13, 26, 9, 235697, None)),
    ],
)
def test_shared_capture_logs(capture: str, counts: tuple[int | None, ...]) -> None:
    folder = CAPTURES / capture
    iostat = parse_iostat(str(folder / "iostat.txt"))
    got = [
        iostat["iostat_log"].num_rows,
        iostat["iostat_cpu"].num_rows,
        parse_vmstat(str(folder / "vmstat.txt")).num_rows,
        parse_meminfo(str(folder / "meminfo.txt")).num_rows,
        parse_writeback(str(folder / "writeback.txt")).num_rows,
        parse_biosnoop(str(folder / "biosnoop.txt.zst")).num_rows,
        parse_series(str(folder / "prober.csv")).num_rows
        if (folder / "prober.csv").exists()
        else None,
    ]
    assert tuple(got) == counts
    assert parse_writeback(str(folder / "writeback_ns.txt")).num_rows == counts[4]


def test_biosnoop_timestamp_column(tmp_path: Path) -> None:
    # libbpf-tools can print TIMESTAMP (seconds) where bcc prints TIME(s); same rows otherwise.
    text = (DATA / "biosnoop_capture.txt").read_text().replace("TIME(s)    ", "TIMESTAMP  ")
    path = tmp_path / "biosnoop_ts.txt"
    path.write_text(text)
    rows = parse_biosnoop(str(path)).to_pylist()
    base = parse_biosnoop(str(DATA / "biosnoop_capture.txt")).to_pylist()
    assert {r["clock"] for r in rows} == {"timestamp"}
    assert [{**r, "clock": None} for r in rows] == [{**r, "clock": None} for r in base]


def test_libbpf_tools_lost_lines_and_unknown_queue_time(tmp_path: Path) -> None:
    # libbpf-tools prints "%7.3f" of -1 for QUE(ms) when it saw no insert, and reports drops
    # on stderr as "lost N events on CPU #C" (users often capture both streams).
    lines = (DATA / "biosnoop_que.txt").read_text().splitlines()
    lines[2] = lines[2].replace("   0.01       0.17", " -1.000       0.17")
    lines.insert(4, "lost 7 events on CPU #1")
    path = tmp_path / "biosnoop_libbpf.txt"
    path.write_text("\n".join(lines) + "\n")
    table = parse_biosnoop(str(path))
    first = table.slice(0, 1).to_pylist()[0]
    assert (first["queue_ns"], first["latency_ns"]) == (None, 170_000)
    assert table.num_rows == 118 and table.schema.metadata[b"lost_events"] == b"7"
