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
        typer.Argument(
            help="blkparse text files (plain, .gz, .zst, .xz) or - for stdin; or blktrace per-CPU files NAME.blktrace.N, or their NAME prefix; or one capture folder."
        ),
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
    trace_start: Annotated[
        str | None,
        typer.Option(
            "--trace-start",
            help="Capture folder: wall time (ISO, UTC unless zoned) of the trace's first event.",
        ),
    ] = None,
    offset: Annotated[
        list[str] | None,
        typer.Option(
            "--offset",
            help="Capture folder: SOURCE=+-SECONDS shifts one source (table or file name).",
        ),
    ] = None,
) -> None:
    """Parse blkparse text, blktrace binaries or a capture folder (all logs, one clock) to Parquet."""
    from blkscope.ingest.blkparse_ingest import ingest_events
    from blkscope.progress import byte_progress

    folder = Path(inputs[0]) if len(inputs) == 1 and Path(inputs[0]).is_dir() else None
    try:
        if folder is None and (trace_start or offset):
            raise InputFormatError(
                inputs[0], "--trace-start and --offset need a capture folder as the input"
            )
        with byte_progress(enabled=not quiet and not as_json) as progress:
            if folder is not None:
                manifest = _ingest_folder(folder, output, strict, progress, trace_start, offset)
            else:
                manifest = ingest_events(inputs, output, strict=strict, progress=progress)
    except BlkscopeError as exc:
        raise _fail(exc) from None
    except KeyboardInterrupt:
        typer.echo("interrupted: no dataset written, any previous one is intact", err=True)
        raise typer.Exit(130) from None
    if as_json:
        typer.echo(json.dumps(manifest, indent=2))
    elif not quiet:
        if folder is not None:
            from blkscope.ingest.folder_report import folder_report

            typer.echo(folder_report(manifest))
        typer.echo(_ingest_summary(manifest, output))


def _ingest_folder(
    folder: Path,
    output: Path,
    strict: bool,
    progress: Any,
    trace_start: str | None,
    offsets: list[str] | None,
) -> dict[str, Any]:
    from blkscope.ingest.clock import parse_offset, parse_trace_start
    from blkscope.ingest.folder import ingest_folder

    return ingest_folder(
        folder,
        output,
        strict=strict,
        progress=progress,
        trace_start_ns=parse_trace_start(trace_start) if trace_start else None,
        offsets_ns=dict(parse_offset(o) for o in offsets or []),
    )


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


def _analysed(dataset: Path) -> None:
    """Run the analysis first when a dataset only has its ingested tables."""
    from blkscope.analyze.build import analyze_dataset
    from blkscope.ingest.dataset import read_manifest

    if "bios" not in read_manifest(dataset).get("tables", {}):
        typer.echo(f"analysing {dataset} first", err=True)
        analyze_dataset(dataset).close()


def _duration(text: str, option: str) -> int:
    from blkscope.units import parse_duration_ns

    try:
        return parse_duration_ns(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=option) from None


@app.command()
def spikes(
    dataset: Annotated[
        Path, typer.Argument(help="Dataset folder (analysed on the fly if needed).")
    ],
    window: Annotated[str, typer.Option(help="Window width, e.g. 1s or 100ms.")] = "1s",
    metric: Annotated[str, typer.Option(help="Latency judged: q2c or d2c.")] = "q2c",
    k: Annotated[float, typer.Option(help="Abnormal above median + k*MAD of window p99s.")] = 5.0,
    threshold: Annotated[
        str | None, typer.Option(help="Fixed p99 threshold instead, e.g. 10ms.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Rows as JSON.")] = False,
) -> None:
    """Find windows of abnormal IO latency and say what was in flight (writeback, jbd2, who)."""
    from blkscope.analyze.correlation import writeback_intervals, writeback_verdict
    from blkscope.analyze.findings import find_spikes
    from blkscope.analyze.views import connect
    from blkscope.reports.terminal import render_spikes

    if metric not in ("q2c", "d2c"):
        raise typer.BadParameter("must be q2c or d2c", param_hint="--metric")
    window_ns = _duration(window, "--window")
    limit = _duration(threshold, "--threshold") if threshold else None
    try:
        _analysed(dataset)
        con = connect(dataset)
        table = find_spikes(
            con, window_ns=window_ns, metric=metric, k=k, threshold_ns=limit, min_ios=5
        )
        verdict = writeback_verdict(con, table, writeback_intervals(con))
    except BlkscopeError as exc:
        raise _fail(exc) from None
    rows = table.to_pylist()
    if as_json:
        typer.echo(json.dumps({"spikes": rows, "writeback": verdict}, indent=2))
    else:
        typer.echo(render_spikes(rows, verdict["sentence"]))


@app.command()
def periods(
    dataset: Annotated[
        Path, typer.Argument(help="Dataset folder (analysed on the fly if needed).")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Rows as JSON.")] = False,
) -> None:
    """Report significant periods of writeback IO, journal IO, writeback events and spikes."""
    from blkscope.analyze.views import connect, query_table
    from blkscope.reports.terminal import render_periods

    try:
        _analysed(dataset)
        rows = query_table(connect(dataset), "SELECT * FROM periods ORDER BY p_value").to_pylist()
    except BlkscopeError as exc:
        raise _fail(exc) from None
    typer.echo(json.dumps(rows, indent=2) if as_json else render_periods(rows))


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
            _analysed(dataset)
        result = run_compare(before, after)
    except BlkscopeError as exc:
        raise _fail(exc) from None
    typer.echo(json.dumps(result, indent=2) if as_json else render(result))


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

    override = None
    if device is not None:
        try:
            major, minor = (int(x) for x in device.split(","))
        except ValueError:
            raise typer.BadParameter(
                "expected MAJOR,MINOR like 8,0", param_hint="--device"
            ) from None
        override = (major, minor)
    try:
        _analysed(dataset)
        rows = attach_partitions(dataset, listings, override)
    except BlkscopeError as exc:
        raise _fail(exc) from None
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    typer.echo(
        f"{'device':>7} {'partition':<12} {'start':>10} {'sectors':>10} {'bios':>8} "
        f"{'MiB':>9} {'q2c p99':>9}"
    )
    for r in rows:
        p99 = "-" if r["q2c_p99_ns"] is None else f"{r['q2c_p99_ns'] / 1e6:.3f}ms"
        typer.echo(
            f"{r['dev_major']},{r['dev_minor']:<3} {r['partition']:<12} "
            f"{r['start_sector']:>10} {r['sectors']:>10} {r['bios']:>8} "
            f"{r['bytes'] / 2**20:>9.1f} {p99:>9}"
        )


@app.command(context_settings={"allow_interspersed_args": False})
def capture(
    device: Annotated[
        list[str],
        typer.Option("--device", "-d", help="Block device name as in /sys/block (repeatable)."),
    ],
    output: Annotated[Path, typer.Option("-o", "--output", help="Capture folder to create.")],
    command: Annotated[
        list[str] | None,
        typer.Argument(help="Optional command (after --) to record while it runs."),
    ] = None,
    duration: Annotated[
        float | None,
        typer.Option(
            "--duration", help="Seconds to record (an upper bound when a command is given)."
        ),
    ] = None,
    max_size: Annotated[
        int,
        typer.Option("--max-size", min=1, help="Stop once the block trace reaches this many MiB."),
    ] = 1024,
    buffer_kb: Annotated[
        int,
        typer.Option("--buffer-kb", min=256, max=262144, help="Kernel trace buffer per CPU, KiB."),
    ] = 65536,
    method: Annotated[
        str,
        typer.Option("--method", help="auto (blktrace, else ftrace blk tracer), blktrace, ftrace."),
    ] = "auto",
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing capture folder.")
    ] = False,
) -> None:
    """Record block and writeback events, iostat and dirty pages into a capture folder (root)."""
    from blkscope.capture.runner import CaptureOptions, run_capture

    if method not in ("auto", "blktrace", "ftrace"):
        raise typer.BadParameter("must be auto, blktrace or ftrace", param_hint="--method")
    opts = CaptureOptions(
        devices=list(dict.fromkeys(device)),
        out=output,
        duration_s=duration,
        command=command or None,
        max_size_mb=max_size,
        buffer_kb=buffer_kb,
        force=force,
        method=method,
    )
    try:
        manifest = run_capture(opts, say=lambda s: typer.echo(s, err=True))
    except BlkscopeError as exc:
        raise _fail(exc) from None
    except KeyboardInterrupt:
        # Recording already ended cleanly; this second Ctrl-C came while writing the files.
        typer.echo(f"interrupted while writing {output}; tracefs settings were restored", err=True)
        raise typer.Exit(130) from None
    typer.echo(
        f"wrote {output}: {manifest.get('block_events', 'n/a')} block events via "
        f"{manifest['block_source']}, stopped by {manifest['stop_reason']}, "
        f"{manifest.get('lost_events', 0)} lost"
    )
    if manifest.get("blkparse") is None:
        typer.echo(
            f"blkparse is not installed: run `blkparse -i trace -o blkparse.txt` in "
            f"{output} where it is, then `blkscope ingest`",
            err=True,
        )
    code = manifest.get("command_exit_code")
    if code and manifest["stop_reason"].startswith("command exited"):  # not when we stopped it
        typer.echo(f"the command exited with {code}; the capture is complete", err=True)
        raise typer.Exit(EXIT_FAILED)


@app.command("capture-restore")
def capture_restore(
    folder: Annotated[Path, typer.Argument(help="Folder of a capture that was killed (SIGKILL).")],
) -> None:
    """Put back the tracefs settings a killed `blkscope capture` had changed (root)."""
    from blkscope.capture.runner import restore_from

    try:
        problems = restore_from(folder)
    except BlkscopeError as exc:
        raise _fail(exc) from None
    for problem in problems:
        typer.echo(f"warning: {problem}", err=True)
    if problems:
        raise typer.Exit(EXIT_FAILED)
    typer.echo("tracefs settings restored")


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
