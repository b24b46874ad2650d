"""Commands over a dataset: analyze, sql, spikes, periods, compare, partitions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from blkscope.cli._app import (
    CSV_OPTION,
    NL_OPTION,
    analyzed_dataset,
    app,
    duration,
    fail,
    number,
    say,
    say_json,
    table_format,
)
from blkscope.errors import OptionError
from blkscope.reports.rows_text import records_text


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
    from blkscope.dataset import Dataset
    from blkscope.reports.summary_text import render_summary

    interval_ns = duration(interval, "--interval")
    # imported here, after the option checks: loading the compiled pass takes a moment
    from blkscope.analyze.device_summary import device_summary
    from blkscope.pipeline import analyze
    from blkscope.progress import progress_bar

    with progress_bar(enabled=not quiet and not as_json) as progress:
        done = analyze(Dataset(dataset), interval_ns=interval_ns, progress=progress)
    warnings = list(done.manifest.warnings)
    if quiet:  # no summary: the dataset is not opened again
        for warning in warnings:
            say(f"warning: {warning}", err=True)
        return
    with done:
        devices = device_summary(done.con)
        names = device_names(done.con, dict(done.manifest.doc))
    for d in devices:
        known = names.get(tuple(int(x) for x in d["dev"].split(",")))  # type: ignore[arg-type]
        d["name"] = known.name if known else None
    if as_json:
        doc = {
            "dataset": str(dataset),
            "trace_start": done.clock.as_doc(),
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
    as_nl: Annotated[bool, typer.Option("--nl", help="Rows as JSON, one object a line.")] = False,
) -> None:
    """Run ad-hoc DuckDB SQL over a dataset's tables and views and print the result."""
    from blkscope.analyze.query import run_query
    from blkscope.analyze.views import reads_catalog
    from blkscope.dataset import Dataset
    from blkscope.reports.rows_text import render_rows

    fmt = table_format(as_json, as_csv, as_nl)
    with Dataset(dataset) as ds:
        if reads_catalog(query):
            ds.document()  # the column docs, for DESCRIBE-like queries
        ds.lock_down()
        names, rows = run_query(ds.con, query)
    text = render_rows(names, rows, fmt) if names else ""
    (say_json if fmt in ("json", "nl") else say)(text, nl=False)


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
    as_csv: Annotated[bool, CSV_OPTION] = False,
    as_nl: Annotated[bool, NL_OPTION] = False,
) -> None:
    """Find windows of abnormal IO latency, group them into episodes and say why (writeback,
    jbd2, who)."""
    from blkscope.analyze.findings import SpikeOptions
    from blkscope.reports.terminal import render_spikes
    from blkscope.wallclock import with_wall_times

    fmt = table_format(as_json, as_csv, as_nl)
    if metric not in ("q2c", "d2c"):
        raise fail(OptionError("--metric", f"must be q2c or d2c, got {metric!r}"))
    window_ns = duration(window, "--window")
    k_mads = number(k, "--k")
    limit = duration(threshold, "--threshold") if threshold else None
    with analyzed_dataset(dataset) as ds:
        found = ds.find_spikes(SpikeOptions(window_ns, metric, k_mads, limit, min_ios=5))
        clock = ds.clock
    times = ("start_ns", "end_ns", "peak_ns")
    episodes = [with_wall_times(r, clock, times) for r in found.episodes.to_dicts()]
    rows = [with_wall_times(r, clock, times) for r in found.spikes.to_dicts()]
    verdicts = found.writeback.to_dicts()
    if fmt in ("csv", "nl"):  # one table: the spikes, each naming its episode
        (say_json if fmt == "nl" else say)(records_text(rows, fmt), nl=False)
    elif as_json:
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
    as_csv: Annotated[bool, CSV_OPTION] = False,
    as_nl: Annotated[bool, NL_OPTION] = False,
) -> None:
    """Report significant periods of writeback IO, journal IO, writeback events and spikes."""
    from blkscope.reports.terminal import render_periods
    from blkscope.wallclock import with_wall_times

    fmt = table_format(as_json, as_csv, as_nl)
    with analyzed_dataset(dataset) as ds:
        rows = ds.periods().to_dicts()
        clock = ds.clock
    if fmt == "table":
        say(render_periods(rows))
        return
    rows = [with_wall_times(r, clock, ("phase_ns",)) for r in rows]  # phase_utc: first burst
    if fmt == "json":
        say_json(json.dumps(rows, indent=2))
    else:
        (say_json if fmt == "nl" else say)(records_text(rows, fmt), nl=False)


@app.command()
def crosscheck(
    dataset: Annotated[
        Path, typer.Argument(help="Dataset folder (analysed on the fly if needed).")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="The agreement as JSON.")] = False,
) -> None:
    """Hold the rebuilt requests against the capture's own biosnoop and iostat logs."""
    from blkscope.analyze.crosscheck import crosscheck as run_crosscheck
    from blkscope.reports.terminal import render_crosscheck

    with analyzed_dataset(dataset) as ds:
        result = run_crosscheck(ds.con, set(ds.manifest.tables))
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
    from blkscope.reports.compare_text import render

    with analyzed_dataset(before) as a, analyzed_dataset(after) as b:
        result = run_compare(a.con, b.con, str(before), str(after)).as_doc()
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
    as_csv: Annotated[bool, CSV_OPTION] = False,
    as_nl: Annotated[bool, NL_OPTION] = False,
) -> None:
    """Map trace sectors to partitions: IO, bytes and latency per partition."""
    from blkscope.pipeline import attach_partitions
    from blkscope.reports.terminal import render_partitions

    fmt = table_format(as_json, as_csv, as_nl)
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
    updated, rows = attach_partitions(analyzed_dataset(dataset), listings, override)
    updated.close()
    if fmt == "json":
        say_json(json.dumps(rows, indent=2))
    elif fmt != "table":
        (say_json if fmt == "nl" else say)(records_text(rows, fmt), nl=False)
    else:
        say(render_partitions(rows))
