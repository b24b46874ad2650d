"""Run the partition builds: a local process pool, or Spark tasks on a SparkSession.

Both run the same `build_partition` on plain-dict jobs and hand each result back as soon as
its capture is done, so the caller can show progress per capture and list failures without
stopping the others.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from typing import Any

from blkscope.errors import DatasetError
from blkscope.fleet.build_partition import build_partition

OnResult = Callable[[dict[str, Any]], None]
ENGINES = ("local", "spark")
# blkscope is installed from its checkout (it is not on the package index)
SPARK_HINT = (
    "install it from the blkscope checkout with: pip install '.[spark]' "
    "(and a JRE, e.g. Debian's default-jre-headless)"
)


def run_local(jobs: list[dict[str, Any]], workers: int | None, on_result: OnResult) -> None:
    """Each job in a worker process: spawned, not forked, so no worker inherits the fleet's
    writer lock or the parent's DuckDB threads (a script calling this needs the
    `if __name__ == "__main__":` guard of multiprocessing's spawn)."""
    workers = max(1, min(workers or os.cpu_count() or 1, len(jobs)))
    if workers == 1:  # one at a time: in this process, without a pool's start-up
        for job in jobs:
            on_result(build_partition(job))
        return
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = [pool.submit(build_partition, job) for job in jobs]
        for future in as_completed(futures):
            on_result(future.result())


def spark_session(master: str | None, app: str) -> Any:
    """A SparkSession: the one spark-submit configured, else one on master (default
    `local[*]`); a DatasetError with a hint when pyspark or Java is missing."""
    try:
        from pyspark import SparkConf
        from pyspark.sql import SparkSession
    except ImportError:
        raise DatasetError("--engine spark", "pyspark is not installed", hint=SPARK_HINT) from None
    builder = SparkSession.builder.appName(app)
    if master:
        builder = builder.master(master)
    elif not SparkConf().contains("spark.master"):
        builder = builder.master("local[*]")
    # host=/capture= folder values are names, never numbers or dates
    builder = builder.config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    if (master or "local").startswith("local"):
        # local Python workers run this interpreter (with blkscope), not whatever `python3` is
        # on PATH (another Python when the venv is not activated: pipx, an install by path).
        # pyspark reads the worker's Python from PYSPARK_PYTHON when the context starts; the
        # spark.pyspark.python setting only reaches spark-submit. A user's own choice stands.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = builder.config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
        # a fleet's tables are small next to Spark's default of 200 shuffle partitions
        builder = builder.config("spark.sql.shuffle.partitions", "4")
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # pyspark's gateway errors: no java, a bad master URL
        raise DatasetError(
            "--engine spark",
            f"cannot start Spark: {str(exc).strip().splitlines()[0]}",
            hint=SPARK_HINT,
        ) from None
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run_spark(jobs: list[dict[str, Any]], master: str | None, on_result: OnResult) -> None:
    """Each job one Spark task of its own job, submitted from driver threads: the cluster runs
    as many at once as it has cores, and each result arrives when its capture is done. The
    executors run blkscope's own build (it must be installed on them) and write the partition
    into FLEET, which must be a path every executor sees."""
    spark = spark_session(master, "blkscope fleet add")
    context = spark.sparkContext
    at_once = max(1, min(len(jobs), context.defaultParallelism))

    def one(job: dict[str, Any]) -> dict[str, Any]:
        try:
            result: dict[str, Any] = context.parallelize([job], 1).map(build_partition).collect()[0]
        except Exception as exc:  # the task itself failed: no blkscope on the executor, ...
            lines = [line for line in str(exc).splitlines() if "Error" in line] or [str(exc)]
            return {"source": job["source"], "host": job["host"], "capture": job["capture"],
                    "ok": False, "error": f"Spark task failed: {lines[-1].strip()}",
                    "hint": "check that blkscope is installed on the executors and FLEET is "
                    "a path they all see", "seconds": 0.0}  # fmt: skip
        return result

    with ThreadPoolExecutor(max_workers=at_once) as threads:
        futures = [threads.submit(one, job) for job in jobs]
        for future in as_completed(futures):
            on_result(future.result())
