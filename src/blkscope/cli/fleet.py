"""`blkscope fleet ...`: many captures from many hosts as one dataset (blkscope.fleet)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from blkscope.cli._app import (
    EXIT_FAILED,
    MEMORY_OPTION,
    TIMEOUT_OPTION,
    _Commands,
    query_limits,
    say,
)
from blkscope.cli.output import CsvFlag, NlFlag, Rows, emit, json_flag, output_format
from blkscope.cli.report import emit_results
from blkscope.fleet.handle import Fleet
from blkscope.units import plural


def fleet_group() -> typer.Typer:
    """The `blkscope fleet` group, no command yet."""
    return typer.Typer(
        name="fleet",
        cls=_Commands,
        help="Many captures from many hosts as one hive-partitioned dataset (local or Spark).",
        no_args_is_help=True,
    )


fleet_app = fleet_group()

FleetArg = Annotated[
    Path, typer.Argument(metavar="FLEET", help="Fleet folder (FLEET/host=H/capture=C/...).")
]
MasterOpt = Annotated[
    str | None,
    typer.Option(
        "--spark-master",
        metavar="URL",
        help="Spark master (spark://..., yarn, local[4]); default: spark-submit's, else local[*].",
    ),
]


def _progress_line(result: dict[str, Any], done: int, total: int) -> str:
    """One capture's outcome; say() escapes what came from the traced machines."""
    head = f"[{done}/{total}] host={result['host'] or '?'} capture={result['capture']}"
    if result["ok"]:
        return (
            f"{head}: added in {result['seconds']:.1f} s ({plural(result['events'], 'event')}, "
            f"{plural(result['ingest_errors'], 'malformed line')})"
        )
    line = f"{head}: FAILED ({result['source']}): {result['error']}"
    if result.get("hint"):
        line += f"\n    hint: {result['hint']}"
    return line


def add(
    fleet: FleetArg,
    captures: Annotated[
        list[str],
        typer.Argument(metavar="CAPTURE", help="Capture folders (or traces, or datasets) to add."),
    ],
    host: Annotated[
        str | None,
        typer.Option(
            metavar="HOST", help="Host they came from (default: capture.json's hostname)."
        ),
    ] = None,
    labels: Annotated[
        list[str] | None,
        typer.Option(
            "--label",
            metavar="KEY=VALUE",
            help="Label of these captures, e.g. kernel=6.9 (repeatable).",
        ),
    ] = None,
    engine: Annotated[
        str, typer.Option(metavar="local|spark", help="A local process pool, or Spark.")
    ] = "local",
    spark_master: MasterOpt = None,
    workers: Annotated[
        int | None,
        typer.Option(metavar="INT", help="Local engine: processes at once (default: CPUs)."),
    ] = None,
    as_json: Annotated[bool, json_flag("Each capture's outcome")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
) -> None:
    """Ingest and analyze each capture into its own partition; failures are listed, the rest
    are added. Exit 1 when any capture failed."""
    seen = [0]

    def progress(result: dict[str, Any]) -> None:
        seen[0] += 1
        if not quiet:
            say(_progress_line(result, seen[0], len(captures)), err=True)

    results = Fleet(fleet).add(
        captures, host=host, labels=labels or [], engine=engine,
        spark_master=spark_master, workers=workers, on_result=progress,
    )  # fmt: skip
    failed = sum(not r["ok"] for r in results)
    if as_json or not quiet:
        added = f"added {len(results) - failed} of {plural(len(results), 'capture')} to {fleet}"
        emit(
            output_format(as_json),
            text=lambda: added + (f"; {failed} failed" if failed else ""),
            doc={"fleet": str(fleet), "added": len(results) - failed, "failed": failed,
                 "captures": results},
        )  # fmt: skip
    if failed:
        raise typer.Exit(EXIT_FAILED)


def sql(
    fleet: FleetArg,
    query: Annotated[
        str, typer.Argument(metavar="QUERY", help="SQL over every table and fleet view.")
    ],
    engine: Annotated[
        str, typer.Option(metavar="duckdb|spark", help="DuckDB (local) or Spark SQL.")
    ] = "duckdb",
    spark_master: MasterOpt = None,
    as_json: Annotated[bool, json_flag("Rows")] = False,
    as_csv: CsvFlag = False,
    as_nl: NlFlag = False,
    timeout: Annotated[str | None, TIMEOUT_OPTION] = None,
    memory_limit: Annotated[str | None, MEMORY_OPTION] = None,
) -> None:
    """Run SQL across all captures: each table holds every capture's rows plus host and capture
    (within a time and a memory limit: 5 minutes and 2 GiB unless told otherwise; Spark's
    memory is its own configuration's)."""
    fmt = output_format(as_json, as_csv, as_nl)
    limits = query_limits(timeout, memory_limit)
    answer = Fleet(fleet).sql(query, engine, spark_master, limits)
    emit(fmt, rows=Rows(answer.columns, answer.rows))


def report(
    fleet: FleetArg,
    output: Annotated[
        Path, typer.Option("-o", "--output", metavar="FILE", help="HTML file to write.")
    ],
    by: Annotated[
        str | None,
        typer.Option(
            metavar="LABEL",
            help="Label for before/after (default: the first label with 2 values).",
        ),
    ] = None,
) -> None:
    """Write one self-contained HTML page about the whole fleet."""
    Fleet(fleet).write_report(output, by=by)
    say(f"wrote {output}")


def check(
    fleet: FleetArg,
    maxima: Annotated[
        list[str],
        typer.Option(
            "--max",
            metavar="METRIC=VALUE",
            help="A limit as for 'blkscope check', e.g. d2c.p99=5ms (repeatable).",
        ),
    ],
    as_json: Annotated[bool, json_flag("The results")] = False,
    as_csv: CsvFlag = False,
    as_nl: NlFlag = False,
) -> None:
    """CI gate over every capture of the fleet; the table names each failing host and capture."""
    from blkscope.reports.check import parse_threshold

    fmt = output_format(as_json, as_csv, as_nl)
    emit_results(fmt, Fleet(fleet).check([parse_threshold(spec) for spec in maxima]))
