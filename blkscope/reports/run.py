"""`blkscope report`: from a dataset, a capture folder or a raw trace to report.html + summary.json."""

from __future__ import annotations

import datetime as dt
import importlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blkscope.errors import DatasetError, InputFormatError
from blkscope.ingest.dataset import (
    check_output_name,
    is_dataset,
    read_manifest,
    write_text_atomic,
)
from blkscope.ingest.folder_swap import make_parent_folders

ANALYSIS_TABLES = {
    "requests", "bios", "stage_stats", "iostat", "latency_hist", "depth", "depth_bins", "io_dist",
    "spikes", "episodes", "writeback_verdict", "periods", "periodogram", "bursts",
}  # fmt: skip
# block_events.txt: the ftrace text of blkscope capture's block tracepoint fallback
CAPTURE_TRACES = (
    "blkparse.txt",
    "blkparse.txt.zst",
    "blkparse.txt.gz",
    "blkparse.txt.xz",
    "block_events.txt",
)
SUMMARY_NAME = "summary.json"


@dataclass(frozen=True)
class Written:
    """What `blkscope report` produced."""

    report: Path
    summary: Path
    dataset: Path
    ingested: bool
    analyzed: bool
    summary_doc: dict[str, Any]


def capture_trace(folder: Path) -> Path | None:
    """The block trace of a capture folder (blkparse text or per-CPU binaries), if it has one."""
    for name in CAPTURE_TRACES:
        if (folder / name).is_file():
            return folder / name
    binaries = sorted(folder.glob("*.blktrace.*"))
    return binaries[0] if binaries else None


def ensure_dataset(source: Path, dataset_dir: Path, progress: Any = None) -> tuple[Path, bool]:
    """Return (dataset, ingested): source itself when it is a dataset, else ingest it first."""
    from blkscope.ingest.blkparse_ingest import ingest_events
    from blkscope.ingest.folder import ingest_folder

    try:
        is_dir = source.is_dir()
    except OSError as exc:  # a name too long, a loop of links
        raise InputFormatError(str(source), f"cannot open: {exc.strerror}") from None
    if is_dir and is_dataset(source):
        return source, False
    if is_dir:
        if capture_trace(source) is None:
            raise InputFormatError(
                str(source),
                "is a folder but neither a dataset (no manifest.json) nor a capture "
                "(no blkparse.txt[.zst], block_events.txt or NAME.blktrace.N files)",
                hint="pass a dataset folder, a capture folder or a blkparse text file",
            )
        # A capture folder: every log in it joins the dataset on the trace's clock.
        ingest_folder(source, dataset_dir, progress=progress)
    elif not source.exists():
        raise InputFormatError(str(source), "no such file or folder")
    else:
        ingest_events([str(source)], dataset_dir, strict=False, progress=progress)
    return dataset_dir, True


def ensure_analysed(dataset: Path, progress: Any = None) -> bool:
    """Run the analysis when the manifest lacks any of its tables; True when it ran."""
    from blkscope.analyze.build import analyze_dataset

    if set(read_manifest(dataset).get("tables", {})) >= ANALYSIS_TABLES:
        return False
    analyze_dataset(dataset, progress=progress).close()
    return True


def refuse_to_replace(path: Path, written_by_us: bytes) -> None:
    """An output may replace what blkscope wrote there before, never another file: `-o` naming
    the trace itself would have overwritten the capture with the page."""
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except FileNotFoundError:
        return
    except OSError:
        return  # a folder, no permission...: the write itself says what is wrong
    if written_by_us not in head:
        raise DatasetError(
            str(path),
            "exists and is not one blkscope wrote: not overwritten",
            hint="choose another -o, or move that file away first",
        )


def default_dataset_dir(report: Path) -> Path:
    """Where a raw input's dataset goes: `<report stem>.dataset/` beside the report."""
    return report.with_name(f"{report.stem}.dataset")


def make_report(
    source: Path, report: Path, *, timestamp: bool = True, progress: Any = None
) -> Written:
    """Write report (HTML) and summary.json beside it; ingest and analyse source as needed."""
    from blkscope.reports.model import load_report
    from blkscope.reports.summary import build_summary

    check_output_name(report, "report")
    if not report.name or report.name == "..":  # '' or '.': the report's dataset is named after it
        raise DatasetError(
            str(report), "is a folder, not a name for the report", hint="e.g. -o report.html"
        )
    make_parent_folders(report)
    refuse_to_replace(report, b"<title>blkscope report</title>")
    refuse_to_replace(report.with_name(SUMMARY_NAME), b'"blkscope-summary"')
    # matplotlib takes ~0.3 s to import: let that happen while ingest and the analysis wait in
    # numba, Arrow and DuckDB code that releases the GIL.
    warm = threading.Thread(target=importlib.import_module, args=("matplotlib.figure",))
    warm.start()
    dataset, ingested = ensure_dataset(source, default_dataset_dir(report), progress)
    analysed = ensure_analysed(dataset, progress)
    warm.join()
    content = load_report(dataset)
    from blkscope.reports.page import render_page  # after the warm-up: matplotlib is loaded

    generated = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    write_text_atomic(report, render_page(content, generated if timestamp else None))
    summary = build_summary(content)
    summary_path = report.with_name(SUMMARY_NAME)
    write_text_atomic(summary_path, json.dumps(summary, indent=2) + "\n")
    return Written(report, summary_path, dataset, ingested, analysed, summary)
