"""The report's "Which files" section: the files the writeback bursts and the spike episodes
wrote and read (blkscope.analyze.file_usage), every path escaped and shown on one line."""

from __future__ import annotations

from html import escape
from typing import Any

from blkscope.reports.files_text import UNMAPPED_WHY, one_line
from blkscope.reports.tables import table
from blkscope.reports.text import count
from blkscope.units import format_ns, format_share

TOP_FILES = 10


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f}"


def which_files_html(usage: dict[str, Any] | None) -> str:
    """The section; a note saying how to get one when the dataset has no file map."""
    parts = ['<section class="files" id="which-files"><h2>Which files</h2>']
    if usage is None:
        parts.append(
            '<p class="missing">No file map in this dataset: capture with '
            "<code>blkscope capture --files PATH</code>, or attach one with "
            "<code>blkscope files DATASET --map MAP</code>.</p></section>"
        )
        return "\n".join(parts)
    kinds = ", ".join(f"{escape(k['kind'])} {format_share(k['share'])}" for k in usage["by_kind"])
    parts.append(f"<p>{_mib(usage['bytes'])} MiB of bios: {kinds}.</p>")
    if any(k["kind"] == "unmapped" for k in usage["by_kind"]):
        parts.append(f"<p>Unmapped: {escape(UNMAPPED_WHY)}.</p>")
    parts.append(table(
        ["file", "kind", "MiB", "share", "IOs", "writeback share of its bytes", "Q2C p99"],
        [[one_line(f["path"]), f["kind"], _mib(f["bytes"]), format_share(f["share"]),
          count(f["ios"]), format_share(f["writeback_bytes"] / f["bytes"]) if f["bytes"] else "-",
          format_ns(f["q2c_p99_ns"]) if f["q2c_p99_ns"] is not None else "-"]
         for f in usage["files"][:TOP_FILES]],
        text_cols=2,
    ))  # fmt: skip
    if usage["writeback"]:
        parts.append(f"<h3>Writeback bursts ({_mib(usage['writeback_bytes'])} MiB of flusher "
                     "writes) went to</h3>")  # fmt: skip
        parts.append(table(
            ["file", "kind", "MiB", "share of writeback"],
            [[one_line(w["path"]), w["kind"], _mib(w["bytes"]), format_share(w["share"])]
             for w in usage["writeback"][:TOP_FILES]],
            text_cols=2,
        ))  # fmt: skip
    for ep in usage["episodes"]:
        parts.append(
            f"<h3>Spike episode {int(ep['episode_id'])} on {int(ep['dev_major'])},"
            f"{int(ep['dev_minor'])} ({format_ns(ep['start_ns'])} to {format_ns(ep['end_ns'])}): "
            f"{_mib(ep['bytes'])} MiB in flight</h3>"
        )
        parts.append(table(
            ["file", "kind", "MiB", "share in flight"],
            [[one_line(f["path"]), f["kind"], _mib(f["bytes"]), format_share(f["share"])]
             for f in ep["files"][:5]],
            text_cols=2,
        ))  # fmt: skip
    parts.append("</section>")
    return "\n".join(parts)
