"""Spikes, periods and writeback attribution on real captures, pinned to golden values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blkscope.analyze.correlation import WritebackIntervals, latency_inside, writeback_verdicts
from blkscope.analyze.episodes import _in_flight, attribute_episodes, group_episodes
from blkscope.analyze.views import query_table
from blkscope.dataset import Dataset
from blkscope.ingest.block_events import ingest_blkparse
from blkscope.ingest.folder import ingest_folder
from blkscope.pipeline import analyze, attach_partitions
from tests.conftest import MQ30
from tests.golden import golden_json

ISSUE5 = Path(__file__).parent / "data" / "issue5"
GOLDEN = Path(__file__).parent / "golden" / "findings"
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
    "ios_in_flight",
    "writeback_ios",
    "jbd2_ios",
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
    causes = con.execute("SELECT cause FROM episodes ORDER BY episode_id").fetchall()
    assert [c for (c,) in causes] == ["unexplained", "writeback", "writeback", "writeback"]
    ((verdict),) = query_table(con, "SELECT * FROM writeback_verdict").to_pylist()
    assert (verdict["episodes"], verdict["episodes_with_writeback"]) == (4, 3)
    assert verdict["explains"] is True
    assert round(verdict["tail_latency_share"], 2) == 0.84
    # no writeback log here: writeback is the bursts of flusher writes
    assert verdict["sentence"].startswith(
        "writeback explains the episodes: 3 of 4 latency episodes coincide with writeback "
        "(flusher writes; 0.9 would by chance)"
    )
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
    assert (verdict["episodes"], verdict["episodes_with_writeback"]) == (4, 4)
    assert verdict["explains"] is False and verdict["coincidence_p_value"] > 0.5
    assert verdict["sentence"].startswith(
        "writeback does NOT explain the episodes: 4 of 4 latency episodes coincide with "
        "writeback (writeback log; 4.0 would by chance)"
    )


def test_aperiodic_random_reads_have_no_period_and_no_spike(loop_parts: Path) -> None:
    con = Dataset(loop_parts).con
    assert con.execute("SELECT count(*) FROM periods").fetchall()[0] == (0,)
    assert con.execute("SELECT count(*) FROM spikes").fetchall()[0] == (0,)
    ((sentence,),) = con.execute("SELECT sentence FROM writeback_verdict").fetchall()
    assert sentence == "no latency episodes to explain"


def test_partition_io_equals_what_fio_issued_per_partition(loop_parts: Path) -> None:
    _, rows = attach_partitions(
        Dataset(loop_parts), [Path(__file__).parent / "data" / "partitions" / "fdisk_gpt_loop0.txt"]
    )
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


def test_in_flight_joins_on_time_steps_as_on_the_device_alone(mq30: Path) -> None:
    """_in_flight joins bios to episodes on time steps (and the bios in flight longer than a
    step on the device alone): the counts and top processes of the plain range join, here with
    steps of 10 ms, which many of this capture's writeback bios outlast."""
    con = Dataset(mq30).con
    t0, t1 = con.execute("SELECT min(q_time_ns), max(q_time_ns) FROM bios").fetchall()[0]
    w = 10**7
    starts = [t0 // w * w + k * (t1 - t0) // 7 // w * w for k in range(6)]
    episodes = [
        {"dev_major": 254, "dev_minor": 0, "start_ns": s, "end_ns": s + (k + 1) * w, "window_ns": w}
        for k, s in enumerate(starts)
    ]
    episodes.append(dict(episodes[0], end_ns=starts[-1]))  # one long episode, overlapping others
    got = _in_flight(con, episodes)
    plain = []
    for e in episodes:
        during = (
            "dev_major = 254 AND dev_minor = 0 "
            f"AND q_time_ns < {e['end_ns']} AND end_ns > {e['start_ns']}"
        )
        total, wb, jbd2, sectors, wb_sectors = con.execute(
            "SELECT count(*), count(*) FILTER (writeback), count(*) FILTER (journal), "
            "coalesce(sum(nsectors), 0), coalesce(sum(nsectors) FILTER (writeback), 0) "
            f"FROM internal._inflight_by_process WHERE {during}"
        ).fetchall()[0]
        top = con.execute(
            "SELECT coalesce(comm, '?') AS c, count(*) AS n FROM bios WHERE dev_major = 254 "
            f"AND q_time_ns >= {e['start_ns'] - w} AND q_time_ns < {e['end_ns']} "
            "GROUP BY c ORDER BY n DESC, c LIMIT 5"
        ).fetchall()
        plain.append(
            {
                "ios_in_flight": total,
                "writeback_ios": wb,
                "writeback_share": wb_sectors / sectors if sectors else 0.0,
                "jbd2_ios": jbd2,
                "processes": ", ".join(f"{c} ({n})" for c, n in top),
            }
        )
    assert got == plain
    long_lived = con.execute(
        f"SELECT count(*) FROM internal._inflight_by_process WHERE end_ns - q_time_ns >= {w}"
    ).fetchall()[0][0]
    assert long_lived > 0 and sum(r["ios_in_flight"] for r in got) > 0
