"""`blkscope report`: from a dataset, a capture folder or a raw trace to NAME.html + NAME.summary.json."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blkscope.errors import DatasetError
from blkscope.pipeline import ensure_analyzed, ingested
from blkscope.store.folder_swap import make_parent_folders
from blkscope.store.writer import check_output_name, write_text_atomic

NAME_MAX = 255  # bytes in one file name on Linux file systems


def summary_path(report: Path) -> Path:
    """The report's summary, named after it (`x.html` -> `x.summary.json`), so that two reports
    in one folder keep one summary each."""
    suffix = ".summary.json"
    stem = report.stem.encode("utf-8", "surrogateescape")
    # a report name near the 255-byte limit keeps a summary name within it: its stem is cut
    stem = stem[: NAME_MAX - len(suffix)]
    return report.with_name(stem.decode("utf-8", "surrogateescape") + suffix)


@dataclass(frozen=True)
class Written:
    """What `blkscope report` produced."""

    report: Path
    summary: Path
    dataset: Path
    ingested: bool
    analyzed: bool
    summary_doc: dict[str, Any]


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
    """Write report (HTML) and its summary (JSON) beside it; ingest and analyse source as needed."""
    check_output_name(report, "report")
    if not report.name or report.name == "..":  # '' or '.': the report's dataset is named after it
        raise DatasetError(
            str(report), "is a folder, not a name for the report", hint="e.g. -o report.html"
        )
    make_parent_folders(report)
    refuse_to_replace(report, b"<title>blkscope report</title>")
    refuse_to_replace(summary_path(report), b'"blkscope-summary"')
    dataset, was_ingested = ingested(source, default_dataset_dir(report), progress)
    dataset, was_analyzed = ensure_analyzed(dataset, progress)
    from blkscope.reports.model import load_report  # after a missing source is refused
    from blkscope.reports.summary_json import build_summary

    with dataset:
        content = load_report(dataset)
    from blkscope.reports.page import render_page  # matplotlib: only a report needs it

    generated = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")  # ISO 8601
    write_text_atomic(report, render_page(content, generated if timestamp else None))
    summary = build_summary(content)
    written = summary_path(report)
    write_text_atomic(written, json.dumps(summary, indent=2) + "\n")
    return Written(report, written, dataset.path, was_ingested, was_analyzed, summary)
