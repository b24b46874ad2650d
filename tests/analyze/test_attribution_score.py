"""bench/attribution/score.py's rules (issue 31's scorer), on the attribution snippets' own logs.

The scorer judges blkscope's named cause of each episode against injections.csv and the
kernel's record (kernel_truth.txt); these tests pin how it reads both and how it judges.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "attribution"
SNIPPETS = Path(__file__).parents[1] / "data" / "attribution"


def _load(name: str) -> ModuleType:
    """A module of bench/attribution (scripts beside each other, not a package)."""
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


score = _load("score")
truth = _load("truth")


def test_today_causes_read_as_the_closed_set() -> None:
    assert score.parse_cause("writeback+jbd2") == ["writeback", "journal"]
    assert score.parse_cause("jbd2") == ["journal"]
    assert score.parse_cause("competing_io+throttling") == ["competing_io", "throttling"]
    assert score.parse_cause("unexplained") == ["unexplained"]


@pytest.mark.parametrize(
    ("named", "injected", "supported", "expected"),
    [
        (["writeback"], ["writeback"], [], "right"),
        (["writeback", "journal"], ["writeback"], [], "unsupported_extra"),
        (["writeback", "journal"], ["writeback"], ["journal"], "right"),
        (["journal", "writeback"], ["writeback"], ["journal"], "wrong_primary"),
        (["writeback"], ["competing_io"], [], "wrong_primary"),
        (["competing_io"], ["competing_io", "writeback"], [], "right"),
        (["unexplained"], ["throttling"], [], "unexplained"),
        (["unexplained"], [], [], "fine"),
        (["writeback"], [], ["writeback"], "fine"),
        (["writeback"], [], [], "false_cause"),
        (["writeback", "journal"], [], ["writeback"], "false_cause"),
    ],
)
def test_verdicts(
    named: list[str], injected: list[str], supported: list[str], expected: str
) -> None:
    assert score.verdict(named, injected, supported) == expected


def test_kernel_truth_of_a_periodic_writeback() -> None:
    """The flusher's work items that wrote pages, with what they wrote: 80 MiB in 21 items."""
    found = truth.kernel_truth(SNIPPETS / "writeback-periodic")
    written = [k for k in found if k.what == "writeback"]
    assert (len(written), sum(k.amount for k in written)) == (21, 20481)
    assert all(k.note.startswith("periodic writeback by kworker/") for k in written)
    assert not [k for k in found if k.what == "journal"]  # the idle fs commits 3 blocks


def test_kernel_truth_of_a_journal_commit() -> None:
    """No flusher page; the commit that wrote the ordered data counts, the 3-block ones not."""
    found = truth.kernel_truth(SNIPPETS / "journal")
    assert not [k for k in found if k.what == "writeback"]
    commits = [k for k in found if k.what == "journal"]
    assert commits and all("ordered data of" in k.note for k in commits)
    assert commits[0].note == "jbd2 commit 5: 9 blocks logged, ordered data of 2 inode(s)"


def test_a_snippet_judged(tmp_path: Path) -> None:
    """judge_run on the throttling snippet, with episodes as `spikes --json` gives them: one
    over the injection named writeback (wrong), one named right, one quiet and unexplained."""
    run = tmp_path / "throttling-9"
    run.mkdir()
    for name in ("capture", "injections.csv", "kernel_truth.txt"):
        (run / name).symlink_to(SNIPPETS / "throttling" / name)
    doc = {"episodes": [
        {"episode_id": 1, "start_ns": 5_000_000_000, "end_ns": 9_000_000_000,
         "cause": "writeback", "reason": "r", "processes": "p"},
        {"episode_id": 2, "start_ns": 9_000_000_000, "end_ns": 10_000_000_000,
         "cause": "throttling", "reason": "r", "processes": "p"},
        {"episode_id": 3, "start_ns": 11_000_000_000, "end_ns": 12_000_000_000,
         "cause": "unexplained", "reason": "r", "processes": "p"},
    ]}  # fmt: skip
    result = score.judge_run(run, json.loads(json.dumps(doc)), 500_000_000)
    assert [(j.verdict, j.injected) for j in result.episodes] == [
        ("wrong_primary", ["throttling"]),
        ("right", ["throttling"]),
        ("fine", []),
    ]
    assert [i["found"] for i in result.injections] == [True]
    assert result.trace_zero_ns == 3835272204670
    summary = score.summarise([result])
    assert summary["confusion"] == {
        "throttling": {"writeback": 1, "throttling": 1},
        "none": {"unexplained": 1},
    }
    assert (summary["accuracy"], summary["false_cause_rate"]) == (0.5, 0.0)
