"""Commands over a dataset: analyze, sql, crosscheck, spikes, periods, compare, partitions."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from blkscope.cli._app import (
    MEMORY_OPTION,
    TIMEOUT_OPTION,
    analyzed_dataset,
    duration,
    fail,
    number,
    query_limits,
    say,
)
from blkscope.cli.output import CsvFlag, NlFlag, Rows, emit, json_flag, output_format
from blkscope.errors import OptionError

DatasetArg = Annotated[
    Path,
    typer.Argument(metavar="DATASET", help="Dataset folder (analyzed on the fly if needed)."),
]


def analyze(
    dataset: Annotated[
        Path,
        typer.Argument(metavar="DATASET", help="Dataset folder written by 'blkscope ingest'."),
    ],
    as_json: Annotated[bool, json_flag("The summary")] = False,
    interval: Annotated[
        str,
        typer.Option(
            "--interval", metavar="DURATION", help="iostat interval, e.g. 1s or 500ms (bare: s)."
        ),
    ] = "1s",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress, no summary.")] = False,
) -> None:
    """Reconstruct every request and bio, write the analysis tables, print a per-device summary."""
    from blkscope.dataset import Dataset
    from blkscope.pipeline import analyze
    from blkscope.progress import progress_bar

    interval_ns = duration(interval, "--interval")
    with progress_bar(enabled=not quiet and not as_json) as progress:
        done = analyze(Dataset(dataset), interval_ns=interval_ns, progress=progress)
    warnings = list(done.manifest.warnings)
    if quiet and not as_json:  # no summary: the dataset is not opened again
        for warning in warnings:
            say(f"warning: {warning}", err=True)
        return
    from blkscope.reports.summary_text import render_summary

    with done:
        devices = done.device_summary()
    doc = {"dataset": str(dataset), "trace_start": done.clock.as_doc(), "warnings": warnings,
           "devices": devices}  # fmt: skip
    emit(output_format(as_json), text=lambda: render_summary(devices, warnings), doc=doc)


def sql(
    dataset: Annotated[Path, typer.Argument(metavar="DATASET", help="Dataset folder.")],
    query: Annotated[
        str,
        typer.Argument(metavar="QUERY", help="DuckDB SQL; every table and view is registered."),
    ],
    as_json: Annotated[bool, json_flag("Rows")] = False,
    as_csv: CsvFlag = False,
    as_nl: NlFlag = False,
    timeout: Annotated[str | None, TIMEOUT_OPTION] = None,
    memory_limit: Annotated[str | None, MEMORY_OPTION] = None,
) -> None:
    """Run ad-hoc DuckDB SQL over a dataset's tables and views and print the result (within
    a time and a memory limit: 5 minutes and 2 GiB unless told otherwise)."""
    from blkscope.dataset import Dataset

    fmt = output_format(as_json, as_csv, as_nl)
    limits = query_limits(timeout, memory_limit)
    with Dataset(dataset) as ds:
        answer = ds.query(query, limits)
    emit(fmt, rows=Rows(answer.columns, answer.rows))


def spikes(
    dataset: DatasetArg,
    window: Annotated[
        str, typer.Option(metavar="DURATION", help="Window width, e.g. 1s or 100ms.")
    ] = "1s",
    metric: Annotated[str, typer.Option(metavar="q2c|d2c", help="Latency judged.")] = "q2c",
    k: Annotated[
        str,
        typer.Option(metavar="NUMBER", help="Abnormal above median + k*MAD of window p99s."),
    ] = "5",
    threshold: Annotated[
        str | None,
        typer.Option(metavar="DURATION", help="Fixed p99 threshold instead, e.g. 10ms."),
    ] = None,
    per_metric: Annotated[
        bool,
        typer.Option(
            "--per-metric",
            help="--csv and --nl: each metric's spikes instead of the episodes they form.",
        ),
    ] = False,
    as_json: Annotated[bool, json_flag("Episodes, spikes and verdicts")] = False,
    as_csv: CsvFlag = False,
    as_nl: NlFlag = False,
) -> None:
    """Find windows of abnormal IO latency, group them into episodes and say why (writeback,
    jbd2, who)."""
    fmt = output_format(as_json, as_csv, as_nl)
    if metric not in ("q2c", "d2c"):
        raise fail(OptionError("--metric", f"must be q2c or d2c, got {metric!r}"))
    limit = duration(threshold, "--threshold") if threshold else None
    window_ns, k_value = duration(window, "--window"), number(k, "--k")
    ds = analyzed_dataset(dataset)  # a path that is no dataset fails here, before the imports
    from blkscope.analyze.findings import SpikeOptions
    from blkscope.reports.table_rows import table_records
    from blkscope.reports.terminal import render_spikes

    options = SpikeOptions(window_ns, metric, k_value, limit, 5)
    with ds:
        found, clock, names = ds.find_spikes(options), ds.clock, ds.device_names()
    episodes = table_records(found.episodes, "episodes", clock)
    rows = table_records(found.spikes, "spikes", clock)
    verdicts = table_records(found.writeback, "writeback_verdict", clock)
    emit(
        fmt,
        text=lambda: render_spikes(rows, episodes, verdicts, clock, names),
        rows=Rows.of(rows) if per_metric else Rows.of(episodes),
        doc={"trace_start": clock.as_doc(), "episodes": episodes, "spikes": rows,
             "writeback": verdicts},
    )  # fmt: skip


def periods(
    dataset: DatasetArg,
    as_json: Annotated[bool, json_flag("Rows")] = False,
    as_csv: CsvFlag = False,
    as_nl: NlFlag = False,
) -> None:
    """Report significant periods of writeback IO, journal IO, writeback events and spikes."""
    fmt = output_format(as_json, as_csv, as_nl)
    ds = analyzed_dataset(dataset)  # a path that is no dataset fails here, before the imports
    from blkscope.reports.table_rows import table_records
    from blkscope.reports.terminal import render_periods

    with ds:
        # phase_utc: when the first burst came
        rows = table_records(ds.periods(), "periods", ds.clock, utc=("phase_ns",))
        names = ds.device_names()
    emit(fmt, text=lambda: render_periods(rows, names), rows=Rows.of(rows))


def crosscheck(
    dataset: DatasetArg,
    as_json: Annotated[bool, json_flag("The agreement")] = False,
) -> None:
    """Hold the rebuilt requests against the capture's own biosnoop and iostat logs."""
    ds = analyzed_dataset(dataset)  # a path that is no dataset fails here, before the imports
    from blkscope.reports.terminal import render_crosscheck

    with ds:
        result = ds.crosscheck()
    emit(output_format(as_json), text=lambda: render_crosscheck(result), doc=result)


def compare(
    before: Annotated[Path, typer.Argument(metavar="BEFORE", help="Dataset before the change.")],
    after: Annotated[Path, typer.Argument(metavar="AFTER", help="Dataset after the change.")],
    as_json: Annotated[bool, json_flag("The comparison")] = False,
) -> None:
    """Compare two captures: latency shifts with 95% intervals, spikes, periods; noise vs real."""
    with analyzed_dataset(before) as a, analyzed_dataset(after) as b:
        result = a.compare(b).as_doc()
    from blkscope.reports.compare_text import render

    emit(output_format(as_json), text=lambda: render(result), doc=result)


def partitions(
    dataset: DatasetArg,
    listings: Annotated[
        list[Path],
        typer.Argument(
            metavar="LISTING",
            help="/proc/partitions, `fdisk -l` or "
            "`lsblk --json -b -o NAME,MAJ:MIN,START,SIZE,PKNAME,TYPE` output.",
        ),
    ],
    device: Annotated[
        str | None,
        typer.Option(
            metavar="MAJOR,MINOR",
            help="Traced device the listed disk is (when the trace has several).",
        ),
    ] = None,
    as_json: Annotated[bool, json_flag("Rows")] = False,
    as_csv: CsvFlag = False,
    as_nl: NlFlag = False,
) -> None:
    """Map trace sectors to partitions: IO, bytes and latency per partition."""
    fmt = output_format(as_json, as_csv, as_nl)
    override = device_number(device, "--device") if device is not None else None
    with analyzed_dataset(dataset).attach_partitions(listings, override) as ds:
        rows = ds.partition_io()
    from blkscope.reports.terminal import render_partitions

    emit(fmt, text=lambda: render_partitions(rows), rows=Rows.of(rows))


def device_number(text: str, option: str) -> tuple[int, int]:
    """A MAJOR,MINOR option's value; exit 2 when it is not one Linux could have."""
    try:
        major, minor = (int(x) for x in text.split(","))
    except ValueError:
        raise fail(OptionError(option, f"expected MAJOR,MINOR like 8,0, got {text!r}")) from None
    if not (0 <= major < 1 << 12 and 0 <= minor < 1 << 20):  # Linux's dev_t: 12 + 20 bits
        raise fail(
            OptionError(
                option,
                f"MAJOR,MINOR out of range (major < 4096, minor < 1048576), got {text!r}",
            )
        )
    return major, minor
