"""blkscope: offline analysis of Linux block-layer traces.

As a library::

    import blkscope

    ds = blkscope.open("capture-folder")  # or a dataset folder, or one trace file
    ds.bios.filter(...)                    # Polars LazyFrames over the tables (ds["bios"])
    ds.sql("SELECT ...")                   # a Polars DataFrame
    ds.spikes().episodes, ds.periods()     # LazyFrames too
    blkscope.compare("before", "after")

Nothing heavy is imported until one of these is called: the command line starts fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from blkscope.analyze.compare import Comparison
    from blkscope.dataset import Dataset

from blkscope.version import __version__

__all__ = ["__version__", "compare", "open"]


def open(path: str | Path, *, dataset: str | Path | None = None, progress: bool = True) -> Dataset:
    """Open a dataset folder, or a capture folder or trace file (ingested into `dataset`,
    default `<name>.dataset` beside it, and analysed, once: a later open reuses it).

    progress shows how far ingest or analysis is on stderr: bars on a terminal, else a line
    every few seconds.
    Raises a blkscope.errors.BlkscopeError for anything wrong with the input.
    """
    from blkscope.pipeline import open_analyzed
    from blkscope.progress import progress_bar

    with progress_bar(enabled=progress) as bar:
        return open_analyzed(Path(path), Path(dataset) if dataset else None, bar)


def compare(before: str | Path | Dataset, after: str | Path | Dataset) -> Comparison:
    """Compare two captures (datasets, capture folders or traces, opened as `open` does):
    latency shifts with 95% intervals, spikes, periods; each judged noise or real."""
    from blkscope.dataset import Dataset

    a = before if isinstance(before, Dataset) else open(before)
    b = after if isinstance(after, Dataset) else open(after)
    return a.compare(b)
