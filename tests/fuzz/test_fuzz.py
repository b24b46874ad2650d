"""A fixed-seed slice of the fuzz campaign (tests/fuzz/): every format and the command line.

The full campaign (`python -m tests.fuzz.campaign --help`) runs a million inputs; this slice
runs the first inputs of seed 20261122 of each so that a change that lets an exception escape
the blkscope hierarchy fails here with the replay command in its message.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fuzz.campaign import Tally, _on_alarm, input_rng, random_input, run_input
from tests.fuzz.targets import TARGETS, Target

SEED = 20261122
INPUTS = 150  # per format; the heavy ones (whole folders, manifests) fewer
CLI_RUNS = 60


@pytest.fixture(autouse=True)
def _alarm() -> Iterator[None]:
    """run_input bounds each input with SIGALRM: make it raise, not kill pytest."""
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def _escapes(tally: Tally, what: str) -> list[str]:
    return [
        f"{sig} x{doc['count']}: {doc['message'][:200]}\n"
        f"  replay: python -m tests.fuzz.campaign --seed {SEED} {what}{doc['example']}\n"
        f"{doc['traceback'][-1500:]}"
        for sig, doc in tally.escaped.items()
    ]


@pytest.mark.slow
@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_fuzz_slice(target: Target, tmp_path: Path) -> None:
    tally = Tally()
    n = max(10, round(INPUTS * min(1.0, target.weight)))
    for k in range(n):
        scratch = tmp_path / f"k{k}"
        scratch.mkdir()
        path = random_input(target, SEED, k, scratch)
        run_input(target, path, scratch, input_rng(SEED, target, k), tally, k)
    assert _escapes(tally, f"--no-exhaustive --replay '{target.name}:") == []
    assert tally.inputs == n
    # the slice is not all refusals: the seeds' mutations still read
    assert tally.ok + sum(tally.errors.values()) == n


@pytest.mark.slow
def test_cli_slice(tmp_path: Path) -> None:
    from tests.fuzz.cli import World, one_run

    (tmp_path / "work").mkdir()
    world = World(tmp_path / "work")
    tallies: dict[str, Tally] = {}
    for k in range(CLI_RUNS):
        one_run(SEED, k, world, tallies)
    found = [e for name, t in tallies.items() for e in _escapes(t, "--replay-cli ")]
    assert found == []
    assert sum(t.inputs for name, t in tallies.items() if name != "cli subprocess") == CLI_RUNS
    assert tallies["cli subprocess"].inputs == 1  # run 0 also ran as a real process
