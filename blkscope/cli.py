"""The blkscope command line: one thin function per command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from blkscope import __version__
from blkscope.errors import BlkscopeError, InputFormatError, ParseError

app = typer.Typer(
    name="blkscope",
    help="Offline analysis of Linux block-layer traces (blkparse text, bpftrace logs).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_BAD_INPUT = 2
EXIT_FAILED = 1


def _fail(exc: BlkscopeError) -> typer.Exit:
    typer.echo(f"error: {exc}", err=True)
    if exc.hint:
        typer.echo(f"hint: {exc.hint}", err=True)
    bad_input = isinstance(exc, ParseError | InputFormatError)
    return typer.Exit(EXIT_BAD_INPUT if bad_input else EXIT_FAILED)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"blkscope {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Offline analysis of Linux block-layer traces (blkparse text, bpftrace logs)."""


@app.command()
def ingest(
    inputs: Annotated[
        list[str],
        typer.Argument(help="blkparse text files (plain, .gz, .zst, .xz) or - for stdin."),
    ],
    output: Annotated[
        Path, typer.Option("-o", "--output", help="Dataset folder to write (replaced atomically).")
    ],
    strict: Annotated[
        bool, typer.Option("--strict", help="Stop at the first malformed line (exit 2).")
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress bar, no summary.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the manifest as JSON.")] = False,
) -> None:
    """Parse blkparse text into a Parquet dataset (events, blkparse summary, ingest errors)."""
    from blkscope.ingest.blkparse_ingest import ingest_blkparse
    from blkscope.progress import byte_progress

    try:
        with byte_progress(enabled=not quiet and not as_json) as progress:
            manifest = ingest_blkparse(inputs, output, strict=strict, progress=progress)
    except BlkscopeError as exc:
        raise _fail(exc) from None
    except KeyboardInterrupt:
        typer.echo("interrupted: no dataset written, any previous one is intact", err=True)
        raise typer.Exit(130) from None
    if as_json:
        typer.echo(json.dumps(manifest, indent=2))
    elif not quiet:
        typer.echo(_ingest_summary(manifest, output))


def _ingest_summary(manifest: dict[str, Any], output: Path) -> str:
    ev = manifest["events"]
    span = (ev["last_time_ns"] or 0) - (ev["first_time_ns"] or 0)
    lines = [f"wrote {output}: {ev['count']:,} events over {span / 1e9:.3f} s"]
    for d in manifest["devices"]:
        acts = " ".join(f"{a}={n:,}" for a, n in d["by_action"].items())
        lines.append(f"  device {d['dev']}: {d['events']:,} events  {acts}")
    errors = manifest["ingest"]["error_lines"]
    if errors:
        lines.append(
            f"{errors:,} malformed line{'s' if errors != 1 else ''} recorded in "
            f"ingest_errors (see {output / 'ingest_errors.parquet'})"
        )
    else:
        lines.append("0 malformed lines")
    return "\n".join(lines)


@app.command()
def analyze(
    dataset: Annotated[Path, typer.Argument(help="Dataset folder written by 'blkscope ingest'.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    interval: Annotated[float, typer.Option("--interval", help="iostat interval, seconds.")] = 1.0,
) -> None:
    """Reconstruct every request and bio, write the analysis tables, print a per-device summary."""
    from blkscope.analyze.build import analyze_dataset
    from blkscope.analyze.summary import device_summary, render_summary

    try:
        with analyze_dataset(dataset, interval_ns=round(interval * 1e9)) as con:
            devices = device_summary(con)
    except BlkscopeError as exc:
        raise _fail(exc) from None
    if as_json:
        typer.echo(json.dumps({"dataset": str(dataset), "devices": devices}, indent=2))
    else:
        typer.echo(render_summary(devices))


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
        typer.echo(
            run_query(dataset, query, "json" if as_json else "csv" if as_csv else "table"), nl=False
        )
    except BlkscopeError as exc:
        raise _fail(exc) from None


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
) -> None:
    """Write one self-contained HTML report (and summary.json beside it) for a trace."""
    from blkscope.progress import byte_progress
    from blkscope.reports.run import make_report

    try:
        with byte_progress(enabled=not quiet) as progress:
            done = make_report(source, output, timestamp=not no_timestamp, progress=progress)
    except BlkscopeError as exc:
        raise _fail(exc) from None
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        raise typer.Exit(130) from None
    if not quiet:
        typer.echo(_report_summary(done.summary_doc, output, done.summary, done.dataset))


def _report_summary(doc: dict[str, Any], output: Path, summary: Path, dataset: Path) -> str:
    lines = [f"wrote {output} and {summary} (dataset {dataset})"]
    for d in doc["devices"]:
        spikes = "not computed" if d["spikes"] is None else d["spikes"]
        periods = ", ".join(f"{p['series']} {p['period_ns'] / 1e9:.2f} s" for p in d["periods"])
        lines.append(
            f"  device {d['dev']}: {d['ios']:,} IOs, D2C p99 {d['d2c']['p99_ns'] / 1e6:.3f} ms, "
            f"Q2C p99 {d['q2c']['p99_ns'] / 1e6:.3f} ms, spikes {spikes}, "
            f"periods {periods or 'none'}"
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
) -> None:
    """CI gate: exit 1 when any threshold is exceeded, 0 when all pass, 2 on bad usage or input."""
    from blkscope.reports.check import check as run_check
    from blkscope.reports.check import parse_threshold, render_results, results_json

    try:
        thresholds = [parse_threshold(spec) for spec in maxima]
        results = run_check(target, thresholds)
    except BlkscopeError as exc:
        raise _fail(exc) from None
    if as_json:
        typer.echo(json.dumps(results_json(results), indent=2))
    else:
        typer.echo(render_results(results))
    if not all(r.passed for r in results):
        raise typer.Exit(EXIT_FAILED)


def main() -> None:
    """Console-script entry point."""
    app(prog_name="blkscope")


if __name__ == "__main__":
    main()
