"""Datasets of the real shared captures, ingested and analyzed once per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

from blkscope.ingest.block_events import ingest_blkparse
from blkscope.pipeline import analyze
from tests.conftest import capture_folder

DATA = Path(__file__).resolve().parents[1] / "data" / "analyze"
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "analyze"


def capture(name: str) -> Path:
    """Folder of a capture (../shared, or its copy in fixtures/); skips cleanly when absent."""
    return capture_folder(name)


@pytest.fixture(scope="session")
def analyzed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Lazily ingest + analyze a shared capture once; maps capture name -> dataset folder."""

    class _Lazy(dict[str, Path]):
        def __missing__(self, name: str) -> Path:
            src = capture(name)
            out = tmp_path_factory.mktemp(name) / "ds"
            ingest_blkparse([str(src / "blkparse.txt.zst")], out)
            analyze(out).close()
            self[name] = out
            return out

    return _Lazy()
