"""A fleet as SQL tables, in DuckDB or Spark SQL: the same names over the same files.

Every dataset table and fleet table becomes a table of all committed partitions' files, with
`host` and `capture` from the hive folder names (always text), and the fleet views of
fleet/sql/*.sql are defined on top in both engines.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import duckdb

from blkscope.analyze.query import (
    Answer,
    BadQueryError,
    QueryError,
    QueryLimits,
    check_utf8,
    limited,
    run_query,
)
from blkscope.analyze.sql_modules import SqlModule, sql_modules
from blkscope.analyze.views import needed_by, quoted
from blkscope.errors import OptionError
from blkscope.fleet.fleet_folder import open_fleet, partitions
from blkscope.interrupts import track
from blkscope.schemas import TABLES
from blkscope.schemas.fleet import FLEET_TABLES
from blkscope.units import format_s

ALL_TABLES = [*FLEET_TABLES, *TABLES]
QUERY_ENGINES = ("duckdb", "spark")


def fleet_views() -> list[SqlModule]:
    """The fleet views of fleet/sql/, each after the views it includes."""
    return list(sql_modules("blkscope.fleet").values())


def table_files(fleet: Path) -> dict[str, list[Path]]:
    """Each table's Parquet files over the fleet's committed partitions (regular files only:
    a link could point anywhere on this machine). One directory read per partition."""
    open_fleet(fleet)
    names = {f"{name}.parquet": name for name in ALL_TABLES}
    files: dict[str, list[Path]] = {}
    for part in partitions(fleet):
        with os.scandir(part.path) as entries:
            found = {e.name: e for e in entries if e.name in names}
        for file, name in names.items():  # the same order in every partition
            entry = found.get(file)
            if entry is not None and entry.is_file(follow_symlinks=False):
                files.setdefault(name, []).append(Path(entry.path).absolute())
    return files


def _views_possible(have: set[str]) -> list[SqlModule]:
    views = []
    for view in fleet_views():
        if all(n in have for n in view.includes):
            views.append(view)
            have.add(view.name)
    return views


def _defined_for(fleet: Path, sql: str | None) -> tuple[dict[str, list[Path]], list[SqlModule]]:
    """The tables (with their files) and views to define: all of them, or with sql only those
    it names and what those views include. Defining a table costs a look at each of its files'
    footers in both engines, seconds per table at thousands of captures, so a query pays only
    for the tables it reads."""
    files = table_files(fleet)
    views = _views_possible(set(files))
    if sql is not None:
        wanted = needed_by(re.findall(r"\w+", sql.lower()), views)  # the names it uses
        files = {n: p for n, p in files.items() if n in wanted}
        views = [v for v in views if v.name in wanted]
    return files, views


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def duckdb_fleet(
    fleet: Path,
    sql: str | None = None,
    before_lock: Callable[[duckdb.DuckDBPyConnection], object] | None = None,
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the fleet's tables and views (those sql names, when given),
    reading only the fleet's files; before_lock makes its own settings (a query's limits)
    before the configuration is locked."""
    files, views = _defined_for(fleet, sql)
    con = track(duckdb.connect())
    con.execute("SET enable_progress_bar = false")
    con.execute("SET enable_caching_operators = false")  # see blkscope.analyze.views.connect
    for name, paths in files.items():
        listed = ", ".join(_literal(p.as_posix()) for p in paths)
        con.execute(
            f"CREATE VIEW {quoted(name)} AS SELECT * FROM read_parquet([{listed}], "
            "hive_partitioning = true, hive_types = {'host': VARCHAR, 'capture': VARCHAR})"
        )
    for view in views:
        con.execute(view.main.statement())
    every = ", ".join(_literal(p.as_posix()) for paths in files.values() for p in paths)
    if before_lock is not None:
        before_lock(con)
    con.execute(f"SET allowed_paths = [{every}]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


def spark_fleet(spark: Any, fleet: Path, sql: str | None = None) -> list[str]:
    """Define the fleet's tables and views (those sql names, when given) as temp views of the
    SparkSession; their names."""
    files, views = _defined_for(fleet, sql)
    spark.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
    base = str(fleet.absolute())
    for name, paths in files.items():
        frame = spark.read.option("basePath", base).parquet(*(str(p) for p in paths))
        frame.createOrReplaceTempView(name)
    for view in views:
        spark.sql(f"CREATE OR REPLACE TEMP VIEW {view.name} AS {view.main.body}")
    return [*files, *(v.name for v in views)]


_READ_VERBS = ("SELECT", "WITH", "EXPLAIN", "SHOW", "DESCRIBE", "DESC", "VALUES", "FROM")


def run_sql(
    fleet: Path,
    sql: str,
    engine: str = "duckdb",
    spark_master: str | None = None,
    limits: QueryLimits | None = None,
) -> Answer:
    """Run one read-only query over the fleet on engine ('duckdb' or 'spark') within its
    limits (Spark's memory is its own configuration's)."""
    if engine not in QUERY_ENGINES:
        raise OptionError("--engine", f"{engine!r} is not one of {', '.join(QUERY_ENGINES)}")
    check_utf8(sql)
    limits = limits or QueryLimits()
    if engine == "spark":
        return _run_spark(fleet, sql, spark_master, limits.seconds)
    with ExitStack() as stack:
        con = duckdb_fleet(fleet, sql, lambda c: stack.enter_context(limited(c, limits)))
        with con:
            # the same read-only path as `blkscope sql`: nothing to run in "" or ";" (no rows)
            return run_query(con, sql, limits)


def _run_spark(fleet: Path, sql: str, spark_master: str | None, seconds: float) -> Answer:
    from blkscope.fleet.engines import spark_session

    if not sql.strip(" \t\r\n;"):
        return Answer([], [])  # no statement: nothing to run, as with DuckDB
    verb = sql.split()[0].upper()
    if verb not in _READ_VERBS:
        raise BadQueryError(
            f"{verb} statement refused: fleet sql only reads the fleet",
            "save a result with --csv or --json and a shell redirect",
        )
    spark = spark_session(spark_master, "blkscope fleet sql")
    spark_fleet(spark, fleet, sql)
    timer = threading.Timer(seconds, spark.sparkContext.cancelAllJobs)
    timer.start()
    try:
        frame = spark.sql(sql)
        return Answer(list(frame.columns), [tuple(r) for r in frame.collect()])
    except Exception as exc:  # pyspark's AnalysisException, ParseException, ...
        if timer.finished.is_set():
            raise QueryError(
                f"the query ran past its time limit ({format_s(seconds * 1e9, 1)})",
                "narrow it (WHERE, LIMIT, a join condition) or raise --timeout",
            ) from None
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        # pyspark's AnalysisException (and its ParseException): the query's own fault
        analysis = any(k.__name__ == "AnalysisException" for k in type(exc).__mro__)
        raise (BadQueryError if analysis else QueryError)(f"query failed: {first}") from None
    finally:
        timer.cancel()
