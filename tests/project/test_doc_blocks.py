"""Every Python and shell block of the README and docs/ runs as written, on the bundled
captures, and its output is checked, so none goes stale again.

A document's blocks run in order in one scratch folder (holding `fixtures/`), like a reader
following it: a ```sh or ```bash block runs line by line in bash with `blkscope` being this
checkout's (`python -m blkscope.cli`) and must exit 0; a ```console block runs each `$ ` line
and its output must hold the lines printed under it, in order (lines may be left out, never
changed); a ```python block runs in one namespace per document (a notebook) and must print
what EXPECTED says. `python -m pip install ...` lines do nothing here: this checkout is what
they would install. A block that cannot run here is marked on the line before it with
`<!-- doc-test: skip REASON -->` (only: it needs root and live tracing, or it is this very
test suite); the test lists each as skipped with its reason. Blocks with no language, or
```text, are syntax or output shown, not run.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^(<!-- doc-test: skip (.*?) -->\n)?```(\w*)\n(.*?)^```", re.M | re.S)
RUN = {"python", "sh", "bash", "console"}
SKIP_REASONS = ("needs root and live tracing", "runs this very test suite")

# What each document's Python blocks must print, all together (besides running).
EXPECTED = {
    "README.md": [
        "kworker_writes",
        "5121936860",
        "episode_id",
        "['bio_counts', 'bios', 'biosnoop'",
    ],
    "docs/guide.md": [
        "│ 642 ┆ 33873623ns",
        "│ 4          ┆ writeback    ┆ 642 ┆ 33873623",
        "kworker_writes",
        "same numbers as the CLI's SQL",
    ],
}
# Stands in for the shell's `python` and `blkscope`: this interpreter and this checkout.
SHELL_PRELUDE = """
python() { if [ "$1 $2 $3" = "-m pip install" ]; then echo "(doc test: $ROOT is what pip would install)"; else "$PY" "$@"; fi; }
blkscope() { "$PY" -m blkscope.cli "$@"; }
export -f python blkscope
set -e
"""


@dataclass(frozen=True)
class Block:
    where: str  # file:line of the opening fence
    lang: str
    code: str
    skip: str | None  # the marked reason, if it cannot run here


def blocks(doc: Path) -> list[Block]:
    text = doc.read_text()
    found = []
    for m in BLOCK.finditer(text):
        line = text.count("\n", 0, m.start(3)) + 1
        where = f"{doc.relative_to(ROOT)}:{line}"
        found.append(Block(where, m[3], m[4], m[2]))
    return found


def _all_blocks() -> list[Block]:
    return [b for doc in DOCS for b in blocks(doc) if b.lang in RUN]


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PY=sys.executable, ROOT=str(ROOT))
    env["COLUMNS"] = "200"
    return env


def _shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", SHELL_PRELUDE + command],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )


def console_commands(code: str) -> list[tuple[str, list[str]]]:
    """(command, the output lines shown under it) of each `$ ` line; a command continues on
    lines indented under it (a quoted SQL query)."""
    out: list[tuple[str, list[str]]] = []
    for line in code.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out and not out[-1][1] and line.startswith("      "):
            out[-1] = (out[-1][0] + "\n" + line, [])
        elif out:
            out[-1][1].append(line.rstrip())
    return out


def missing_lines(shown: list[str], printed: str) -> list[str]:
    """The lines of shown (blank ones aside) not found in printed, in order."""
    lines = [line.rstrip() for line in printed.splitlines()]
    at, missing = 0, []
    for want in (s for s in shown if s.strip()):
        try:
            at = lines.index(want, at) + 1
        except ValueError:
            missing.append(want)
    return missing


def run_block(block: Block, cwd: Path, namespace: dict[str, Any]) -> str:
    """Run one block; return what a Python block printed, or '' (shell blocks check their own)."""
    if block.lang == "python":
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block.code, block.where, "exec"), namespace)
        assert out.getvalue().strip(), f"{block.where}: printed nothing"
        return out.getvalue()
    if block.lang == "console":
        for command, shown in console_commands(block.code):
            done = _shell(command, cwd)
            printed = done.stdout + done.stderr
            missing = missing_lines(shown, printed)
            assert not missing, f"{block.where}: `{command}` did not print {missing}:\n{printed}"
        return ""
    done = _shell(block.code, cwd)
    assert done.returncode == 0, f"{block.where}: exit {done.returncode}\n{done.stderr}"
    return ""


def _runnable(doc: Path) -> list[Block]:
    return [b for b in blocks(doc) if b.lang in RUN and b.skip is None]


@pytest.mark.slow
@pytest.mark.parametrize(
    "doc", [d for d in DOCS if _runnable(d)], ids=lambda d: str(d.relative_to(ROOT))
)
def test_blocks_run_as_written(doc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    todo = _runnable(doc)
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    namespace: dict[str, Any] = {"__name__": "__doc_block__"}
    printed = "".join(run_block(b, tmp_path, namespace) for b in todo)
    for text in EXPECTED.get(str(doc.relative_to(ROOT)), []):
        assert text in printed


@pytest.mark.parametrize("block", [b for b in _all_blocks() if b.skip], ids=lambda b: b.where)
def test_marked_blocks_say_why_they_do_not_run(block: Block) -> None:
    assert block.skip in SKIP_REASONS, f"{block.where}: not a reason to skip: {block.skip}"
    pytest.skip(f"{block.where}: {block.skip}")


def test_every_runnable_block_runs() -> None:
    # A block in a shell-like language nobody runs (```shell, ```zsh) would go stale unseen.
    langs = {b.lang for doc in DOCS for b in blocks(doc)}
    assert langs <= RUN | {"", "text"}, langs - RUN
    assert sum(b.lang == "python" for b in blocks(ROOT / "README.md")) == 1
