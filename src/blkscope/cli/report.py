"""`blkscope report`, the `check` CI gate and `schema` (the JSON Schemas of --json outputs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from blkscope.cli._app import (
    CSV_OPTION,
    EXIT_FAILED,
    NL_OPTION,
    app,
    fail,
    say,
    say_json,
    table_format,
)
from blkscope.errors import OptionError
from blkscope.reports.rows_text import records_text
from blkscope.units import format_ms, format_s


@app.command()
def report(
    source: Annotated[
        Path,
        typer.Argument(
            help="Dataset folder, capture folder, or blkparse text (plain or compressed)."
        ),
    ],
    output: Annotated[Path, typer.Option("-o", "--output", help="HTML file to write.")],
    no_timestamp: Annotated[
        bool, typer.Option("--no-timestamp", help="Leave out the generation time (same bytes).")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress, no summary.")] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the summary (NAME.summary.json) on stdout.")
    ] = False,
) -> None:
    """Write one self-contained HTML report (and NAME.summary.json beside it) for a trace."""
    from blkscope.progress import progress_bar
    from blkscope.reports.make_report import make_report

    with progress_bar(enabled=not quiet and not as_json) as progress:
        done = make_report(source, output, timestamp=not no_timestamp, progress=progress)
    if as_json:
        say_json(json.dumps(done.summary_doc, indent=2))
    elif not quiet:
        say(_report_summary(done.summary_doc, output, done.summary, done.dataset))


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
            f"  device {name}: {d['ios']:,} IOs, D2C p99 {format_ms(d['d2c']['p99_ns'])}, "
            f"Q2C p99 {format_ms(d['q2c']['p99_ns'])}, latency episodes {d['spikes']} "
            f"({d['metric_spikes']} metric spikes), periods {periods or 'none'}"
        )
    return "\n".join(lines)


@app.command()
def check(
    target: Annotated[
        Path,
        typer.Argument(help="Dataset, capture folder, trace, or a folder of datasets/captures."),
    ],
    maxima: Annotated[
        list[str],
        typer.Option(
            "--max",
            help="METRIC=VALUE that must not be exceeded, e.g. d2c.p99=5ms, spikes=0 (repeatable). "
            "Metrics: {d2c,q2c}.{p50,p90,p99,p999,max} (ns/us/ms/s), spikes, periods, requeues, "
            "errors.",
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
    as_csv: Annotated[bool, CSV_OPTION] = False,
    as_nl: Annotated[bool, NL_OPTION] = False,
) -> None:
    """CI gate: exit 1 when any threshold is exceeded, 0 when all pass, 2 on bad usage or input."""
    from blkscope.reports.check import check as run_check
    from blkscope.reports.check import parse_threshold, render_results, results_json

    fmt = table_format(as_json, as_csv, as_nl)
    thresholds = [parse_threshold(spec) for spec in maxima]
    results = run_check(target, thresholds)
    if fmt == "json":
        say_json(json.dumps(results_json(results), indent=2))
    elif fmt != "table":
        (say_json if fmt == "nl" else say)(
            records_text(results_json(results)["checks"], fmt), nl=False
        )
    else:
        say(render_results(results))
    if not all(r.passed for r in results):
        raise typer.Exit(EXIT_FAILED)


@app.command()
def schema(
    command: Annotated[
        list[str] | None,
        typer.Argument(help="The command whose --json output to describe, e.g. spikes, fleet add."),
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
    say_json(json.dumps(schemas[name], indent=2))
