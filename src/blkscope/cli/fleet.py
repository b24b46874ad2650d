"""`blkscope fleet ...`: many captures from many hosts as one dataset (blkscope.fleet)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from blkscope.cli._app import (
    CSV_OPTION,
    EXIT_FAILED,
    MEMORY_OPTION,
    NL_OPTION,
    TIMEOUT_OPTION,
    QueryCommand,
    _Commands,
    app,
    query_limits,
    say,
    say_json,
    table_format,
)
from blkscope.reports.rows_text import records_text

fleet_app = typer.Typer(
    name="fleet",
    cls=_Commands,
    help="Many captures from many hosts as one hive-partitioned dataset (local or Spark).",
    no_args_is_help=True,
)
app.add_typer(fleet_app)

FleetArg = Annotated[Path, typer.Argument(help="Fleet folder (FLEET/host=H/capture=C/...).")]
MasterOpt = Annotated[
    str | None,
    typer.Option(
        "--spark-master",
        help="Spark master URL (spark://..., yarn, local[4]); default: spark-submit's, else local[*].",
    ),
]


def _progress_line(result: dict[str, Any], done: int, total: int) -> str:
    """One capture's outcome; say() escapes what came from the traced machines."""
    head = f"[{done}/{total}] host={result['host'] or '?'} capture={result['capture']}"
    if result["ok"]:
        return (
            f"{head}: added in {result['seconds']:.1f} s ({result['events']:,} events, "
            f"{result['ingest_errors']:,} malformed lines)"
        )
    line = f"{head}: FAILED ({result['source']}): {result['error']}"
    if result.get("hint"):
        line += f"\n    hint: {result['hint']}"
    return line


@fleet_app.command("add")
def add(
    fleet: FleetArg,
    captures: Annotated[
        list[str], typer.Argument(help="Capture folders (or traces, or datasets) to add.")
    ],
    host: Annotated[
        str | None,
        typer.Option(help="Host they came from (default: capture.json's hostname)."),
    ] = None,
    labels: Annotated[
        list[str] | None,
        typer.Option(
            "--label", help="KEY=VALUE label of these captures, e.g. kernel=6.9 (repeatable)."
        ),
    ] = None,
    engine: Annotated[str, typer.Option(help="local (a process pool) or spark.")] = "local",
    spark_master: MasterOpt = None,
    workers: Annotated[
        int | None, typer.Option(help="Local engine: processes at once (default: CPUs).")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print each capture's outcome as JSON.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
) -> None:
    """Ingest and analyse each capture into its own partition; failures are listed, the rest
    are added. Exit 1 when any capture failed."""
    from blkscope.fleet.add import add_captures

    seen = [0]

    def progress(result: dict[str, Any]) -> None:
        seen[0] += 1
        if not quiet:
            say(_progress_line(result, seen[0], len(captures)), err=True)

    results = add_captures(
        fleet, captures, host=host, labels=labels or [], engine=engine,
        spark_master=spark_master, workers=workers, on_result=progress,
    )  # fmt: skip
    failed = [r for r in results if not r["ok"]]
    if as_json:
        say_json(json.dumps({"fleet": str(fleet), "added": len(results) - len(failed),
                             "failed": len(failed), "captures": results}, indent=2))  # fmt: skip
    elif not quiet:
        say(
            f"added {len(results) - len(failed)} of {len(results)} captures to "
            f"{fleet}" + (f"; {len(failed)} failed" if failed else "")
        )
    if failed:
        raise typer.Exit(EXIT_FAILED)


@fleet_app.command("sql", cls=QueryCommand)
def sql(
    fleet: FleetArg,
    query: Annotated[str, typer.Argument(help="SQL over every table and fleet view.")],
    engine: Annotated[str, typer.Option(help="duckdb (local) or spark.")] = "duckdb",
    spark_master: MasterOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Rows as a JSON list.")] = False,
    as_csv: Annotated[bool, CSV_OPTION] = False,
    as_nl: Annotated[bool, NL_OPTION] = False,
    timeout: Annotated[str | None, TIMEOUT_OPTION] = None,
    memory_limit: Annotated[str | None, MEMORY_OPTION] = None,
) -> None:
    """Run SQL across all captures: each table holds every capture's rows plus host and capture
    (within a time and a memory limit: 5 minutes and 2 GiB unless told otherwise; Spark's
    memory is its own configuration's)."""
    from blkscope.fleet.query import run_sql
    from blkscope.reports.rows_text import render_rows

    fmt = table_format(as_json, as_csv, as_nl)
    limits = query_limits(timeout, memory_limit)
    answer = run_sql(fleet, query, engine, spark_master, limits)
    text = render_rows(answer.columns, answer.rows, fmt) if answer.columns else ""
    (say_json if fmt in ("json", "nl") else say)(text, nl=False)


@fleet_app.command("report")
def report(
    fleet: FleetArg,
    output: Annotated[Path, typer.Option("-o", "--output", help="HTML file to write.")],
    by: Annotated[
        str | None,
        typer.Option(help="Label for before/after (default: the first label with 2 values)."),
    ] = None,
) -> None:
    """Write one self-contained HTML page about the whole fleet."""
    from blkscope.fleet.report import write_fleet_report

    write_fleet_report(fleet, output, by=by)
    say(f"wrote {output}")


@fleet_app.command("check")
def check(
    fleet: FleetArg,
    maxima: Annotated[
        list[str],
        typer.Option("--max", help="METRIC=VALUE as for 'blkscope check', e.g. d2c.p99=5ms."),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
    as_csv: Annotated[bool, CSV_OPTION] = False,
    as_nl: Annotated[bool, NL_OPTION] = False,
) -> None:
    """CI gate over every capture of the fleet; the table names each failing host and capture."""
    from blkscope.fleet.check import check_fleet
    from blkscope.reports.check import parse_threshold, render_results, results_json

    fmt = table_format(as_json, as_csv, as_nl)
    results = check_fleet(fleet, [parse_threshold(spec) for spec in maxima])
    if fmt == "json":
        say_json(json.dumps(results_json(results), indent=2))
    elif fmt != "table":
        checks = results_json(results)["checks"]
        (say_json if fmt == "nl" else say)(records_text(checks, fmt), nl=False)
    else:
        say(render_results(results))
    if not all(r.passed for r in results):
        raise typer.Exit(EXIT_FAILED)
