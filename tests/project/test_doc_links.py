"""The README and docs/ hold together: every relative link names a file that exists (and a
heading of it, when it has an #anchor), the README stays a short user's page, and no page
carries the history of how a number was measured (that is CHANGELOG.md's)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
# Run history that belongs in CHANGELOG.md, not in a page a user reads.
HISTORY = re.compile(r"\bstop[ -]\d+|/work/|\bthis VM\b|\bmain [0-9a-f]{7}\b", re.I)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {slug(m[1]) for m in re.finditer(r"^#+ (.*)$", text, re.M)}


def links(page: Path) -> list[str]:
    return LINK.findall(FENCE.sub("", page.read_text()))


def test_slug_is_githubs() -> None:
    assert slug("2. Report") == "2-report"
    assert slug("`blkscope ingest`: traces and capture folders") == (
        "blkscope-ingest-traces-and-capture-folders"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in links(page):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto: not checked offline
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists() or (anchor and dest.suffix == ".md" and anchor not in anchors(dest)):
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"


def test_every_doc_page_is_linked_from_the_readme() -> None:
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in links(ROOT / "README.md")}
    assert {p for p in PAGES[1:] if p not in linked} == set()


def test_the_readme_is_a_short_page() -> None:
    assert len((ROOT / "README.md").read_bytes()) <= 15_000


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_carries_run_history(page: Path) -> None:
    found = [m[0] for m in HISTORY.finditer(page.read_text())]
    assert not found, f"{page.relative_to(ROOT)}: {found}"


def test_ci_runs_the_readmes_test_command() -> None:
    """.ci/run runs "exactly the README's test command": the block marked as this very suite."""
    marked = re.search(
        r"<!-- doc-test: skip runs this very test suite -->\n```sh\n(.*?)\n```",
        (ROOT / "README.md").read_text(),
        re.S,
    )
    assert marked is not None
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert marked[1] in ci, marked[1]


# A file the code, docs or build cite by path, from the repository root or from the package,
# the crate, or the analysis folder (how docstrings write them). A word in capitals (NAME, DIR)
# is a placeholder.
CITED = re.compile(r"(?<![\w./-])((?:[A-Za-z_][\w-]*/)+[\w-]+\.(?:py|rs|sql|md|toml|sh|json))\b")
PLACEHOLDER = re.compile(r"(?:^|/)[A-Z]+[/.]")
CITED_FROM = ("", "src/", "src/blkscope/", "src/blkscope/analyze/", "rust/", "rust/src/")
CITING = ("src", "rust/src", "docs", "bench", ".ci", "README.md", "CONTRIBUTING.md", "justfile")


def cited_paths() -> dict[str, set[str]]:
    """Each cited path that resolves nowhere, with the files that cite it."""
    files = [p for top in CITING for p in sorted((ROOT / top).rglob("*")) or [ROOT / top]]
    missing: dict[str, set[str]] = {}
    for file in files:
        if not file.is_file() or file.suffix not in {"", ".py", ".rs", ".sql", ".md", ".json"}:
            continue
        for path in CITED.findall(file.read_text(errors="replace")):
            if PLACEHOLDER.search(path):
                continue
            if not any((ROOT / base / path).exists() for base in CITED_FROM):
                missing.setdefault(path, set()).add(str(file.relative_to(ROOT)))
    return missing


def test_nothing_cites_a_file_that_does_not_exist() -> None:
    """Issue 32: "Nothing in the repo cites a file that no longer exists" (CHANGELOG.md is
    history and may)."""
    assert cited_paths() == {}
