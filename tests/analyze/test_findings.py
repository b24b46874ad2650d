"""Spikes, periods and writeback attribution on real captures, pinned to golden values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blkscope.analyze.correlation import WritebackIntervals, latency_inside, writeback_verdicts
from blkscope.analyze.episodes import _top_processes, attribute_episodes, group_episodes
from blkscope.analyze.views import query_table
from blkscope.dataset import Dataset
from blkscope.ingest.block_events import ingest_blkparse
from blkscope.ingest.folder import ingest_folder
from blkscope.pipeline import analyze
from blkscope.units import format_bytes
from tests.conftest import MQ30
from tests.golden import golden_json

ISSUE5 = Path(__file__).parents[1] / "data" / "issue5"
GOLDEN = Path(__file__).parents[1] / "golden" / "findings"
SPIKE_COLUMNS = [
    "spike_id",
    "episode_id",
    "metric",
    "start_ns",
    "end_ns",
    "peak_ns",
    "peak_latency_ns",
    "p99_ns",
    "baseline_p99_ns",
    "threshold_ns",
    "ios",
]
EPISODE_COLUMNS = [
    "episode_id",
    "start_ns",
    "end_ns",
    "metrics",
    "worst_metric",
    "peak_ns",
    "peak_latency_ns",
    "victim",
    "slow_ios",
    "queued_ns",
    "device_ns",
    "writeback_share",
    "journal_share",
    "competing_share",
    "competing",
    "writeback_events",
    "writeback_lag_ns",
    "cause",
    "reason",
    "processes",
]


@pytest.fixture(scope="module")
def mq30(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled capture's blkparse text alone: no writeback log, no prober."""
    out = tmp_path_factory.mktemp("mq30") / "ds"
    ingest_blkparse([str(MQ30 / "blkparse.txt.zst")], out)
    analyze(out).close()
    return out


@pytest.fixture(scope="module")
def loop_parts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("lp") / "ds"
    ingest_blkparse([str(ISSUE5 / "loop-parts" / "blkparse.txt.zst")], out)
    analyze(out).close()
    return out


def _golden(name: str, rows: list[dict[str, object]]) -> list[dict[str, object]]:
    return list(golden_json(GOLDEN / name, rows))


def test_spike_and_episode_tables_of_the_mq_fixture_are_golden(mq30: Path) -> None:
    con = Dataset(mq30).con
    spikes = query_table(
        con, f"SELECT {', '.join(SPIKE_COLUMNS)} FROM spikes ORDER BY spike_id"
    ).to_pylist()
    assert spikes == _golden("mq-writeback-30s.spikes.json", spikes)
    episodes = query_table(
        con, f"SELECT {', '.join(EPISODE_COLUMNS)} FROM episodes ORDER BY episode_id"
    ).to_pylist()
    assert episodes == _golden("mq-writeback-30s.episodes.json", episodes)


def test_writeback_explains_the_mq_episodes_but_not_the_start_up_one(mq30: Path) -> None:
    con = Dataset(mq30).con
    rows = query_table(con, "SELECT * FROM episodes ORDER BY episode_id").to_pylist()
    # at start-up the workload's reader writes its 256 MiB file and fsyncs it
    assert [e["cause"] for e in rows] == ["competing_io", "writeback", "writeback", "writeback"]
    assert rows[0]["competing"] == (
        "python3 pid 11563 (write 34 bios, 256.0 MiB (0 B to 8 MiB), read 37 bios of 4 KiB), "
        "97% of the bytes queued"
    )
    # no prober here: the victims are the device's slow bios, the loads what was queued
    assert {e["victim"].split(" of ")[0] for e in rows} == {"q2c"}
    assert [round(e["writeback_share"], 2) for e in rows] == [0.0, 0.95, 0.95, 0.89]
    ((verdict),) = query_table(con, "SELECT * FROM writeback_verdict").to_pylist()
    assert (verdict["episodes"], verdict["episodes_with_writeback"]) == (4, 3)
    assert verdict["explains"] is True
    assert round(verdict["tail_latency_share"], 2) == 0.84
    # no writeback log here: writeback is the bursts of flusher writes
    assert verdict["sentence"].startswith(
        "writeback explains the episodes: 3 of 4 latency episodes are attributed to writeback "
        "(flusher writes: 0.9 would coincide with it by chance, p = 0.04)"
    )
    assert verdict["rule"].startswith("writeback explains a device's episodes when the flusher")
    # writeback runs 2% of the time yet holds 84% of the tail latency
    assert round(verdict["writeback_time_share"], 3) == 0.021
    assert round(verdict["episodes_by_chance"], 2) == 0.93


def test_episodes_inside_ever_running_writeback_are_chance(mq30: Path) -> None:
    """Writeback that runs 90% of the time meets every episode: that explains nothing."""
    con = Dataset(mq30).con
    spikes = query_table(con, "SELECT * FROM spikes ORDER BY spike_id").to_pylist()
    start = con.execute("SELECT min(time_ns) FROM events").fetchall()[0][0]
    busy = np.array([(start + k * 10**9, start + k * 10**9 + 9 * 10**8) for k in range(40)])
    wb = WritebackIntervals({(254, 0): busy}, "writeback log")
    episodes = attribute_episodes(con, group_episodes(spikes), wb)
    ((verdict),) = writeback_verdicts(con, episodes, wb).to_pylist()
    assert (verdict["episodes"], verdict["episodes_with_writeback"]) == (4, 3)
    assert verdict["explains"] is False and verdict["coincidence_p_value"] > 0.5
    assert verdict["sentence"].startswith(
        "writeback does NOT explain the episodes: 3 of 4 latency episodes are attributed to "
        "writeback (writeback log: 4.0 would coincide with it by chance, p = 1)"
    )


def test_aperiodic_random_reads_have_no_period_and_no_spike(loop_parts: Path) -> None:
    con = Dataset(loop_parts).con
    assert con.execute("SELECT count(*) FROM periods").fetchall()[0] == (0,)
    assert con.execute("SELECT count(*) FROM spikes").fetchall()[0] == (0,)
    ((sentence,),) = con.execute("SELECT sentence FROM writeback_verdict").fetchall()
    assert sentence == "no latency episodes to explain"


def test_partition_io_equals_what_fio_issued_per_partition(loop_parts: Path) -> None:
    listing = Path(__file__).parents[1] / "data" / "partitions" / "fdisk_gpt_loop0.txt"
    with Dataset(loop_parts).attach_partitions([listing]) as ds:
        rows = ds.partition_io()
    fio = json.loads((ISSUE5 / "loop-parts" / "fio.json").read_text())
    issued = {f"loop0{j['jobname']}": j["read"]["total_ios"] for j in fio["jobs"]}
    assert (
        {r["partition"]: r["bios"] for r in rows}
        == issued
        == {"loop0p1": 6000, "loop0p2": 15000, "loop0p3": 3000}
    )
    assert {(r["dev_major"], r["dev_minor"]) for r in rows} == {(7, 0)}
    # bytes is an int (a HUGEINT sum came back as Decimal, which `partitions --json` could not
    # print: found by the CLI fuzzer); fio's reads here are 4 KiB each
    assert [(r["bytes"], type(r["bytes"])) for r in rows] == [
        (6000 * 4096, int),
        (15000 * 4096, int),
        (3000 * 4096, int),
    ]


def test_the_journal_commit_period_of_a_real_ext4_capture(tmp_path: Path) -> None:
    """jbd2 commits un-fsynced metadata every commit=5 s: found in its write bursts."""
    ds = tmp_path / "ds"
    ingest_folder(ISSUE5 / "jbd2-commit", ds)
    analyze(ds).close()
    with Dataset(ds).con as con:
        rows = con.execute(
            "SELECT period_ns, bursts, method, knobs FROM periods WHERE series = 'jbd2_writes'"
        ).fetchall()
    ((period_ns, bursts, method, knobs),) = rows
    assert abs(period_ns / 1e9 - 5.03) <= 0.02 and bursts == 5 and method == "periodogram"
    assert "jbd2 commit interval" in knobs


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 100), st.integers(0, 30)), max_size=12),
    st.lists(st.tuples(st.integers(-5, 140), st.integers(0, 2**62)), max_size=30),
)
def test_latency_inside_is_the_per_bio_definition(
    spans: list[tuple[int, int]], tail: list[tuple[int, int]]
) -> None:
    """latency_inside (vectorised) sums what a bio-by-bio test of the sorted intervals does."""
    iv = np.array(sorted((s, s + d) for s, d in spans), dtype=np.int64).reshape(-1, 2)
    c = np.array([t for t, _ in tail], dtype=np.int64)
    lat = np.array([x for _, x in tail], dtype=np.int64)
    inside = sum(x for t, x in tail if any(s <= t <= e for s, e in iv.tolist()))
    assert latency_inside(c, lat, iv) == (sum(x for _, x in tail), inside)


def test_top_processes_join_on_time_steps_as_on_the_device_alone(mq30: Path) -> None:
    """_top_processes joins bios to episodes on time steps: the same top five, by bytes, as
    the plain range join, here with steps of 10 ms and one long episode over the others."""
    con = Dataset(mq30).con
    t0, t1 = con.execute("SELECT min(q_time_ns), max(q_time_ns) FROM bios").fetchall()[0]
    w = 10**7
    starts = [t0 // w * w + k * (t1 - t0) // 7 // w * w for k in range(6)]
    episodes = [
        {"dev_major": 254, "dev_minor": 0, "start_ns": s, "end_ns": s + (k + 1) * w, "window_ns": w}
        for k, s in enumerate(starts)
    ]
    episodes.append(dict(episodes[0], end_ns=starts[-1]))  # one long episode, overlapping others
    got = _top_processes(con, episodes)
    plain = []
    for e in episodes:
        top = con.execute(
            "SELECT coalesce(comm, '?') AS c, pid, sum(coalesce(nsectors, 0)) * 512 AS b, "
            "count(*) AS n FROM bios WHERE dev_major = 254 "
            f"AND q_time_ns >= {e['start_ns'] - w} AND q_time_ns < {e['end_ns']} "
            "GROUP BY c, pid ORDER BY b DESC, n DESC, c, pid LIMIT 5"
        ).fetchall()
        plain.append(", ".join(f"{c} pid {p}: {format_bytes(b)} ({n:,} IOs)" for c, p, b, n in top))
    assert got == plain
    assert all(got) and got[-1].startswith("kworker/u8:")
