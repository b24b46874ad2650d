"""`blkscope report`, the `check` CI gate and `schema` (the JSON Schemas of --json outputs)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from blkscope.cli._app import EXIT_FAILED, analyzed_dataset, fail, say
from blkscope.cli.output import CsvFlag, NlFlag, Rows, emit, json_flag, output_format
from blkscope.errors import OptionError
from blkscope.units import format_ms, format_s, plural

if TYPE_CHECKING:
    from blkscope.reports.check import Result

CHECK_METRICS = (
    "Metrics: {d2c,q2c}.{p50,p90,p99,p999,max} (ns/us/ms/s), spikes, periods, requeues, errors."
)


def report(
    source: Annotated[
        Path,
        typer.Argument(
            metavar="SOURCE",
            help="Dataset folder, capture folder, or a trace (blkparse text, plain or "
            "compressed, or blktrace binaries).",
        ),
    ],
    output: Annotated[
        Path, typer.Option("-o", "--output", metavar="FILE", help="HTML file to write.")
    ],
    no_timestamp: Annotated[
        bool, typer.Option("--no-timestamp", help="Leave out the generation time (same bytes).")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress, no summary.")] = False,
    as_json: Annotated[bool, json_flag("The summary (NAME.summary.json)")] = False,
) -> None:
    """Write one self-contained HTML report (and NAME.summary.json beside it) for a trace."""
    from blkscope.progress import progress_bar
    from blkscope.reports.make_report import make_report

    with progress_bar(enabled=not quiet and not as_json) as progress:
        done = make_report(source, output, timestamp=not no_timestamp, progress=progress)
    if not quiet or as_json:
        emit(
            output_format(as_json),
            text=lambda: _report_summary(done.summary_doc, output, done.summary, done.dataset),
            doc=done.summary_doc,
        )


def _report_summary(doc: dict[str, Any], output: Path, summary: Path, dataset: Path) -> str:
    lines = [f"wrote {output} and {summary} (dataset {dataset})"]
    lines += [f"  warning: {w}" for w in doc["warnings"]]
    said = set(doc["warnings"])  # a file whose loss is a warning is not named twice
    lines += [
        f"  not read: {e['name']}: {e['reason']}"
        for e in doc["skipped"]
        if f"{e['name']}: {e['reason']}" not in said
    ]
    for d in doc["devices"]:
        periods = ", ".join(f"{p['series']} {format_s(p['period_ns'])}" for p in d["periods"])
        name = f"{d['name']} ({d['dev']})" if d["name"] else d["dev"]
        lines.append(
            f"  device {name}: {plural(d['ios'], 'IO')}, D2C p99 {format_ms(d['d2c']['p99_ns'])}, "
            f"Q2C p99 {format_ms(d['q2c']['p99_ns'])}, latency episodes {d['spikes']} "
            f"({plural(d['metric_spikes'], 'metric spike')}), periods {periods or 'none'}"
        )
    return "\n".join(lines)


def export(
    dataset: Annotated[
        Path,
        typer.Argument(metavar="DATASET", help="Dataset folder (analyzed on the fly if needed)."),
    ],
    perfetto: Annotated[
        Path,
        typer.Option(
            "--perfetto",
            metavar="FILE",
            help="Perfetto trace to write (TrackEvent protobuf; open it in the Perfetto UI).",
        ),
    ],
    as_json: Annotated[bool, json_flag("What was written")] = False,
) -> None:
    """Write every request (with its stages), the writeback work, the latency episodes and the
    user series as a Perfetto trace."""
    from blkscope.store.writer import check_output_name

    check_output_name(perfetto, "trace", "--perfetto")
    ds = analyzed_dataset(dataset)  # a path that is no dataset fails here, before the imports
    from blkscope.reports.perfetto import export_perfetto

    with ds:
        done = export_perfetto(ds, perfetto)
    doc = {"path": str(done.path), "requests": done.requests, "episodes": done.episodes,
           "writeback": done.writeback, "user_samples": done.user_samples, "bytes": done.bytes}  # fmt: skip
    emit(
        output_format(as_json),
        text=lambda: (
            f"wrote {done.path} ({done.bytes:,} bytes): {done.requests:,} requests, "
            f"{done.episodes:,} episodes, {done.writeback:,} writeback work items, "
            f"{done.user_samples:,} user series samples"
        ),
        doc=doc,
    )


def check(
    target: Annotated[
        Path,
        typer.Argument(
            metavar="TARGET",
            help="Dataset, capture folder, trace, or a folder of datasets/captures.",
        ),
    ],
    maxima: Annotated[
        list[str],
        typer.Option(
            "--max",
            metavar="METRIC=VALUE",
            help="A limit that must not be exceeded, e.g. d2c.p99=5ms, spikes=0 (repeatable). "
            + CHECK_METRICS,
        ),
    ],
    as_json: Annotated[bool, json_flag("The results")] = False,
    as_csv: CsvFlag = False,
    as_nl: NlFlag = False,
) -> None:
    """CI gate: exit 1 when any threshold is exceeded, 0 when all pass, 2 on bad usage or input."""
    from blkscope.reports.check import check as run_check
    from blkscope.reports.check import parse_threshold

    fmt = output_format(as_json, as_csv, as_nl)
    results = run_check(target, [parse_threshold(spec) for spec in maxima])
    emit_results(fmt, results)


def emit_results(fmt: str, results: list[Result]) -> None:
    """A check's results as fmt (`check`, `fleet check`); exit 1 when any failed."""
    from blkscope.reports.check import render_results, results_json

    doc = results_json(results)
    emit(fmt, text=lambda: render_results(results), rows=Rows.of(doc["checks"]), doc=doc)
    if not all(r.passed for r in results):
        raise typer.Exit(EXIT_FAILED)


def schema(
    command: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="COMMAND",
            help="The command whose --json output to describe, e.g. spikes, fleet add.",
        ),
    ] = None,
) -> None:
    """Print the JSON Schema of a command's --json output (without COMMAND: list them)."""
    from blkscope.reports.outputs import output_schemas

    schemas = output_schemas()
    if not command:
        say("\n".join(schemas))
        return
    name = " ".join(command)
    if name not in schemas:
        raise fail(
            OptionError(
                "COMMAND", f"no --json output named {name!r}", hint="one of: " + ", ".join(schemas)
            )
        )
    emit("json", doc=schemas[name])
