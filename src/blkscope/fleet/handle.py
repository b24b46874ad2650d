"""The Fleet handle: one fleet folder and what can be done with it, as the Dataset handle is
for one dataset (`blkscope fleet ...` is a few lines over each method)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from blkscope.analyze.query import Answer, QueryLimits
    from blkscope.reports.check import Result, Threshold


class Fleet:
    """A fleet folder: FLEET/host=H/capture=C/ partitions, each a whole dataset."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"Fleet({str(self.path)!r})"

    def add(
        self,
        captures: list[str],
        *,
        host: str | None = None,
        labels: list[str] | None = None,
        engine: str = "local",
        spark_master: str | None = None,
        workers: int | None = None,
        on_result: Callable[[dict[str, Any]], None] = lambda r: None,
    ) -> list[dict[str, Any]]:
        """Ingest and analyze each capture into its own partition (the fleet is made when
        new); every capture's outcome, in the order given, each as on_result heard it."""
        from blkscope.fleet.add import add_captures

        return add_captures(
            self.path, captures, host=host, labels=labels, engine=engine,
            spark_master=spark_master, workers=workers, on_result=on_result,
        )  # fmt: skip

    def sql(
        self,
        query: str,
        engine: str = "duckdb",
        spark_master: str | None = None,
        limits: QueryLimits | None = None,
    ) -> Answer:
        """One read-only query over every capture's tables and the fleet views, within a time
        and a memory limit (default: QueryLimits(); Spark's memory is its own configuration's)."""
        from blkscope.fleet.query import run_sql

        return run_sql(self.path, query, engine, spark_master, limits)

    def check(self, thresholds: list[Threshold]) -> list[Result]:
        """Every threshold on every device of every capture (`blkscope check`'s gate)."""
        from blkscope.fleet.check import check_fleet

        return check_fleet(self.path, thresholds)

    def write_report(self, output: Path, by: str | None = None) -> None:
        """Write one self-contained HTML page about the whole fleet."""
        from blkscope.fleet.report import write_fleet_report

        write_fleet_report(self.path, output, by=by)
