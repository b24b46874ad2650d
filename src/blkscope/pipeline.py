"""From whatever the user points at to an analysed Dataset: "ingest if needed, analyse if
needed", written once, above ingest and analyze. Every command and `blkscope.open` use it.

A source is a dataset folder, a capture folder (its block trace plus every side log in it), or
one trace file (blkparse text, plain or compressed, or a blktrace binary).
"""

from __future__ import annotations

from pathlib import Path

from blkscope.dataset import Dataset
from blkscope.errors import InputFormatError, does_not_exist
from blkscope.progress import ProgressCallback
from blkscope.store.manifest import is_dataset

# block_events.txt: the ftrace text of blkscope capture's block tracepoint fallback
CAPTURE_TRACES = (
    "blkparse.txt",
    "blkparse.txt.zst",
    "blkparse.txt.gz",
    "blkparse.txt.xz",
    "block_events.txt",
)


def capture_trace(folder: Path) -> Path | None:
    """The block trace of a capture folder (blkparse text or per-CPU binaries), if it has one."""
    for name in CAPTURE_TRACES:
        if (folder / name).is_file():
            return folder / name
    binaries = sorted(folder.glob("*.blktrace.*"))
    return binaries[0] if binaries else None


def dataset_beside(source: Path) -> Path:
    """Where `blkscope.open` puts the dataset of a capture or trace: `<name>.dataset` beside it."""
    return source.with_name(f"{source.name}.dataset")


def ingested(
    source: Path, dataset_dir: Path, progress: ProgressCallback | None = None
) -> tuple[Dataset, bool]:
    """(dataset, ingested): source itself when it is a dataset, else source ingested into
    dataset_dir first. The ingest modules are imported only when needed: they take pyarrow and
    the compiled core, which a command on a dataset may not need."""
    try:
        is_dir = source.is_dir()
    except OSError as exc:  # a name too long, a loop of links
        raise InputFormatError(str(source), f"cannot open: {exc.strerror}") from None
    if is_dir and is_dataset(source):
        return Dataset(source), False
    if is_dir:
        if capture_trace(source) is None:
            raise InputFormatError(
                str(source),
                "is a folder but neither a dataset (no manifest.json) nor a capture "
                "(no blkparse.txt[.zst], block_events.txt or NAME.blktrace.N files)",
                hint="pass a dataset folder, a capture folder or a blkparse text file",
            )
        from blkscope.ingest.folder import ingest_folder

        # A capture folder: every log in it joins the dataset on the trace's clock.
        ingest_folder(source, dataset_dir, progress=progress)
    elif not source.exists():
        raise does_not_exist(str(source))
    else:
        from blkscope.ingest.block_events import ingest_events

        ingest_events([str(source)], dataset_dir, strict=False, progress=progress)
    return Dataset(dataset_dir), True


def is_analyzed(dataset: Dataset) -> bool:
    """Whether the dataset holds every table the analysis writes."""
    tables = dataset.manifest.tables  # a path that is no dataset fails here, before the imports
    from blkscope.analyze.analysis_tables import analysis_tables

    return analysis_tables().issubset(tables)


def analyze(
    dataset: Dataset | Path,
    interval_ns: int = 1_000_000_000,
    origin_ns: int = 0,
    progress: ProgressCallback | None = None,
) -> Dataset:
    """Run the analysis (again) and return the handle on the analysed dataset (the old handle
    is closed: its tables were replaced)."""
    if not isinstance(dataset, Dataset):
        dataset = Dataset(dataset)
    current = dataset.manifest  # a path that is no dataset fails here, before the imports
    dataset.close()
    from blkscope.analyze.build import analyze_dataset

    manifest = analyze_dataset(dataset.path, current, interval_ns, origin_ns, progress)
    return Dataset(dataset.path, manifest)


def ensure_analyzed(
    dataset: Dataset, progress: ProgressCallback | None = None
) -> tuple[Dataset, bool]:
    """(dataset, analysed now): the dataset, analysed first when it lacks any analysis table."""
    if is_analyzed(dataset):
        return dataset, False
    return analyze(dataset, progress=progress), True


def open_analyzed(
    source: Path, dataset_dir: Path | None = None, progress: ProgressCallback | None = None
) -> Dataset:
    """The analysed dataset of source (see the module doc), ingested into dataset_dir (default
    `<name>.dataset` beside source, reused when it is already there) and analysed as needed."""
    if not is_dataset(source):
        target = dataset_dir or dataset_beside(source)
        if dataset_dir is None and is_dataset(target):
            source = target
        else:
            dataset, _ = ingested(source, target, progress)
            return ensure_analyzed(dataset, progress)[0]
    return ensure_analyzed(Dataset(source), progress)[0]
