"""Every Python block of the README and docs/ runs as written, on the bundled capture, and
prints what the text around it says (so none goes stale again)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


def python_blocks() -> list[tuple[str, str]]:
    """(file:line, code) of every ```python block."""
    found = []
    for doc in DOCS:
        text = doc.read_text()
        for m in BLOCK.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            found.append((f"{doc.relative_to(ROOT)}:{line}", m.group(1)))
    return found


# What each block's output must show (a block not listed here must still run and print).
EXPECTED = {
    "README.md": ["kworker_writes", "5121936860", "episode_id", "['bios', 'biosnoop', 'bursts'"],
}


@pytest.mark.parametrize(("where", "code"), python_blocks(), ids=[w for w, _ in python_blocks()])
def test_python_block_runs_as_written(
    where: str, code: str, mq_dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The README's main job wrote demo/report.dataset; the blocks run where it did.
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "report.dataset").symlink_to(mq_dataset)
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, where, "exec"), {"__name__": "__doc_block__"})
    printed = out.getvalue()
    assert printed.strip()
    for text in EXPECTED.get(where.split(":")[0], []):
        assert text in printed


def test_the_readme_has_its_python_block() -> None:
    assert [w.split(":")[0] for w, _ in python_blocks()].count("README.md") == 1
