"""`blkscope files`: which files the IO, the spikes and the writeback bursts went to."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from blkscope.cli._app import analyzed_dataset, duration, fail, say
from blkscope.cli.analysis import DatasetArg, device_number
from blkscope.cli.output import emit, json_flag, output_format
from blkscope.errors import OptionError
from blkscope.units import plural


def _during(text: str | None) -> tuple[str, int | None, int | None]:
    if text is None or text == "all":
        return "all", None, None
    if text in ("spikes", "writeback"):
        return text, None, None
    start, sep, end = text.partition("..")
    if not sep:
        raise fail(
            OptionError(
                "--during",
                f"expected spikes, writeback or START..END, got {text!r}",
                hint="e.g. --during 10s..25s",
            )
        )
    a, b = duration(start, "--during", zero_ok=True), duration(end, "--during", zero_ok=True)
    if b <= a:
        raise fail(OptionError("--during", f"the range ends before it starts: {text!r}"))
    return "range", a, b


def files(
    dataset: DatasetArg,
    map_: Annotated[
        list[Path] | None,
        typer.Option(
            "--map",
            metavar="MAP",
            help="File map to attach first: a capture folder (its "
            "file_extents.parquet), `filefrag -v` output or debugfs icheck/ncheck "
            "output (repeatable).",
        ),
    ] = None,
    during: Annotated[
        str | None,
        typer.Option(
            metavar="WHEN", help="Only IO in flight during: spikes, writeback, START..END."
        ),
    ] = None,
    device: Annotated[
        str | None,
        typer.Option(metavar="MAJOR,MINOR", help="Traced device a hand-made map is of."),
    ] = None,
    partition_start: Annotated[
        int,
        typer.Option(
            min=0,
            max=1 << 53,
            metavar="SECTOR",
            help="Sector where the mapped filesystem starts on the disk.",
        ),
    ] = 0,
    block_size: Annotated[
        int | None,
        typer.Option(min=512, metavar="BYTES", help="Block size of debugfs icheck block numbers."),
    ] = None,
    strict: Annotated[
        bool, typer.Option(help="Stop at the first map line not understood.")
    ] = False,
    top: Annotated[
        int, typer.Option(min=1, metavar="INT", help="Rows per table in the text output.")
    ] = 20,
    as_json: Annotated[bool, json_flag("Everything")] = False,
) -> None:
    """Which files the IO went to: per file and folder, by op and process, writeback's share,
    the files in flight in each spike episode, latency percentiles."""
    what, start, end = _during(during)
    override = device_number(device, "--device") if device is not None else None
    ds, notes = analyzed_dataset(dataset), None
    # after the dataset is found: a path that is no dataset fails before these imports
    from blkscope.analyze.file_usage import During
    from blkscope.files.attach import HandPlacement
    from blkscope.progress import progress_bar
    from blkscope.reports.files_text import render_files

    if map_:
        place = HandPlacement(override, partition_start, block_size)
        ds, notes = ds.attach_file_maps(map_, place, strict)
    with ds, progress_bar(enabled=not as_json) as progress:
        usage = ds.file_usage(During(what, start, end), top, progress)
        names = ds.device_names()
    if notes and notes["error_lines"]:
        first = notes["errors"][0]
        say(
            f"warning: {plural(notes['error_lines'], 'map line')} not understood (first: "
            f"{first['file']}:{first['line_no']}: {first['reason']}); --strict stops at them",
            err=True,
        )
    emit(output_format(as_json), text=lambda: render_files(usage, top, names), doc=usage)
