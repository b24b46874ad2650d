"""Issue 33 finding 8: `fleet add --engine spark` from a venv that is not activated started its
Spark workers on whatever `python3` was on PATH (ModuleNotFoundError: No module named
'blkscope'). pyspark takes the workers' Python from PYSPARK_PYTHON when the context starts."""

from __future__ import annotations

import sys
from typing import Any


def test_8_local_spark_workers_run_this_interpreter(spark: Any) -> None:
    # the session fixture was started without PYSPARK_PYTHON (the tests never set it)
    assert spark.sparkContext.pythonExec == sys.executable
    assert spark.sparkContext.parallelize([1], 1).map(lambda _: sys.executable).collect() == [
        sys.executable
    ]
