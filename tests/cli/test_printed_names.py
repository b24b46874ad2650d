"""Names from traced machines in every table the CLI prints: a process name carrying an escape
sequence, a bell and a byte that is not UTF-8 is shown as escapes (blkscope.safe_text), on the
bundled capture whose busiest writer is renamed so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import zstandard
from typer.testing import CliRunner

from blkscope.cli import app
from blkscope.ingest.block_events import ingest_blkparse
from blkscope.pipeline import analyze
from tests.conftest import ROOT

MQ30 = ROOT / "fixtures" / "mq-writeback-30s"
HOSTILE = b"py\x1b]0;owned\x07th\xffon"  # sets the terminal's title, rings, then a bad byte
# blkparse text is read with undecodable bytes replaced (U+FFFD), which prints as is
SHOWN = "py\\x1b]0;owned\\x07th\ufffdon"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The capture's blkparse text with its python3 process renamed to HOSTILE."""
    folder = tmp_path_factory.mktemp("hostile")
    text = zstandard.ZstdDecompressor().stream_reader((MQ30 / "blkparse.txt.zst").open("rb"))
    trace = folder / "blkparse.txt"
    trace.write_bytes(text.read().replace(b"[python3]", b"[" + HOSTILE + b"]"))
    out = folder / "ds"
    ingest_blkparse([str(trace)], out)
    analyze(out).close()
    return out


def _stdout(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    return result.stdout


@pytest.mark.slow
def test_spikes_shows_the_process_name_escaped(hostile: Path) -> None:
    lines = [s for s in _stdout("spikes", str(hostile)).splitlines() if SHOWN in s]
    processes = [s for s in lines if s.lstrip().startswith("processes (bytes queued): ")]
    assert len(processes) == 4  # python3 writes in all 4 episodes (tests/golden/findings)
    # the start-up episode's load is the renamed writer, in its reason and its process list
    assert f"queued meanwhile: {SHOWN} pid 11563 (write 34 bios, 256.0 MiB" in lines[0]
    assert f"processes (bytes queued): {SHOWN} pid 11563: 256.1 MiB" in processes[0]


def test_sql_table_and_csv_show_the_process_name_escaped(hostile: Path) -> None:
    query = "SELECT comm, count(*) AS n FROM events WHERE comm LIKE 'py%' GROUP BY comm"
    table = _stdout("sql", str(hostile), query).splitlines()
    assert table[:3] == [
        "comm".ljust(len(SHOWN)) + "  n    ",
        "-" * len(SHOWN) + "  -----",
        f"{SHOWN}  55309",
    ]
    csv = _stdout("sql", str(hostile), query, "--csv")
    assert csv.splitlines()[1].startswith(f"{SHOWN},")


def test_sql_json_keeps_the_name_exact(hostile: Path) -> None:
    """JSON is the lossless form: json.dumps escapes every control character itself."""
    query = "SELECT DISTINCT comm FROM events WHERE comm LIKE 'py%'"
    rows = json.loads(_stdout("sql", str(hostile), query, "--json"))
    assert rows == [{"comm": HOSTILE.decode("utf-8", "replace")}]


def test_every_command_prints_through_say() -> None:
    """One place escapes what the CLI prints (cli._app.say / say_json): a command printing
    with typer.echo itself would show names from traced machines raw."""
    commands = sorted((ROOT / "src" / "blkscope" / "cli").glob("*.py"))
    assert [p.name for p in commands if "typer.echo(" in p.read_text()] == ["_app.py"]


def test_library_errors_become_exits_in_one_place() -> None:
    """`_Commands.invoke` turns every BlkscopeError into its message and exit code; a command
    catching them itself would be a second place that could disagree."""
    commands = sorted((ROOT / "src" / "blkscope" / "cli").glob("*.py"))
    catching = [p.name for p in commands if "except BlkscopeError" in p.read_text()]
    assert catching == ["_app.py"]
    printed = [p.name for p in commands if "printable(" in p.read_text()]
    assert printed == ["_app.py"]  # say() escapes; nothing escapes twice
