"""CLI behaviour, in-process through Typer's runner: exit codes and exact messages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.main import get_command
from typer.testing import CliRunner

from blkscope.cli import COMMANDS, FLEET_COMMANDS, app, app_for
from blkscope.cli.declare import command_name
from tests.conftest import MQ30, read_zst

runner = CliRunner()
GOOD = [
    "254,0    0       68     0.000000000 11421  Q  RA 2168560 + 16 [python3]",
    "254,0    0       69     0.000023184 11421  G  RA 2168560 + 16 [python3]",
    "254,0    0       73     0.000032819 11421  D  RA 2168560 + 16 [python3]",
    "254,0    1       74     0.000207129     0  C  RA 2168560 + 16 [0]",
]


def _write(tmp_path: Path, name: str, content: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


def test_every_command_has_help_and_is_documented() -> None:
    """Each command's --help shows its own first help line, and the README or docs/ show it
    in use (`blkscope NAME ...`), so no command exists that a user cannot find."""
    group = get_command(app)
    commands = group.commands  # type: ignore[attr-defined]
    assert sorted(commands) == [
        "analyze", "capture", "capture-restore", "check", "compare", "crosscheck", "export",
        "files", "fleet", "ingest", "partitions", "periods", "report", "schema", "spikes", "sql",
    ]  # fmt: skip
    fleet = commands["fleet"].commands
    assert sorted(fleet) == ["add", "check", "report", "sql"]
    root = Path(__file__).resolve().parents[2]
    documented = "\n".join(p.read_text() for p in [root / "README.md", *root.glob("docs/*.md")])
    named = [[name] for name in commands] + [["fleet", name] for name in fleet]
    for words in named:
        command = fleet[words[1]] if len(words) == 2 else commands[words[0]]
        first = command.help.strip().splitlines()[0]
        result = runner.invoke(app, [*words, "--help"])
        assert result.exit_code == 0, words
        assert " ".join(first.split()[:4]) in " ".join(result.output.split()), words
        assert f"blkscope {' '.join(words)} " in documented, words


def test_the_command_line_runs_what_app_would() -> None:
    """main() runs app_for(argv): a group with only the command named, or commands listed by
    name for the group's help. Each gives what the whole app gives, to the byte."""
    names = [command_name(c) for c in COMMANDS]
    names += [f"fleet {command_name(c)}" for c in FLEET_COMMANDS]
    runs = [[], ["--help"], ["--version"], ["nosuch"], ["fleet"], ["fleet", "--help"],
            ["fleet", "nosuch"], *([*n.split(), "--help"] for n in names), *(n.split() for n in names),
            ["analyze", "/nonexistent"], ["analyze", "--bogus"], ["files", "/x", "--top", "abc"],
            ["spikes", "/x", "--metric", "z"], ["fleet", "add", "f", "c", "--workers", "zz"]]  # fmt: skip
    for args in runs:
        whole = runner.invoke(app, args, env={"COLUMNS": "100"})
        only = runner.invoke(app_for(args), args, env={"COLUMNS": "100"})
        assert (only.exit_code, only.stdout, only.stderr) == (
            whole.exit_code,
            whole.stdout,
            whole.stderr,
        ), args
    assert app_for(["analyze", "x"]) is not app and app_for(["--version"]) is app


def test_ingest_prints_a_summary_and_writes_the_dataset(tmp_path: Path) -> None:
    src = _write(tmp_path, "in.txt", ("\n".join(GOOD) + "\n").encode())
    result = runner.invoke(app, ["ingest", str(src), "-o", str(tmp_path / "ds")])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"wrote {tmp_path / 'ds'}: 4 events over 0.000 s",
        "  device 254,0: 4 events  C=1 D=1 G=1 Q=1",
        "0 malformed lines",
    ]
    assert pq.read_table(tmp_path / "ds" / "events.parquet").num_rows == 4


def test_lenient_ingest_counts_bad_lines(tmp_path: Path) -> None:
    content = "\n".join([GOOD[0], "254,0    0       73     0.0000", *GOOD[1:]]) + "\n"
    src = _write(tmp_path, "in.txt", content.encode())
    result = runner.invoke(app, ["ingest", str(src), "-o", str(tmp_path / "ds")])
    assert result.exit_code == 0
    assert result.output.splitlines()[-1] == (
        f"1 malformed line recorded in ingest_errors (see {tmp_path / 'ds' / 'ingest_errors.parquet'})"
    )
    errors = pq.read_table(tmp_path / "ds" / "ingest_errors.parquet").to_pylist()
    assert errors == [
        {
            "input_id": 0,
            "line_no": 2,
            "raw": "254,0    0       73     0.0000",
            "reason": "expected time as seconds.nanoseconds with 9 digits, got '0.0000' "
            "(line cut short?)",
        }
    ]


def test_strict_stops_at_the_first_bad_line(tmp_path: Path) -> None:
    content = (
        "\n".join([GOOD[0], GOOD[1], "254,0  0  73  0.000032819 11421  D  RA 2168560 + 1", GOOD[3]])
        + "\n"
    )
    src = _write(tmp_path, "in.txt", content.encode())
    result = runner.invoke(app, ["ingest", "--strict", str(src), "-o", str(tmp_path / "ds")])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: {src}:3: D expects 'sector + count [comm]' after RWBS, got '2168560 + 1'",
        "hint: drop --strict to record bad lines in ingest_errors and go on",
    ]
    assert not (tmp_path / "ds").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["in.txt"]


GARBAGE = {
    "truncated last line": (
        ("\n".join(GOOD) + "\n" + GOOD[0][:-12]).encode(),
        "{p}:5: truncated last line (no newline at end of input): Q expects 'sector + count "
        "[comm]' after RWBS, got '2168560 + '",
    ),
    "cut mid-field": (
        ("\n".join([GOOD[0], "254,0    0       73     0.00003"]) + "\n").encode(),
        "{p}:2: expected time as seconds.nanoseconds with 9 digits, got '0.00003' "
        "(line cut short?)",
    ),
    "empty file": (b"", "{p}: empty input: expected blkparse default-format text"),
    "binary junk": (
        bytes(range(256)) * 8,
        "{p}: binary data: expected blkparse default-format text",
    ),
    "corrupt blktrace binary": (
        b"\x07\x74\x61\x65" + bytes(60),
        "{p}: corrupted blktrace file: bad magic 0x00000000 in record 2 at byte offset 48 "
        "(expected 0x65617407)",
    ),
    "iostat log": (
        b"Linux 6.18.44 (vm) \t11/21/26 \t_x86_64_\t(2 CPU)\n\n11/21/26 23:33:29\navg-cpu:  %user"
        b"   %nice %system %iowait  %steal   %idle\n           1.01    0.00    2.02    0.00    0.00"
        b"   96.97\n\nDevice            r/s     rMB/s   rrqm/s  %rrqm r_await rareq-sz\n",
        "{p}: this looks like iostat output: expected blkparse default-format text",
    ),
}


@pytest.mark.parametrize("case", sorted(GARBAGE))
def test_garbage_gets_an_exact_message_and_exit_2(tmp_path: Path, case: str) -> None:
    content, expected = GARBAGE[case]
    src = _write(tmp_path, "input", content)
    result = runner.invoke(app, ["ingest", "--strict", str(src), "-o", str(tmp_path / "ds")])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == "error: " + expected.format(p=src)
    assert result.stderr.splitlines()[1].startswith("hint: ")
    assert "Traceback" not in result.output


def test_non_utf8_comm_is_kept_byte_exact(tmp_path: Path) -> None:
    line = GOOD[0].encode().replace(b"[python3]", b"[py\xff\xfeth]")
    src = _write(tmp_path, "in.txt", line + b"\n")
    result = runner.invoke(app, ["ingest", "--strict", str(src), "-o", str(tmp_path / "ds")])
    assert result.exit_code == 0
    row = pq.read_table(tmp_path / "ds" / "events.parquet").to_pylist()[0]
    assert (row["comm"], row["comm_raw"]) == ("py\ufffd\ufffdth", b"py\xff\xfeth")


def test_json_output_is_the_manifest(tmp_path: Path) -> None:
    src = _write(tmp_path, "in.txt", ("\n".join(GOOD) + "\n").encode())
    result = runner.invoke(app, ["ingest", "--json", str(src), "-o", str(tmp_path / "ds")])
    doc = json.loads(result.stdout)
    assert doc["events"]["by_action"] == {"C": 1, "D": 1, "G": 1, "Q": 1}
    assert doc == json.loads((tmp_path / "ds" / "manifest.json").read_text())


def test_refuses_to_replace_a_folder_that_is_not_a_dataset(tmp_path: Path) -> None:
    src = _write(tmp_path, "in.txt", ("\n".join(GOOD) + "\n").encode())
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "notes.txt").write_text("keep me")
    result = runner.invoke(app, ["ingest", str(src), "-o", str(tmp_path / "precious")])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == (
        f"error: {tmp_path / 'precious'}: exists and is not a blkscope dataset; refusing to "
        "replace it"
    )
    assert (tmp_path / "precious" / "notes.txt").read_text() == "keep me"


def test_subprocess_end_to_end_from_stdin(tmp_path: Path) -> None:
    data = read_zst(MQ30 / "blkparse.txt.zst")
    proc = subprocess.run(
        [sys.executable, "-m", "blkscope.cli", "ingest", "-", "-o", str(tmp_path / "ds")],
        input=data,
        capture_output=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert (
        proc.stdout.decode().splitlines()[0]
        == f"wrote {tmp_path / 'ds'}: 75,532 events over 34.490 s"
    )
    manifest = json.loads((tmp_path / "ds" / "manifest.json").read_text())
    assert manifest["inputs"][0]["path"] == "-"
    assert manifest["inputs"][0]["lines"] == 75560
