"""`blkscope files`: which files the IO, the spikes and the writeback bursts went to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from blkscope.cli._app import analyzed_dataset, app, duration, fail, say, say_json
from blkscope.errors import OptionError


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


def _device(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    try:
        major, minor = (int(x) for x in text.split(","))
    except ValueError:
        raise fail(
            OptionError("--device", f"expected MAJOR,MINOR like 8,0, got {text!r}")
        ) from None
    if not (0 <= major < 1 << 12 and 0 <= minor < 1 << 20):
        raise fail(OptionError("--device", f"MAJOR,MINOR out of range, got {text!r}"))
    return major, minor


@app.command()
def files(
    dataset: Annotated[
        Path, typer.Argument(help="Dataset folder (analysed on the fly if needed).")
    ],
    map_: Annotated[
        list[Path] | None,
        typer.Option(
            "--map",
            help="File map to attach first: a capture folder (its "
            "file_extents.parquet), `filefrag -v` output or debugfs icheck/ncheck "
            "output (repeatable).",
        ),
    ] = None,
    during: Annotated[
        str | None, typer.Option(help="Only IO in flight during: spikes, writeback, START..END.")
    ] = None,
    device: Annotated[
        str | None, typer.Option(help="Traced device MAJOR,MINOR a hand-made map is of.")
    ] = None,
    partition_start: Annotated[
        int,
        typer.Option(
            min=0, max=1 << 53, help="Sector where the mapped filesystem starts on the disk."
        ),
    ] = 0,
    block_size: Annotated[
        int | None, typer.Option(min=512, help="Block size of debugfs icheck block numbers.")
    ] = None,
    strict: Annotated[
        bool, typer.Option(help="Stop at the first map line not understood.")
    ] = False,
    top: Annotated[int, typer.Option(min=1, help="Rows per table in the text output.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Everything as JSON.")] = False,
) -> None:
    """Which files the IO went to: per file and folder, by op and process, writeback's share,
    the files in flight in each spike episode, latency percentiles."""
    from blkscope.analyze.file_usage import During, file_usage
    from blkscope.dataset import Dataset
    from blkscope.files.attach import HandPlacement, attach_maps
    from blkscope.progress import progress_bar
    from blkscope.reports.files_text import render_files

    what, start, end = _during(during)
    override = _device(device)
    ds = analyzed_dataset(dataset)
    notes = None
    if map_:
        traced = [
            (int(a), int(b))
            for a, b in ds.con.execute(
                "SELECT DISTINCT dev_major, dev_minor FROM bios ORDER BY 1, 2"
            ).fetchall()
        ]
        ds.close()
        place = HandPlacement(override, partition_start, block_size)
        notes = attach_maps(dataset, map_, traced, place, strict)
        ds = Dataset(dataset)  # the new version, with its file_extents
    with ds, progress_bar(enabled=not as_json) as progress:
        usage = file_usage(ds.con, During(what, start, end), top, progress)
    if notes and notes["error_lines"]:
        say(
            f"warning: {notes['error_lines']} map lines not understood (first: "
            f"{notes['errors'][0]['file']}:{notes['errors'][0]['line_no']}: "
            f"{notes['errors'][0]['reason']}); --strict stops at them",
            err=True,
        )
    if as_json:
        say_json(json.dumps(usage, indent=2))
        return
    say(render_files(usage, top))
