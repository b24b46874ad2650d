"""Shared paths and session-wide datasets for the tests."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zstandard

from blkscope.ingest.block_events import ingest_blkparse

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
SHARED_CAPTURES = ROOT.parent / "shared" / "captures"
MQ30 = FIXTURES / "mq-writeback-30s"
LOOP_TAIL = FIXTURES / "loop-split-merge-tail"


@pytest.fixture(autouse=True, scope="session")
def no_progress_lines() -> Iterator[None]:
    """Commands run in process print no progress lines, however slow a shared machine makes
    them: tests compare stderr exactly (tests/cli/test_progress.py checks the lines)."""
    from blkscope import progress

    patch = pytest.MonkeyPatch()
    patch.setattr(progress, "LINE_EVERY_S", 1e9)
    yield
    patch.undo()


@pytest.fixture
def exclusive_tracefs() -> Iterator[None]:
    """Hold /tmp/blkscope-tracefs.lock while a test traces live: tracefs and the blk tracer are
    global, and other processes on a shared machine (captures, other test runs) take it too."""
    with open("/tmp/blkscope-tracefs.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def read_zst(path: Path) -> bytes:
    """Decompress a .zst file with the Python bindings (CI has no zstd binary)."""
    with path.open("rb") as f:
        return zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True).read()


def capture_folder(name: str) -> Path:
    """The capture folder NAME: ../shared/captures/NAME when the team's captures are beside the
    checkout, else the identical copy in fixtures/ (mq-writeback-30s is one); a test needing a
    capture that neither has is skipped, saying so."""
    for root in (SHARED_CAPTURES, FIXTURES):
        if (root / name / "blkparse.txt.zst").is_file():
            return root / name
    pytest.skip(f"capture {name} is neither in {SHARED_CAPTURES} nor in fixtures/")


def shared_captures() -> list[Path]:
    """Every capture folder in ../shared/captures (empty when it is not beside the checkout)."""
    if not SHARED_CAPTURES.is_dir():
        return []
    return sorted(p for p in SHARED_CAPTURES.iterdir() if (p / "blkparse.txt.zst").exists())


def all_blkparse_inputs() -> list[Path]:
    """Fixture blkparse files plus those of every shared capture."""
    fixtures = [MQ30 / "blkparse.txt.zst", LOOP_TAIL / "blkparse.txt.zst"]
    return fixtures + [c / "blkparse.txt.zst" for c in shared_captures()]


def input_id(path: Path) -> str:
    """Readable pytest id for a capture input."""
    return f"{path.parent.parent.name}/{path.parent.name}"


@pytest.fixture(scope="session")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, Path]:
    """Lazily ingest each blkparse input once per session; maps input -> dataset folder."""
    cache: dict[Path, Path] = {}

    class _Lazy(dict[Path, Path]):
        def __missing__(self, key: Path) -> Path:
            out = tmp_path_factory.mktemp("ds") / "ds"
            ingest_blkparse([str(key)], out)
            self[key] = out
            return out

    return _Lazy(cache)


@pytest.fixture(scope="session")
def mq_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled mq-writeback-30s capture, ingested and analysed through blkscope.open."""
    import blkscope

    out = tmp_path_factory.mktemp("mq-dataset") / "mq.dataset"
    root = Path(__file__).resolve().parents[1]
    blkscope.open(root / "fixtures" / "mq-writeback-30s", dataset=out, progress=False).close()
    return out


ATTRIBUTION = Path(__file__).parent / "data" / "attribution"


@pytest.fixture(scope="session")
def attribution_datasets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Each snippet of tests/data/attribution (real captures with injected, logged causes),
    ingested and analysed once, as a user would open it."""
    import blkscope

    root = tmp_path_factory.mktemp("attribution")
    names = sorted(p.name for p in ATTRIBUTION.iterdir() if p.is_dir())
    opened = {
        name: blkscope.open(ATTRIBUTION / name / "capture", dataset=root / name, progress=False)
        for name in names
    }
    yield opened
    for ds in opened.values():
        ds.close()
