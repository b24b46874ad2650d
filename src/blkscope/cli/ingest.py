"""`blkscope ingest`: files or a capture folder into a dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from blkscope.cli._app import say
from blkscope.cli.output import emit, json_flag, output_format
from blkscope.errors import InputFormatError
from blkscope.units import format_s, plural


def ingest(
    inputs: Annotated[
        list[str],
        typer.Argument(
            metavar="INPUT",
            help="blkparse text files (plain, .gz, .zst, .xz) or - for stdin; or blktrace "
            "per-CPU files NAME.blktrace.N, or their NAME prefix; or one capture folder.",
        ),
    ],
    output: Annotated[
        Path,
        typer.Option(
            "-o",
            "--output",
            metavar="DATASET",
            help="Dataset folder to write (replaced atomically).",
        ),
    ],
    strict: Annotated[
        bool, typer.Option("--strict", help="Stop at the first malformed line (exit 2).")
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress bar, no summary.")
    ] = False,
    as_json: Annotated[bool, json_flag("The manifest")] = False,
    trace_start: Annotated[
        str | None,
        typer.Option(
            "--trace-start",
            metavar="TIME",
            help="Capture folder: wall time (ISO, UTC unless zoned) of the trace's first event.",
        ),
    ] = None,
    offset: Annotated[
        list[str] | None,
        typer.Option(
            "--offset",
            metavar="SOURCE=SECONDS",
            help="Capture folder: SOURCE=+-SECONDS shifts one source (table or file name).",
        ),
    ] = None,
) -> None:
    """Parse blkparse text, blktrace binaries or a capture folder (all logs, one clock) to Parquet."""
    from blkscope.ingest.block_events import ingest_events
    from blkscope.progress import progress_bar
    from blkscope.store.manifest import Manifest

    folder = Path(inputs[0]) if len(inputs) == 1 and _is_folder(inputs[0]) else None
    if folder is None and (trace_start or offset):
        raise InputFormatError(
            inputs[0], "--trace-start and --offset need a capture folder as the input"
        )
    with progress_bar(enabled=not quiet and not as_json) as progress:
        if folder is not None:
            manifest = _ingest_folder(folder, output, strict, progress, trace_start, offset)
        else:
            manifest = ingest_events(inputs, output, strict=strict, progress=progress)
    if not as_json:  # warnings even with -q: every number built on it is off
        for warning in Manifest.from_doc(manifest).warnings:
            say(f"warning: {warning}", err=True)
    if not quiet or as_json:
        emit(
            output_format(as_json),
            text=lambda: _ingest_text(manifest, output, folder),
            doc=manifest,
        )


def _ingest_text(manifest: dict[str, Any], output: Path, folder: Path | None) -> str:
    from blkscope.ingest.folder_report import folder_report

    summary = _ingest_summary(manifest, output)
    return f"{folder_report(manifest)}\n{summary}" if folder is not None else summary


def _ingest_folder(
    folder: Path,
    output: Path,
    strict: bool,
    progress: Any,
    trace_start: str | None,
    offsets: list[str] | None,
) -> dict[str, Any]:
    from blkscope.ingest.folder import ingest_folder
    from blkscope.ingest.timeline.clock_model import parse_offset, parse_trace_start

    return ingest_folder(
        folder,
        output,
        strict=strict,
        progress=progress,
        trace_start_ns=parse_trace_start(trace_start) if trace_start else None,
        offsets_ns=dict(parse_offset(o) for o in offsets or []),
    )


def _ingest_summary(manifest: dict[str, Any], output: Path) -> str:
    from blkscope.analyze.devices import label, recorded_names

    ev = manifest["events"]
    span = (ev["last_time_ns"] or 0) - (ev["first_time_ns"] or 0)
    lines = [f"wrote {output}: {plural(ev['count'], 'event')} over {format_s(span, 3)}"]
    names = recorded_names(manifest)
    for d in manifest["devices"]:
        acts = " ".join(f"{a}={n:,}" for a, n in d["by_action"].items())
        major, minor = (int(x) for x in d["dev"].split(","))
        lines.append(
            f"  device {label(major, minor, names)}: {plural(d['events'], 'event')}  {acts}"
        )
    errors = manifest["ingest"]["error_lines"]
    unstored = manifest["ingest"].get("error_lines_not_stored", 0)
    if unstored:
        lines.append(
            f"{plural(errors, 'malformed line')}: the first {errors - unstored:,} recorded in "
            f"ingest_errors (see {output / 'ingest_errors.parquet'}), {unstored:,} more "
            "only counted"
        )
    elif errors:
        lines.append(
            f"{plural(errors, 'malformed line')} recorded in "
            f"ingest_errors (see {output / 'ingest_errors.parquet'})"
        )
    else:
        lines.append("0 malformed lines")
    return "\n".join(lines)


def _is_folder(path: str) -> bool:
    """Whether path is a folder; a path the OS refuses (a name too long) is left to the
    ingest, which names the error."""
    try:
        return Path(path).is_dir()
    except OSError:
        return False
