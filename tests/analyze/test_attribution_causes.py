"""Each cause of the closed set (concepts.CAUSES), pinned on a real capture snippet whose cause
was injected and logged by the injecting driver (tests/data/attribution): the episode over the
injection names it, with its evidence, and is not named what it is not (a fio burst is not
writeback, a throttled prober is not the device)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from blkscope.concepts import CAUSES
from blkscope.dataset import Dataset

ATTRIBUTION = Path(__file__).parents[1] / "data" / "attribution"


def episode_over_injection(ds: Dataset, name: str) -> dict[str, Any]:
    """The episode overlapping the snippet's last (main) injection: there is exactly one."""
    with (ATTRIBUTION / name / "injections.csv").open(newline="") as f:
        start, end = [(int(r["start_mono_ns"]), int(r["end_mono_ns"])) for r in csv.DictReader(f)][
            -1
        ]
    zero = int(ds.manifest.doc["clock"]["trace_zero"]["monotonic_ns"])
    rows = ds.con.execute(
        "SELECT * FROM episodes WHERE start_ns < ? AND end_ns > ? ORDER BY episode_id",
        [end - zero + 500_000_000, start - zero],
    ).fetchall()
    columns = [c[0] for c in ds.con.description or []]
    assert len(rows) == 1, f"{name}: {len(rows)} episodes over the injection"
    return dict(zip(columns, rows[0], strict=True))


# name: (the cause named, its evidence in the reason, what the victim is)
CASES = {
    "writeback-periodic": ("writeback", "in flight while it waited: writeback (write "),
    "writeback-background": ("writeback", "in flight while it waited: writeback (write "),
    "sync": ("writeback", "in flight while it waited: writeback (write "),
    "journal": ("journal", "in flight while it waited: journal (write "),
    "competing-read": ("competing_io", "in flight while it waited: fio pid 27579 (read "),
    "competing-write": ("competing_io", "in flight while it waited: fio pid 12178 (write "),
    "throttling": ("throttling", "blk-throttle/iocost messages for the device in the window"),
    "scheduler": ("scheduler", "the IO scheduler held them back"),
    "device": ("device", "the device was slow"),
    "mix-writeback-read": ("writeback", "in flight while it waited: writeback (write "),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_injected_cause_is_named_with_its_evidence(
    name: str, attribution_datasets: dict[str, Dataset]
) -> None:
    cause, evidence = CASES[name]
    e = episode_over_injection(attribution_datasets[name], name)
    assert e["cause"] == cause, e["reason"]
    assert evidence in e["reason"]
    assert e["victim"].startswith("user:prober (python pid ")
    # every other cause of the closed set is named in the reason, with why it was rejected
    rejected = e["reason"].split("rejected: ", 1)[1]
    others = [c for c in CAUSES if c not in ("unexplained", cause)]
    assert [c for c in others if f"{c} (" not in rejected] == []


def test_a_fio_burst_is_not_writeback(attribution_datasets: dict[str, Dataset]) -> None:
    e = episode_over_injection(attribution_datasets["competing-read"], "competing-read")
    assert (e["writeback_share"], e["pages_written"]) == (0.0, 0)
    assert e["competing"].startswith(
        "fio pid 27579 (read 1,252 bios of 16 KiB), 99.2% of the bytes"
    )
    assert (
        "writeback (0% of the bytes in flight were flusher writes; pages written by work "
        "items: 0)" in e["reason"]
    )


def test_writeback_names_the_pages_written_and_the_reason(
    attribution_datasets: dict[str, Dataset],
) -> None:
    periodic = episode_over_injection(
        attribution_datasets["writeback-periodic"], "writeback-periodic"
    )
    sync = episode_over_injection(attribution_datasets["sync"], "sync")
    assert (periodic["pages_written"], periodic["writeback_reasons"]) == (20480, "periodic")
    assert (sync["pages_written"], sync["writeback_reasons"]) == (28677, "sync")
    assert periodic["writeback_share"] > 0.9 and sync["writeback_share"] > 0.9


def test_a_throttled_prober_is_above_the_block_layer(
    attribution_datasets: dict[str, Dataset],
) -> None:
    e = episode_over_injection(attribution_datasets["throttling"], "throttling")
    assert e["throttle_messages"] == 169
    # blk-throttle's dispatcher queues the held-back bios: none of the prober's own is inside
    # its slow samples, so all of their time counts as above the block layer
    assert e["above_ns"] is None and e["device_ns"] is None
    assert "throttled bios are queued by blk-throttle's dispatcher thread" in e["reason"]
    assert e["competing"] == "" and e["writeback_share"] == 0.0


def test_a_slow_device_is_not_a_load(attribution_datasets: dict[str, Dataset]) -> None:
    e = episode_over_injection(attribution_datasets["device"], "device")
    assert e["competing"] == "" and e["device_ns"] > 100 * e["normal_device_ns"]
    assert e["others_at_device"] < 1


def test_the_scheduler_held_the_prober_back_behind_one_light_competitor(
    attribution_datasets: dict[str, Dataset],
) -> None:
    e = episode_over_injection(attribution_datasets["scheduler"], "scheduler")
    assert e["queued_ns"] > 100 * e["normal_queued_ns"]
    # the competitor: one 4 KiB write at a time, favoured by bfq's weights
    assert e["competing"].startswith("fio pid 18211 (write 1,999 bios of 4 KiB)")


def test_the_control_has_no_episode(attribution_datasets: dict[str, Dataset]) -> None:
    con = attribution_datasets["control"].con
    assert con.execute("SELECT count(*) FROM episodes").fetchall() == [(0,)]
