"""Each command loads only what it uses: the compiled core (blkscope._core: ingest's scanners
and the streaming pass), matplotlib (the report's charts, slow to import), Polars and
pyarrow.dataset stay out of
the commands that do not need them, and `import blkscope` loads none of them. Run in a fresh
interpreter each, as a user's shell would."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = (
    "blkscope._core",
    "matplotlib",
    "polars",
    "pyarrow.dataset",
    "pyarrow.compute",
    "duckdb",
    "pyarrow",
    "numpy",
)
# What each must not load ({ds}: the bundled capture's analysed dataset).
NOT_LOADED = [
    (["--help"], HEAVY),
    (["ingest", "{capture}", "-o", "{tmp}/ds"], ("matplotlib", "polars")),
    (["sql", "{ds}", "SELECT 1"], ("blkscope._core", "matplotlib", "polars", "pyarrow.dataset")),
    (["check", "{ds}", "--max", "spikes=9"], ("blkscope._core", "matplotlib", "polars")),
    (["crosscheck", "{ds}"], ("blkscope._core", "matplotlib", "polars")),
    (["spikes", "{ds}", "--json"], ("blkscope._core", "matplotlib")),
    (["periods", "{ds}"], ("blkscope._core", "matplotlib")),
    (["report", "{ds}", "-o", "{tmp}/r.html"], ("blkscope._core",)),
]
RUN = """
import sys
from blkscope.cli import main
sys.argv = ["blkscope", *sys.argv[1:]]
try:
    main()
except SystemExit as e:
    code = e.code
else:
    code = 0
heavy = {heavy!r}
print("LOADED", code, " ".join(m for m in heavy if m in sys.modules), file=sys.stderr)
"""


def _loaded(args: list[str], code: str) -> tuple[int, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    line = next(ln for ln in done.stderr.splitlines() if ln.startswith("LOADED"))
    _, exit_code, *names = line.split()
    return int(exit_code), set(names)


@pytest.mark.slow
@pytest.mark.parametrize(("command", "absent"), NOT_LOADED, ids=lambda c: str(c[0]))
def test_a_command_loads_only_what_it_uses(
    mq_dataset: Path, tmp_path: Path, command: list[str], absent: tuple[str, ...]
) -> None:
    capture = ROOT / "fixtures" / "loop-split-merge-tail"
    args = [a.format(ds=mq_dataset, tmp=tmp_path, capture=capture) for a in command]
    code, loaded = _loaded(args, RUN.format(heavy=HEAVY))
    assert code == 0
    assert not loaded & set(absent)


def test_analyze_loads_the_core_and_no_charts(mq_dataset: Path, tmp_path: Path) -> None:
    """The streaming pass is the compiled core's; an analysis draws nothing, and needs none of
    pyarrow.compute (slow to import) on a capture whose events are in order."""
    dataset = tmp_path / "mq.dataset"
    shutil.copytree(mq_dataset, dataset)
    code, loaded = _loaded(["analyze", str(dataset), "-q"], RUN.format(heavy=HEAVY))
    assert code == 0
    assert {"blkscope._core", "duckdb", "pyarrow"} <= loaded
    assert not loaded & {"matplotlib", "pyarrow.compute"}


# What a user meets first: help, a usage error, a path that is no dataset. Besides the heavy
# libraries, none loads pydantic (typer's conversion of values) or rich's Markdown and
# tracebacks (typer's help module): blkscope.cli.light_typer keeps them out.
STARTUP_ABSENT = (*HEAVY, "pydantic", "rich.markdown", "markdown_it", "rich.traceback", "pygments")
EVERY_START = """
import os, sys
from blkscope.cli import COMMANDS, FLEET_COMMANDS, main
names = [c.name or c.run.__name__ for c in COMMANDS]
names += ["fleet " + (c.name or c.run.__name__) for c in FLEET_COMMANDS]
missing, out = "/nonexistent", sys.argv[1]
runs = [[], ["fleet"], *([*n.split(), "--help"] for n in names), ["--help"], ["analyze"],
        *([c, missing] for c in ("analyze", "spikes", "crosscheck", "periods", "files")),
        ["partitions", missing, missing], ["compare", missing, missing],
        ["check", missing, "--max", "spikes=1"], ["report", missing, "-o", out + "/r.html"],
        ["export", missing, "--perfetto", out + "/r.pftrace"]]
absent = {absent!r}
sys.stdout = open(os.devnull, "w")
sys.stderr, err = open(os.devnull, "w"), sys.stderr
for argv in runs:
    sys.argv = ["blkscope", *argv]
    try:
        main()
    except SystemExit:
        pass
    found = [m for m in absent if m in sys.modules]
    if found:
        print("LOADED 1", " ".join(argv), "loads", *found, file=err)
        break
else:
    print("LOADED 0", file=err)
"""


def test_help_usage_errors_and_missing_paths_load_nothing_heavy(tmp_path: Path) -> None:
    """Every command's help, the group's, a usage error and missing inputs, in turn in one
    interpreter: the first that loads any of STARTUP_ABSENT is named."""
    code, named = _loaded([str(tmp_path)], EVERY_START.format(absent=STARTUP_ABSENT))
    assert (code, named) == (0, set())


def test_import_blkscope_loads_nothing_heavy() -> None:
    code = f"import sys, blkscope; print('LOADED 0', *[m for m in {HEAVY!r} if m in sys.modules], file=sys.stderr)"
    assert _loaded([], code) == (0, set())


def test_registering_the_commands_loads_nothing_heavy() -> None:
    """Every command is registered (`import blkscope.cli`) before any runs: each imports what
    it needs when it runs, so that each command's start-up pays only for its own."""
    code = (
        "import sys, blkscope.cli; "
        f"print('LOADED 0', *[m for m in {HEAVY!r} if m in sys.modules], file=sys.stderr)"
    )
    assert _loaded([], code) == (0, set())


def test_spark_is_an_extra_named_when_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from blkscope.cli import app

    monkeypatch.setitem(sys.modules, "pyspark", None)  # as on an install without the extra
    capture = ROOT / "fixtures" / "loop-split-merge-tail"
    result = CliRunner().invoke(
        app, ["fleet", "add", str(tmp_path / "fleet"), str(capture), "--engine", "spark"]
    )
    assert result.exit_code == 1
    assert result.stderr == (
        "error: --engine spark: pyspark is not installed\n"
        "hint: install it from the blkscope checkout with: pip install '.[spark]' (and a JRE, "
        "e.g. Debian's default-jre-headless)\n"
    )
