"""fleet add/sql/report/check from the command line: atomic partitions, names from traced
machines, failures per capture. The local engine only (the Spark engine: test_fleet_engines)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from blkscope.cli import app
from blkscope.fleet.fleet_folder import partitions
from blkscope.fleet.query import run_sql
from tests.conftest import LOOP_TAIL, ROOT

JBD2 = ROOT / "tests" / "data" / "issue5" / "jbd2-commit"
LOOP_PARTS = ROOT / "tests" / "data" / "issue5" / "loop-parts"
PLAIN = ROOT / "tests" / "data" / "kernel-stats" / "plain"


runner = CliRunner()
SCRIPT = "<script>alert(1)</script>"


def blkscope(*args: str | Path) -> Result:
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def small_fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """jbd2-commit and the loop tail as host h1, the loop tail again as h2 (label markup)."""
    fleet = tmp_path_factory.mktemp("small") / "fleet"
    done = blkscope("fleet", "add", fleet, JBD2, LOOP_TAIL, "--host", "h1", "--label", "k=6.8")
    assert done.exit_code == 0, done.output
    done = blkscope("fleet", "add", fleet, LOOP_TAIL, "--host", "h2", "--label", f"k={SCRIPT}")
    assert done.exit_code == 0, done.output
    return fleet


@pytest.mark.parametrize("bad", ["../etc", "a/b", "<script>", ".hidden", "x\x1b[2J", "a..b"])
def test_host_names_that_are_paths_or_markup_are_refused(tmp_path: Path, bad: str) -> None:
    done = blkscope("fleet", "add", tmp_path / "fleet", JBD2, "--host", bad)
    assert done.exit_code == 2
    assert (
        done.output.splitlines()[0].startswith("error: option --host: ")
        and "cannot name a host partition: use 1-128 letters" in done.output
    )
    assert not list(tmp_path.glob("fleet/host=*"))


def test_label_values_with_control_characters_are_refused(tmp_path: Path) -> None:
    done = blkscope("fleet", "add", tmp_path / "fleet", JBD2, "--host", "h", "--label", "k=a\nb")
    assert done.exit_code == 2
    assert done.output == (
        "error: option --label: the value of 'k' has control characters or more than 256 "
        "characters\nhint: give a short printable value\n"
    )


def test_a_failed_capture_leaves_no_partition_and_the_others_land(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    fleet = tmp_path / "fleet"
    done = blkscope("fleet", "add", fleet, JBD2, empty, "--host", "h1", "--json", "-q")
    assert done.exit_code == 1
    doc = json.loads(done.stdout)
    assert (doc["added"], doc["failed"]) == (1, 1)
    bad = next(c for c in doc["captures"] if not c["ok"])
    assert bad["error"].startswith(f"{empty}: is a folder but neither a dataset")
    assert [(p.host, p.capture) for p in partitions(fleet)] == [("h1", "jbd2-commit")]
    assert not (fleet / "host=h1" / "capture=empty").exists()
    assert list((fleet / ".staging").iterdir()) == []


@pytest.mark.slow
def test_labels_reach_the_tables_and_are_escaped_in_the_report(
    small_fleet: Path, tmp_path: Path
) -> None:
    answer = run_sql(small_fleet, "SELECT host, capture, value FROM capture_labels ORDER BY 1, 2")
    assert answer.rows == [
        ("h1", "jbd2-commit", "6.8"),
        ("h1", "loop-split-merge-tail", "6.8"),
        ("h2", "loop-split-merge-tail", SCRIPT),
    ]
    out = tmp_path / "fleet.html"
    assert blkscope("fleet", "report", small_fleet, "-o", out).exit_code == 0
    page = out.read_text()
    assert "<script" not in page
    assert "k=&lt;script&gt;alert(1)&lt;/script&gt;" in page  # the before/after by label k
    assert '<td class="text">h1</td>' in page and '<td class="text">h2</td>' in page
    assert "src=" not in page and "<link" not in page  # self-contained


def test_three_captures_are_too_few_to_call_one_an_outlier(small_fleet: Path) -> None:
    from blkscope.fleet.report import fleet_page

    page = fleet_page(small_fleet)
    assert "OUTLIER</td>" not in page
    assert (
        "judged only among at least 5 capture devices: this fleet has 3, too few to judge them.</p>"
    ) in page
    assert '<p class="meta">2 hosts, 3 captures, ' in page


def test_readding_replaces_the_partition(small_fleet: Path, tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    shutil.copytree(small_fleet, fleet)
    done = blkscope("fleet", "add", fleet, JBD2, "--host", "h1", "--label", "k=6.9", "-q")
    assert done.exit_code == 0, done.output
    answer = run_sql(fleet, "SELECT host, capture, value FROM capture_labels ORDER BY 1, 2")
    assert answer.rows == [
        ("h1", "jbd2-commit", "6.9"),
        ("h1", "loop-split-merge-tail", "6.8"),
        ("h2", "loop-split-merge-tail", SCRIPT),
    ]
    assert len(partitions(fleet)) == 3


def test_check_names_each_failing_host_and_capture(small_fleet: Path) -> None:
    done = blkscope("fleet", "check", small_fleet, "--max", "q2c.p99=100ms")
    assert done.exit_code == 1
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["target", "device", "metric", "threshold", "actual", "result"]
    assert lines[-1] == "FAIL: 2 of 3 checks failed"
    failing = sorted(line.split()[0:2] for line in lines if line.endswith("FAIL"))
    assert failing == [["host=h1", "capture=loop-split-merge-tail"],
                       ["host=h2", "capture=loop-split-merge-tail"]]  # fmt: skip


@pytest.mark.parametrize("query", ["DROP VIEW captures", "COPY captures TO '/tmp/x.csv'"])
def test_fleet_sql_only_reads(small_fleet: Path, query: str) -> None:
    done = blkscope("fleet", "sql", small_fleet, query)
    assert done.exit_code == 2  # bad input, like a malformed query
    assert "statements are refused: blkscope sql only reads the dataset" in done.output


def test_fleet_sql_with_a_malformed_query_is_bad_input(small_fleet: Path) -> None:
    done = blkscope("fleet", "sql", small_fleet, "SELEC host FROM captures")
    assert done.exit_code == 2
    assert done.stderr.splitlines() == [
        'error: query failed: Parser Error: syntax error at or near "SELEC"',
        'hint: the query is DuckDB SQL, quoted whole for the shell: "SELECT count(*) FROM bios"',
    ]


@pytest.mark.slow
def test_killed_add_leaves_a_queryable_fleet_and_a_rerun_completes(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    sources = [JBD2, PLAIN, LOOP_PARTS]
    args: list[str | Path] = [
        "fleet",
        "add",
        fleet,
        *sources,
        "--host",
        "h1",
        "--workers",
        "1",
        "-q",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "blkscope.cli", *map(str, args)], env=env,
                            start_new_session=True, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 120
    while not partitions(fleet) if fleet.exists() else True:
        assert proc.poll() is None and time.monotonic() < deadline, "no partition appeared"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the command and its workers, mid-way
    proc.wait()
    landed = partitions(fleet)
    assert 1 <= len(landed) < 3
    every = {p.name for p in landed[0].path.iterdir()}
    for part in landed:  # each partition whole: the same files as any other
        assert {p.name for p in part.path.iterdir()} >= {"manifest.json", "captures.parquet"}
    assert {p.name for p in landed[0].path.iterdir()} == every
    # no half partition: every capture= folder there is a listed, complete one
    assert sorted(fleet.glob("host=*/capture=*")) == [p.path for p in landed]
    count = run_sql(fleet, "SELECT count(*) FROM captures").rows
    assert count == [(len(landed),)]
    done = blkscope(*args)
    assert done.exit_code == 0, done.output
    assert [p.capture for p in partitions(fleet)] == ["jbd2-commit", "loop-parts", "plain"]
    assert run_sql(fleet, "SELECT sum(events) FROM captures").rows == [(656 + 144_000 + 46_870,)]
    assert list((fleet / ".staging").iterdir()) == []
