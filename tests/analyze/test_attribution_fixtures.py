"""The attribution fixtures (tests/data/attribution): real snippets of captures whose latency
causes were injected at known times and logged by the injecting driver, not by the trace.

Pinned here is the ground truth each snippet carries, exactly: which cause was injected and
when on the trace's timeline (so also that blkscope maps the trace to CLOCK_MONOTONIC as the
driver's clock), that the victim (the 20 ms prober) really was slow inside the window, and that
the spike detection opens an episode over every injection. Which cause blkscope names is the
attribution's business (issue 31); its tests take these snippets and their expected causes.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from blkscope.dataset import Dataset

ATTRIBUTION = Path(__file__).parents[1] / "data" / "attribution"
CAUSES = {"writeback", "journal", "competing_io", "throttling", "scheduler", "device"}
SLACK_NS = 500_000_000  # IO queued in a window completes (and is counted) just after it

# name: (every injection in the snippet as (cause, start, end) in trace ns, the prober's slowest
# op inside the main injection in us). The main injection is the last one in the table.
EXPECTED: dict[str, tuple[list[tuple[str, int, int]], int | None]] = {
    "competing-read": ([("competing_io", 4980848964, 7709523294)], 149396),
    "competing-write": ([("competing_io", 4995851754, 6658031938)], 179660),
    "control": ([], None),
    "device": ([("device", 4985470268, 9296420428)], 180150),
    "journal": ([("journal", 4982837467, 6692651809)], 483655),
    "mix-writeback-read": (
        [("writeback", 4993775473, 7620751907), ("competing_io", 6963658281, 10561671698)],
        593502,
    ),
    "scheduler": ([("scheduler", 3983368027, 7677654593)], 191353),
    "sync": ([("writeback", 4991633779, 6886488829)], 494350),
    "throttling": ([("throttling", 4999911385, 9050353754)], 299799),
    # The snippet starts 0.18 s before the previous injection's pages drained: its tail is in.
    "writeback-background": (
        [("writeback", -4359932630, 177944898), ("writeback", 4980076471, 9392813767)],
        523835,
    ),
    "writeback-periodic": ([("writeback", 4980100649, 9513439502)], 633120),
}


@pytest.fixture(scope="module")
def datasets(attribution_datasets: dict[str, Dataset]) -> dict[str, Dataset]:
    return attribution_datasets


def _injections(name: str) -> list[tuple[int, int, str, str]]:
    with (ATTRIBUTION / name / "injections.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert all(r.keys() == {"start_mono_ns", "end_mono_ns", "cause", "detail"} for r in rows)
    return [(int(r["start_mono_ns"]), int(r["end_mono_ns"]), r["cause"], r["detail"]) for r in rows]


def _zero(ds: Dataset) -> int:
    return int(ds.manifest.doc["clock"]["trace_zero"]["monotonic_ns"])


def test_every_snippet_is_pinned() -> None:
    assert sorted(p.name for p in ATTRIBUTION.iterdir() if p.is_dir()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_injections_on_the_trace_timeline(name: str, datasets: dict[str, Dataset]) -> None:
    zero = _zero(datasets[name])
    got = [(cause, start - zero, end - zero) for start, end, cause, _ in _injections(name)]
    assert got == EXPECTED[name][0]
    assert {cause for cause, _, _ in got} <= CAUSES


@pytest.mark.parametrize("name", sorted(n for n, (inj, _) in EXPECTED.items() if inj))
def test_the_victim_was_slow_inside(name: str) -> None:
    """The prober's slowest op inside the main injection, and at least 3x its p99 outside."""
    start, end, _, _ = _injections(name)[-1]
    with (ATTRIBUTION / name / "capture" / "prober.csv").open(newline="") as f:
        ops = [(int(r["mono_ns"]), int(r["latency_us"])) for r in csv.DictReader(f)]
    windows = [(s, e + SLACK_NS) for s, e, _, _ in _injections(name)]
    inside = max(lat for t, lat in ops if start <= t <= end)
    outside = sorted(lat for t, lat in ops if not any(s <= t <= e for s, e in windows))
    assert inside == EXPECTED[name][1]
    assert inside >= 3 * outside[int(len(outside) * 0.99)]


@pytest.mark.parametrize("name", sorted(n for n, (inj, _) in EXPECTED.items() if inj))
def test_an_episode_covers_each_injection(name: str, datasets: dict[str, Dataset]) -> None:
    ds = datasets[name]
    zero = _zero(ds)
    episodes = [
        (e["start_ns"], e["end_ns"]) for e in ds.spikes().episodes.collect().iter_rows(named=True)
    ]
    for start, end, cause, _ in _injections(name):
        if start - zero < 0:
            continue  # only the tail of it is in the snippet
        covered = [(s, e) for s, e in episodes if s < end - zero + SLACK_NS and start - zero < e]
        assert covered, f"{cause} at {start - zero} ns: no episode in {episodes}"


def test_the_control_is_quiet(datasets: dict[str, Dataset]) -> None:
    """Nothing injected, no episode, and the prober's slowest op a CPU hiccup (11 ms)."""
    with (ATTRIBUTION / "control" / "capture" / "prober.csv").open(newline="") as f:
        slowest = max(int(r["latency_us"]) for r in csv.DictReader(f))
    assert slowest == 11164
    assert datasets["control"].spikes().episodes.collect().height == 0
