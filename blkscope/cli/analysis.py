"""Commands over a dataset: analyze, sql, spikes, periods, compare, partitions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from blkscope.cli._app import analysed, app, duration, fail, number, say, say_json
from blkscope.errors import BlkscopeError, OptionError


@app.command()
def analyze(
    dataset: Annotated[Path, typer.Argument(help="Dataset folder written by 'blkscope ingest'.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    interval: Annotated[
        str, typer.Option("--interval", help="iostat interval, e.g. 1s or 500ms (bare: seconds).")
    ] = "1s",
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress bar, no summary.")
    ] = False,
) -> None:
    """Reconstruct every request and bio, write the analysis tables, print a per-device summary."""
    from blkscope.analyze.devices import device_names
    from blkscope.analyze.summary import render_summary
    from blkscope.ingest.completeness import warnings_of
    from blkscope.ingest.dataset import read_manifest
    from blkscope.wallclock import WallClock

    interval_ns = duration(interval, "--interval")
    try:
        # imported here, inside the try: loading the compiled pass takes a moment worth
        # interrupting
        from blkscope.analyze.build import analyze_dataset
        from blkscope.analyze.summary import device_summary
        from blkscope.progress import progress_bar

        with progress_bar(enabled=not quiet and not as_json) as progress:
            con = analyze_dataset(dataset, interval_ns=interval_ns, progress=progress)
        manifest = read_manifest(dataset)
        with con:
            devices = device_summary(con)
            names = device_names(con, manifest)
    except BlkscopeError as exc:
        raise fail(exc) from None
    for d in devices:
        known = names.get(tuple(int(x) for x in d["dev"].split(",")))  # type: ignore[arg-type]
        d["name"] = known.name if known else None
    warnings = warnings_of(manifest)
    if quiet:
        for warning in warnings:
            say(f"warning: {warning}", err=True)
        return
    if as_json:
        doc = {
            "dataset": str(dataset),
            "trace_start": WallClock.from_manifest(manifest).as_doc(),
            "warnings": warnings,
            "devices": devices,
        }
        say_json(json.dumps(doc, indent=2))
    else:
        say(render_summary(devices, warnings))


@app.command()
def sql(
    dataset: Annotated[Path, typer.Argument(help="Dataset folder.")],
    query: Annotated[str, typer.Argument(help="DuckDB SQL; every table and view is registered.")],
    as_json: Annotated[bool, typer.Option("--json", help="Rows as a JSON list.")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Rows as CSV with a header.")] = False,
) -> None:
    """Run ad-hoc DuckDB SQL over a dataset's tables and views and print the result."""
    from blkscope.analyze.query import run_query

    try:
        text = run_query(dataset, query, "json" if as_json else "csv" if as_csv else "table")
    except BlkscopeError as exc:
        raise fail(exc) from None
    if as_json:
        say_json(text, nl=False)
    else:
        say(text, nl=False)


@app.command()
def spikes(
    dataset: Annotated[
        Path, typer.Argument(help="Dataset folder (analysed on the fly if needed).")
    ],
    window: Annotated[str, typer.Option(help="Window width, e.g. 1s or 100ms.")] = "1s",
    metric: Annotated[str, typer.Option(help="Latency judged: q2c or d2c.")] = "q2c",
    k: Annotated[str, typer.Option(help="Abnormal above median + k*MAD of window p99s.")] = "5",
    threshold: Annotated[
        str | None, typer.Option(help="Fixed p99 threshold instead, e.g. 10ms.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Rows as JSON.")] = False,
) -> None:
    """Find windows of abnormal IO latency, group them into episodes and say why (writeback,
    jbd2, who)."""
    from blkscope.analyze.findings import SpikeOptions, find_episodes
    from blkscope.analyze.views import connect
    from blkscope.ingest.dataset import read_manifest
    from blkscope.reports.terminal import render_spikes
    from blkscope.wallclock import WallClock, with_wall_times

    if metric not in ("q2c", "d2c"):
        raise fail(OptionError("--metric", f"must be q2c or d2c, got {metric!r}"))
    window_ns = duration(window, "--window")
    k_mads = number(k, "--k")
    limit = duration(threshold, "--threshold") if threshold else None
    try:
        analysed(dataset)
        clock = WallClock.from_manifest(read_manifest(dataset))
        with connect(dataset) as con:
            found = find_episodes(con, SpikeOptions(window_ns, metric, k_mads, limit, min_ios=5))
    except BlkscopeError as exc:
        raise fail(exc) from None
    times = ("start_ns", "end_ns", "peak_ns")
    episodes = [with_wall_times(r, clock, times) for r in found.episodes.to_pylist()]
    rows = [with_wall_times(r, clock, times) for r in found.spikes.to_pylist()]
    verdicts = found.writeback_verdict.to_pylist()
    if as_json:
        doc = {"trace_start": clock.as_doc(), "episodes": episodes, "spikes": rows,
               "writeback": verdicts}  # fmt: skip
        say_json(json.dumps(doc, indent=2))
    else:
        say(render_spikes(rows, episodes, verdicts, clock))


@app.command()
def periods(
    dataset: Annotated[
        Path, typer.Argument(help="Dataset folder (analysed on the fly if needed).")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Rows as JSON.")] = False,
) -> None:
    """Report significant periods of writeback IO, journal IO, writeback events and spikes."""
    from blkscope.analyze.views import connect, query_table
    from blkscope.ingest.dataset import read_manifest
    from blkscope.reports.terminal import render_periods
    from blkscope.wallclock import WallClock, with_wall_times

    try:
        analysed(dataset)
        clock = WallClock.from_manifest(read_manifest(dataset))
        rows = query_table(connect(dataset), "SELECT * FROM periods ORDER BY p_value").to_pylist()
    except BlkscopeError as exc:
        raise fail(exc) from None
    if as_json:  # phase_utc: when the first cycle's burst fell
        rows = [with_wall_times(r, clock, ("phase_ns",)) for r in rows]
    if as_json:
        say_json(json.dumps(rows, indent=2))
    else:
        say(render_periods(rows))


@app.command()
def crosscheck(
    dataset: Annotated[
        Path, typer.Argument(help="Dataset folder (analysed on the fly if needed).")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="The agreement as JSON.")] = False,
) -> None:
    """Hold the rebuilt requests against the capture's own biosnoop and iostat logs."""
    from blkscope.analyze.crosscheck import crosscheck as run_crosscheck
    from blkscope.analyze.views import connect
    from blkscope.ingest.dataset import read_manifest
    from blkscope.reports.terminal import render_crosscheck

    try:
        analysed(dataset)
        result = run_crosscheck(connect(dataset), set(read_manifest(dataset)["tables"]))
    except BlkscopeError as exc:
        raise fail(exc) from None
    if as_json:
        say_json(json.dumps(result, indent=2))
    else:
        say(render_crosscheck(result))


@app.command()
def compare(
    before: Annotated[Path, typer.Argument(help="Dataset before the change.")],
    after: Annotated[Path, typer.Argument(help="Dataset after the change.")],
    as_json: Annotated[bool, typer.Option("--json", help="The comparison as JSON.")] = False,
) -> None:
    """Compare two captures: latency shifts with 95% intervals, spikes, periods; noise vs real."""
    from blkscope.analyze.compare import compare as run_compare
    from blkscope.analyze.compare import render

    try:
        for dataset in (before, after):
            analysed(dataset)
        result = run_compare(before, after)
    except BlkscopeError as exc:
        raise fail(exc) from None
    if as_json:
        say_json(json.dumps(result, indent=2))
    else:
        say(render(result))


@app.command()
def partitions(
    dataset: Annotated[
        Path, typer.Argument(help="Dataset folder (analysed on the fly if needed).")
    ],
    listings: Annotated[
        list[Path],
        typer.Argument(
            help="/proc/partitions, `fdisk -l` or `lsblk --json -b -o NAME,MAJ:MIN,START,SIZE,PKNAME,TYPE` output."
        ),
    ],
    device: Annotated[
        str | None,
        typer.Option(
            help="Traced device MAJOR,MINOR the listed disk is (when the trace has several)."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Rows as JSON.")] = False,
) -> None:
    """Map trace sectors to partitions: IO, bytes and latency per partition."""
    from blkscope.analyze.partitions import attach_partitions
    from blkscope.reports.terminal import render_partitions

    override = None
    if device is not None:
        try:
            major, minor = (int(x) for x in device.split(","))
        except ValueError:
            raise fail(
                OptionError("--device", f"expected MAJOR,MINOR like 8,0, got {device!r}")
            ) from None
        if not (0 <= major < 1 << 12 and 0 <= minor < 1 << 20):  # Linux's dev_t: 12 + 20 bits
            raise fail(
                OptionError(
                    "--device",
                    f"MAJOR,MINOR out of range (major < 4096, minor < 1048576), got {device!r}",
                )
            )
        override = (major, minor)
    try:
        analysed(dataset)
        rows = attach_partitions(dataset, listings, override)
    except BlkscopeError as exc:
        raise fail(exc) from None
    if as_json:
        say_json(json.dumps(rows, indent=2))
        return
    say(render_partitions(rows))
