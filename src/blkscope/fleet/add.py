"""`fleet add`: check the names, then build every capture's partition on the chosen engine."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from blkscope.errors import BlkscopeError, InputFormatError, OptionError
from blkscope.fleet import fleet_folder
from blkscope.fleet.build_partition import Job, job_doc
from blkscope.fleet.engines import ENGINES, run_local, run_spark
from blkscope.fleet.names import label, partition_value


def plan(
    fleet: Path, sources: list[str], host: str | None, labels: list[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(jobs, refused): a job per capture whose id is a valid partition name; the others are
    refused with their error. Options that apply to all (--host, --label) raise."""
    if host is not None:
        partition_value("host", host)
    pairs = [label(spec) for spec in labels]
    jobs, refused, seen = [], [], set()
    for source in sources:
        capture = Path(source).name
        try:
            partition_value("capture", capture, where=source)
            if (host, capture) in seen:
                raise InputFormatError(
                    source,
                    f"a second capture named {capture!r} for the same host",
                    hint="add each capture once, or copy it under another folder name",
                )
        except BlkscopeError as exc:
            refused.append({"source": str(Path(source).absolute()), "host": host,
                            "capture": capture, "ok": False, "error": str(exc),
                            "hint": exc.hint})  # fmt: skip
            continue
        seen.add((host, capture))
        # absolute: a Spark executor's working folder is not ours
        job = Job(source=str(Path(source).absolute()), fleet=str(fleet.absolute()),
                  capture=capture, host=host, labels=pairs)  # fmt: skip
        jobs.append(job_doc(job))
    return jobs, refused


def add_captures(
    fleet: Path,
    sources: list[str],
    *,
    host: str | None = None,
    labels: list[str] | None = None,
    engine: str = "local",
    spark_master: str | None = None,
    workers: int | None = None,
    on_result: Callable[[dict[str, Any]], None] = lambda r: None,
) -> list[dict[str, Any]]:
    """Add each capture as its own partition; every capture's outcome, in the order given."""
    if engine not in ENGINES:
        raise OptionError("--engine", f"{engine!r} is not one of {', '.join(ENGINES)}")
    jobs, results = plan(fleet, sources, host, labels or [])
    for refused in results:
        on_result(refused)

    def done(result: dict[str, Any]) -> None:
        results.append(result)
        on_result(result)

    with fleet_folder.fleet_writer(fleet):
        if jobs and engine == "spark":
            run_spark(jobs, spark_master, done)
        elif jobs:
            run_local(jobs, workers, done)
    order = {str(Path(s).absolute()): i for i, s in enumerate(sources)}
    return sorted(results, key=lambda r: order.get(r["source"], len(order)))
